//go:build unix

package sqlite

import (
	"errors"
	"syscall"
)

func pidAlive(pid int) liveness {
	err := syscall.Kill(pid, 0)
	switch {
	case err == nil, errors.Is(err, syscall.EPERM):
		return yes
	case errors.Is(err, syscall.ESRCH):
		return no
	}
	return unknown
}
