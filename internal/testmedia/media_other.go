//go:build !linux

package testmedia

import (
	"os"
	"testing"
)

func ReadOnlyView(t *testing.T, dir string) (string, string) {
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

func FullDisk(t *testing.T, size string) string {
	t.Skip("a small file system to fill is only mounted on Linux")
	return ""
}
