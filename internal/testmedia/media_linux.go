package testmedia

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// ReadOnlyView returns a read-only view of dir: a read-only bind mount when
// the test runs as root (root writes through chmod) and may mount, dir
// itself made 0555 otherwise. kind says which.
func ReadOnlyView(t *testing.T, dir string) (view, kind string) {
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

// FullDisk returns a directory on a file system of size bytes (a tmpfs), or
// skips when the test may not mount one.
func FullDisk(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (%v); TestFullMapsENOSPC covers the mapping", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}
