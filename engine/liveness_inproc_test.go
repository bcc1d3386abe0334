package engine

import (
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/engine/records"
)

// TestReconcileBusyIsTyped: a reconcile that cannot get the write lock
// within the busy timeout fails with ErrBusy, and Open does not fail
// because its reconcile could not run.
func TestReconcileBusyIsTyped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	clk := newRecClock()
	o := DefaultOptions()
	o.Now, o.RunLease = clk.Now, time.Second
	a := openTest(t, path, &o)
	mustCreate(t, a, records.NewRun{RunID: "r", ThreadID: "t", Status: records.RunRunning})
	a.Close()
	clk.Add(time.Minute)

	// Another connection holds the write lock. Neither handle's
	// background loop may reconcile the run first (on PostgreSQL the
	// blocker's own loop would wait on the row, then take it as soon as
	// it is free): their loops tick every RunLease/3.
	bo := o
	bo.ReconcileOnOpen = false
	bo.RunLease = time.Hour
	blocker := openTest(t, path, &bo)
	c, release, err := blocker.acquire(rctx, blocker.writer)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	unblock := func() { once.Do(func() { c.d.Rollback(); release() }) }
	t.Cleanup(unblock)
	if onPG() {
		// PostgreSQL's writers run at once: the run's row is what a
		// reconcile must wait for.
		if err := c.d.Begin(driver.TxWrite); err != nil {
			t.Fatal(err)
		}
		if _, err := c.d.Exec(`SELECT 1 FROM runs FOR UPDATE`); err != nil {
			t.Fatal(err)
		}
	} else if err := c.exec("BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	short := o
	short.BusyTimeout = 100 * time.Millisecond
	short.RunLease = time.Hour
	b := openTest(t, path, &short) // reconciles at open, cannot: not an error
	if _, err := b.Runs().Reconcile(rctx); !errors.Is(err, ErrBusy) {
		t.Fatalf("reconcile under a held write lock: %v, want ErrBusy", err)
	}
	unblock()
	if n, err := b.Runs().Reconcile(rctx); err != nil || n != 1 {
		t.Fatalf("reconcile once the lock is free: %d %v, want 1", n, err)
	}
}

// TestLongWriteExtendsLeases: a write transaction that holds the lock for
// more than a quarter lease leaves every lease that was valid when it
// began at least a full lease from its commit, so handles that rely on
// leases alone do not take its neighbours' runs for orphans.
func TestLongWriteExtendsLeases(t *testing.T) {
	sqliteOnly(t, "on PostgreSQL a long write does not stop other handles from renewing their leases")
	path := filepath.Join(t.TempDir(), "extend.db")
	clk := newRecClock()
	o := DefaultOptions()
	o.Now, o.RunLease = clk.Now, 4*time.Second
	a := openTest(t, path, &o)
	mustCreate(t, a, records.NewRun{RunID: "live", ThreadID: "t1", Status: records.RunRunning})
	mustCreate(t, a, records.NewRun{RunID: "lapsed", ThreadID: "t2", Status: records.RunRunning})
	// lapsed's lease ran out before the long write began.
	err := a.write(rctx, func(c *conn) error {
		return c.exec(`UPDATE runs SET lease_until=? WHERE run_id='lapsed'`, clk.Now().Add(-time.Second).UnixMicro())
	})
	if err != nil {
		t.Fatal(err)
	}
	b := openTest(t, path, &o)
	err = b.write(rctx, func(c *conn) error {
		time.Sleep(1100 * time.Millisecond) // over a quarter lease, in real time
		clk.Add(3 * time.Second)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	lease := func(id string) int64 {
		var v int64
		b.read(rctx, func(c *conn) (err error) {
			v, err = c.queryInt64(`SELECT lease_until FROM runs WHERE run_id=?`, id)
			return err
		})
		return v
	}
	// The live lease was due 4 s after the start; the write held the lock
	// for about 1.1 s of real time, which the lease gets back.
	due := newRecClock().Now().Add(o.RunLease).UnixMicro()
	if got := lease("live"); got < due+1_000_000 || got > due+3_000_000 {
		t.Fatalf("live lease after a 1.1 s write: %+d µs from its due time, want about +1.1 s", got-due)
	}
	if got := lease("lapsed"); got >= clk.Now().UnixMicro() {
		t.Fatalf("a lease that had lapsed before the write began was extended")
	}
}

// readOnly opens path for checking only: no reconcile, no writes.
func readOnly(t *testing.T, path string) *DB {
	o := DefaultOptions()
	o.Mode, o.ReadOnly = channels.ModeAuto, true
	return openTest(t, path, &o)
}
