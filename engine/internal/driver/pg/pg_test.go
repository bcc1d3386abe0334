//go:build !js && !wasip1

package pg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/internal/testpg"
	"github.com/google/go-cmp/cmp"
)

// testSchema creates a fresh schema and returns a dialer whose connections
// use it.
func testSchema(t *testing.T, o Options) *Dialer {
	t.Helper()
	u := testpg.URL(t)
	admin, err := NewDialer(u, Options{BusyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ac, err := admin.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("drv_%d", time.Now().UnixNano())
	if _, err := ac.Exec("CREATE SCHEMA " + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ac.Exec("DROP SCHEMA " + name + " CASCADE")
		ac.Close()
	})
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	d, err := NewDialer(u+sep+"search_path="+name, o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func dial(t *testing.T, d *Dialer) *Conn {
	t.Helper()
	c, err := d.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestTypesRoundTrip(t *testing.T) {
	c := dial(t, testSchema(t, Options{BusyTimeout: time.Second}))
	if _, err := c.Exec(`CREATE TABLE t (i BIGINT, s TEXT, b BYTEA, f DOUBLE PRECISION, ok BOOLEAN, j JSONB)`); err != nil {
		t.Fatal(err)
	}
	args := []any{int64(-7), "héllo", []byte{0, 1, 2}, 2.5, true, `{"a":[1,2]}`}
	if n, err := c.Exec(`INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6)`, args...); err != nil || n != 1 {
		t.Fatalf("insert: %d %v", n, err)
	}
	if _, err := c.Exec(`INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6)`, nil, (*string)(nil), []byte(nil), nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	var got [][]string
	err := c.Query(`SELECT i, s, b, f, ok, j, j->'a', i IS NULL, count(*) OVER (), sum(i) OVER () FROM t ORDER BY i NULLS LAST`, nil, func(r driver.Row) error {
		var line []string
		for i := range r.Columns() {
			if r.Null(i) {
				line = append(line, "NULL")
				continue
			}
			line = append(line, fmt.Sprintf("%d|%q|%x", r.Int64(i), r.Text(i), r.Blob(i)))
		}
		got = append(got, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"-7|\"-7\"|2d37", "0|\"héllo\"|68c3a96c6c6f", "0|\"\\x00\\x01\\x02\"|000102", "2|\"2.5\"|322e35", "1|\"1\"|31",
			"0|\"{\\\"a\\\": [1, 2]}\"|7b2261223a205b312c20325d7d", "0|\"[1, 2]\"|5b312c20325d", "0|\"0\"|30", "2|\"2\"|32", "-7|\"-7\"|2d37"},
		{"NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "1|\"1\"|31", "2|\"2\"|32", "-7|\"-7\"|2d37"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("rows (-want +got):\n%s", diff)
	}
}

func TestRefusesTextPostgreSQLCannotHold(t *testing.T) {
	c := dial(t, testSchema(t, Options{BusyTimeout: time.Second}))
	if _, err := c.Exec(`CREATE TABLE t (s TEXT)`); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"a\x00b", "\xff"} {
		_, err := c.Exec(`INSERT INTO t VALUES ($1)`, s)
		if !errors.Is(err, driver.ErrValue) {
			t.Fatalf("insert %q: %v, want ErrValue", s, err)
		}
	}
	_, err := c.Exec(`SELECT '{"a":"\u0000"}'::jsonb`)
	if !errors.Is(err, driver.ErrValue) {
		t.Fatalf("jsonb with NUL: %v, want ErrValue", err)
	}
}

func TestErrorKinds(t *testing.T) {
	c := dial(t, testSchema(t, Options{BusyTimeout: time.Second}))
	if _, err := c.Exec(`CREATE TABLE t (k TEXT PRIMARY KEY, n BIGINT CHECK (n > 0))`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(`INSERT INTO t VALUES ('a', 1)`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		q    string
		kind error
	}{
		{`INSERT INTO t VALUES ('a', 1)`, driver.ErrUnique},
		{`INSERT INTO t VALUES ('b', -1)`, driver.ErrConstraint},
		{`SELECT nope FROM t`, driver.ErrSchema},
		{`SELECT 1 FROM nowhere`, driver.ErrSchema},
	} {
		_, err := c.Exec(tc.q)
		if !errors.Is(err, tc.kind) {
			t.Errorf("%s: %v, want %v", tc.q, err, tc.kind)
		}
	}
	if _, err := c.Exec(`INSERT INTO t VALUES ('a', 1)`); !errors.Is(err, driver.ErrConstraint) {
		t.Errorf("a unique violation is a constraint violation too: %v", err)
	}
}

func TestTransactionsAreLazyAndSnapshots(t *testing.T) {
	d := testSchema(t, Options{BusyTimeout: time.Second})
	a, b := dial(t, d), dial(t, d)
	if _, err := a.Exec(`CREATE TABLE t (n BIGINT)`); err != nil {
		t.Fatal(err)
	}
	if err := a.Begin(driver.TxRead); err != nil {
		t.Fatal(err)
	}
	if a.Raw().TxStatus() != 'I' {
		t.Fatal("Begin reached the server before a statement")
	}
	count := func(c *Conn) int64 {
		var n int64
		if err := c.Query(`SELECT count(*) FROM t`, nil, func(r driver.Row) error { n = r.Int64(0); return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if count(a) != 0 {
		t.Fatal("table not empty")
	}
	if _, err := b.Exec(`INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	if n := count(a); n != 0 {
		t.Fatalf("a read transaction saw a later commit: %d rows", n)
	}
	if _, err := a.Exec(`INSERT INTO t VALUES (2)`); !errors.Is(err, driver.ErrReadOnly) {
		t.Fatalf("write in a read transaction: %v, want ErrReadOnly", err)
	}
	a.Rollback()
	if a.InTx() {
		t.Fatal("still in a transaction after Rollback")
	}
	if n := count(a); n != 1 {
		t.Fatalf("after the read transaction: %d rows, want 1", n)
	}
}

// Lock serialises write transactions on one key across connections: each
// of many concurrent read-increment-write transactions sees the previous
// one's commit, so none is lost.
func TestLockSerialisesWriters(t *testing.T) {
	d := testSchema(t, Options{BusyTimeout: 10 * time.Second})
	setup := dial(t, d)
	if _, err := setup.Exec(`CREATE TABLE counter (k TEXT PRIMARY KEY, n BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Exec(`INSERT INTO counter VALUES ('x', 0), ('y', 0)`); err != nil {
		t.Fatal(err)
	}
	const workers, rounds = 6, 30
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		c := dial(t, d)
		key := []string{"x", "y"}[w%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if err := c.Begin(driver.TxWrite); err != nil {
					errs <- err
					return
				}
				if err := c.Lock(key); err != nil {
					errs <- err
					return
				}
				var n int64
				if err := c.Query(`SELECT n FROM counter WHERE k = $1`, []any{key}, func(r driver.Row) error { n = r.Int64(0); return nil }); err != nil {
					errs <- err
					return
				}
				if _, err := c.Exec(`UPDATE counter SET n = $1 WHERE k = $2`, n+1, key); err != nil {
					errs <- err
					return
				}
				if err := c.Commit(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := map[string]int64{}
	setup.Query(`SELECT k, n FROM counter`, nil, func(r driver.Row) error { got[r.Text(0)] = r.Int64(1); return nil })
	want := map[string]int64{"x": workers / 2 * rounds, "y": workers / 2 * rounds}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("counters (-want +got):\n%s", diff)
	}
}

// A done context ends the wait at once, whatever the server does: the
// connection is given up, the statement is cancelled on the server too (it
// does not run on to its end), and the next statement runs on a new
// session.
func TestInterruptEndsTheWaitAndTheStatement(t *testing.T) {
	d := testSchema(t, Options{BusyTimeout: time.Second})
	c, watch := dial(t, d), dial(t, d)
	var pid int64
	if err := c.Query(`SELECT pg_backend_pid()`, nil, func(r driver.Row) error { pid = r.Int64(0); return nil }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	restore := c.Interrupt(ctx)
	start := time.Now()
	_, err := c.Exec(`SELECT pg_sleep(30)`)
	restore()
	if !errors.Is(err, driver.ErrInterrupted) {
		t.Fatalf("cancelled sleep: %v, want ErrInterrupted", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("a 200 ms context ended the wait after %v", d)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var running int64
		if err := watch.Query(`SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND query LIKE '%pg_sleep%' AND state = 'active'`,
			[]any{pid}, func(r driver.Row) error { running = r.Int64(0); return nil }); err != nil {
			t.Fatal(err)
		}
		if running == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the interrupted statement still runs on the server")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var one int64
	if err := c.Query(`SELECT 1`, nil, func(r driver.Row) error { one = r.Int64(0); return nil }); err != nil || one != 1 {
		t.Fatalf("after a cancel: %d %v", one, err)
	}
}

func TestLockTimeoutIsBusy(t *testing.T) {
	d := testSchema(t, Options{BusyTimeout: 100 * time.Millisecond})
	a, b := dial(t, d), dial(t, d)
	for _, c := range []*Conn{a, b} {
		if err := c.Begin(driver.TxWrite); err != nil {
			t.Fatal(err)
		}
		c.Lock("k")
	}
	if _, err := a.Exec(`SELECT 1`); err != nil {
		t.Fatal(err)
	}
	_, err := b.Exec(`SELECT 1`)
	if !errors.Is(err, driver.ErrBusy) {
		t.Fatalf("second holder: %v, want ErrBusy", err)
	}
	b.Rollback()
	a.Commit()
}

// Queued statements run in order with the next statement or the commit;
// one that fails fails the transaction, which then changes nothing.
func TestQueue(t *testing.T) {
	d := testSchema(t, Options{BusyTimeout: time.Second})
	c := dial(t, d)
	if _, err := c.Exec(`CREATE TABLE t (n BIGINT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	count := func() (n int64) {
		c.Query(`SELECT count(*) FROM t`, nil, func(r driver.Row) error { n = r.Int64(0); return nil })
		return n
	}
	c.Begin(driver.TxWrite)
	for i := range 3 {
		if err := c.Queue(`INSERT INTO t VALUES ($1)`, i); err != nil {
			t.Fatal(err)
		}
	}
	if got := count(); got != 3 {
		t.Fatalf("queued inserts before the next statement: %d rows, want 3", got)
	}
	c.Queue(`INSERT INTO t VALUES ($1)`, 3)
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != 4 {
		t.Fatalf("after commit: %d rows, want 4", got)
	}
	c.Begin(driver.TxWrite)
	c.Queue(`INSERT INTO t VALUES ($1)`, 10)
	c.Queue(`INSERT INTO t VALUES ($1)`, 0) // a duplicate
	err := c.Commit()
	if !errors.Is(err, driver.ErrUnique) {
		t.Fatalf("commit after a failing queued insert: %v, want ErrUnique", err)
	}
	if c.InTx() {
		t.Fatal("still in a transaction")
	}
	if got := count(); got != 4 {
		t.Fatalf("a failed transaction changed the table: %d rows", got)
	}
}

// QueryLast ends a read transaction with its query: the rows come back,
// the session is idle on the server at once (COMMIT went with the query),
// and Commit has nothing left to send. A failing last query leaves the
// transaction to roll back, as Query does; in a write transaction it is
// Query, and COMMIT stays the caller's. A statement between QueryLast and
// Commit is refused: it would run outside the snapshot.
func TestQueryLastEndsARead(t *testing.T) {
	d := testSchema(t, Options{BusyTimeout: time.Second})
	c := dial(t, d)
	if _, err := c.Exec(`CREATE TABLE t (n BIGINT)`); err != nil {
		t.Fatal(err)
	}
	c.Exec(`INSERT INTO t VALUES (1), (2)`)
	sum := func(last bool) (int64, error) {
		var n int64
		q := c.Query
		if last {
			q = c.QueryLast
		}
		err := q(`SELECT sum(n)::bigint FROM t`, nil, func(r driver.Row) error { n = r.Int64(0); return nil })
		return n, err
	}
	for _, first := range []bool{false, true} {
		c.Begin(driver.TxRead)
		if first { // BEGIN, the query and COMMIT in one round trip
			if _, err := sum(false); err != nil {
				t.Fatal(err)
			}
		}
		n, err := sum(true)
		if err != nil || n != 3 {
			t.Fatalf("QueryLast: %d, %v; want 3", n, err)
		}
		if c.InTx() || c.Raw().TxStatus() != 'I' {
			t.Fatalf("the read is still open after QueryLast (server status %c)", c.Raw().TxStatus())
		}
		// A statement after it would read outside the snapshot: refused.
		if _, err := sum(false); err == nil {
			t.Fatal("a query after QueryLast ran outside its transaction")
		}
		if err := c.Commit(); err != nil {
			t.Fatalf("Commit after QueryLast: %v", err)
		}
	}
	c.Begin(driver.TxRead)
	sum(false)
	err := c.QueryLast(`SELECT 1/(n-n) FROM t`, nil, func(driver.Row) error { return nil })
	if err == nil {
		t.Fatal("a failing last query succeeded")
	}
	if !c.InTx() {
		t.Fatal("a failed last query ended the transaction it could not commit")
	}
	c.Rollback()
	if c.InTx() {
		t.Fatal("still in a transaction after Rollback")
	}
	c.Begin(driver.TxWrite)
	if _, err := c.Exec(`INSERT INTO t VALUES (4)`); err != nil {
		t.Fatal(err)
	}
	if n, err := sum(true); err != nil || n != 7 {
		t.Fatalf("QueryLast in a write: %d, %v; want 7", n, err)
	}
	if !c.InTx() {
		t.Fatal("QueryLast committed a write transaction")
	}
	c.Rollback()
	if n, _ := sum(false); n != 3 {
		t.Fatalf("after the rolled-back write: %d, want 3", n)
	}
}

// A connection the server closed between transactions (a restart, a
// terminated session) is replaced: the next transaction runs on a new one.
func TestReconnectsBetweenTransactions(t *testing.T) {
	d := testSchema(t, Options{BusyTimeout: time.Second})
	c, admin := dial(t, d), dial(t, d)
	var pid int64
	if err := c.Query(`SELECT pg_backend_pid()`, nil, func(r driver.Row) error { pid = r.Int64(0); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(`SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := c.Begin(driver.TxRead); err != nil {
		t.Fatal(err)
	}
	var again int64
	if err := c.Query(`SELECT pg_backend_pid()`, nil, func(r driver.Row) error { again = r.Int64(0); return nil }); err != nil {
		t.Fatalf("first statement after the server closed the connection: %v", err)
	}
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
	if again == pid || again == 0 {
		t.Fatalf("still on backend %d", again)
	}
}

// BenchmarkRoundTrip is one statement and its answer (SELECT 1 outside a
// transaction): the floor under every call of the engine on a server.
func BenchmarkRoundTrip(b *testing.B) {
	u := os.Getenv("AGENTSTATE_TEST_PG")
	if u == "" {
		b.Skip("set AGENTSTATE_TEST_PG")
	}
	d, err := NewDialer(u, Options{BusyTimeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	c, err := d.Dial(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for b.Loop() {
		if _, err := c.Exec(`SELECT 1`); err != nil {
			b.Fatal(err)
		}
	}
}

// Two processes whose URLs name one schema differently (search_path "s"
// and "s, public") lock the same thing: the key is the schema's name, as
// the server knows it, and the lock key.
func TestLockIsTheSchemasWhateverTheURL(t *testing.T) {
	d := testSchema(t, Options{BusyTimeout: 100 * time.Millisecond})
	sp := d.SearchPath()
	u := testpg.URL(t)
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	other, err := NewDialer(u+sep+"search_path="+sp+",public", Options{BusyTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	a, b := dial(t, d), dial(t, other)
	for _, c := range []*Conn{a, b} {
		if err := c.Begin(driver.TxWrite); err != nil {
			t.Fatal(err)
		}
		c.Lock("thread-1")
	}
	if _, err := a.Exec(`SELECT 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Exec(`SELECT 1`); !errors.Is(err, driver.ErrBusy) {
		t.Fatalf("the same key through another spelling of the schema: %v, want ErrBusy", err)
	}
	b.Rollback()
	a.Commit()
}
