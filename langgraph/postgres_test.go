//go:build !wasip1 && !js

package langgraph

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/internal/testpg"
	"github.com/jackc/pgx/v5/pgconn"
)

// pgDatabase creates a fresh database on the test server, dropped when the
// test ends, restores dump into it with psql (if dump is not empty), and
// returns its URL.
func pgDatabase(t *testing.T, dump string) string {
	t.Helper()
	ctx := context.Background()
	server := testpg.URL(t)
	conn, err := pgconn.Connect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	rand.Read(b[:])
	name := "lgimport_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name).ReadAll(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgconn.Connect(context.Background(), server)
		if err == nil {
			c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)").ReadAll()
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

func TestImportLangGraphPostgres(t *testing.T) {
	ctx := context.Background()
	src := pgDatabase(t, filepath.Join(pyDir, "langgraph-py-postgres.sql"))
	exp := loadExpected(t, filepath.Join(pyDir, "expected-py-postgres.json"))
	for _, mode := range []channels.Mode{channels.ModeFull, channels.ModeDelta} {
		t.Run(string(mode), func(t *testing.T) {
			db := openDst(t, mode, 3)
			rep, err := Import(ctx, db, src, pyOptions)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Saver != "postgres" || rep.Threads != 8 || rep.Checkpoints != exp.Checkpoints {
				t.Fatalf("report %+v", rep)
			}
			vr, err := db.Verify(ctx, admin.VerifyOptions{})
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

// TestImportProtocolPostgres: a PostgresSaver database into the protocol's
// form: every checkpoint as LangGraph read it back from the saver (its
// blobs by version, its inline values), byte for byte against the source.
func TestImportProtocolPostgres(t *testing.T) {
	ctx := context.Background()
	src := pgDatabase(t, filepath.Join(pyDir, "langgraph-py-postgres.sql"))
	exp := loadExpected(t, filepath.Join(pyDir, "expected-py-postgres.json"))
	db := openDst(t, channels.ModeDelta, 10)
	rep, err := Import(ctx, db, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Saver != "postgres" || rep.Into != string(IntoProtocol) || rep.Threads != 8 || rep.Checkpoints != exp.Checkpoints {
		t.Fatalf("report %+v", rep)
	}
	if vr, err := db.Verify(ctx, admin.VerifyOptions{}); err != nil || !vr.OK {
		t.Fatalf("verify: %v %v", err, vr.Problems)
	}
	n, diffs, err := Compare(ctx, db, src, Options{})
	if err != nil || n != exp.Checkpoints || len(diffs) > 0 {
		t.Fatalf("compare: %d %v %v", n, err, diffs)
	}
	checkRawTuples(t, db, exp)
}

func pgExec(t *testing.T, dbURL string, sql ...string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgconn.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range sql {
		if _, err := conn.Exec(ctx, q).ReadAll(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func TestLangGraphPostgresRefusals(t *testing.T) {
	ctx := context.Background()
	dump := filepath.Join(pyDir, "langgraph-py-postgres.sql")
	t.Run("foreign layout", func(t *testing.T) {
		// A bound for the endless view's case, which was read for ever.
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		for _, tc := range []struct{ sql, want string }{
			{`DROP TABLE checkpoint_migrations`, "has no table checkpoint_migrations"},
			{`ALTER TABLE checkpoint_blobs DROP COLUMN version`, "table checkpoint_blobs has no column version"},
			{`ALTER TABLE checkpoints ALTER COLUMN checkpoint TYPE text`, "column checkpoints.checkpoint is text, not jsonb"},
			{`DROP TABLE checkpoints; CREATE VIEW checkpoints AS WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM r)
				SELECT 'chat'::text AS thread_id, ''::text AS checkpoint_ns, x::text AS checkpoint_id, NULL::text AS parent_checkpoint_id,
				NULL::text AS type, '{}'::jsonb AS checkpoint, '{}'::jsonb AS metadata FROM r`, `"checkpoints" is a view, not a table`},
		} {
			src := pgDatabase(t, dump)
			pgExec(t, src, tc.sql)
			db, before := seededDst(t)
			_, err := Import(ctx, db, src, pyOptions)
			if !errors.Is(err, ErrUnsupportedSource) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s: %v", tc.sql, err)
			}
			if fingerprint(t, db) != before {
				t.Fatal("a failed import changed the destination")
			}
		}
		// An empty database, and a URL with a password: the error shows it redacted.
		src := pgDatabase(t, "")
		u, _ := url.Parse(src)
		u.User = url.UserPassword(u.User.Username(), "s3cret")
		db, _ := seededDst(t)
		_, err := Import(ctx, db, u.String(), pyOptions)
		if !errors.Is(err, ErrUnsupportedSource) || strings.Contains(err.Error(), "s3cret") {
			t.Fatalf("empty database: %v", err)
		}
	})
	t.Run("damaged values", func(t *testing.T) {
		src := pgDatabase(t, dump)
		pgExec(t, src,
			`UPDATE checkpoint_blobs SET blob = substring(blob from 1 for 30) WHERE thread_id = 'chat' AND channel = 'messages'`,
			`UPDATE checkpoint_writes SET blob = '\xd4 2a 90'::bytea WHERE thread_id = 'types' AND channel = 'when'`)
		db, before := seededDst(t)
		_, err := Import(ctx, db, src, pyOptions)
		var ue *UnsupportedError
		if !errors.As(err, &ue) || len(ue.Problems) != 2 {
			t.Fatalf("import: %v", err)
		}
		for i, w := range []struct{ thread, channel, reason string }{{"chat", "messages", "truncated"}, {"types", "when", "unknown msgpack extension type 42"}} {
			p := ue.Problems[i]
			if p.ThreadID != w.thread || p.Channel != w.channel || p.CheckpointID == "" || !strings.Contains(p.Reason, w.reason) {
				t.Errorf("problem %d: %+v, want %+v", i, p, w)
			}
		}
		if fingerprint(t, db) != before {
			t.Fatal("a failed import changed the destination")
		}
	})
	t.Run("values past the engine's limits", func(t *testing.T) {
		// Refused by their sizes, which the server computes: no such row is
		// read into memory.
		src := pgDatabase(t, dump)
		pgExec(t, src,
			`UPDATE checkpoint_blobs SET blob = convert_to(repeat('x', 65 << 20), 'UTF8') WHERE thread_id = 'chat' AND channel = 'messages'`,
			`UPDATE checkpoint_writes SET blob = convert_to(repeat('x', (16 << 20) + 1), 'UTF8') WHERE thread_id = 'types' AND channel = 'when'`,
			`UPDATE checkpoints SET metadata = jsonb_build_object('big', repeat('x', 16 << 20)) WHERE thread_id = 'fork'`)
		for _, into := range []Into{IntoProtocol, IntoMessages} {
			db, before := seededDst(t)
			o := pyOptions
			o.Into = into
			_, err := Import(ctx, db, src, o)
			var ue *UnsupportedError
			if !errors.As(err, &ue) || !errors.Is(err, engine.ErrTooLarge) || len(ue.Problems) != 3 {
				t.Fatalf("%s: import: %v, want 3 problems and ErrTooLarge", into, err)
			}
			for i, w := range []struct{ thread, channel, reason string }{
				{"chat", "messages", "more than engine.MaxListBytes"},
				{"fork", "", "the metadata is"},
				{"types", "when", "more than engine.MaxValueBytes"},
			} {
				p := ue.Problems[i]
				if p.ThreadID != w.thread || p.Channel != w.channel || !strings.Contains(p.Reason, w.reason) {
					t.Errorf("%s: problem %d: %+v, want %+v", into, i, p, w)
				}
			}
			if fingerprint(t, db) != before {
				t.Fatal("a failed import changed the destination")
			}
		}
	})
}
