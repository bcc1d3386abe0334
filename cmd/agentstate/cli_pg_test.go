package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/internal/testpg"
	"github.com/jackc/pgx/v5/pgconn"
)

// pgSchema creates a fresh schema on the test server (AGENTSTATE_TEST_PG)
// and returns its URL; the test skips without a server, and fails in CI
// (AGENTSTATE_CI), which must test PostgreSQL.
func pgSchema(t *testing.T) string {
	t.Helper()
	base := testpg.URL(t)
	ctx := context.Background()
	c, err := pgconn.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	schema := fmt.Sprintf("cli_%d", time.Now().UnixNano())
	if _, err := c.Exec(ctx, "CREATE SCHEMA "+schema).ReadAll(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE").ReadAll()
		c.Close(context.Background())
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}

// A file moves to PostgreSQL and back with export and import, and every
// read-only command, verify, retain and vacuum work on the URL.
func TestPostgreSQLURLs(t *testing.T) {
	url := pgSchema(t)
	path, cps := fixture(t, channels.ModeDelta)
	e1 := agentstate(t, nil, "export", path)
	want(t, e1, 0)
	r := agentstate(t, []byte(e1.stdout), "import", url)
	want(t, r, 0)
	contains(t, r.stdout, "imported")
	e2 := agentstate(t, nil, "export", url)
	want(t, e2, 0)
	if e1.stdout != e2.stdout {
		t.Fatal("file -> PostgreSQL -> export is not byte-identical")
	}
	back := filepath.Join(t.TempDir(), "back.db")
	want(t, agentstate(t, []byte(e2.stdout), "import", back), 0)
	if e3 := agentstate(t, nil, "export", back); e3.stdout != e1.stdout {
		t.Fatal("PostgreSQL -> file -> export is not byte-identical")
	}
	// The read-only commands print the same for the file and the URL.
	for _, args := range [][]string{
		{"threads", "--json"}, {"state", "--json", "X", "chat"}, {"history", "--json", "X", "chat"},
		{"runs", "--json", "X", "chat"}, {"events", "--json", "X", "chat"}, {"tokens", "--json", "X", "chat"},
		{"state", "--json", "--checkpoint", cps[3].CheckpointID, "X", "chat"},
	} {
		onFile := agentstate(t, nil, swap(args, path)...)
		onURL := agentstate(t, nil, swap(args, url)...)
		want(t, onFile, 0)
		want(t, onURL, 0)
		if onFile.stdout != onURL.stdout {
			t.Errorf("%v differs:\nfile: %s\nurl:  %s", args, onFile.stdout, onURL.stdout)
		}
	}
	info := agentstate(t, nil, "info", url)
	want(t, info, 0)
	contains(t, info.stdout, "schema version", "checkpoints")
	v := agentstate(t, nil, "verify", url)
	want(t, v, 0)
	contains(t, v.stdout, "ok")
	dry := agentstate(t, nil, "retain", "--keep-latest", "3", url)
	want(t, dry, 0)
	contains(t, dry.stdout, "would remove", "dry run")
	if e := agentstate(t, nil, "export", url); e.stdout != e1.stdout {
		t.Fatal("a dry run changed the database")
	}
	applied := agentstate(t, nil, "retain", "--keep-latest", "3", "--apply", url)
	want(t, applied, 0)
	contains(t, applied.stdout, "removed", "tables and indexes hold")
	want(t, agentstate(t, nil, "verify", url), 0)
	vac := agentstate(t, nil, "vacuum", url)
	want(t, vac, 0)
	contains(t, vac.stdout, "bytes before")
	want(t, agentstate(t, nil, "verify", url), 0)
}

// A password in a URL never reaches the output.
func TestPostgreSQLPasswordNotShown(t *testing.T) {
	url := pgSchema(t)
	secret := strings.Replace(url, "://postgres@", "://postgres:hunter2@", 1)
	secret = strings.Replace(secret, "search_path=", "search_path=no_such_", 1)
	if secret == url {
		t.Skip("the test server's URL has no user to give a password")
	}
	for _, args := range [][]string{{"info", secret}, {"verify", secret}, {"export", secret}} {
		r := agentstate(t, nil, args...)
		if r.code == 0 {
			t.Fatalf("%v on a missing schema succeeded", args[0])
		}
		if strings.Contains(r.stdout+r.stderr, "hunter2") {
			t.Fatalf("%v printed the password:\n%s%s", args[0], r.stdout, r.stderr)
		}
	}
}

func swap(args []string, target string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "X" {
			a = target
		}
		out[i] = a
	}
	if !strings.Contains(strings.Join(args, " "), "X") {
		out = append(out, target)
	}
	return out
}

// An empty schema is said to be empty, not sent to `agentstate upgrade`.
func TestPostgreSQLEmptySchemaIsNotOld(t *testing.T) {
	url := pgSchema(t)
	r := agentstate(t, nil, "info", url)
	want(t, r, 1)
	contains(t, r.stderr, "is empty", "holds no agentstate schema")
	if strings.Contains(r.stderr, "upgrade") || strings.Contains(r.stderr, "older") {
		t.Fatalf("an empty schema is sent to upgrade:\n%s", r.stderr)
	}
}
