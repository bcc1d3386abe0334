//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package sqlite

import (
	"errors"
	"os"
	"syscall"
)

const haveFileLocks = true

// lockFile takes an exclusive flock on f without waiting: ok is false when
// another open file holds it. flock, unlike POSIX record locks, conflicts
// between two descriptors of one process and is not dropped when another
// descriptor of the same file closes.
func lockFile(f *os.File) (ok bool, err error) {
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		}
		return false, err
	}
}
