package engine

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/agentstate/agentstate/engine/records"
)

// A handle that holds its liveness lock keeps its runs even when its leases
// look lapsed to another handle (a clock ahead, a renewal that could not
// run): only once it closes do they become orphans. On SQLite the lock is
// a file beside the database, on PostgreSQL a session advisory lock.
func TestLiveOwnerIsNotReconciled(t *testing.T) {
	if noLiveness {
		t.Skip("liveness locks disabled in this process")
	}
	path := filepath.Join(t.TempDir(), "live.db")
	o := DefaultOptions()
	o.RunLease = time.Second
	a := openTest(t, path, &o)
	if a.recs.live == nil {
		t.Skipf("no liveness lock on this platform (%s): leases alone decide", testBackend)
	}
	mustCreate(t, a, records.NewRun{RunID: "r1", ThreadID: "t1", Status: records.RunRunning})
	later := DefaultOptions()
	later.ReconcileOnOpen = false
	later.Now = func() time.Time { return time.Now().Add(time.Hour) } // every lease has lapsed
	b := openTest(t, path, &later)
	if n, err := b.Runs().Reconcile(rctx); err != nil || n != 0 {
		t.Fatalf("reconcile while the owner lives: %d runs, %v; want 0", n, err)
	}
	if run, _ := b.Runs().Get(rctx, "r1"); run.Status != records.RunRunning {
		t.Fatalf("a live owner's run is %s", run.Status)
	}
	a.Close()
	if n, err := b.Runs().Reconcile(rctx); err != nil || n != 1 {
		t.Fatalf("reconcile after the owner closed: %d runs, %v; want 1", n, err)
	}
	if run, _ := b.Runs().Get(rctx, "r1"); run.Status != records.RunError || run.Error != records.OrphanReason {
		t.Fatalf("an orphan's run is %s (%q)", run.Status, run.Error)
	}
}
