package langgraph

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/engine"
	"github.com/jackc/pgx/v5"
)

// pgServer is the test server's URL (AGENTSTATE_TEST_PG, which
// .ci/with-postgres sets). Without it the PostgreSQL tests skip, loudly,
// unless AGENTSTATE_CI is set: then they fail.
func pgServer(t *testing.T) string {
	t.Helper()
	u := os.Getenv("AGENTSTATE_TEST_PG")
	if u == "" {
		if os.Getenv("AGENTSTATE_CI") != "" {
			t.Fatal("AGENTSTATE_TEST_PG is not set: CI must run the PostgreSQL tests (.ci/with-postgres)")
		}
		t.Skip("PostgreSQL tests not run: set AGENTSTATE_TEST_PG=postgres://... (see .ci/with-postgres)")
	}
	return u
}

// pgDatabase creates a fresh database on the test server, dropped when the
// test ends, restores dump into it with psql (if dump is not empty), and
// returns its URL.
func pgDatabase(t *testing.T, dump string) string {
	t.Helper()
	ctx := context.Background()
	server := pgServer(t)
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	rand.Read(b[:])
	name := "lgimport_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), server)
		if err == nil {
			c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(context.Background())
		}
	})
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	if dump != "" {
		out, err := exec.Command(psqlPath(t), "-q", "-v", "ON_ERROR_STOP=1", "-d", u.String(), "-f", dump).CombinedOutput()
		if err != nil {
			t.Fatalf("psql %s: %v\n%s", dump, err, out)
		}
	}
	return u.String()
}

func psqlPath(t *testing.T) string {
	if p, err := exec.LookPath("psql"); err == nil {
		return p
	}
	ps, _ := filepath.Glob("/usr/lib/postgresql/*/bin/psql")
	if len(ps) == 0 {
		t.Fatal("no psql: install PostgreSQL's client")
	}
	return ps[len(ps)-1]
}

func TestImportPostgres(t *testing.T) {
	ctx := context.Background()
	src := pgDatabase(t, filepath.Join(pyDir, "langgraph-py-postgres.sql"))
	exp := loadExpected(t, filepath.Join(pyDir, "expected-py-postgres.json"))
	for _, mode := range []string{engine.ModeFull, engine.ModeDelta} {
		t.Run(mode, func(t *testing.T) {
			db := openDst(t, mode, 3)
			rep, err := Import(ctx, db, src, pyOptions)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Saver != "postgres" || rep.Threads != 8 || rep.Checkpoints != exp.Checkpoints {
				t.Fatalf("report %+v", rep)
			}
			vr, err := db.Verify(ctx, engine.VerifyOptions{})
			if err != nil || !vr.OK {
				t.Fatalf("verify: %v %v", err, vr.Problems)
			}
			checkExpected(t, db, exp)
			n, diffs, err := Compare(ctx, db, src, pyOptions)
			if err != nil || n != exp.Checkpoints || len(diffs) > 0 {
				t.Fatalf("compare: %d %v %v", n, err, diffs)
			}
		})
	}
}
