//go:build !linux

package main

import "errors"

// Without inotify a copy cannot be shown to have raced no checkpoint.
type writeWatch struct{}

func watchWrites(path string) (*writeWatch, error) {
	return nil, errors.New("reading a copy while Node writes needs Linux's file-change notification (inotify), which this platform's build does not use")
}

func (w *writeWatch) wrote() (bool, error) { return false, nil }

func (w *writeWatch) close() {}
