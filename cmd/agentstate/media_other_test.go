//go:build !linux

package main

import (
	"os"
	"testing"
)

func readOnlyView(t *testing.T, dir string) (string, string) {
	t.Helper()
	if os.Geteuid() == 0 {
		t.Skip("root writes through chmod, and read-only mounts are only tried on Linux")
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	return dir, "a directory with mode 0555"
}
