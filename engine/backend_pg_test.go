//go:build !js && !wasip1

package engine

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// Tests of what only a server backend has; they run in the postgres half.

func pgOnly(t *testing.T) {
	t.Helper()
	if !onPG() {
		t.Skip("about the PostgreSQL backend; runs in the postgres half")
	}
}

// An SQLite file moves to PostgreSQL and back through export and import:
// every checkpoint reads the same, and the exports are the same bytes.
func TestExportMovesBetweenBackends(t *testing.T) {
	pgOnly(t)
	ctx := context.Background()
	for _, mode := range []string{ModeFull, ModeDelta} {
		t.Run(mode, func(t *testing.T) {
			testBackend = "sqlite" // the fixture is a file
			file, cps := opsFixture(t, mode)
			testBackend = "postgres"
			o := DefaultOptions()
			o.Mode = ModeAuto
			src, err := Open(ctx, file, &o)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			first := exportOf(t, src, "")

			server := testPath(t, Memory)
			if _, err := ImportFile(ctx, server, bytes.NewReader(first), nil, ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			onServer := openRW(t, server)
			second := exportOf(t, onServer, "")
			if !bytes.Equal(first, second) {
				t.Fatalf("SQLite export -> PostgreSQL -> export differs:\n%s", firstDiff(first, second))
			}
			if rep, err := onServer.Verify(ctx, VerifyOptions{}); err != nil || !rep.OK {
				t.Fatalf("the imported schema does not verify: %v %v", err, rep.Problems)
			}
			for _, cfg := range cps {
				a, err1 := src.State(ctx, cfg)
				b, err2 := onServer.State(ctx, cfg)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if !bytes.Equal([]byte(stateDigest(a)), []byte(stateDigest(b))) {
					t.Fatalf("state of %s differs on the server", cfg.CheckpointID)
				}
			}
			back := filepath.Join(t.TempDir(), "back.db")
			if _, err := ImportFile(ctx, back, bytes.NewReader(second), nil, ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			o.ReadOnly = true
			again, err := Open(ctx, back, &o)
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			if third := exportOf(t, again, ""); !bytes.Equal(first, third) {
				t.Fatalf("PostgreSQL export -> SQLite -> export differs:\n%s", firstDiff(first, third))
			}
		})
	}
}

// Verify checks the columns PostgreSQL derives from the stored bytes, and
// the catalogue against migrations_pg.
func TestPGVerifyFindsServerDamage(t *testing.T) {
	pgOnly(t)
	for _, tc := range []struct{ name, sql, kind, text string }{
		{"versions", `UPDATE checkpoints SET versions = '{}' WHERE checkpoint_id = (SELECT max(checkpoint_id) FROM checkpoints)`, "checkpoint", "derived column versions"},
		{"metadata", `UPDATE checkpoints SET metadata_j = NULL WHERE checkpoint_id = (SELECT min(checkpoint_id) FROM checkpoints)`, "checkpoint", "derived column metadata_j"},
		{"store value", `UPDATE store_items SET value_j = '{"lang": "en"}'`, "store", "derived column value_j"},
		{"thread metadata", `UPDATE threads SET metadata_j = '{}' WHERE thread_id = 'chat'`, "thread", "derived column metadata_j"},
		{"dropped index", `DROP INDEX events_by_run`, "schema", `index "events_by_run" is missing`},
		{"added table", `CREATE TABLE mine (x int)`, "schema", `table "mine" was not created by agentstate`},
		{"added column", `ALTER TABLE runs ADD COLUMN extra int`, "schema", `table "runs" differs`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, _ := opsFixture(t, ModeDelta)
			if rep := verifyPath(t, path); !rep.OK {
				t.Fatalf("before the damage: %v", rep.Problems)
			}
			tamperSource(t, path, tc.sql)
			wantProblem(t, verifyPath(t, path), tc.kind, tc.text)
		})
	}
}

// Open refuses a search_path without a schema, and a bad URL, with typed
// errors.
func TestPGOpenRefusesBadURLs(t *testing.T) {
	pgOnly(t)
	u := testPath(t, Memory)
	i := strings.Index(u, "search_path=")
	for _, bad := range []string{u[:i] + "search_path=no_such_schema_here", "postgres://[::1"} {
		_, err := Open(context.Background(), bad, nil)
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", displayPath(bad), err)
		}
	}
	if got := displayPath("postgres://u:secret@h/db?password=hunter2&search_path=s"); strings.Contains(got, "secret") || strings.Contains(got, "hunter2") {
		t.Errorf("displayPath shows the password: %s", got)
	}
}

// Text PostgreSQL cannot hold (NUL, invalid UTF-8) is refused as an
// argument, before anything is written; SQLite stores it.
func TestPGRefusesTextItCannotHold(t *testing.T) {
	pgOnly(t)
	db := openTest(t, Memory, nil)
	ctx := context.Background()
	for _, th := range []string{"a\x00b", "\xff"} {
		_, err := db.Put(ctx, Config{ThreadID: th}, cp("1", map[string]string{"c": "1"}, map[string]string{"c": `"x"`}), nil, map[string]string{"c": "1"})
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Put on thread %q: %v, want ErrInvalidArgument", th, err)
		}
	}
	_, err := db.Put(ctx, Config{ThreadID: "t"}, cp("1", map[string]string{"c\x00": "1"}, nil), nil, nil)
	if !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Put with a NUL in a channel name: %v, want ErrInvalidArgument", err)
	}
	if in, err := db.Info(ctx); err != nil || in.Rows["checkpoints"] != 0 {
		t.Fatalf("refused puts wrote %d checkpoints (%v)", in.Rows["checkpoints"], err)
	}
}
