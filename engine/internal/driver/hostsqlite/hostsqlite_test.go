//go:build js

// These tests run under Node with the SQLite host (wasm/js/testhost):
//
//	GOOS=js GOARCH=wasm go test -c -o hostsqlite.test.wasm ./engine/internal/driver/hostsqlite
//	node wasm/js/testhost/run.mjs hostsqlite.test.wasm -test.v
package hostsqlite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/google/go-cmp/cmp"
)

func open(t *testing.T, name string, o Options) *Conn {
	t.Helper()
	if o.BusyTimeout == 0 {
		o.BusyTimeout = time.Second
	}
	o.Create = true
	c, err := Open(name, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func mem(t *testing.T) *Conn { return open(t, ":memory:", Options{}) }

func exec(t *testing.T, c *Conn, q string, args ...any) int64 {
	t.Helper()
	n, err := c.Exec(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

type rowVals struct {
	Null  []bool
	Int   []int64
	Float []float64
	Text  []string
	Blob  [][]byte
}

func all(t *testing.T, c *Conn, q string, args ...any) []rowVals {
	t.Helper()
	var out []rowVals
	err := c.Query(q, args, func(r driver.Row) error {
		var v rowVals
		for i := range r.Columns() {
			v.Null = append(v.Null, r.Null(i))
			v.Int = append(v.Int, r.Int64(i))
			v.Float = append(v.Float, r.Float(i))
			v.Text = append(v.Text, r.Text(i))
			v.Blob = append(v.Blob, bytes.Clone(r.Blob(i)))
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

func TestValuesRoundTrip(t *testing.T) {
	c := mem(t)
	exec(t, c, "CREATE TABLE t(a, b, c, d, e)")
	s := "héllo"
	if n := exec(t, c, "INSERT INTO t VALUES (?, ?, ?, ?, ?)", int64(-1<<62), 2.5, s, []byte{0, 1, 2}, nil); n != 1 {
		t.Fatalf("changed %d rows, want 1", n)
	}
	exec(t, c, "INSERT INTO t VALUES (?, ?, ?, ?, ?)", true, 7, &s, []byte{}, (*string)(nil))
	got := all(t, c, "SELECT a, b, c, d, e FROM t ORDER BY rowid")
	want := []rowVals{
		{
			Null:  []bool{false, false, false, false, true},
			Int:   []int64{-1 << 62, 2, 0, 0, 0},
			Float: []float64{float64(-1 << 62), 2.5, 0, 0, 0},
			Text:  []string{"-4611686018427387904", "2.5", s, "\x00\x01\x02", ""},
			Blob:  [][]byte{[]byte("-4611686018427387904"), []byte("2.5"), []byte(s), {0, 1, 2}, nil},
		},
		{
			Null:  []bool{false, false, false, false, true},
			Int:   []int64{1, 7, 0, 0, 0},
			Float: []float64{1, 7, 0, 0, 0},
			Text:  []string{"1", "7", s, "", ""},
			Blob:  [][]byte{[]byte("1"), []byte("7"), []byte(s), {}, nil},
		},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("rows (-want +got):\n%s", d)
	}
}

// A result larger than the buffer comes in batches; a single row larger
// than the buffer grows it.
// Empty texts and blobs are values, not NULL, also as the only argument
// of a statement.
func TestEmptyValues(t *testing.T) {
	c := mem(t)
	for _, arg := range []any{"", []byte{}} {
		got := all(t, c, "SELECT ? IS NULL, typeof(?1), length(?1)", arg)
		if got[0].Int[0] != 0 || got[0].Text[1] == "null" || got[0].Int[2] != 0 {
			t.Fatalf("%T %q: %+v", arg, arg, got)
		}
	}
}

func TestLargeResults(t *testing.T) {
	c := mem(t)
	exec(t, c, "CREATE TABLE t(i INTEGER PRIMARY KEY, v BLOB)")
	big := bytes.Repeat([]byte("x"), 3*bufSize)
	for i := range 500 {
		v := []byte(fmt.Sprintf("row %d %s", i, strings.Repeat("y", i)))
		if i == 250 {
			v = big
		}
		exec(t, c, "INSERT INTO t VALUES (?, ?)", i, v)
	}
	n := 0
	err := c.Query("SELECT i, v FROM t ORDER BY i", nil, func(r driver.Row) error {
		i := int(r.Int64(0))
		want := []byte(fmt.Sprintf("row %d %s", i, strings.Repeat("y", i)))
		if i == 250 {
			want = big
		}
		if i != n || !bytes.Equal(r.Blob(1), want) {
			return fmt.Errorf("row %d: got i=%d, %d bytes", n, i, len(r.Blob(1)))
		}
		n++
		return nil
	})
	if err != nil || n != 500 {
		t.Fatalf("read %d rows, err %v", n, err)
	}
	var blob []byte
	err = c.Query("SELECT ?", []any{big}, func(r driver.Row) error { blob = bytes.Clone(r.Blob(0)); return nil })
	if err != nil || !bytes.Equal(blob, big) {
		t.Fatalf("large argument: %d bytes, err %v", len(blob), err)
	}
}

// A query stopped early leaves the statement reset: it runs again from
// the start, and the read transaction of an autocommit query is over.
func TestQueryStopsEarly(t *testing.T) {
	c := mem(t)
	exec(t, c, "CREATE TABLE t(i)")
	for i := range 3000 {
		exec(t, c, "INSERT INTO t VALUES (?)", i)
	}
	stop := errors.New("stop")
	for range 2 {
		seen := 0
		err := c.Query("SELECT i FROM t ORDER BY i", nil, func(r driver.Row) error {
			if r.Int64(0) != int64(seen) {
				return fmt.Errorf("row %d is %d", seen, r.Int64(0))
			}
			if seen++; seen == 2500 {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) {
			t.Fatalf("got %v, want stop", err)
		}
	}
	if c.InTx() {
		t.Fatal("a transaction is open after the query")
	}
}

// Statements may run while a query's rows are being read.
func TestNestedStatements(t *testing.T) {
	c := mem(t)
	exec(t, c, "CREATE TABLE t(i, j)")
	for i := range 5 {
		exec(t, c, "INSERT INTO t VALUES (?, 0)", i)
	}
	err := c.Query("SELECT i FROM t ORDER BY i", nil, func(r driver.Row) error {
		var n int64
		if err := c.Query("SELECT count(*) FROM t WHERE i <= ?", []any{r.Int64(0)}, func(r driver.Row) error { n = r.Int64(0); return nil }); err != nil {
			return err
		}
		_, err := c.Exec("UPDATE t SET j = ? WHERE i = ?", n, r.Int64(0))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	got := all(t, c, "SELECT group_concat(j) FROM t")
	if got[0].Text[0] != "1,2,3,4,5" {
		t.Fatalf("got %q", got[0].Text[0])
	}
}

func TestErrorKinds(t *testing.T) {
	c := mem(t)
	exec(t, c, "CREATE TABLE t(i INTEGER PRIMARY KEY, u UNIQUE, n NOT NULL)")
	exec(t, c, "INSERT INTO t VALUES (1, 1, 1)")
	for _, tc := range []struct {
		q    string
		args []any
		kind error
		text string
	}{
		{"INSERT INTO t VALUES (1, 2, 1)", nil, driver.ErrUnique, "UNIQUE constraint failed"},
		{"INSERT INTO t VALUES (2, 1, 1)", nil, driver.ErrUnique, "UNIQUE constraint failed: t.u"},
		{"INSERT INTO t VALUES (3, 3, NULL)", nil, driver.ErrConstraint, "NOT NULL constraint failed"},
		{"SELECT nope FROM t", nil, driver.ErrSchema, "no such column: nope"},
		{"SELECT * FROM missing", nil, driver.ErrSchema, "no such table: missing"},
	} {
		_, err := c.Exec(tc.q, tc.args...)
		if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: got %v, want %v with %q", tc.q, err, tc.kind, tc.text)
		}
	}
	if _, err := c.Exec("INSERT INTO t VALUES (3, 3, NULL)"); errors.Is(err, driver.ErrUnique) {
		t.Errorf("a NOT NULL failure is not a unique violation: %v", err)
	}
	if _, err := c.Exec("SELECT 1; SELECT 2"); err == nil || !strings.Contains(err.Error(), "more than one statement") {
		t.Errorf("two statements: %v", err)
	}
	if _, err := c.Exec("SELECT ?", struct{}{}); err == nil || !strings.Contains(err.Error(), "cannot bind") {
		t.Errorf("bad argument: %v", err)
	}
}

func TestTransactions(t *testing.T) {
	c := mem(t)
	exec(t, c, "CREATE TABLE t(i)")
	if err := c.Begin(driver.TxWrite); err != nil {
		t.Fatal(err)
	}
	if !c.InTx() {
		t.Fatal("InTx is false inside a transaction")
	}
	exec(t, c, "INSERT INTO t VALUES (1)")
	if err := c.Rollback(); err != nil {
		t.Fatal(err)
	}
	if c.InTx() {
		t.Fatal("InTx after rollback")
	}
	if got := all(t, c, "SELECT count(*) FROM t")[0].Int[0]; got != 0 {
		t.Fatalf("%d rows after rollback", got)
	}
	if err := c.Rollback(); err != nil {
		t.Fatalf("rollback without a transaction: %v", err)
	}
}

func TestExecScript(t *testing.T) {
	c := mem(t)
	script := `-- a migration
CREATE TABLE a(x);
/* comment */ CREATE TABLE b(y);
ALTER TABLE a ADD COLUMN x;
INSERT INTO b VALUES ('é;');
-- trailing comment
`
	var seen []string
	err := c.ExecScript(script, func(stmt string) (bool, error) {
		seen = append(seen, strings.TrimSpace(stmt))
		return strings.Contains(stmt, "ALTER"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-- a migration\nCREATE TABLE a(x);", "/* comment */ CREATE TABLE b(y);", "ALTER TABLE a ADD COLUMN x;", "INSERT INTO b VALUES ('é;');"}
	if d := cmp.Diff(want, seen); d != "" {
		t.Fatalf("statements (-want +got):\n%s", d)
	}
	if got := all(t, c, "SELECT y FROM b")[0].Text[0]; got != "é;" {
		t.Fatalf("got %q", got)
	}
	err = c.ExecScript("CREATE TABLE c(z); SELECT * FROM nope; CREATE TABLE d(w);", nil)
	if !errors.Is(err, errSQLiteError) || !strings.Contains(err.Error(), "no such table") {
		t.Fatalf("bad script: %v", err)
	}
}

func TestFunctions(t *testing.T) {
	compiles := 0
	funcs := []driver.Func{
		{Name: "t_add", NArg: 2, Call: func(_ *any, a []driver.Value) (any, error) { return a[0].Int64() + a[1].Int64(), nil }},
		{Name: "t_match", NArg: 2, Call: func(aux *any, a []driver.Value) (any, error) {
			if *aux == nil {
				compiles++
				*aux = string(a[1].Blob())
			}
			return strings.Contains(a[0].Text(), (*aux).(string)), nil
		}},
		{Name: "t_fail", NArg: 1, Call: func(_ *any, a []driver.Value) (any, error) { return nil, errors.New("no good: " + a[0].Text()) }},
		{Name: "t_echo", NArg: 1, Call: func(_ *any, a []driver.Value) (any, error) {
			if a[0].Null() {
				return nil, nil
			}
			return bytes.Clone(a[0].Blob()), nil
		}},
	}
	c := open(t, ":memory:", Options{Funcs: funcs})
	if got := all(t, c, "SELECT t_add(40, 2)")[0].Int[0]; got != 42 {
		t.Fatalf("t_add: %d", got)
	}
	exec(t, c, "CREATE TABLE t(s)")
	for i := range 100 {
		exec(t, c, "INSERT INTO t VALUES (?)", fmt.Sprintf("item %d", i))
	}
	got := all(t, c, "SELECT count(*) FROM t WHERE t_match(s, ?)", []byte("7"))
	if got[0].Int[0] != 19 {
		t.Fatalf("t_match: %d rows", got[0].Int[0])
	}
	if compiles != 1 {
		t.Fatalf("the constant argument's state was made %d times in one statement, want 1", compiles)
	}
	if _, err := c.Exec("SELECT t_fail('x')"); err == nil || !strings.Contains(err.Error(), "no good: x") {
		t.Fatalf("t_fail: %v", err)
	}
	big := bytes.Repeat([]byte{7}, 100<<10)
	var echoed []byte
	if err := c.Query("SELECT t_echo(?), t_echo(NULL)", []any{big}, func(r driver.Row) error {
		echoed = bytes.Clone(r.Blob(0))
		if !r.Null(1) {
			return errors.New("t_echo(NULL) is not NULL")
		}
		return nil
	}); err != nil || !bytes.Equal(echoed, big) {
		t.Fatalf("t_echo: %d bytes, %v", len(echoed), err)
	}
}

// A second connection finds the database locked by the first: the driver
// retries until the busy timeout, and succeeds when the lock is released
// meanwhile (another goroutine runs while it waits).
func TestBusyRetry(t *testing.T) {
	name := filepath.Join(t.TempDir(), "busy.db")
	a := open(t, name, Options{})
	exec(t, a, "CREATE TABLE t(i)")
	b := open(t, name, Options{BusyTimeout: 200 * time.Millisecond})
	if err := a.Begin(driver.TxWrite); err != nil {
		t.Fatal(err)
	}
	exec(t, a, "INSERT INTO t VALUES (1)")
	start := time.Now()
	_, err := b.Exec("INSERT INTO t VALUES (2)")
	if !errors.Is(err, driver.ErrBusy) {
		t.Fatalf("got %v, want ErrBusy", err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("gave up after %v, before the busy timeout", d)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		a.Commit()
	}()
	b.busy = 5 * time.Second
	if _, err := b.Exec("INSERT INTO t VALUES (3)"); err != nil {
		t.Fatalf("after the lock was released: %v", err)
	}
	if got := all(t, b, "SELECT group_concat(i) FROM t")[0].Text[0]; got != "1,3" {
		t.Fatalf("rows %q", got)
	}
}

func TestInterrupt(t *testing.T) {
	c := mem(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	restore := c.Interrupt(ctx)
	start := time.Now()
	err := c.Query("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r", nil, func(driver.Row) error { return nil })
	if !errors.Is(err, driver.ErrInterrupted) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want ErrInterrupted and DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("interrupted after %v", d)
	}
	if _, err := c.Exec("SELECT 1"); !errors.Is(err, driver.ErrInterrupted) {
		t.Fatalf("with the context done: %v", err)
	}
	restore()
	if _, err := c.Exec("SELECT 1"); err != nil {
		t.Fatalf("after restore: %v", err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	restore = c.Interrupt(ctx2)
	defer restore()
	if err := c.Rollback(); err != nil {
		t.Fatalf("rollback under a done context: %v", err)
	}
}

func TestImages(t *testing.T) {
	c := open(t, "file:img-a?vfs=memdb", Options{})
	exec(t, c, "CREATE TABLE t(v)")
	exec(t, c, "INSERT INTO t VALUES ('kept')")
	img, err := c.Serialize("main")
	if err != nil {
		t.Fatal(err)
	}
	if len(img) < 512 || string(img[:16]) != "SQLite format 3\x00" {
		t.Fatalf("image of %d bytes", len(img))
	}
	d := open(t, "file:img-b?vfs=memdb", Options{})
	if err := d.Deserialize("main", img, false); err != nil {
		t.Fatal(err)
	}
	if got := all(t, d, "SELECT v FROM t")[0].Text[0]; got != "kept" {
		t.Fatalf("got %q", got)
	}
	exec(t, d, "INSERT INTO t VALUES ('more')")
	if got := all(t, d, "SELECT count(*) FROM t")[0].Int[0]; got != 2 {
		t.Fatalf("%d rows", got)
	}
	e := open(t, ":memory:", Options{})
	err = e.Deserialize("main", []byte("not a database, but long enough to look like one at first ........................................."), false)
	if err == nil {
		_, err = e.Exec("SELECT * FROM sqlite_master")
	}
	if !errors.Is(err, driver.ErrCorrupt) {
		t.Fatalf("garbage image: %v", err)
	}
}

// The test runner's file VFS has shared memory (WAL in normal locking);
// memdb has none.
func TestSharedMemory(t *testing.T) {
	f := open(t, filepath.Join(t.TempDir(), "f.db"), Options{})
	if !f.SharedMemory() {
		t.Fatal("the runner's file VFS reports no shared memory")
	}
	if m := open(t, "file:shm-m?vfs=memdb", Options{}); m.SharedMemory() {
		t.Fatal("memdb reports shared memory")
	}
}

func TestOpenErrors(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "missing", "x.db"), Options{Create: true})
	if err == nil || !strings.Contains(err.Error(), "unable to open") {
		t.Fatalf("got %v", err)
	}
	_, err = Open("file:x?vfs=nosuchvfs", Options{Create: true})
	if err == nil || !strings.Contains(err.Error(), "no such vfs") {
		t.Fatalf("got %v", err)
	}
}

// BenchmarkGoFunctionPerRow is the cost of a Go function called from SQL,
// per row, against SQLite's own length() over the same 10,000 rows: the
// difference is the crossing from SQLite into Go and back.
func BenchmarkGoFunctionPerRow(b *testing.B) {
	funcs := []driver.Func{{Name: "go_len", NArg: 1, Call: func(_ *any, a []driver.Value) (any, error) { return int64(len(a[0].Blob())), nil }}}
	c, err := Open(":memory:", Options{Create: true, Funcs: funcs})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if err := c.ExecScript(`CREATE TABLE t(v); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000) INSERT INTO t SELECT randomblob(100) FROM n;`, nil); err != nil {
		b.Fatal(err)
	}
	for _, fn := range []string{"length", "go_len"} {
		b.Run(fn, func(b *testing.B) {
			for b.Loop() {
				err := c.Query("SELECT sum("+fn+"(v)) FROM t", nil, func(r driver.Row) error {
					if r.Int64(0) != 1_000_000 {
						return fmt.Errorf("sum %d", r.Int64(0))
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10_000, "ns/row")
		})
	}
}

// BenchmarkPointQuery is one crossing: a one-row statement with a 1 KB blob.
func BenchmarkPointQuery(b *testing.B) {
	c, err := Open(":memory:", Options{Create: true})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v)"); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Exec("INSERT INTO t VALUES (1, ?)", bytes.Repeat([]byte("x"), 1024)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := c.Query("SELECT v FROM t WHERE k = ?", []any{1}, func(r driver.Row) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// TestQueueBatch: statements of Queue wait for the transaction's next
// statement and go with it in one host call (runBatch); a read sees them,
// an Exec that joins them reports its own count, and Rollback drops those
// not yet sent.
func TestQueueBatch(t *testing.T) {
	c := mem(t)
	exec(t, c, "CREATE TABLE t(i INTEGER PRIMARY KEY, v)")
	if err := c.Queue("INSERT INTO t VALUES (?, ?)", 0, "outside"); err != nil {
		t.Fatal(err)
	}
	if len(c.queued) != 0 {
		t.Fatal("a statement outside a transaction waited")
	}
	if err := c.Begin(driver.TxWrite); err != nil {
		t.Fatal(err)
	}
	vals := []any{nil, int64(-7), 2.5, "text é", []byte{0, 1, 2}, true, bytes.Repeat([]byte("x"), 40<<10)}
	for i, v := range vals {
		if err := c.Queue("INSERT INTO t VALUES (?, ?)", i+1, v); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.queued) != len(vals) {
		t.Fatalf("%d statements waiting, want %d", len(c.queued), len(vals))
	}
	if err := c.Queue("SELECT ?", struct{}{}); err == nil || !strings.Contains(err.Error(), "cannot bind") {
		t.Fatalf("an argument that cannot be bound is reported by Queue: %v", err)
	}
	rows := all(t, c, "SELECT typeof(v) FROM t ORDER BY i")
	if len(c.queued) != 0 || len(rows) != len(vals)+1 {
		t.Fatalf("after a read: %d waiting, %d rows", len(c.queued), len(rows))
	}
	for i, want := range []string{"text", "null", "integer", "real", "text", "blob", "integer", "blob"} {
		if got := rows[i].Text[0]; got != want {
			t.Errorf("row %d: %s, want %s", i, got, want)
		}
	}
	// A query whose first row does not fit the buffer, and one of many
	// rows, each the last of a batch.
	if err := c.Queue("INSERT INTO t VALUES (?, ?)", 100, bytes.Repeat([]byte("y"), 100<<10)); err != nil {
		t.Fatal(err)
	}
	if got := all(t, c, "SELECT v FROM t WHERE i = 100"); len(got) != 1 || len(got[0].Blob[0]) != 100<<10 {
		t.Fatal("the large row queried after its insert")
	}
	for i := range 2000 {
		if err := c.Queue("INSERT INTO t VALUES (?, ?)", 1000+i, strings.Repeat("z", 50)); err != nil {
			t.Fatal(err)
		}
	}
	if got := all(t, c, "SELECT i, v FROM t WHERE i >= 1000"); len(got) != 2000 {
		t.Fatalf("%d rows of 2000 after their inserts", len(got))
	}
	exec(t, c, "DELETE FROM t WHERE i >= 100")
	if err := c.Queue("UPDATE t SET v = 1 WHERE i <= 2"); err != nil {
		t.Fatal(err)
	}
	if n := exec(t, c, "UPDATE t SET v = 2 WHERE i > 3"); n != 4 {
		t.Fatalf("Exec after queued statements changed %d rows, want its own 4", n)
	}
	if err := c.Queue("DELETE FROM t"); err != nil {
		t.Fatal(err)
	}
	if err := c.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := c.Begin(driver.TxWrite); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := all(t, c, "SELECT count(*) FROM t")[0].Int[0]; got != 1 {
		t.Fatalf("%d rows: the rolled-back transaction, or its dropped DELETE, left something", got)
	}
}

// TestQueueBatchFailure: a statement that fails in the middle of a batch
// stops it; its own error is the error of the call that sent the batch
// (COMMIT, which then does not run), the statements after it do not run,
// and after the rollback nothing of the transaction is in the file.
func TestQueueBatchFailure(t *testing.T) {
	name := filepath.Join(t.TempDir(), "batch.db")
	c := open(t, name, Options{})
	other := open(t, name, Options{})
	exec(t, c, "CREATE TABLE t(i INTEGER PRIMARY KEY, n NOT NULL)")
	exec(t, c, "CREATE TABLE log(i)")
	exec(t, c, "INSERT INTO t VALUES (1, 1)")
	for _, end := range []string{"commit", "exec", "query"} {
		if err := c.Begin(driver.TxWrite); err != nil {
			t.Fatal(err)
		}
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{"INSERT INTO t VALUES (?, ?)", []any{2, "a"}},
			{"INSERT INTO log VALUES (?)", []any{1}},
			{"INSERT INTO t VALUES (?, ?)", []any{3, nil}}, // NOT NULL fails
			{"INSERT INTO t VALUES (?, ?)", []any{1, "dup"}},
			{"INSERT INTO log VALUES (?)", []any{2}},
		} {
			if err := c.Queue(q.sql, q.args...); err != nil {
				t.Fatalf("%s: Queue reported %v; the batch has not run", end, err)
			}
		}
		var err error
		switch end {
		case "commit":
			err = c.Commit()
		case "exec":
			_, err = c.Exec("INSERT INTO log VALUES (3)")
		case "query":
			err = c.Query("SELECT count(*) FROM log", nil, func(driver.Row) error {
				t.Error("the query ran after a failed batch")
				return nil
			})
		}
		if !errors.Is(err, driver.ErrConstraint) || errors.Is(err, driver.ErrUnique) || !strings.Contains(err.Error(), "NOT NULL constraint failed: t.n") {
			t.Fatalf("%s: got %v, want the NOT NULL failure of the third statement", end, err)
		}
		if !c.InTx() {
			t.Fatalf("%s: the transaction ended with the failed batch", end)
		}
		if got := all(t, c, "SELECT (SELECT count(*) FROM t), (SELECT count(*) FROM log)")[0].Int; got[0] != 2 || got[1] != 1 {
			t.Fatalf("%s: inside the transaction %v rows, want the two statements before the failure", end, got)
		}
		if err := c.Rollback(); err != nil {
			t.Fatal(err)
		}
		for _, conn := range []*Conn{c, other} {
			if got := all(t, conn, "SELECT (SELECT count(*) FROM t), (SELECT count(*) FROM log)")[0].Int; got[0] != 1 || got[1] != 0 {
				t.Fatalf("%s: %v rows after the rollback, want the table as it was", end, got)
			}
		}
	}
}
