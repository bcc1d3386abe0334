//go:build !js && !(wasip1 && hostsqlite)

package engine

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/engine/internal/driver/sqlite"
	"github.com/agentstate/agentstate/engine/records"
)

// otherToolSchema is a file as an SQLAlchemy application with alembic
// leaves it (shaped like DeerFlow's deerflow.db): its own header field,
// tables with indexes, a view and a trigger, rows; among its tables one
// named like ours (runs), and LangGraph's SqliteSaver tables (checkpoints,
// writes), which a DeerFlow file that used it before holds.
const otherToolSchema = `
PRAGMA journal_mode=WAL;
PRAGMA user_version=42;
CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num));
INSERT INTO alembic_version VALUES ('0003_scheduled_tasks');
CREATE TABLE users (id VARCHAR(64) NOT NULL PRIMARY KEY, email VARCHAR(255) NOT NULL, created_at DATETIME NOT NULL);
CREATE UNIQUE INDEX ix_users_email ON users (email);
CREATE TABLE threads_meta (thread_id VARCHAR(64) NOT NULL PRIMARY KEY, user_id VARCHAR(64) REFERENCES users(id), display_name VARCHAR(256), metadata_json TEXT, updated_at DATETIME);
CREATE INDEX ix_threads_meta_user_id ON threads_meta (user_id);
CREATE TABLE runs (run_id VARCHAR(64) NOT NULL PRIMARY KEY, thread_id VARCHAR(64) NOT NULL, status VARCHAR(20) NOT NULL, total_tokens INTEGER DEFAULT 0);
CREATE INDEX ix_runs_thread_status ON runs (thread_id, status);
CREATE TABLE run_events (id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, thread_id VARCHAR(64) NOT NULL, seq INTEGER NOT NULL, content TEXT, blob BLOB);
CREATE UNIQUE INDEX uq_events_thread_seq ON run_events (thread_id, seq);
CREATE TABLE checkpoints (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '', checkpoint_id TEXT NOT NULL, checkpoint BLOB, PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id));
CREATE TABLE writes (thread_id TEXT NOT NULL, idx INTEGER NOT NULL, value BLOB);
CREATE TABLE audit (id INTEGER PRIMARY KEY, what TEXT);
CREATE TRIGGER runs_audit AFTER UPDATE ON runs BEGIN INSERT INTO audit(what) VALUES ('run ' || new.run_id); END;
CREATE VIEW active_runs AS SELECT r.run_id, t.display_name FROM runs r JOIN threads_meta t USING (thread_id) WHERE r.status = 'running';
INSERT INTO users VALUES ('u1', 'a@example.com', '2026-12-01 10:00:00'), ('u2', 'b@example.com', '2026-12-02 11:00:00');
INSERT INTO threads_meta VALUES ('t1', 'u1', 'First', '{"a": 1}', '2026-12-03 00:00:00');
INSERT INTO runs VALUES ('r1', 't1', 'running', 17), ('r2', 't1', 'success', 2);
INSERT INTO run_events(thread_id, seq, content, blob) VALUES ('t1', 1, 'hello', x'00ff10'), ('t1', 2, NULL, NULL);
INSERT INTO checkpoints VALUES ('t1', '', 'c1', x'0102');
INSERT INTO writes VALUES ('t1', 0, x'03');
UPDATE runs SET status = 'error' WHERE run_id = 'r2';
`

// rawSQLite opens path with SQLite directly, as the other tool does.
func rawSQLite(t *testing.T, path string) *sqlite.Conn {
	t.Helper()
	c, err := sqlite.Open(path, sqlite.Options{Create: true, BusyTimeout: 5e9})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rawQuery returns the rows of q as text, one line a row.
func rawQuery(t *testing.T, c *sqlite.Conn, q string) []string {
	t.Helper()
	var out []string
	err := c.Query(q, nil, func(r driver.Row) error {
		var cols []string
		for i := range r.Columns() {
			cols = append(cols, r.Text(i))
		}
		out = append(out, strings.Join(cols, "|"))
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// otherToolDump is everything of the other tool's in the file: its header
// fields and settings, the text of every object not named agentstate_*, and
// every row of its tables (rowid and each column, quoted as SQLite quotes
// it, so bytes and types count).
func otherToolDump(t *testing.T, path string) string {
	t.Helper()
	c := rawSQLite(t, path)
	defer c.Close()
	var b strings.Builder
	for _, p := range []string{"application_id", "user_version", "auto_vacuum", "page_size"} {
		fmt.Fprintf(&b, "%s=%v\n", p, rawQuery(t, c, "PRAGMA "+p))
	}
	objs := rawQuery(t, c, `SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master WHERE name NOT LIKE 'agentstate\_%' ESCAPE '\' AND tbl_name NOT LIKE 'agentstate\_%' ESCAPE '\' ORDER BY name`)
	for _, o := range objs {
		fmt.Fprintf(&b, "%s\n", o)
	}
	for _, table := range rawQuery(t, c, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'agentstate\_%' ESCAPE '\' ORDER BY name`) {
		cols := rawQuery(t, c, fmt.Sprintf(`SELECT 'quote("' || name || '")' FROM pragma_table_info('%s') ORDER BY cid`, table))
		for _, r := range rawQuery(t, c, fmt.Sprintf(`SELECT quote(rowid), %s FROM "%s" ORDER BY rowid`, strings.Join(cols, ", "), table)) {
			fmt.Fprintf(&b, "%s: %s\n", table, r)
		}
	}
	return b.String()
}

func newOtherToolFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "deerflow.db")
	c := rawSQLite(t, path)
	if err := c.ExecScript(otherToolSchema, nil); err != nil {
		t.Fatal(err)
	}
	c.Close()
	return path
}

func msgCount(st State) int {
	ms, _ := st.Values["messages"].([]codec.Message)
	return len(ms)
}

func sharedOptions() *Options {
	o := DefaultOptions()
	o.SharedFile = true
	return &o
}

// A file of another tool is refused by a plain open, as before, with an
// error that names the option; the file is as it was.
func TestSharedFileRefusedWithoutTheOption(t *testing.T) {
	sqliteOnly(t, "a shared file is an SQLite file")
	path := newOtherToolFile(t)
	before := otherToolDump(t, path)
	_, err := Open(bg, path, nil)
	if !errors.Is(err, ErrNotAgentstate) || !strings.Contains(err.Error(), "Options.SharedFile") {
		t.Fatalf("plain open of another tool's file: %v, want ErrNotAgentstate naming Options.SharedFile", err)
	}
	if after := otherToolDump(t, path); after != before {
		t.Fatalf("a refused open changed the file:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// Opened shared, agentstate creates its objects beside the other tool's,
// every surface works, verify, info and retain work, and nothing of the
// other tool's changes: not a row, not an object, not a header field.
func TestSharedFileBesideAnotherToolsTables(t *testing.T) {
	sqliteOnly(t, "a shared file is an SQLite file")
	path := newOtherToolFile(t)
	before := otherToolDump(t, path)

	db, err := Open(bg, path, sharedOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if !db.Options().SharedFile {
		t.Fatal("Options().SharedFile is false on a shared file")
	}
	var last Config
	for i := range 12 {
		last = mustCommit(t, db, "th", Step{Tasks: []TaskWrites{say("user", human(fmt.Sprint("h", i), "hi"))}, RunID: "r1"})
	}
	st, err := db.State(bg, last)
	if err != nil || msgCount(st) != 12 {
		t.Fatalf("state: %v, %d messages", err, msgCount(st))
	}
	ns := []string{"users", "u1", "memories"}
	if err := db.Store().Put(bg, ns, "k", map[string]any{"text": "likes tea"}); err != nil {
		t.Fatal(err)
	}
	if it, err := db.Store().Get(bg, ns, "k"); err != nil || it.Value["text"] != "likes tea" {
		t.Fatalf("store get: %v %v", it, err)
	}
	run, err := db.Runs().Create(bg, records.NewRun{ThreadID: "th", Status: records.RunRunning})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Events().Put(bg, records.Event{ThreadID: "th", RunID: run.Run.RunID, EventType: "ai_message", Category: records.CategoryMessage, Content: "hello"}); err != nil {
		t.Fatal(err)
	}

	// The other tool goes on writing its tables while agentstate has the
	// file open (both in WAL).
	other := rawSQLite(t, path)
	if _, err := other.Exec(`INSERT INTO audit(what) VALUES ('concurrent')`); err != nil {
		t.Fatalf("the other tool cannot write beside an open handle: %v", err)
	}
	if _, err := other.Exec(`DELETE FROM audit WHERE what = 'concurrent'`); err != nil {
		t.Fatal(err)
	}
	other.Close()

	rep, err := db.Retain(bg, admin.RetainOptions{ThreadID: "th", KeepLatest: 2})
	if err != nil || rep.CheckpointsRemoved == 0 {
		t.Fatalf("retain: %+v %v", rep, err)
	}
	vr, err := db.Verify(bg, admin.VerifyOptions{})
	if err != nil || !vr.OK {
		t.Fatalf("verify: %v %+v", err, vr.Problems)
	}
	in, err := db.Info(bg)
	if err != nil {
		t.Fatal(err)
	}
	if !in.Shared || in.ApplicationID != ApplicationID || in.SchemaVersion != SchemaVersion {
		t.Fatalf("info: shared %v, application id %#x, version %d", in.Shared, in.ApplicationID, in.SchemaVersion)
	}
	for name := range in.Rows {
		if !strings.HasPrefix(name, sharedPrefix) {
			t.Errorf("info counts %q, not a table of agentstate's", name)
		}
	}
	if in.Rows["agentstate_checkpoints"] == 0 || in.Rows["agentstate_store_items"] != 1 || in.Rows["agentstate_runs"] != 1 {
		t.Errorf("info rows: %v", in.Rows)
	}
	if err := db.Vacuum(bg); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Vacuum of a shared file: %v, want ErrInvalidArgument", err)
	}
	if _, err := db.CheckpointWAL(bg); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	if after := otherToolDump(t, path); after != before {
		t.Fatalf("the other tool's objects changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// Every object of ours is named agentstate_*, and they are those the
	// build creates in a shared file.
	want, err := expectedSharedSchema()
	if err != nil {
		t.Fatal(err)
	}
	c := rawSQLite(t, path)
	ours := rawQuery(t, c, `SELECT name FROM sqlite_master WHERE name LIKE 'agentstate\_%' ESCAPE '\' OR tbl_name LIKE 'agentstate\_%' ESCAPE '\' ORDER BY name`)
	c.Close()
	var wantNames []string
	for name := range want {
		wantNames = append(wantNames, name)
	}
	slices.Sort(wantNames)
	var gotNames []string
	for _, n := range ours {
		if !strings.HasPrefix(n, "sqlite_autoindex_agentstate_") {
			gotNames = append(gotNames, n)
		}
	}
	if !slices.Equal(gotNames, wantNames) {
		t.Fatalf("our objects %v, want %v", gotNames, wantNames)
	}

	// A plain open (the CLI's, another program's) finds the marker and
	// opens the file as shared; so does a read-only one.
	for _, o := range []*Options{nil, {ReadOnly: true}} {
		opts := DefaultOptions()
		if o != nil {
			opts.ReadOnly = o.ReadOnly
		}
		again, err := Open(bg, path, &opts)
		if err != nil {
			t.Fatalf("plain open of a shared file (read-only %v): %v", opts.ReadOnly, err)
		}
		if !again.Options().SharedFile {
			t.Errorf("plain open: Options().SharedFile is false")
		}
		st, err := again.State(bg, Config{ThreadID: "th"})
		if err != nil || msgCount(st) != 12 {
			t.Fatalf("state after reopen: %v, %d messages", err, msgCount(st))
		}
		if vr, err := again.Verify(bg, admin.VerifyOptions{}); err != nil || !vr.OK {
			t.Fatalf("verify after reopen: %v %+v", err, vr.Problems)
		}
		again.Close()
	}
	if after := otherToolDump(t, path); after != before {
		t.Fatalf("a reopen changed the other tool's objects:\n%s", after)
	}
}

// An empty file opened shared gets our objects and the marker and no
// header field or setting of ours; the other tool's migrations may create
// their tables afterwards, and the file still opens.
func TestSharedFileEmptyFirst(t *testing.T) {
	sqliteOnly(t, "a shared file is an SQLite file")
	path := filepath.Join(t.TempDir(), "deerflow.db")
	db, err := Open(bg, path, sharedOptions())
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, db, "th", Step{Tasks: []TaskWrites{say("user", human("h", "hi"))}})
	db.Close()
	c := rawSQLite(t, path)
	for p, want := range map[string]string{"application_id": "0", "user_version": "0", "auto_vacuum": "0", "journal_mode": "wal"} {
		if got := rawQuery(t, c, "PRAGMA "+p); len(got) != 1 || got[0] != want {
			t.Errorf("PRAGMA %s = %v, want %s", p, got, want)
		}
	}
	if err := c.ExecScript(otherToolSchema, nil); err != nil {
		t.Fatalf("the other tool's migrations in a file agentstate made shared: %v", err)
	}
	c.Close()
	for _, o := range []*Options{nil, sharedOptions()} {
		db, err := Open(bg, path, o)
		if err != nil {
			t.Fatal(err)
		}
		if vr, err := db.Verify(bg, admin.VerifyOptions{}); err != nil || !vr.OK {
			t.Fatalf("verify: %v %+v", err, vr.Problems)
		}
		db.Close()
	}
}

// SharedFile on a file of agentstate's own opens it as it is; on a fresh
// in-memory database it is refused.
func TestSharedFileOptionOnOurOwnFile(t *testing.T) {
	sqliteOnly(t, "a shared file is an SQLite file")
	path := filepath.Join(t.TempDir(), "own.db")
	db := openTest(t, path, nil)
	mustCommit(t, db, "th", Step{Tasks: []TaskWrites{say("user", human("h", "hi"))}})
	db.Close()
	db, err := Open(bg, path, sharedOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Options().SharedFile {
		t.Error("a file of agentstate's own opened with SharedFile reports it shared")
	}
	if in, err := db.Info(bg); err != nil || in.Shared || in.Rows["checkpoints"] == 0 {
		t.Fatalf("info: %+v %v", in, err)
	}
	if _, err := Open(bg, Memory, sharedOptions()); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("SharedFile on Memory: %v, want ErrInvalidOption", err)
	}
}

// A file whose agentstate_* objects agentstate did not make (no marker) is
// not taken for ours.
func TestSharedFileForeignPrefixRefused(t *testing.T) {
	sqliteOnly(t, "a shared file is an SQLite file")
	path := newOtherToolFile(t)
	c := rawSQLite(t, path)
	if _, err := c.Exec(`CREATE TABLE agentstate_runs (x)`); err != nil {
		t.Fatal(err)
	}
	c.Close()
	before := otherToolDump(t, path)
	if _, err := Open(bg, path, sharedOptions()); !errors.Is(err, ErrNotAgentstate) {
		t.Fatalf("open: %v, want ErrNotAgentstate", err)
	}
	if after := otherToolDump(t, path); after != before {
		t.Fatal("a refused open changed the file")
	}
}

// The names the shared rewrite prefixes are every object of the schema,
// and none of them is a column's name (the rewrite renames every
// identifier so spelled).
func TestSharedNamesAreTheSchema(t *testing.T) {
	want, err := expectedSchema()
	if err != nil {
		t.Fatal(err)
	}
	names := sharedNames()
	for name := range want {
		if !names[strings.ToLower(name)] {
			t.Errorf("%q is not among the shared names %v", name, slices.Sorted(maps.Keys(names)))
		}
	}
	shared, err := expectedSharedSchema()
	if err != nil {
		t.Fatal(err)
	}
	if len(shared) != len(want)+1 {
		t.Errorf("a shared file has %d objects, want %d and the marker", len(shared), len(want))
	}
	for name, o := range want {
		if s, ok := shared[sharedPrefix+name]; !ok || s.typ != o.typ || s.sql != sharedSQL(o.sql) {
			t.Errorf("%s in a shared file: %+v, want %q", name, s, sharedSQL(o.sql))
		}
	}
	d, err := scratchConn()
	if err != nil {
		t.Fatal(err)
	}
	c := &conn{d: d}
	defer c.close()
	if err := c.d.ExecScript(freshSchema, nil); err != nil {
		t.Fatal(err)
	}
	err = c.query(`SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table'`, nil, func(r row) error {
		if names[strings.ToLower(r.Text(1))] {
			t.Errorf("column %s.%s is named like an object of the schema", r.Text(0), r.Text(1))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSharedSQLRewrite(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`SELECT 'runs' FROM runs WHERE thread_id = ?1`, `SELECT 'runs' FROM agentstate_runs WHERE thread_id = ?1`},
		{`INSERT INTO "writes"(a) SELECT x FROM blobs INDEXED BY blobs_by_checkpoint`, `INSERT INTO "agentstate_writes"(a) SELECT x FROM agentstate_blobs INDEXED BY agentstate_blobs_by_checkpoint`},
		{"-- runs\nSELECT runs.status FROM runs /* threads */", "-- runs\nSELECT agentstate_runs.status FROM agentstate_runs /* threads */"},
		{`SELECT :runs, @runs, $runs, threads_meta, Threads FROM [events]`, `SELECT :runs, @runs, $runs, threads_meta, agentstate_Threads FROM [agentstate_events]`},
		{`SELECT 'it''s runs' FROM agentstate_runs`, `SELECT 'it''s runs' FROM agentstate_runs`},
		{"PRAGMA user_version", "SELECT schema_version FROM agentstate_header"},
	} {
		if got := sharedSQL(c.in); got != c.want {
			t.Errorf("sharedSQL(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}

// docs/format.md, "Shared files", names every object of ours a shared file
// holds, so that another tool's migrations can be told to leave them alone.
func TestSharedFileNamesAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/format.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "### Shared files\n")
	if !ok {
		t.Fatal(`docs/format.md has no "### Shared files" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	shared, err := expectedSharedSchema()
	if err != nil {
		t.Fatal(err)
	}
	for name := range shared {
		if !strings.Contains(sec, "`"+name+"`") {
			t.Errorf("docs/format.md, Shared files, does not name %s %s", shared[name].typ, name)
		}
	}
}

// The marker's version is the file's: a newer one is refused as a newer
// file is; a read-only handle does not create our objects.
func TestSharedFileMarkerVersionAndReadOnly(t *testing.T) {
	sqliteOnly(t, "a shared file is an SQLite file")
	path := newOtherToolFile(t)
	o := sharedOptions()
	o.ReadOnly = true
	if _, err := Open(bg, path, o); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only shared open of a file without our objects: %v, want ErrReadOnly", err)
	}
	db, err := Open(bg, path, sharedOptions())
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	c := rawSQLite(t, path)
	if _, err := c.Exec(`UPDATE agentstate_header SET schema_version = 99`); err != nil {
		t.Fatal(err)
	}
	c.Close()
	before := otherToolDump(t, path)
	for _, o := range []*Options{nil, sharedOptions()} {
		if _, err := Open(bg, path, o); !errors.Is(err, ErrSchemaTooNew) {
			t.Fatalf("open of a shared file of schema 99: %v, want ErrSchemaTooNew", err)
		}
	}
	if after := otherToolDump(t, path); after != before {
		t.Fatal("a refused open changed the file")
	}
}
