package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/engine/admin"
)

// The CLI on a file that another tool's tables share: a command refuses
// the file until agentstate lives in it (and says how), then finds our
// marker by itself (no flag): info, verify, retain and the read commands
// work; vacuum is refused, since it would rebuild the other tool's tables.
func TestSharedFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "deerflow.db")
	for _, q := range []string{
		`PRAGMA journal_mode=WAL`,
		`CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY)`,
		`INSERT INTO alembic_version VALUES ('0003')`,
		`CREATE TABLE runs (run_id VARCHAR(64) NOT NULL PRIMARY KEY, status VARCHAR(20))`,
		`CREATE INDEX ix_runs_status ON runs (status)`,
		`INSERT INTO runs VALUES ('r1', 'success')`,
	} {
		rawExec(t, path, q)
	}
	r := agentstate(t, nil, "info", path)
	if r.code == 0 || !strings.Contains(r.stderr, "SharedFile") {
		t.Fatalf("info on another tool's file: exit %d\n%s", r.code, r.stderr)
	}

	o := engine.DefaultOptions()
	o.SharedFile = true
	db, err := engine.Open(ctx, path, &o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		_, err := db.Commit(ctx, "chat", engine.Step{RunID: "run-1", Tasks: []engine.TaskWrites{{TaskID: "node",
			Writes: []engine.ChannelWrite{{Channel: engine.MessagesChannel, Value: []codec.Message{{ID: fmt.Sprint("h", i), Type: codec.Human, Content: "hi"}}}}}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Store().Put(ctx, []string{"ns"}, "k", map[string]any{"v": 1}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	r = agentstate(t, nil, "info", path)
	want(t, r, 0)
	contains(t, r.stdout, "shared file", "agentstate_checkpoints", "agentstate_store_items")
	if strings.Contains(r.stdout, "alembic_version") {
		t.Fatalf("info counts the other tool's tables:\n%s", r.stdout)
	}
	j := agentstate(t, nil, "info", "--json", path)
	want(t, j, 0)
	var st admin.Stats
	if err := json.Unmarshal([]byte(j.stdout), &st); err != nil || !st.Shared || st.SchemaVersion != engine.SchemaVersion {
		t.Fatalf("info --json: %v %+v", err, st.Info)
	}
	r = agentstate(t, nil, "verify", path)
	want(t, r, 0)
	contains(t, r.stdout, path+": ok:")
	r = agentstate(t, nil, "state", "--json", path, "chat")
	want(t, r, 0)
	r = agentstate(t, nil, "retain", "--keep-latest", "2", "--apply", path)
	want(t, r, 0)
	r = agentstate(t, nil, "vacuum", path)
	if r.code == 0 || !strings.Contains(r.stderr, "shared file") {
		t.Fatalf("vacuum of a shared file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = agentstate(t, nil, "verify", path)
	want(t, r, 0)
}
