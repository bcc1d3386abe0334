//go:build !js && !wasip1

package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/engine/records"
)

// An owner's liveness lock can be lost while its handle lives: on
// PostgreSQL the server ends the session that holds it (a restart, a
// failover, pg_terminate_backend, idle_session_timeout), on SQLite someone
// deletes the lock file. The handle takes it again before its next lease
// renewal, so a run whose owner then stops for three leases (here: another
// handle whose clock is three leases ahead, so every lease looks lapsed)
// is not reconciled, round after round, and its owner completes it.
func TestLostLivenessLockIsTakenAgain(t *testing.T) {
	skipShort(t, "runs child processes for several seconds")
	if noLiveness {
		t.Skip("liveness locks disabled in this process")
	}
	cases := []struct {
		name string
		// url makes the handles' URL (PostgreSQL) from the test's.
		url func(string) string
		// drop loses the holder's lock.
		drop func(t *testing.T, a *DB, path string)
	}{
		{name: "lock dropped", url: func(u string) string { return u }, drop: dropLivenessLock},
	}
	if onPG() {
		cases = append(cases, struct {
			name string
			url  func(string) string
			drop func(t *testing.T, a *DB, path string)
		}{
			// Every session of both handles ends after 300 ms idle: the
			// holder's lock session must not, and the prober's must be
			// dialled again.
			name: "idle_session_timeout",
			url:  func(u string) string { return u + "&options=-c%20idle_session_timeout%3D300" },
			drop: func(*testing.T, *DB, string) { time.Sleep(700 * time.Millisecond) },
		})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const lease = time.Second
			path := filepath.Join(t.TempDir(), "lost.db")
			u := tc.url(testPath(t, path))
			o := DefaultOptions()
			o.RunLease = lease
			a := openTest(t, u, &o)
			if a.recs.hold == nil {
				t.Skipf("no liveness lock on this platform (%s): leases alone decide", testBackend)
			}
			mustCreate(t, a, records.NewRun{RunID: "r1", ThreadID: "t1", Status: records.RunRunning})
			later := DefaultOptions()
			later.ReconcileOnOpen = false
			later.Now = func() time.Time { return time.Now().Add(3 * lease) } // the holder paused for three leases
			b := openTest(t, u, &later)
			owner := a.Runs().Owner()

			const rounds = 20
			stolen := 0
			for round := range rounds {
				tc.drop(t, a, path)
				// The holder takes its lock again within a renewal
				// interval (lease/3); give it plenty on a busy machine.
				deadline := time.Now().Add(10 * lease)
				for time.Now().Before(deadline) {
					if p, err := b.recs.live.Probe(rctx, owner); err == nil && p == driver.PresenceAlive {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				n, err := b.Runs().Reconcile(rctx)
				if err != nil {
					t.Fatalf("round %d: reconcile: %v", round, err)
				}
				if n != 0 {
					stolen++
					t.Errorf("round %d: the live owner's run was reconciled after its lock was lost", round)
					break
				}
			}
			t.Logf("%d of %d rounds stole the live run", stolen, rounds)
			if run, err := b.Runs().Get(rctx, "r1"); err != nil || run.Status != records.RunRunning {
				t.Fatalf("the live run is %s (%q), %v", run.Status, run.Error, err)
			}
			if err := a.Runs().Complete(rctx, "r1", records.RunSuccess, "", records.RunTotals{}); err != nil {
				t.Fatalf("the owner completing its run: %v", err)
			}
			// The control: once the owner closes, its runs are orphans.
			mustCreate(t, a, records.NewRun{RunID: "r2", ThreadID: "t2", Status: records.RunRunning})
			a.Close()
			if n, err := b.Runs().Reconcile(rctx); err != nil || n != 1 {
				t.Fatalf("reconcile after the owner closed: %d runs, %v; want 1", n, err)
			}
		})
	}
}

// dropLivenessLock loses the holder's lock from outside: on SQLite every
// lock file beside the database is deleted (the prober's too, which it
// must make again before it trusts any lock), on PostgreSQL the session
// that holds the owner's advisory lock is terminated.
func dropLivenessLock(t *testing.T, a *DB, path string) {
	t.Helper()
	if !onPG() {
		names, _ := filepath.Glob(path + "-owner-*")
		if len(names) == 0 {
			t.Fatal("no lock file to delete")
		}
		for _, n := range names {
			if err := os.Remove(n); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	var schema string
	if err := a.read(rctx, func(c *conn) error {
		_, err := c.queryRow(`SELECT current_schema()`, nil, func(r row) error { schema = r.Text(0); return nil })
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// pg_terminate_backend with a timeout returns once the session ended.
	n := pgAdminExec(t, `SELECT pg_terminate_backend(pid, 10000) FROM pg_catalog.pg_locks WHERE locktype = 'advisory' AND objsubid = 1
		AND (classid::bigint << 32 | objid::bigint) = hashtextextended('agentstate owner/' || $1::text || '/' || $2::text, 0)`,
		schema, a.Runs().Owner())
	if n != 1 {
		t.Fatalf("terminated %d sessions holding the owner's lock, want 1", n)
	}
}

// pgAdminExec runs q on a session of its own to the test server and
// returns how many rows it returned.
func pgAdminExec(t *testing.T, q string, args ...any) int {
	t.Helper()
	c := pgDial(t, os.Getenv("AGENTSTATE_TEST_PG"))
	defer c.Close()
	n := 0
	if err := c.Query(q, args, func(driver.Row) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLostLockThenStopped: holder processes lose their liveness locks
// (SQLite: every lock file deleted; PostgreSQL: every session of the
// holders and of the reconciler terminated, as a restart or failover
// does), take them again, and are then stopped (SIGSTOP) for three leases
// while another process reconciles every 20 ms. No live run may be
// reconciled; the killed holder's must be. AGENTSTATE_LOST_ROUNDS sets how
// many times the locks are lost (default 2).
func TestLostLockThenStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes for several seconds; skipped with -short")
	}
	if noFileLocks() && !onPG() {
		t.Skip("no file locks on this platform: a stopped owner relies on its lease")
	}
	rounds := 2
	if n, err := strconv.Atoi(os.Getenv("AGENTSTATE_LOST_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	const lease = time.Second
	dir := t.TempDir()
	path := filepath.Join(dir, "lost.db")
	app := fmt.Sprintf("lostlock%d", os.Getpid())
	if onPG() {
		path = testPath(t, path) + "&application_name=" + app
	}
	const holders = 2
	// The live handles: the holders and the reconciler.
	locks := func() int {
		if onPG() {
			return pgAdminExec(t, `SELECT 1 FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
				WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted AND a.application_name = $1`, app)
		}
		names, _ := filepath.Glob(path + "-owner-*")
		return len(names)
	}
	drop := func(t *testing.T) {
		if onPG() {
			pgAdminExec(t, `SELECT pg_terminate_backend(pid, 10000) FROM pg_catalog.pg_stat_activity WHERE application_name = $1`, app)
			return
		}
		names, _ := filepath.Glob(path + "-owner-*")
		for _, n := range names {
			os.Remove(n)
		}
	}
	liveScenario{lease: lease, holders: holders, runs: 3, dir: dir,
		disturb: func(t *testing.T, procs []*proc) {
			for round := range rounds {
				drop(t)
				// Each live handle takes its lock again within a renewal
				// interval; plenty of time on a busy machine.
				deadline := time.Now().Add(20 * lease)
				for locks() < holders+1 {
					if time.Now().After(deadline) {
						t.Errorf("round %d: %d of %d live handles hold their liveness lock %v after it was lost", round, locks(), holders+1, 20*lease)
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				for _, h := range procs {
					if err := pause(h.cmd.Process, true); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(3 * lease)
				for _, h := range procs {
					pause(h.cmd.Process, false)
				}
				time.Sleep(lease / 2)
			}
		}}.run(t, path)
}

// TestHoldIsTakenAgainWhileWaitingToWrite: the owner's lease loop waits
// for another handle's write lock (as it may for up to BusyTimeout) when
// its liveness lock is lost. The lock must be taken again within a few
// renewal intervals all the same: the owner is alive, only waiting.
func TestHoldIsTakenAgainWhileWaitingToWrite(t *testing.T) {
	if noLiveness {
		t.Skip("liveness locks disabled in this process")
	}
	const lease = time.Second
	path := filepath.Join(t.TempDir(), "waiting.db")
	u := testPath(t, path)
	o := DefaultOptions()
	o.RunLease = lease
	a := openTest(t, u, &o)
	if a.recs.hold == nil {
		t.Skipf("no liveness lock on this platform (%s)", testBackend)
	}
	mustCreate(t, a, records.NewRun{RunID: "r1", ThreadID: "t1", Status: records.RunRunning})
	other := DefaultOptions()
	other.ReconcileOnOpen = false
	b := openTest(t, u, &other)
	owner := a.Runs().Owner()

	// b holds the write lock long enough for a's lease loop to be waiting
	// for it when the lock is lost, and well past the check below.
	held := make(chan struct{})
	release := make(chan struct{})
	go b.write(rctx, func(*conn) error {
		close(held)
		<-release
		return nil
	})
	<-held
	defer close(release)
	time.Sleep(lease) // a's loop is now waiting to renew its lease
	dropLivenessLock(t, a, path)
	deadline := time.Now().Add(3 * lease)
	for {
		p, err := b.recs.live.Probe(rctx, owner)
		if err == nil && p == driver.PresenceAlive {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the owner's liveness lock was not taken again within %v while its lease loop waited to write (probe: %v, %v)", 3*lease, p, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
