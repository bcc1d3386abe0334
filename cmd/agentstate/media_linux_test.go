package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// readOnlyView returns a read-only view of dir: a read-only bind mount when
// the test runs as root (root writes through chmod), dir made 0555
// otherwise.
func readOnlyView(t *testing.T, dir string) (view, kind string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		return dir, "a directory with mode 0555"
	}
	view = filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(view, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(dir, view, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("running as root without the right to mount (%v): chmod cannot make a directory read-only for root", err)
	}
	t.Cleanup(func() { syscall.Unmount(view, syscall.MNT_DETACH) })
	if err := syscall.Mount("", view, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Skipf("cannot remount read-only: %v", err)
	}
	return view, "a read-only bind mount"
}
