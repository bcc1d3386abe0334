//go:build !js && !(wasip1 && hostsqlite)

// The builds of backend_sqlite.go only (native, and WASI on ncruces): the
// builds on a host's SQLite open files through the host (the npm package
// checks these paths itself; see wasm/npm/test/engine.test.js).

package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Open reads a file's first bytes before SQLite does in these builds.
func init() { opensReadTheHeader = true }

// TestOpenErrorsOfPaths: a path that cannot be a database fails Open with
// the sentinel that says why, in a message that names the path and says
// "agentstate:" once, and leaves nothing behind it.
func TestOpenErrorsOfPaths(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("hello, this is a plain text file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	damaged := filepath.Join(dir, "damaged.db") // SQLite's magic, then garbage
	if err := os.WriteFile(damaged, []byte("SQLite format 3\x00"+strings.Repeat("\xff", 4096)), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "a dir")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	type pathCase struct {
		name, path string
		is         error
		says       string
	}
	cases := []pathCase{
		{"a directory", sub, ErrInvalidArgument, "is a directory, not a database file"},
		{"a missing directory", filepath.Join(dir, "nope", "x.db"), ErrNotFound, "directory " + filepath.Join(dir, "nope") + " does not exist"},
		{"a text file", text, ErrNotAgentstate, `is not an SQLite database (it begins "hello, this is a")`},
		{"a damaged database", damaged, ErrCorrupt, "corrupt data"},
	}
	// A named pipe was "disk I/O error" (and reading its first bytes would
	// wait for a writer).
	if fifo := filepath.Join(dir, "pipe.db"); mkfifo(fifo) == nil {
		cases = append(cases, pathCase{"a named pipe", fifo, ErrInvalidArgument, "is not a regular file (a named pipe)"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, _ := os.ReadDir(dir)
			for _, ro := range []bool{false, true} {
				o := DefaultOptions()
				o.ReadOnly = ro
				db, err := Open(bg, c.path, &o)
				if err == nil {
					db.Close()
					t.Fatalf("ReadOnly %v: opened", ro)
				}
				if !errors.Is(err, c.is) {
					t.Errorf("ReadOnly %v: %v, want %v", ro, err, c.is)
				}
				msg := err.Error()
				if !strings.Contains(msg, c.says) || !strings.Contains(msg, c.path) {
					t.Errorf("ReadOnly %v: %q does not say %q about %s", ro, msg, c.says, c.path)
				}
				if n := strings.Count(msg, "agentstate:"); n != 1 {
					t.Errorf("ReadOnly %v: %q says agentstate: %d times", ro, msg, n)
				}
			}
			if after, _ := os.ReadDir(dir); len(after) != len(before) {
				t.Errorf("Open left files behind: %v, before %v", after, before)
			}
		})
	}
}
