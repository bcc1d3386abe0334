//go:build unix || wasip1

package sqlite

import (
	"errors"
	"os"
	"syscall"
)

const haveOSVFS = true

func isFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

func isReadOnlyFS(err error) bool { return errors.Is(err, syscall.EROFS) }

// links is the number of names a file has; 0 once it was deleted.
func links(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
