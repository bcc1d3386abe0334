package engine

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/agentstate/agentstate/internal/pgurl"
)

// The engine's tests run once per backend of this table, each a whole run
// of the package's tests (TestMain calls m.Run for each): SQLite always,
// PostgreSQL when AGENTSTATE_TEST_PG names a server (.ci/with-postgres
// starts a throwaway one). Without it the PostgreSQL half is skipped with
// a message on stderr, and fails the run when AGENTSTATE_CI is set, so CI
// can never pass without it. AGENTSTATE_TEST_BACKENDS=sqlite (or postgres)
// runs one half only (benchmarks, a quick loop).
//
// Tests open their databases through openTest or testPath, which give the
// backend under test a fresh database for each: a file path (or Memory) on
// SQLite, a schema of its own on PostgreSQL. Tests about SQLite files
// (their bytes, crashes, power loss, the faulting VFS) call sqliteOnly.
var testBackends = []struct {
	name string
	// start prepares the backend; skip is why it cannot run here.
	start func() (skip string, err error)
	stop  func()
}{
	{name: "sqlite", start: func() (string, error) { return "", nil }, stop: func() {}},
	{name: "postgres", start: startPGTests, stop: stopPGTests},
}

// testBackend is the backend under test; child processes inherit it.
var testBackend = envOr("AGENTSTATE_TEST_BACKEND", "sqlite")

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// runBackends runs the package's tests on each backend and returns the
// exit code.
func runBackends(m *testing.M) int {
	only := os.Getenv("AGENTSTATE_TEST_BACKENDS")
	fuzzing := flag.Lookup("test.fuzz") != nil && flag.Lookup("test.fuzz").Value.String() != ""
	code, ran := 0, 0
	for _, b := range testBackends {
		// A fuzzing run has one backend: the first selected.
		if only != "" && only != b.name || fuzzing && ran > 0 {
			continue
		}
		ran++
		skip, err := b.start()
		if err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: backend %s: %v\n", b.name, err)
			code = 1
			continue
		}
		if skip != "" {
			if os.Getenv("AGENTSTATE_CI") != "" {
				fmt.Fprintf(os.Stderr, "FAIL: backend %s not tested: %s (CI must test every backend)\n", b.name, skip)
				code = 1
			} else {
				fmt.Fprintf(os.Stderr, "NOTE: backend %s not tested: %s\n", b.name, skip)
			}
			continue
		}
		testBackend = b.name
		os.Setenv("AGENTSTATE_TEST_BACKEND", b.name)
		if b.name != testBackends[0].name {
			fmt.Printf("=== backend %s\n", b.name)
		}
		if c := m.Run(); c != 0 {
			code = c
		}
		b.stop()
	}
	return code
}

// testPath returns what Open should open for a test's path (a file path
// or Memory) on the backend under test: the path itself on SQLite, the URL
// of a schema of its own on PostgreSQL (the same schema for the same path,
// so reopening a "file" finds its contents; a fresh one for every Memory).
// The schema is dropped when t ends (t may be nil in child processes and
// fuzz targets' shared databases: then at the end of the run).
func testPath(t testing.TB, path string) string {
	if testBackend != "postgres" || pgurl.Is(path) {
		return path
	}
	if t != nil {
		t.Helper()
	}
	u, err := pgTestSchema(t, path)
	if err != nil {
		if t == nil {
			panic(err)
		}
		t.Fatal(err)
	}
	return u
}

// sqliteOnly skips a test about SQLite files on other backends.
func sqliteOnly(t testing.TB, why string) {
	t.Helper()
	if testBackend != "sqlite" {
		t.Skipf("SQLite-only (%s)", why)
	}
}

// nativeFilesOnly skips, in the GOOS=js build, a test about what native
// SQLite files do beside the database: lock files, the WAL-index file, a
// file's identity. The host SQLite's VFS keeps the WAL-index in memory,
// takes no locks another process sees, and does not watch the file, so
// these promises are native only (docs/contract.md says which).
func nativeFilesOnly(t testing.TB, why string) {
	t.Helper()
	if runtime.GOOS == "js" {
		t.Skipf("native files only (%s)", why)
	}
}

// onPG reports whether the backend under test is PostgreSQL.
func onPG() bool { return testBackend == "postgres" }

// testTables lists the database's tables by name.
func testTables(c *conn) ([]string, error) {
	var out []string
	q := `SELECT name FROM sqlite_master WHERE type='table' ORDER BY name`
	if onPG() {
		q = `SELECT relname::text FROM pg_catalog.pg_class WHERE relnamespace = current_schema()::regnamespace AND relkind = 'r' ORDER BY 1`
	}
	err := c.d.Query(q, nil, func(r row) error { out = append(out, r.Text(0)); return nil })
	return out, err
}

// testCatalog renders the database's schema (tables with their columns,
// indexes, functions) as sorted text lines, to prove a refused call left
// it alone.
func testCatalog(c *conn) ([]string, error) {
	q := `SELECT type || ' ' || name || ' ' || coalesce(sql, '') FROM sqlite_master ORDER BY 1`
	if onPG() {
		q = `SELECT 'table ' || c.relname || ' ' || (SELECT string_agg(a.attname || ':' || format_type(a.atttypid, a.atttypmod), ',' ORDER BY a.attnum)
				FROM pg_catalog.pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped)
			FROM pg_catalog.pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
			UNION ALL SELECT 'index ' || indexname || ' ' || indexdef FROM pg_catalog.pg_indexes WHERE schemaname = current_schema()
			UNION ALL SELECT 'function ' || p.oid::regprocedure::text FROM pg_catalog.pg_proc p WHERE p.pronamespace = current_schema()::regnamespace
			ORDER BY 1`
	}
	var out []string
	err := c.d.Query(q, nil, func(r row) error { out = append(out, r.Text(0)); return nil })
	return out, err
}
