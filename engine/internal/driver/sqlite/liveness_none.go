//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package sqlite

import (
	"errors"
	"os"
)

// No flock here (Windows, WASI, js): owners rely on leases alone.
const haveFileLocks = false

func lockFile(*os.File) (bool, error) { return false, errors.ErrUnsupported }
