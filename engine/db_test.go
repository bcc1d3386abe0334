package engine

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/engine/records"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite fixtures under testdata/")

const v1Fixture = "../testdata/schema_v1.db"

func openTest(t testing.TB, path string, opts *Options) *DB {
	t.Helper()
	db, err := Open(context.Background(), testPath(t, path), opts)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestOpenCreatesCurrentSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	db := openTest(t, path, nil)
	in, err := db.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if in.SchemaVersion != SchemaVersion || in.ApplicationID != ApplicationID {
		t.Fatalf("version %d app id %#x, want %d %#x", in.SchemaVersion, in.ApplicationID, SchemaVersion, ApplicationID)
	}
	if got := history(t, db); len(got) != SchemaVersion {
		t.Fatalf("schema_history has %v, want one row per version 1..%d", got, SchemaVersion)
	}
	if onPG() {
		return // no journal of ours: the server keeps its own WAL
	}
	var mode string
	db.read(context.Background(), func(c *conn) error {
		_, err := c.queryRow("PRAGMA journal_mode", nil, func(st row) error { mode = st.Text(0); return nil })
		return err
	})
	if mode != "wal" {
		t.Fatalf("journal_mode = %q, want wal", mode)
	}
}

func history(t testing.TB, db *DB) []int64 {
	t.Helper()
	var vs []int64
	err := db.read(context.Background(), func(c *conn) error {
		return c.query("SELECT version FROM schema_history ORDER BY version", nil, func(st row) error {
			vs = append(vs, st.Int64(0))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

func TestOptionsAreValidated(t *testing.T) {
	for _, tc := range []struct {
		field string
		mod   func(*Options)
	}{
		{"BusyTimeout", func(o *Options) { o.BusyTimeout = -time.Second }},
		{"ReadConns", func(o *Options) { o.ReadConns = 0 }},
		{"ReadConns", func(o *Options) { o.ReadConns = 65 }},
		{"Mode", func(o *Options) { o.Mode = "diff" }},
		{"SnapshotEvery", func(o *Options) { o.SnapshotEvery = 0 }},
		{"HistoryCacheBytes", func(o *Options) { o.HistoryCacheBytes = -1 }},
	} {
		o := DefaultOptions()
		tc.mod(&o)
		path := filepath.Join(t.TempDir(), "x.db")
		_, err := Open(context.Background(), testPath(t, path), &o)
		if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: err = %v, want ErrInvalidOption naming the field", tc.field, err)
		}
		if _, statErr := os.Stat(path); statErr == nil {
			t.Errorf("%s: a refused Open created the file", tc.field)
		}
	}
}

func TestUpgradeFromV1Fixture(t *testing.T) {
	sqliteOnly(t, "upgrades an SQLite file written at schema version 1; PostgreSQL schemas start at this version")
	data, err := os.ReadFile(v1Fixture)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "old.db")
	os.WriteFile(path, data, 0o644)
	db := openTest(t, path, nil)
	if got := history(t, db); len(got) != SchemaVersion || got[0] != 1 {
		t.Fatalf("history after upgrade = %v", got)
	}
	var rows []string
	err = db.read(context.Background(), func(c *conn) error {
		if ok, err := hasColumn(c, "writes", "task_path"); err != nil || !ok {
			return fmt.Errorf("task_path column missing after upgrade (err %v)", err)
		}
		return c.query("SELECT thread_id, checkpoint_id, task_path FROM writes", nil, func(st row) error {
			rows = append(rows, st.Text(0)+"/"+st.Text(1)+"/"+st.Text(2))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"fixture-thread/0001/"}, rows); diff != "" {
		t.Fatalf("rows written at v1 (-want +got):\n%s", diff)
	}
	// Upgrading is idempotent: running migration 2 again changes nothing.
	err = db.write(context.Background(), func(c *conn) error { return applyMigration(c, migrations()[1]) })
	if err != nil {
		t.Fatalf("re-applying migration 2: %v", err)
	}
	// The upgraded file has the schema of a file created at this version.
	// (The fixture's one write has no checkpoint: Verify names that, and
	// only that.)
	rep, err := db.Verify(context.Background(), admin.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		if p.Kind != "write" {
			t.Errorf("verify after upgrade: %v", p)
		}
	}
}

// v5Fixture is a file written by the last build at schema version 5 (the
// build before migration 6): engine/testdata/export_schema_v5.jsonl
// imported with that build's `agentstate import`, then `agentstate vacuum`;
// gzipped.
const v5Fixture = "../testdata/schema_v5.db.gz"

// A file written at schema version 5 (before writes, events and blobs were
// rebuilt as rowid tables with their values last, and before pending writes
// could be stored packed) upgrades in place: the same rows, every checkpoint
// read the same, the schema of a file created at this version, every check
// of verify; applying migration 6 again, to rows of both encodings, changes
// nothing.
func TestUpgradeFromV5File(t *testing.T) {
	sqliteOnly(t, "upgrades an SQLite file written at schema version 5 in place; migrations_pg/0006 only adds writes.enc")
	ctx := context.Background()
	dump, err := os.ReadFile("testdata/export_schema_v5.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.db")
	if _, err := ImportFile(ctx, ref, bytes.NewReader(dump), nil, admin.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	refDB := openRW(t, ref)
	want := exportOf(t, refDB, "")
	wantTuples := allTuples(t, refDB)
	if len(wantTuples) == 0 {
		t.Fatal("the fixture holds no checkpoints")
	}

	old := filepath.Join(dir, "v5.db")
	gz, err := os.Open(v5Fixture)
	if err != nil {
		t.Fatal(err)
	}
	defer gz.Close()
	zr, err := gzip.NewReader(gz)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if sql := rawSchemaSQL(t, old, "writes"); !strings.Contains(sql, "WITHOUT ROWID") || strings.Contains(sql, "enc") {
		t.Fatalf("the version 5 file's writes table is %s", sql)
	}

	o := DefaultOptions()
	o.Mode = channels.ModeAuto
	db := openTest(t, old, &o)
	if got := history(t, db); len(got) != SchemaVersion {
		t.Fatalf("history after upgrade = %v", got)
	}
	verifyOK := func(when string) {
		t.Helper()
		rep, err := db.Verify(ctx, admin.VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK {
			t.Fatalf("verify %s: %v", when, rep.Problems)
		}
	}
	check := func(when string, want []byte) {
		t.Helper()
		verifyOK(when)
		if got := exportOf(t, db, ""); !bytes.Equal(want, got) {
			t.Fatalf("export %s differs:\n%s", when, firstDiff(want, got))
		}
		// Rowid tables, whose value is their last column.
		for table, last := range map[string]string{"writes": "data", "events": "content", "blobs": "data"} {
			var sql string
			var cols []string
			err := db.read(ctx, func(c *conn) error {
				if _, err := c.queryRow("SELECT sql FROM sqlite_master WHERE name = ?", []any{table}, func(st row) error { sql = st.Text(0); return nil }); err != nil {
					return err
				}
				return c.query("SELECT name FROM pragma_table_info(?)", []any{table}, func(st row) error {
					cols = append(cols, st.Text(0))
					return nil
				})
			})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(sql, "WITHOUT ROWID") || len(cols) == 0 || cols[len(cols)-1] != last {
				t.Errorf("%s: table %s has columns %v: %s", when, table, cols, sql)
			}
		}
	}
	check("after the upgrade", want)
	if diff := cmp.Diff(wantTuples, allTuples(t, db)); diff != "" {
		t.Fatalf("checkpoints read after the upgrade (-want +got):\n%s", diff)
	}

	// The upgraded file takes new rows of every kind, a packed write among
	// them; running migration 6 again carries both encodings of writes.
	cfg := putVersion(t, db, "proto", 14, []byte(`["after the upgrade"]`))
	big := bytes.Repeat([]byte(`{"type":"ai","content":"the same words again and again"},`), 40)
	err = db.PutWrites(ctx, cfg, []Write{
		{Channel: "messages", Value: codec.Blob{Type: "json", Data: []byte(`"w"`)}},
		{Channel: "messages", Value: codec.Blob{Type: "json", Data: big}},
	}, "task", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Events().Put(ctx, records.Event{ThreadID: "proto", EventType: "note", Category: records.CategoryMessage, Content: "after"}); err != nil {
		t.Fatal(err)
	}
	verifyOK("after new rows")
	encs := func() map[int64]int {
		t.Helper()
		n := map[int64]int{}
		err := db.read(ctx, func(c *conn) error {
			return c.query("SELECT enc, count(*) FROM writes GROUP BY enc", nil, func(st row) error {
				n[st.Int64(0)] = int(st.Int64(1))
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := encs()
	if before[encPlain] == 0 || before[encPacked] != 1 {
		t.Fatalf("writes by encoding = %v, want plain ones and one packed", before)
	}
	withNew := exportOf(t, db, "")
	tuples := allTuples(t, db)
	// Migration 9 rebuilds events again (their owner column), so it runs
	// after 6 as it did in the upgrade.
	err = db.write(ctx, func(c *conn) error {
		if err := applyMigration(c, migrations()[5]); err != nil {
			return err
		}
		return applyMigration(c, migrations()[8])
	})
	if err != nil {
		t.Fatalf("re-applying migrations 6 and 9: %v", err)
	}
	check("after migration 6 ran again", withNew)
	if diff := cmp.Diff(before, encs()); diff != "" {
		t.Fatalf("writes by encoding after migration 6 ran again (-want +got):\n%s", diff)
	}
	// A second handle: its caches hold nothing, every value is read from
	// the rebuilt tables.
	fresh := openTest(t, old, &o)
	if diff := cmp.Diff(tuples, allTuples(t, fresh)); diff != "" {
		t.Fatalf("checkpoints read after migration 6 ran again (-want +got):\n%s", diff)
	}
}

// allTuples reads every checkpoint of db, with its values and writes.
func allTuples(t *testing.T, db *DB) []Tuple {
	t.Helper()
	var out []Tuple
	for tp, err := range db.List(context.Background(), ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tp)
	}
	return out
}

// rawSchemaSQL reads a table's CREATE statement through a bare
// connection, without opening (and so upgrading) the file.
func rawSchemaSQL(t *testing.T, path, table string) string {
	t.Helper()
	b, err := openBackend(path, DefaultOptions(), sqlFuncs())
	if err != nil {
		t.Fatal(err)
	}
	db := &DB{path: path, b: b, opts: DefaultOptions()}
	defer db.closeConns()
	c, err := db.dial(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	sql := ""
	found, err := c.queryRow("SELECT sql FROM sqlite_master WHERE name = ?", []any{table}, func(st row) error { sql = st.Text(0); return nil })
	if err != nil || !found {
		t.Fatalf("no table %s: %v", table, err)
	}
	return sql
}

// makeV1Fixture rewrites testdata/schema_v1.db (go test ./engine -update):
// a file at schema version 1 holding one pending write.
func makeV1Fixture() error {
	os.Remove(v1Fixture)
	b, err := openBackend(v1Fixture, DefaultOptions(), sqlFuncs())
	if err != nil {
		return err
	}
	db := &DB{path: v1Fixture, b: b, opts: DefaultOptions()}
	defer db.closeConns()
	ctx := context.Background()
	w, err := db.dial(ctx, true)
	if err != nil {
		return err
	}
	if _, err := db.migrateStep(ctx, w, 1); err != nil {
		return err
	}
	err = w.exec(`INSERT INTO writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, data)
		VALUES ('fixture-thread', '', '0001', 'task', 0, 'messages', 'json', x'5b5d')`)
	if err != nil {
		return err
	}
	return w.exec("VACUUM")
}

// rawFile makes a file with plain SQLite and returns its bytes.
func rawFile(t *testing.T, path string, stmts ...string) []byte {
	t.Helper()
	if err := rawSQL(path, stmts...); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// opensReadTheHeader: Open checks a file's first bytes itself (set by
// open_errors_test.go in the builds that do).
var opensReadTheHeader bool

func TestRefusesFilesItCannotOwn(t *testing.T) {
	if onPG() {
		testRefusesSchemasItCannotOwn(t)
		return
	}
	dir := t.TempDir()
	newer := filepath.Join(dir, "newer.db")
	db := openTest(t, newer, nil)
	db.Close()
	// A file that is not SQLite at all: where Open reads its first bytes
	// before SQLite does (native and WASI builds on ncruces), it is
	// ErrNotAgentstate, like any file another program wrote; builds on a
	// host's SQLite see only SQLite's "not a database" (ErrCorrupt; the npm
	// package checks Node files itself).
	notSQLite := ErrCorrupt
	if opensReadTheHeader {
		notSQLite = ErrNotAgentstate
	}
	cases := []struct {
		name string
		path string
		data []byte
		want error
	}{
		{"newer schema", newer, rawFile(t, newer, fmt.Sprintf("PRAGMA user_version=%d", SchemaVersion+1)), ErrSchemaTooNew},
		{"foreign app id", filepath.Join(dir, "foreign.db"), rawFile(t, filepath.Join(dir, "foreign.db"), "PRAGMA application_id=42", "CREATE TABLE t(x)"), ErrNotAgentstate},
		{"plain sqlite tables", filepath.Join(dir, "plain.db"), rawFile(t, filepath.Join(dir, "plain.db"), "CREATE TABLE users(name)"), ErrNotAgentstate},
		{"not sqlite at all", filepath.Join(dir, "garbage.db"), bytes.Repeat([]byte("not a database "), 400), notSQLite},
	}
	for _, tc := range cases {
		os.WriteFile(tc.path, tc.data, 0o644)
		_, err := Open(context.Background(), tc.path, nil)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
		after, _ := os.ReadFile(tc.path)
		if !bytes.Equal(after, tc.data) {
			t.Errorf("%s: the refused file changed", tc.name)
		}
		for _, ext := range []string{"-wal", "-shm", "-journal"} {
			if _, err := os.Stat(tc.path + ext); err == nil {
				t.Errorf("%s: a refused Open left %s behind", tc.name, ext)
			}
		}
	}
}

func TestContextCancelInterruptsStatement(t *testing.T) {
	db := openTest(t, Memory, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := db.read(ctx, func(c *conn) error {
		_, err := c.queryInt64("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n) SELECT count(*) FROM n")
		return err
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want it to match context.DeadlineExceeded", err)
	}
	// The connection is usable again afterwards.
	if _, err := db.Info(context.Background()); err != nil {
		t.Fatalf("after interrupt: %v", err)
	}
}

func TestClosedDBRefusesCalls(t *testing.T) {
	db := openTest(t, Memory, nil)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Info(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Info after Close: %v, want ErrClosed", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestMemoryDatabasesAreSeparate(t *testing.T) {
	a := openTest(t, Memory, nil)
	b := openTest(t, Memory, nil)
	a.write(context.Background(), func(c *conn) error { return c.exec("INSERT INTO meta VALUES ('k', 'a')") })
	var found bool
	b.read(context.Background(), func(c *conn) (err error) { _, found, err = metaGet(c, "k"); return err })
	if found {
		t.Fatal("second in-memory database sees a row of the first")
	}
}

func TestReadOnlyRefusesWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ro.db")
	openTest(t, path, nil).Close()
	o := DefaultOptions()
	o.ReadOnly = true
	db := openTest(t, path, &o)
	err := db.write(context.Background(), func(c *conn) error { return nil })
	if !errors.Is(err, ErrReadOnly) {
		t.Fatalf("write on read-only handle: %v", err)
	}
}

// childProcesses are the bodies of the child processes that tests about
// several processes start (this test binary again, with env=arg), by env;
// those tests register them (they do not exist in GOOS=js builds).
var childProcesses = map[string]func(string) error{}

func TestMain(m *testing.M) {
	flag.Parse()
	for env, child := range childProcesses {
		if arg := os.Getenv(env); arg != "" {
			if err := child(arg); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	if *update {
		if err := makeV1Fixture(); err != nil {
			fmt.Fprintln(os.Stderr, "make fixture:", err)
			os.Exit(1)
		}
	}
	os.Exit(runBackends(m))
}
