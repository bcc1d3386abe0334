//go:build unix

package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file owned by a JavaScript process (the npm package in Node) is refused
// with ErrConflict naming the holder, and the refused open leaves no trace;
// once the owner is gone the file opens, and closing withdraws this
// process's registration.
func TestOpenRefusesFileOwnedByJavaScript(t *testing.T) {
	sqliteOnly(t, "a JavaScript process's claim on an SQLite file")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.db")
	host, _ := os.Hostname()
	owner := fmt.Sprintf(`{"runtime":"node","pid":%d,"host":%q,"since":"2026-12-01T10:00:00Z"}`, os.Getpid(), host)
	if err := os.WriteFile(path+".owner", []byte(owner), 0o644); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.BusyTimeout = 0
	_, err := Open(ctx, path, &o)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("Open: %v, want ErrConflict", err)
	}
	for _, want := range []string{path, "node", fmt.Sprint(os.Getpid()), host, "2026-12-01T10:00:00Z"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused open created the file: %v", err)
	}
	os.Remove(path + ".owner")
	db, err := Open(ctx, path, &o)
	if err != nil {
		t.Fatal(err)
	}
	if es, _ := os.ReadDir(path + ".natives"); len(es) != 1 {
		t.Errorf("registrations while open: %d, want 1", len(es))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".natives"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("registration left after Close: %v", err)
	}
}
