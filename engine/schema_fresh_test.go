package engine

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/engine/admin"
)

// scratchTest is a private empty in-memory database, closed with the test.
func scratchTest(t *testing.T) *conn {
	t.Helper()
	d, err := scratchConn()
	if err != nil {
		t.Fatal(err)
	}
	c := &conn{d: d}
	t.Cleanup(func() { c.close() })
	return c
}

// renderFreshSchema is schema_fresh.sql as the migrations make it: every
// object they leave in sqlite_master, in the order they created it.
func renderFreshSchema(t *testing.T) string {
	t.Helper()
	c := scratchTest(t)
	for _, m := range migrations() {
		if err := applyMigration(c, m); err != nil {
			t.Fatalf("migration %d: %v", m.version, err)
		}
	}
	var b strings.Builder
	b.WriteString("-- The schema the migrations of migrations/ leave, object by object in\n" +
		"-- the order they created them, for an empty file to get in one step.\n" +
		"-- Written by TestFreshSchemaIsTheMigrations (AGENTSTATE_UPDATE=1): do not edit.\n")
	err := c.query(`SELECT sql FROM sqlite_master WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\' AND sql IS NOT NULL ORDER BY rowid`, nil, func(r row) error {
		b.WriteString("\n" + r.Text(0) + ";\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestFreshSchemaIsTheMigrations holds schema_fresh.sql to the migrations:
// its text is what they leave, and a file created from it has, object for
// object, the schema text, history and header of a file migrated step by
// step, and verifies.
func TestFreshSchemaIsTheMigrations(t *testing.T) {
	want := renderFreshSchema(t)
	if os.Getenv("AGENTSTATE_UPDATE") == "1" {
		if err := os.WriteFile("schema_fresh.sql", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("wrote schema_fresh.sql")
		return
	}
	if freshSchema != want {
		t.Fatal("schema_fresh.sql is not what the migrations leave: run AGENTSTATE_UPDATE=1 go test ./engine -run TestFreshSchemaIsTheMigrations")
	}

	// A file created fresh, against the migrations run one by one (an
	// SQLite file whichever backend the suite runs on: the text compared is
	// sqlite_master's).
	db, err := Open(rctx, filepath.Join(t.TempDir(), "fresh.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var got map[string]schemaObject
	var history int64
	var st fileState
	err = db.read(rctx, func(c *conn) (err error) {
		if got, err = readSchema(c); err != nil {
			return err
		}
		if _, err = c.queryRow(sqlSchemaVerify, nil, func(r row) error { history = r.Int64(0); return nil }); err != nil {
			return err
		}
		st, err = readFileState(c)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	exp, err := expectedSchema()
	if err != nil {
		t.Fatal(err)
	}
	if len(exp) < 10 {
		t.Fatalf("the migrations made only %d objects", len(exp))
	}
	if !maps.Equal(got, exp) {
		for name, o := range exp {
			if got[name] != o {
				t.Errorf("%s: created %q, the migrations make %q", name, got[name].sql, o.sql)
			}
		}
		for name := range got {
			if _, ok := exp[name]; !ok {
				t.Errorf("%s: created, not made by the migrations", name)
			}
		}
	}
	if history != int64(len(migrations())) || st.version != SchemaVersion || st.appID != ApplicationID {
		t.Errorf("history %d rows, version %d, application id %#x; want %d, %d, %#x", history, st.version, st.appID, len(migrations()), SchemaVersion, ApplicationID)
	}
	rep, err := db.Verify(rctx, admin.VerifyOptions{})
	if err != nil || !rep.OK {
		t.Fatalf("a fresh file does not verify: %v %v", err, rep.Problems)
	}
}

// BenchmarkOpenFresh opens a new file and closes it: what the schema costs
// a first open.
func BenchmarkOpenFresh(b *testing.B) {
	dir := b.TempDir()
	for i := range b.N {
		db, err := Open(rctx, filepath.Join(dir, fmt.Sprintf("f%d.db", i)), nil)
		if err != nil {
			b.Fatal(err)
		}
		db.Close()
	}
}

// BenchmarkOpenFreshMemory is the same for a private in-memory database.
func BenchmarkOpenFreshMemory(b *testing.B) {
	for range b.N {
		db, err := Open(rctx, Memory, nil)
		if err != nil {
			b.Fatal(err)
		}
		db.Close()
	}
}

// TestMemoryOpensTheSchema: a fresh in-memory database (in the builds on
// the host's SQLite, the build's empty image; CI runs this under GOOS=js,
// and the Python suite checks the reactor's) has the migrations' schema,
// one history row per migration stamped at this open, and verifies.
func TestMemoryOpensTheSchema(t *testing.T) {
	before := time.Now().UTC().Add(-time.Second)
	db, err := Open(rctx, Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	exp, err := expectedSchema()
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]schemaObject
	var stamps []string
	err = db.read(rctx, func(c *conn) (err error) {
		if got, err = readSchema(c); err != nil {
			return err
		}
		return c.query(`SELECT applied_at FROM schema_history ORDER BY version`, nil, func(r row) error {
			stamps = append(stamps, r.Text(0))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, exp) {
		t.Errorf("an in-memory database has %d schema objects unlike the migrations' %d", len(got), len(exp))
	}
	if len(stamps) != len(migrations()) {
		t.Fatalf("history %v, want %d rows", stamps, len(migrations()))
	}
	for _, s := range stamps {
		if at, err := time.Parse(time.RFC3339Nano, s); err != nil || at.Before(before) {
			t.Errorf("a migration recorded at %q, before this open (%v)", s, before)
		}
	}
	rep, err := db.Verify(rctx, admin.VerifyOptions{})
	if err != nil || !rep.OK {
		t.Fatalf("does not verify: %v %v", err, rep.Problems)
	}
}
