package engine

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentstate/agentstate/engine/internal/driver"
)

// ApplicationID is written to the SQLite header of every agentstate file
// ("AgSt"), so that a file written by something else is recognised.
const ApplicationID = 0x41675374

//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the numbered files of migrations/, in order. Their
// count is the current schema version. They are read at first use, not at
// package initialisation: a fresh in-memory database (the build's image)
// and a file already at this version never need them, and in the
// WebAssembly builds reading them was a start-up cost of every process.
var migrations = sync.OnceValue(mustLoadMigrations)

// SchemaVersion is the schema version this build writes and reads: the
// number of files in migrations/ (TestSchemaVersionCountsMigrations).
const SchemaVersion = 10

func mustLoadMigrations() []migration {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		panic(err)
	}
	var ms []migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			panic("agentstate: migration file name " + e.Name() + " is not NNNN_name.sql")
		}
		// A ReadDir name has no separator, so no path.Join: in the js build
		// V8 recompiled its Clean with the optimising tier at every start.
		b, err := migrationFS.ReadFile("migrations/" + e.Name())
		if err != nil {
			panic(err)
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			panic(fmt.Sprintf("agentstate: migrations are not numbered 1..n: found %d at position %d", m.version, i+1))
		}
	}
	return ms
}

// fileState is what the SQLite header and catalogue say about a file.
type fileState struct {
	appID, version int64
	objects        int64 // rows of sqlite_master (a shared file: ours)
	// marker: the file holds sharedMarker (a shared file of ours).
	marker bool
	// shared: read as a shared file; appID and version are the marker's,
	// fileAppID the SQLite header's (the other tool's, or 0).
	shared    bool
	fileAppID int64
}

// readFileState reads the header fields and the catalogue in one read
// transaction, so that they cannot straddle another process's migration.
func readFileState(c *conn) (s fileState, err error) {
	if !c.d.InTx() {
		if err := c.d.Begin(driver.TxRead); err != nil {
			return s, err
		}
		defer func() {
			if cerr := c.d.Commit(); err == nil {
				err = cerr
			}
		}()
	}
	if c.shared {
		return readSharedState(c)
	}
	if s.appID, err = c.queryInt64("PRAGMA application_id"); err != nil {
		return s, err
	}
	if s.version, err = c.queryInt64("PRAGMA user_version"); err != nil {
		return s, err
	}
	if s.objects, err = c.queryInt64("SELECT count(*) FROM sqlite_master"); err != nil {
		return s, err
	}
	if s.appID != ApplicationID && s.objects > 0 && c.tr == nil {
		// Another tool's file: is it one we share (docs/format.md)?
		var n int64
		n, err = c.queryInt64(sqlSharedMarked)
		s.marker = n > 0
	}
	return s, err
}

// sharedLayout reports whether a file in state s (read as a file of its
// own) is to be opened as a shared file: it carries our marker, or the
// caller asked for one (wantShared) and the file is not a file of ours.
func (s fileState) sharedLayout(wantShared bool) bool {
	return !s.shared && s.appID != ApplicationID && (s.marker || wantShared)
}

// check refuses files that are not ours or newer than this build.
func (s fileState) check(path string) error {
	if s.shared {
		return s.checkShared(path)
	}
	switch {
	case s.marker:
		return fmt.Errorf("%w: %s became a shared file (it holds %s) while this handle opened it; open it again", ErrNotAgentstate, path, sharedMarker)
	case s.appID != 0 && s.appID != ApplicationID:
		return fmt.Errorf("%w: %s has application id 0x%08x", ErrNotAgentstate, path, s.appID)
	case s.appID == 0 && s.objects > 0:
		return fmt.Errorf("%w: %s holds %d schema objects but no agentstate application id: another tool's file; to keep agentstate's tables beside its own, open it with Options.SharedFile (Python: shared=True; docs/format.md, \"Shared files\")", ErrNotAgentstate, path, s.objects)
	case s.version > int64(SchemaVersion):
		return fmt.Errorf("%w: %s has schema version %d, this build knows up to %d; upgrade agentstate", ErrSchemaTooNew, path, s.version, SchemaVersion)
	}
	return nil
}

// checkShared is check for a file read as shared.
func (s fileState) checkShared(path string) error {
	switch {
	case s.fileAppID == ApplicationID:
		return fmt.Errorf("%w: %s became an agentstate file of its own while this handle opened it as a shared one; open it again", ErrNotAgentstate, path)
	case s.objects > 0 && !s.marker:
		return fmt.Errorf("%w: %s holds %d schema objects named %s* but no %s table: they are not agentstate's", ErrNotAgentstate, path, s.objects, sharedPrefix, sharedMarker)
	case s.marker && s.appID != ApplicationID:
		return fmt.Errorf("%w: %s has a %s table with application id 0x%08x", ErrNotAgentstate, path, sharedMarker, s.appID)
	case s.version > int64(SchemaVersion):
		return fmt.Errorf("%w: %s has schema version %d, this build knows up to %d; upgrade agentstate", ErrSchemaTooNew, path, s.version, SchemaVersion)
	}
	return nil
}

// fromBuildImage reports a private in-memory database this open made from
// the build's empty image (backend_host.go): it holds no one's rows yet.
func (db *DB) fromBuildImage() bool {
	b, ok := db.b.(builtImage)
	return ok && b.builtSchema()
}

// prepareSchema inspects the file before writing anything to it, then
// switches it to WAL and applies the missing migrations. Each migration runs
// in its own write transaction and re-reads the version under the lock, so
// two processes opening a fresh file at once create the schema once.
func (db *DB) prepareSchema(ctx context.Context, w *conn) error {
	if sb := db.server(); sb != nil {
		// A server's schema is agentstate's already (docs/postgresql.md):
		// SharedFile has nothing to do there.
		db.opts.SharedFile = false
		return sb.prepareSchema(ctx, db, w)
	}
	restore := w.withCtx(ctx)
	defer restore()
	if db.fromBuildImage() {
		// The build's own image, private to this handle: its header and
		// schema are this build's, nothing to read back or migrate.
		return db.setJournalMode(ctx, w)
	}
	var st fileState
	if err := db.retryBusy(ctx, func() (err error) { st, err = readFileState(w); return err }); err != nil {
		return openErr(db.path, wrapErr(ctx, err))
	}
	// Options.SharedFile, or our marker in the file, makes this a shared
	// file; a file of our own stays one whatever the option says.
	db.opts.SharedFile = st.sharedLayout(db.opts.SharedFile)
	if db.opts.SharedFile {
		db.shared = true
		w.setShared()
		if err := db.retryBusy(ctx, func() (err error) { st, err = readFileState(w); return err }); err != nil {
			return openErr(db.path, wrapErr(ctx, err))
		}
	}
	if err := st.check(db.path); err != nil {
		return err
	}
	if db.opts.ReadOnly {
		if st.version == 0 && st.objects == 0 && st.shared {
			return fmt.Errorf("%w: %s holds no agentstate tables yet, and a read-only handle does not create them (a handle opened without Options.ReadOnly does)", ErrReadOnly, db.path)
		}
		if st.version == 0 && st.objects == 0 {
			return fmt.Errorf("%w: %s is empty: it holds no agentstate schema yet, and a read-only handle does not create one (a handle opened without Options.ReadOnly does)", ErrReadOnly, db.path)
		}
		if st.version < int64(SchemaVersion) {
			return fmt.Errorf("%w: %w: %s has schema version %d and this build needs %d; a read-only handle does not upgrade a file: open it once without Options.ReadOnly to upgrade it", ErrReadOnly, ErrSchemaTooOld, db.path, st.version, SchemaVersion)
		}
		return nil
	}
	if st.version == int64(SchemaVersion) && !db.b.memory() {
		// An up-to-date file in WAL mode needs no write lock to open:
		// another process's long write must not keep this one from
		// opening. (A copy made by other tools may be in another journal
		// mode; it is switched below.)
		var mode string
		if _, err := w.queryRow("PRAGMA journal_mode", nil, func(r row) error { mode = r.Text(0); return nil }); err != nil {
			return openErr(db.path, wrapErr(ctx, err))
		}
		if strings.EqualFold(mode, "wal") {
			return nil
		}
	}
	if st.objects == 0 && !st.shared {
		// Only an empty file can take this: retention returns the pages it
		// frees to the file system (PRAGMA incremental_vacuum), so a file
		// shrinks without a VACUUM.
		if err := db.retryBusy(ctx, func() error { return w.exec("PRAGMA auto_vacuum=INCREMENTAL") }); err != nil {
			return openErr(db.path, wrapErr(ctx, err))
		}
	}
	if err := db.setJournalMode(ctx, w); err != nil {
		return err
	}
	if st.version == 0 && st.objects == 0 {
		created, err := db.createSchema(ctx, w)
		if err != nil {
			return openErr(db.path, err)
		}
		if created {
			return nil
		}
	}
	for {
		done, err := db.migrateStep(ctx, w, SchemaVersion)
		if err != nil {
			return openErr(db.path, err)
		}
		if done {
			return nil
		}
	}
}

// setJournalMode switches the connection to WAL, or MEMORY for an
// in-memory database.
func (db *DB) setJournalMode(ctx context.Context, w *conn) error {
	journal := "WAL"
	if db.b.memory() {
		journal = "MEMORY"
	}
	if err := db.retryBusy(ctx, func() error { return w.exec("PRAGMA journal_mode=" + journal) }); err != nil {
		return fmt.Errorf("agentstate: open %s: set journal mode: %w", db.path, wrapErr(ctx, err))
	}
	return nil
}

// freshSchema is what the migrations leave in sqlite_master, statement by
// statement in the order they created the objects: an empty file gets it in
// one transaction instead of running the migrations' table rebuilds and
// renames, each of which has SQLite parse the whole schema again (on the
// WebAssembly builds that work is most of a fresh open's CPU). Written by
// TestFreshSchemaIsTheMigrations (AGENTSTATE_UPDATE=1), which also holds
// that it gives the text the migrations give, object for object.
//
//go:embed schema_fresh.sql
var freshSchema string

// createSchema gives an empty file the current schema in one write
// transaction, with the history every migration would have recorded, and
// reports whether it did. If another process gave the file a schema first,
// it leaves the file to the migrations (which then find nothing to do, or
// upgrade what it wrote).
func (db *DB) createSchema(ctx context.Context, w *conn) (created bool, err error) {
	err = db.schemaTx(ctx, w, func(st fileState) error {
		if st.version != 0 || st.objects != 0 {
			return nil
		}
		created = true
		return wrapErr(ctx, writeFreshSchema(w, time.Now()))
	})
	return created && err == nil, err
}

// writeFreshSchema writes freshSchema, the history of every migration
// (applied at now) and the header fields, in w's transaction.
func writeFreshSchema(w *conn, now time.Time) error {
	script := freshSchema
	if w.shared {
		if err := w.exec(sqlSharedMarkerCreate); err != nil {
			return fmt.Errorf("create the marker table: %w", err)
		}
		script = sharedSQL(script)
	}
	if err := schemaErr(w.d.ExecScript(script, nil)); err != nil {
		return fmt.Errorf("create the schema: %w", err)
	}
	return recordMigrations(w, migrations(), now)
}

// recordMigrations records ms as applied at now, and sets the header's
// application id and the version of the last of them, in w's transaction.
func recordMigrations(w *conn, ms []migration, now time.Time) error {
	at := now.UTC().Format(time.RFC3339Nano)
	for _, m := range ms {
		if err := w.exec(sqlSchemaRecord, m.version, m.name, at); err != nil {
			return fmt.Errorf("migration %d (%s): record: %w", m.version, m.name, err)
		}
	}
	if w.shared {
		// The SQLite header is the other tool's: the marker stands for it.
		return writeSharedHeader(w, ms[len(ms)-1].version)
	}
	if err := w.exec(fmt.Sprintf("PRAGMA application_id=%d", ApplicationID)); err != nil {
		return err
	}
	// PRAGMA takes no bound parameters; the version is an int we computed.
	return w.exec(fmt.Sprintf("PRAGMA user_version=%d", ms[len(ms)-1].version))
}

// migrateStep applies the next migration missing below target, if any, in
// one transaction; done reports that the file had reached target already.
func (db *DB) migrateStep(ctx context.Context, w *conn, target int) (done bool, err error) {
	err = db.schemaTx(ctx, w, func(st fileState) error {
		if st.version >= int64(target) {
			done = true
			return nil
		}
		m := migrations()[st.version]
		if err := applyMigration(w, m); err != nil {
			return fmt.Errorf("migration %d (%s): %w", m.version, m.name, wrapErr(ctx, err))
		}
		return recordMigrations(w, []migration{m}, time.Now())
	})
	return done && err == nil, err
}

// schemaTx runs fn in one write transaction on the state of the file read
// under its lock (refused as check refuses it), and commits what fn wrote;
// when fn fails nothing of it stays, and its error is returned as it is.
func (db *DB) schemaTx(ctx context.Context, w *conn, fn func(st fileState) error) (err error) {
	if err := db.retryBusy(ctx, func() error { return w.d.Begin(driver.TxWrite) }); err != nil {
		return wrapErr(ctx, err)
	}
	defer func() {
		if err != nil {
			w.d.Rollback()
		}
	}()
	st, err := readFileState(w)
	if err != nil {
		return wrapErr(ctx, err)
	}
	if err := st.check(db.path); err != nil {
		return err
	}
	if err := fn(st); err != nil {
		return err
	}
	return wrapErr(ctx, w.d.Commit())
}

// addColumn matches the start of an ALTER TABLE ... ADD [COLUMN] statement
// after any spaces and comments, and returns its table and column names:
// what the regular expression
//
//	(?is)^(?:\s+|--[^\n]*\n|/\*.*?\*/)*ALTER\s+TABLE\s+"?(\w+)"?\s+ADD\s+(?:COLUMN\s+)?"?(\w+)"?
//
// matches (schema_test.go holds it as the oracle). It is written out
// because the regexp package costs the GOOS=js build its Unicode tables
// and a compile at start-up, for this one pattern.
func addColumn(stmt string) (table, column string, ok bool) {
	s := stmt
	for {
		switch {
		case s != "" && isSQLSpace(s[0]):
			s = strings.TrimLeft(s, " \t\n\f\r")
			continue
		case strings.HasPrefix(s, "--"):
			if i := strings.IndexByte(s, '\n'); i >= 0 {
				s = s[i+1:]
				continue
			}
		case strings.HasPrefix(s, "/*"):
			if i := strings.Index(s[2:], "*/"); i >= 0 {
				s = s[2+i+2:]
				continue
			}
		}
		break
	}
	var rest string
	if s, ok = keyword(s, "ALTER"); !ok {
		return "", "", false
	}
	if s, ok = keyword(s, "TABLE"); !ok {
		return "", "", false
	}
	if table, rest, ok = sqlName(s); !ok || rest == "" || !isSQLSpace(rest[0]) {
		return "", "", false
	}
	if s, ok = keyword(strings.TrimLeft(rest, " \t\n\f\r"), "ADD"); !ok {
		return "", "", false
	}
	// COLUMN is optional: "ADD COLUMN x" names x, "ADD columnx" columnx.
	if after, ok := keyword(s, "COLUMN"); ok {
		if column, _, ok := sqlName(after); ok {
			return table, column, true
		}
	}
	if column, _, ok = sqlName(s); !ok {
		return "", "", false
	}
	return table, column, true
}

func isSQLSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// keyword matches kw (any case) and at least one space after it.
func keyword(s, kw string) (string, bool) {
	if len(s) <= len(kw) || !strings.EqualFold(s[:len(kw)], kw) || !isSQLSpace(s[len(kw)]) {
		return s, false
	}
	return strings.TrimLeft(s[len(kw):], " \t\n\f\r"), true
}

// sqlName matches "?word"? at the start of s; rest is what follows.
func sqlName(s string) (name, rest string, ok bool) {
	s = strings.TrimPrefix(s, `"`)
	n := 0
	for n < len(s) && isWordByte(s[n]) {
		n++
	}
	if n == 0 {
		return "", s, false
	}
	name, s = s[:n], s[n:]
	s = strings.TrimPrefix(s, `"`)
	return name, s, true
}

// applyMigration runs every statement of m. An ALTER TABLE ... ADD COLUMN
// whose column already exists is skipped (SQLite refuses it while
// preparing, so the check comes first), which makes every migration
// idempotent; CREATE ... IF NOT EXISTS covers the rest.
func applyMigration(w *conn, m migration) error {
	script := m.sql
	if w.shared {
		script = sharedSQL(script)
	}
	return schemaErr(w.d.ExecScript(script, func(stmt string) (bool, error) {
		table, column, ok := addColumn(stmt)
		if !ok {
			return false, nil
		}
		return hasColumn(w, table, column)
	}))
}

func hasColumn(w *conn, table, column string) (bool, error) {
	found := false
	err := w.query("SELECT name FROM pragma_table_info(?)", []any{table}, func(st row) error {
		if strings.EqualFold(st.Text(0), column) {
			found = true
		}
		return nil
	})
	return found, err
}

// schemaObject is one row of sqlite_master: a table, index or trigger.
type schemaObject struct{ typ, sql string }

// sqlSchemaObjects lists the file's own schema objects, not SQLite's.
const sqlSchemaObjects = `SELECT type, name, coalesce(sql, '') FROM sqlite_master WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\'`

// readSchema returns the schema objects of c's database by name.
func readSchema(c *conn) (map[string]schemaObject, error) {
	objs := map[string]schemaObject{}
	err := c.query(sqlSchemaObjects, nil, func(st row) error {
		objs[st.Text(1)] = schemaObject{typ: st.Text(0), sql: st.Text(2)}
		return nil
	})
	return objs, err
}

// expectedSharedSchema is expectedSchema as a shared file holds it: the
// marker table and every object under its sharedPrefix name, each made by
// the statements a shared file runs.
var expectedSharedSchema = sync.OnceValues(func() (map[string]schemaObject, error) {
	d, err := scratchConn()
	if err != nil {
		return nil, err
	}
	c := &conn{d: d}
	c.setShared()
	defer c.close()
	if err := c.exec(sqlSharedMarkerCreate); err != nil {
		return nil, err
	}
	for _, m := range migrations() {
		if err := applyMigration(c, m); err != nil {
			return nil, fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
		}
	}
	return readSchema(c)
})

// expectedSchema is the schema the migrations create, read off a private
// in-memory database once per process. A file created fresh and a file
// upgraded step by step get the same text: both ran the same statements.
var expectedSchema = sync.OnceValues(func() (map[string]schemaObject, error) {
	d, err := scratchConn()
	if err != nil {
		return nil, err
	}
	c := &conn{d: d}
	defer c.close()
	for _, m := range migrations() {
		if err := applyMigration(c, m); err != nil {
			return nil, fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
		}
	}
	return readSchema(c)
})
