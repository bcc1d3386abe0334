//go:build !(unix || wasip1)

package sqlite

import "os"

// Elsewhere (Windows: ncruces maps its disk-full errors itself; js) files
// open with ncruces' VFS as it is.
const haveOSVFS = false

func isFull(error) bool       { return false }
func isReadOnlyFS(error) bool { return false }

func links(os.FileInfo) uint64 { return 1 }
