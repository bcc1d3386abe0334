package main

import (
	"errors"
	"fmt"
	"syscall"
)

// writeWatch reports writes into one file by any process (inotify:
// IN_MODIFY is raised by every write(2) and truncate of the file).
type writeWatch struct{ fd int }

func watchWrites(path string) (*writeWatch, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	if _, err := syscall.InotifyAddWatch(fd, path, syscall.IN_MODIFY|syscall.IN_DELETE_SELF|syscall.IN_MOVE_SELF); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("inotify on %s: %w", path, err)
	}
	return &writeWatch{fd}, nil
}

// wrote reports whether any event (or a queue overflow) came since the
// watch began.
func (w *writeWatch) wrote() (bool, error) {
	buf := make([]byte, 4096)
	n, err := syscall.Read(w.fd, buf)
	if errors.Is(err, syscall.EAGAIN) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("inotify: %w", err)
	}
	return n > 0, nil
}

func (w *writeWatch) close() { syscall.Close(w.fd) }
