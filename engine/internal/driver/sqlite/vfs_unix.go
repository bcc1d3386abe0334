//go:build unix || wasip1

package sqlite

import (
	"errors"
	"syscall"
)

const haveOSVFS = true

func isFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

func isReadOnlyFS(err error) bool { return errors.Is(err, syscall.EROFS) }
