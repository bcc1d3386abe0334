//go:build !js && !(wasip1 && hostsqlite)

// The builds of backend_sqlite.go only: the builds on a host's SQLite
// leave keeping processes apart to the host.

package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/engine"
)

// TestHeldErrorIsTheEngines: an Open refused because a JavaScript process
// holds the file returns the engine's own *HeldError, whose fields (the
// holder's runtime, pid, host and since, the record beside the file) a
// caller reads without reaching into an internal package; it is also
// ErrConflict, and nothing was written.
func TestHeldErrorIsTheEngines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "held.db")
	host, _ := os.Hostname()
	record := path + ".owner"
	// This test's own pid stands for a live Node process.
	b, err := json.Marshal(map[string]any{"runtime": "node", "pid": os.Getpid(), "host": host, "since": "2026-12-01T00:00:00Z", "program": "app.js"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(record, b, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := engine.Open(context.Background(), path, nil)
	if err == nil {
		db.Close()
		t.Fatal("Open succeeded while a live JavaScript process holds the file")
	}
	held, ok := errors.AsType[*engine.HeldError](err)
	if !ok {
		t.Fatalf("err %v (%T), want an *engine.HeldError", err, err)
	}
	want := engine.Holder{Runtime: "node", PID: os.Getpid(), Host: host, Since: "2026-12-01T00:00:00Z", Program: "app.js"}
	if held.Holder != want || held.Path != path || held.Record != record {
		t.Errorf("HeldError %+v, want holder %+v, path %s, record %s", held, want, path, record)
	}
	if !errors.Is(err, engine.ErrConflict) {
		t.Errorf("err %v is not ErrConflict", err)
	}
	for _, s := range []string{"conflict: ", path, "is open in node (app.js) pid", host} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("message %q lacks %q", err, s)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused Open left %s behind (stat: %v)", path, err)
	}
}
