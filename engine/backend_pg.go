//go:build (!js && !wasip1) || (wasip1 && hostsqlite) || (js && hostpg)

package engine

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"math/big"
	"path"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/internal/pgurl"
)

// pgBackend is a PostgreSQL database (engine.Open with a postgres:// URL).
// Its tables live in the first schema of the connection's search_path. Its
// sessions come from the server driver engine/postgres registers
// (driver.Server): this file holds the engine's side (the schema, its
// migrations and checks), which links no PostgreSQL client.
type pgBackend struct {
	s driver.Server
	o Options
}

// postgresPackage is what a program imports to open PostgreSQL URLs.
const postgresPackage = "github.com/agentstate/agentstate/engine/postgres"

//go:embed migrations_pg/*.sql
var pgMigrationFS embed.FS

// pgMigrations are migrations_pg/, numbered as migrations/: schema version
// N means the same tables on either backend, so an export moves between
// them.
var pgMigrations = func() []migration {
	entries, err := fs.ReadDir(pgMigrationFS, "migrations_pg")
	if err != nil {
		panic(err)
	}
	var ms []migration
	for _, e := range entries {
		num, name, _ := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if err != nil {
			panic("agentstate: migration file name " + e.Name() + " is not NNNN_name.sql")
		}
		b, err := pgMigrationFS.ReadFile(path.Join("migrations_pg", e.Name()))
		if err != nil {
			panic(err)
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 || m.name != migrations()[i].name {
			panic(fmt.Sprintf("agentstate: migrations_pg/%04d_%s does not match migrations/%04d_%s", m.version, m.name, i+1, migrations()[i].name))
		}
	}
	if len(ms) != len(migrations()) {
		panic(fmt.Sprintf("agentstate: %d PostgreSQL migrations for %d SQLite ones: every migration needs both", len(ms), len(migrations())))
	}
	return ms
}()

func openPGBackend(url string, o Options) (backend, error) {
	open := driver.LookupServer("postgres")
	if open == nil {
		return nil, fmt.Errorf("%w: %s: this program does not link the PostgreSQL driver: import _ %q (as the agentstate CLI does) to open PostgreSQL URLs", ErrInvalidArgument, displayPath(url), postgresPackage)
	}
	s, err := open(url, driver.ServerOptions{BusyTimeout: o.BusyTimeout, SyncFull: o.Synchronous == SyncFull, ReadOnly: o.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidArgument, displayPath(url), err)
	}
	return &pgBackend{s: s, o: o}, nil
}

// dial opens a session within ctx: a server that does not answer fails
// it when ctx ends.
func (b *pgBackend) dial(ctx context.Context, write bool) (driver.Conn, error) {
	return b.s.Dial(ctx, write)
}

// memory is true: there is no file of ours, so Info reports the server's
// sizes and CheckpointWAL has nothing to do.
func (b *pgBackend) memory() bool { return true }

func (b *pgBackend) close() { b.s.Close() }

// liveness: a session-level advisory lock per owner, held on a session of
// its own while the handle lives and taken again when the server ends that
// session, probed from another session (the driver's Liveness).
func (b *pgBackend) liveness() driver.Liveness { return b.s.Liveness() }

// pgReleaseWait bounds the unlock of the migrations' lock: long enough for
// a loaded server, as the driver gives a liveness hold's release.
const pgReleaseWait = 2 * time.Second

func (b *pgBackend) writers() int {
	if b.o.WriteConns > 0 {
		return b.o.WriteConns
	}
	return 4
}

func (b *pgBackend) translate(q string, args []any) (string, []any, error) {
	return pgTranslate(q, args)
}

// pgState is what the catalogue says about the current schema.
type pgState struct {
	schema string
	fileState
}

func pgReadState(d driver.Conn) (st pgState, err error) {
	var hasHeader bool
	err = d.Query(`SELECT coalesce(current_schema(), ''),
		(SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f')),
		EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND c.relname = 'agentstate_header' AND c.relkind = 'r')`, nil,
		func(r driver.Row) error {
			st.schema, st.objects, hasHeader = r.Text(0), r.Int64(1), r.Int64(2) != 0
			return nil
		})
	if err != nil || !hasHeader {
		return st, err
	}
	err = d.Query(sqlHeaderReadPG, nil, func(r driver.Row) error {
		st.appID, st.version = r.Int64(0), r.Int64(1)
		return nil
	})
	return st, err
}

// prepareSchema refuses a schema that is not ours or is newer than this
// build, untouched, and applies the missing migrations, each in its own
// transaction, under a session advisory lock: two processes opening a
// fresh database at once create the schema once.
func (b *pgBackend) prepareSchema(ctx context.Context, db *DB, w *conn) error {
	restore := w.withCtx(ctx)
	defer restore()
	fail := func(err error) error { return openErr(db.path, wrapErr(ctx, err)) }
	st, err := pgReadState(w.d)
	if err != nil {
		return fail(err)
	}
	if st.schema == "" {
		return fmt.Errorf("%w: %s: the search_path names no schema that exists; create it (CREATE SCHEMA) or name another", ErrInvalidArgument, db.path)
	}
	// The server skips schemas of the search_path that do not exist: the
	// tables would land in the next one, which the URL did not name first.
	if first := firstSchema(b.s.SearchPath()); first != "" && first != "$user" && first != st.schema {
		return fmt.Errorf("%w: %s: the search_path names schema %q first, which does not exist (or this user may not use it), and the server would use %q instead; create it (CREATE SCHEMA) or name the schema to use first", ErrInvalidArgument, db.path, first, st.schema)
	}
	if err := st.check(db.path + " (schema " + st.schema + ")"); err != nil {
		return err
	}
	if db.opts.ReadOnly {
		if st.objects == 0 {
			return fmt.Errorf("%w: %s (schema %s) is empty: it holds no agentstate schema yet, and a read-only handle does not create one (a handle opened without Options.ReadOnly does)", ErrReadOnly, db.path, st.schema)
		}
		if st.version < int64(SchemaVersion) {
			return fmt.Errorf("%w: %w: %s has schema version %d and this build needs %d; a read-only handle does not upgrade a schema: open it once without Options.ReadOnly to upgrade it", ErrReadOnly, ErrSchemaTooOld, db.path, st.version, SchemaVersion)
		}
		return nil
	}
	if st.version >= int64(SchemaVersion) {
		return nil
	}
	const lockKey = `hashtextextended('agentstate migrations ' || current_schema(), 0)`
	if _, err := w.d.Exec(`SELECT pg_advisory_lock(` + lockKey + `)`); err != nil {
		return fail(err)
	}
	defer func() {
		// A session that broke took the lock with it: dialling another
		// just to unlock would only wait on a server that may be gone.
		if br, ok := w.d.(driver.Breaker); ok && br.Broken() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), pgReleaseWait)
		defer cancel()
		defer w.d.Interrupt(ctx)()
		w.d.Exec(`SELECT pg_advisory_unlock(` + lockKey + `)`)
	}()
	for {
		done, err := b.migrateStep(db, w)
		if err != nil {
			w.d.Rollback()
			return fail(err)
		}
		if done {
			return nil
		}
	}
}

// firstSchema is the first schema a search_path names, as the server
// reads an identifier: a quoted name as written (with "" for "), an
// unquoted one folded to lower case; "" when it names none.
func firstSchema(sp string) string {
	sp = strings.TrimSpace(sp)
	if strings.HasPrefix(sp, `"`) {
		var b strings.Builder
		for i := 1; i < len(sp); i++ {
			if sp[i] == '"' {
				if i+1 < len(sp) && sp[i+1] == '"' {
					b.WriteByte('"')
					i++
					continue
				}
				return b.String()
			}
			b.WriteByte(sp[i])
		}
		return b.String()
	}
	first, _, _ := strings.Cut(sp, ",")
	return strings.ToLower(strings.TrimSpace(first))
}

func (b *pgBackend) migrateStep(db *DB, w *conn) (done bool, err error) {
	if err := w.d.Begin(driver.TxWrite); err != nil {
		return false, err
	}
	st, err := pgReadState(w.d)
	if err != nil {
		return false, err
	}
	if err := st.check(db.path + " (schema " + st.schema + ")"); err != nil {
		return false, err
	}
	if st.version >= int64(SchemaVersion) {
		return true, w.d.Commit()
	}
	m := pgMigrations[st.version]
	if err := w.d.ExecScript(m.sql, nil); err != nil {
		return false, fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
	}
	n, err := w.d.Exec(sqlHeaderSetVersionPG, m.version)
	if err == nil && n == 0 {
		_, err = w.d.Exec(sqlHeaderInsertPG, ApplicationID, m.version)
	}
	if err == nil {
		_, err = w.d.Exec(sqlSchemaRecordPG,
			m.version, m.name, time.Now().UTC().Format(time.RFC3339Nano))
	}
	if err != nil {
		return false, fmt.Errorf("migration %d (%s): record: %w", m.version, m.name, err)
	}
	return false, w.d.Commit()
}

// pgWant is the catalogue migrations_pg creates, read off their text:
// tables with their columns, indexes and functions by name.
var pgWant = func() map[string]schemaObject {
	createTable := regexp.MustCompile(`(?is)CREATE TABLE IF NOT EXISTS (\w+) \((.*?)\n\);`)
	addColumn := regexp.MustCompile(`(?i)ALTER TABLE (\w+) ADD COLUMN IF NOT EXISTS (\w+)`)
	// In the order a migration runs them: one may drop an index and
	// create it anew (migration 10).
	index := regexp.MustCompile(`(?i)(CREATE (?:UNIQUE )?INDEX IF NOT EXISTS|DROP INDEX IF EXISTS) (\w+)`)
	createFunc := regexp.MustCompile(`(?i)CREATE OR REPLACE FUNCTION (\w+)`)
	cols := map[string][]string{}
	objs := map[string]schemaObject{}
	for _, m := range pgMigrations {
		for _, sm := range createTable.FindAllStringSubmatch(m.sql, -1) {
			for _, line := range strings.Split(sm[2], "\n") {
				f := strings.Fields(line)
				if len(f) > 1 && f[0] != "PRIMARY" && f[0] != "--" {
					cols[sm[1]] = append(cols[sm[1]], f[0])
				}
			}
		}
		for _, sm := range addColumn.FindAllStringSubmatch(m.sql, -1) {
			cols[sm[1]] = append(cols[sm[1]], sm[2])
		}
		for _, sm := range index.FindAllStringSubmatch(m.sql, -1) {
			if strings.HasPrefix(strings.ToUpper(sm[1]), "DROP") {
				delete(objs, sm[2])
			} else {
				objs[sm[2]] = schemaObject{typ: "index"}
			}
		}
		for _, sm := range createFunc.FindAllStringSubmatch(m.sql, -1) {
			objs[sm[1]] = schemaObject{typ: "function"}
		}
	}
	for t, cs := range cols {
		slices.Sort(cs)
		objs[t] = schemaObject{typ: "table", sql: strings.Join(cs, ",")}
	}
	return objs
}()

const pgCatalogue = `SELECT 'table', c.relname::text,
		(SELECT string_agg(a.attname::text, ',' ORDER BY a.attname::text COLLATE "C") FROM pg_catalog.pg_attribute a
			WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped)
	FROM pg_catalog.pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
	UNION ALL
	SELECT 'index', c.relname::text, '' FROM pg_catalog.pg_class c JOIN pg_catalog.pg_index i ON i.indexrelid = c.oid
	WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'i' AND NOT i.indisprimary
	UNION ALL
	SELECT DISTINCT 'function', p.proname::text, '' FROM pg_catalog.pg_proc p WHERE p.pronamespace = current_schema()::regnamespace`

// verify checks the schema's catalogue against migrations_pg (tables and
// their columns, indexes, functions: missing, changed or added by hand),
// and that the columns derived from stored bytes agree with those bytes.
func (b *pgBackend) verify(v *verifier) error {
	got := map[string]schemaObject{}
	err := v.c.d.Query(pgCatalogue, nil, func(r driver.Row) error {
		got[r.Text(1)] = schemaObject{typ: r.Text(0), sql: r.Text(2)}
		return nil
	})
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(pgWant)) {
		w := pgWant[name]
		g, ok := got[name]
		switch {
		case !ok:
			v.addf("schema", "", "", "", "%s %q is missing", w.typ, name)
		case g != w:
			v.addf("schema", "", "", "", "%s %q differs from the one this build creates: columns %s, want %s", w.typ, name, g.sql, w.sql)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		if _, ok := pgWant[name]; !ok {
			v.addf("schema", "", "", "", "%s %q was not created by agentstate", got[name].typ, name)
		}
	}
	return b.verifyDerived(v)
}

// verifyDerived compares the derived columns (versions, *_j) with what the
// stored bytes give: a statement that wrote the bytes without them would
// make walks and filters read wrong.
func (b *pgBackend) verifyDerived(v *verifier) error {
	check := func(kind, q string, derive func(r driver.Row) (want any, err error)) error {
		return v.c.d.Query(q, []any{v.o.ThreadID}, func(r driver.Row) error {
			want, err := derive(r)
			if err != nil {
				v.addf(kind, r.Text(0), r.Text(1), r.Text(2), "derived column: %v", err)
				return nil
			}
			var got any
			if !r.Null(3) {
				got = r.Text(3)
			}
			if !sameJSON(want, got) {
				v.addf(kind, r.Text(0), r.Text(1), r.Text(2), "derived column %s is %v, the stored bytes give %v", r.Text(4), got, want)
			}
			return nil
		})
	}
	err := check("checkpoint", sqlCheckpointsVerifyVersionsPG, func(r driver.Row) (any, error) { return pgVersionsJSON(r.Blob(5)) })
	if err == nil {
		err = check("checkpoint", sqlCheckpointsVerifyMetadataPG, func(r driver.Row) (any, error) { return pgTypedJSON(r.Blob(5)), nil })
	}
	if err == nil {
		err = check("thread", sqlThreadsVerifyDerivedPG, func(r driver.Row) (any, error) { return pgTypedJSON(r.Blob(5)), nil })
	}
	if err == nil && v.o.ThreadID == "" {
		err = check("store", sqlStoreVerifyDerivedPG,
			func(r driver.Row) (any, error) { return pgTypedJSON(r.Blob(5)), nil })
	}
	return err
}

// sameJSON compares two JSON texts (or NULLs) by value: the server
// normalises what it stores (spacing, key order, 1e+300 as digits).
func sameJSON(a, b any) bool {
	as, aok := a.(string)
	bs, bok := b.(string)
	if !aok || !bok {
		return aok == bok
	}
	av, err1 := decodeJSONNumbers(as)
	bv, err2 := decodeJSONNumbers(bs)
	return err1 == nil && err2 == nil && reflect.DeepEqual(av, bv)
}

func decodeJSONNumbers(s string) (any, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return normJSONNumbers(v), nil
}

// normJSONNumbers replaces numbers by an exact canonical text.
func normJSONNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		r, ok := new(big.Rat).SetString(string(x))
		if !ok {
			return string(x)
		}
		return r.RatString()
	case []any:
		for i := range x {
			x[i] = normJSONNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normJSONNumbers(x[k])
		}
	}
	return v
}

// displayPath is the path as messages show it: a URL without its password.
func displayPath(path string) string { return pgurl.Redacted(path) }
