//go:build !js && !wasip1

package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/engine/internal/driver/pg"
	_ "github.com/agentstate/agentstate/engine/postgres" // engine.Open of postgres:// URLs
	"github.com/jackc/pgx/v5/pgconn"
)

// The PostgreSQL half of the tests: one admin connection creates a schema
// per test database and drops it afterwards.
var pgTests struct {
	mu      sync.Mutex
	url     string
	admin   *pg.Conn
	n       int
	pending []string // schemas to drop at the end of the run
}

func startPGTests() (string, error) {
	u := os.Getenv("AGENTSTATE_TEST_PG")
	if u == "" {
		return "set AGENTSTATE_TEST_PG=postgres://... (.ci/with-postgres starts a server)", nil
	}
	d, err := pg.NewDialer(u, pg.Options{BusyTimeout: 30 * time.Second})
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := d.Dial(ctx)
	if err != nil {
		return "", fmt.Errorf("connect to AGENTSTATE_TEST_PG: %w", err)
	}
	pgTests.url, pgTests.admin = u, c
	return "", nil
}

func stopPGTests() {
	pgTests.mu.Lock()
	defer pgTests.mu.Unlock()
	for _, s := range pgTests.pending {
		pgTests.admin.Exec(`DROP SCHEMA IF EXISTS ` + s + ` CASCADE`)
	}
	pgTests.pending = nil
	pgTests.admin.Close()
}

// pgTestURL returns the test server's URL with search_path set to schema.
func pgTestURL(schema string) string {
	u := os.Getenv("AGENTSTATE_TEST_PG")
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "search_path=" + schema
}

func pgTestSchema(t testing.TB, path string) (string, error) {
	var schema string
	if path == Memory {
		pgTests.mu.Lock()
		pgTests.n++
		schema = fmt.Sprintf("mem_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9, pgTests.n)
		pgTests.mu.Unlock()
	} else {
		h := sha256.Sum256([]byte(path))
		schema = "f_" + hex.EncodeToString(h[:10])
	}
	if err := pgCreateSchema(schema); err != nil {
		return "", err
	}
	if pgTests.admin != nil { // the process that runs the tests, not a child
		if t != nil {
			t.Cleanup(func() { pgDropSchema(schema) })
		} else {
			pgTests.mu.Lock()
			pgTests.pending = append(pgTests.pending, schema)
			pgTests.mu.Unlock()
		}
	}
	return pgTestURL(schema), nil
}

// pgCreateSchema creates schema unless it exists (child processes race to
// create the schema of a path they share).
func pgCreateSchema(schema string) error {
	pgTests.mu.Lock()
	defer pgTests.mu.Unlock()
	c := pgTests.admin
	if c == nil {
		d, err := pg.NewDialer(os.Getenv("AGENTSTATE_TEST_PG"), pg.Options{BusyTimeout: 30 * time.Second})
		if err != nil {
			return err
		}
		if c, err = d.Dial(context.Background()); err != nil {
			return err
		}
		defer c.Close()
	}
	_, err := c.Exec(`CREATE SCHEMA IF NOT EXISTS ` + schema)
	if errors.Is(err, driver.ErrUnique) || err != nil && strings.Contains(err.Error(), "42P06") {
		return nil
	}
	return err
}

func pgDropSchema(schema string) {
	pgTests.mu.Lock()
	defer pgTests.mu.Unlock()
	if pgTests.admin != nil {
		pgTests.admin.Exec(`DROP SCHEMA IF EXISTS ` + schema + ` CASCADE`)
	}
}

// pgErrorLeaked reports a PostgreSQL error in err's chain: the engine must
// turn every error a caller can cause into its own sentinels.
func pgErrorLeaked(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe)
}

// pgDial opens a driver connection of the test's own to url (the
// caller closes it).
func pgDial(t testing.TB, url string) *pg.Conn {
	t.Helper()
	d, err := pg.NewDialer(url, pg.Options{BusyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := d.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pgHoldLock takes the write lock of key (a thread id) in a transaction of
// a connection of its own to url, until the returned function runs.
func pgHoldLock(t testing.TB, url, key string) func() {
	t.Helper()
	c := pgDial(t, url)
	if err := c.Begin(driver.TxWrite); err != nil {
		t.Fatal(err)
	}
	if err := c.Lock(key); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(`SELECT 1`); err != nil {
		t.Fatal(err)
	}
	return func() { c.Rollback(); c.Close() }
}

// testRefusesSchemasItCannotOwn is TestRefusesFilesItCannotOwn on
// PostgreSQL: a schema written by a newer build, one marked by another
// application, and one holding tables that are not ours are refused with
// the typed errors and left exactly as they were.
func testRefusesSchemasItCannotOwn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup []string // run in the schema; "" opens it with the engine first
		want  error
	}{
		{"newer schema", []string{"", fmt.Sprintf("UPDATE agentstate_header SET schema_version = %d", SchemaVersion+1)}, ErrSchemaTooNew},
		{"foreign app id", []string{"CREATE TABLE agentstate_header (application_id BIGINT, schema_version INT)", "INSERT INTO agentstate_header VALUES (42, 1)"}, ErrNotAgentstate},
		{"foreign tables", []string{"CREATE TABLE users (name TEXT)", "INSERT INTO users VALUES ('ann')"}, ErrNotAgentstate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := testPath(t, Memory)
			c := pgDial(t, u)
			defer c.Close()
			for _, q := range tc.setup {
				if q == "" {
					db, err := Open(context.Background(), u, nil)
					if err != nil {
						t.Fatal(err)
					}
					db.Close()
					continue
				}
				if _, err := c.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			snapshot := func() []string {
				cc := &conn{d: c}
				cat, err := testCatalog(cc)
				if err != nil {
					t.Fatal(err)
				}
				for _, tb := range []string{"agentstate_header", "users", "schema_history"} {
					c.Query(`SELECT * FROM `+tb, nil, func(r driver.Row) error {
						line := tb
						for i := range r.Columns() {
							line += "|" + r.Text(i)
						}
						cat = append(cat, line)
						return nil
					})
				}
				return cat
			}
			before := snapshot()
			_, err := Open(context.Background(), u, nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open: %v, want %v", err, tc.want)
			}
			if after := snapshot(); !slices.Equal(before, after) {
				t.Fatalf("the refused schema changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}
