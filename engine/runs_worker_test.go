package engine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/engine/records"
	"github.com/google/go-cmp/cmp"
)

func apply(t *testing.T, db *DB, op records.RunOp) records.RunOpResult {
	t.Helper()
	res, err := db.Runs().Apply(rctx, op)
	if err != nil {
		t.Fatalf("%s %s: %v", op.Op, op.RunID, err)
	}
	return res
}

func getRun(t *testing.T, db *DB, id string) records.Run {
	t.Helper()
	run, err := db.Runs().Get(rctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// A put writes a run whole: a second put of the same run id replaces every
// field, status included (DeerFlow retries a put whose commit it did not
// see, with what it knows now); the thread's one active slot still holds.
func TestRunPutOverwrites(t *testing.T) {
	db, clk := openRec(t, nil)
	t0 := clk.Now()
	apply(t, db, records.RunOp{Op: records.OpPut, RunID: "r1", Run: records.NewRun{ThreadID: "t1", AssistantID: "old"}})
	clk.Add(time.Second)
	lease := clk.Now().Add(time.Minute)
	apply(t, db, records.RunOp{Op: records.OpPut, RunID: "r1", Status: records.RunRunning, Error: "retry", StopReason: "why",
		Run: records.NewRun{ThreadID: "t1", AssistantID: "new", Worker: "w1", WorkerLease: &lease, OperationKind: ""}})
	run := getRun(t, db, "r1")
	if run.AssistantID != "new" || run.Status != records.RunRunning || run.Error != "retry" || run.StopReason != "why" ||
		run.Worker != "w1" || run.WorkerLease == nil || !run.WorkerLease.Equal(lease) || !run.CreatedAt.Equal(t0) {
		t.Fatalf("after the second put: %+v", run)
	}
	// Another active run on the thread is refused, and writes nothing.
	before := dumpRecords(t, db)
	_, err := db.Runs().Apply(rctx, records.RunOp{Op: records.OpPut, RunID: "r2", Run: records.NewRun{ThreadID: "t1"}})
	var active *ActiveRunError
	if !errors.As(err, &active) || active.RunID != "r1" || !errors.Is(err, ErrConflict) {
		t.Fatalf("a second active run: %v", err)
	}
	// A run id of another thread, an unknown status: refused.
	if _, err := db.Runs().Apply(rctx, records.RunOp{Op: records.OpPut, RunID: "r1", Run: records.NewRun{ThreadID: "t2"}}); !errors.Is(err, ErrConflict) {
		t.Fatalf("put across threads: %v", err)
	}
	if _, err := db.Runs().Apply(rctx, records.RunOp{Op: records.OpPut, RunID: "r3", Status: "done", Run: records.NewRun{ThreadID: "t3"}}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("unknown status: %v", err)
	}
	if diff := cmp.Diff(before, dumpRecords(t, db)); diff != "" {
		t.Fatalf("a refused put changed the file:\n%s", diff)
	}
	// A terminal put frees the slot; a terminal run may be put straight away.
	apply(t, db, records.RunOp{Op: records.OpPut, RunID: "r1", Status: records.RunSuccess, Run: records.NewRun{ThreadID: "t1"}})
	apply(t, db, records.RunOp{Op: records.OpPut, RunID: "r2", Run: records.NewRun{ThreadID: "t1"}})
	apply(t, db, records.RunOp{Op: records.OpPut, RunID: "r4", Status: records.RunError, Run: records.NewRun{ThreadID: "t1"}})
	if got := getRun(t, db, "r4").Status; got != records.RunError {
		t.Fatalf("terminal put: %s", got)
	}
}

// Cancellation: the first action wins, only an active run takes one, the
// owner's lease renewal carries it, and a completion after it is refused
// (and reports it) while a completion before it makes it impossible.
func TestRunCancelLeaseAndFinalize(t *testing.T) {
	db, clk := openRec(t, nil)
	lease := clk.Now().Add(30 * time.Second)
	apply(t, db, records.RunOp{Op: records.OpPut, RunID: "r1", Status: records.RunRunning, Run: records.NewRun{ThreadID: "t1", Worker: "wa", WorkerLease: &lease}})
	if res := apply(t, db, records.RunOp{Op: records.OpCancel, RunID: "r1", Action: "rollback"}); !res.Done || res.CancelAction != "rollback" {
		t.Fatalf("first cancel: %+v", res)
	}
	if res := apply(t, db, records.RunOp{Op: records.OpCancel, RunID: "r1", Action: "interrupt"}); res.CancelAction != "rollback" {
		t.Fatalf("second cancel replaced the first: %+v", res)
	}
	later := lease.Add(time.Minute)
	if res := apply(t, db, records.RunOp{Op: records.OpRenew, RunID: "r1", Worker: "wb", Lease: &later}); res.Done {
		t.Fatalf("another worker renewed: %+v", res)
	}
	if res := apply(t, db, records.RunOp{Op: records.OpRenew, RunID: "r1", Worker: "wa", Lease: &later}); !res.Done || res.CancelAction != "rollback" {
		t.Fatalf("owner renewal: %+v", res)
	}
	if res := apply(t, db, records.RunOp{Op: records.OpFinalize, RunID: "r1", Status: records.RunSuccess}); res.Done || res.CancelAction != "rollback" {
		t.Fatalf("finalize after a cancel: %+v", res)
	}
	run := getRun(t, db, "r1")
	if run.Status != records.RunRunning || run.CancelRequestedAt == nil || !run.WorkerLease.Equal(later) {
		t.Fatalf("after the refused finalize: %+v", run)
	}
	// The other order: completion first, then no cancellation.
	apply(t, db, records.RunOp{Op: records.OpPut, RunID: "r2", Status: records.RunRunning, Run: records.NewRun{ThreadID: "t2", Worker: "wa"}})
	if res := apply(t, db, records.RunOp{Op: records.OpFinalize, RunID: "r2", Status: records.RunSuccess, StopReason: "done"}); !res.Done {
		t.Fatalf("finalize: %+v", res)
	}
	if res := apply(t, db, records.RunOp{Op: records.OpCancel, RunID: "r2", Action: "rollback"}); res.Done || res.CancelAction != "" {
		t.Fatalf("cancel of an ended run: %+v", res)
	}
	if run := getRun(t, db, "r2"); run.Status != records.RunSuccess || run.StopReason != "done" || run.CancelAction != "" {
		t.Fatalf("ended run: %+v", run)
	}
	for _, op := range []records.RunOp{
		{Op: records.OpCancel, RunID: "r1", Action: "stop"},
		{Op: records.OpFinalize, RunID: "r1", Status: records.RunRunning},
		{Op: records.OpRenew, RunID: "r1", Worker: "wa"},
		{Op: "nap", RunID: "r1"},
	} {
		if _, err := db.Runs().Apply(rctx, op); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("%+v: %v", op, err)
		}
	}
	if res := apply(t, db, records.RunOp{Op: records.OpCancel, RunID: "missing", Action: "interrupt"}); res.Done {
		t.Fatal("a missing run took a cancellation")
	}
}

// Takeover is a compare-and-set on the lease: a run whose worker lease
// expired more than the grace ago (or never had one) becomes an error; a
// renewed one, an ended one or a missing one does not.
func TestRunTakeover(t *testing.T) {
	db, clk := openRec(t, nil)
	now := clk.Now()
	expired, valid := now.Add(-15*time.Second), now.Add(30*time.Second)
	recent := now.Add(-5 * time.Second)
	for id, l := range map[string]*time.Time{"expired": &expired, "valid": &valid, "recent": &recent, "null": nil} {
		apply(t, db, records.RunOp{Op: records.OpPut, RunID: id, Status: records.RunRunning, Run: records.NewRun{ThreadID: "t-" + id, Worker: "w", WorkerLease: l}})
	}
	apply(t, db, records.RunOp{Op: records.OpPut, RunID: "ended", Status: records.RunSuccess, Run: records.NewRun{ThreadID: "t-ended"}})
	stale, err := db.Runs().ListActive(rctx, records.ActiveQuery{WorkerLeaseBefore: now.Add(-10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range stale {
		ids = append(ids, r.RunID)
	}
	if strings.Join(sortedCopy(ids), ",") != "expired,null" {
		t.Fatalf("expired leases: %v", ids)
	}
	for id, want := range map[string]bool{"expired": true, "null": true, "valid": false, "recent": false, "ended": false, "missing": false} {
		res := apply(t, db, records.RunOp{Op: records.OpTakeover, RunID: id, GraceSeconds: 10, Error: "claimed", StopReason: "takeover"})
		if res.Done != want {
			t.Fatalf("takeover of %s: %v, want %v", id, res.Done, want)
		}
		if want {
			if run := getRun(t, db, id); run.Status != records.RunError || run.Error != "claimed" || run.StopReason != "takeover" {
				t.Fatalf("taken over: %+v", run)
			}
		}
	}
}

// An interrupting create takes the active run unless another worker's
// lease on it is valid or it is a reservation whose lease has not expired;
// the run it takes passes to the new worker.
func TestRunCreateInterruptRespectsWorkers(t *testing.T) {
	db, clk := openRec(t, nil)
	r := db.Runs()
	now := clk.Now()
	valid, expired := now.Add(30*time.Second), now.Add(-30*time.Second)
	mustCreate(t, db, records.NewRun{RunID: "live", ThreadID: "t1", Worker: "other", WorkerLease: &valid})
	_, err := r.Create(rctx, records.NewRun{RunID: "new", ThreadID: "t1", Worker: "me", MultitaskStrategy: records.StrategyInterrupt, WorkerGraceSeconds: 10})
	var active *ActiveRunError
	if !errors.As(err, &active) || !strings.Contains(active.Reason, "another worker") {
		t.Fatalf("interrupt of another worker's live run: %v", err)
	}
	// Its own worker's run it may interrupt.
	if c, err := r.Create(rctx, records.NewRun{RunID: "mine", ThreadID: "t1", Worker: "other", MultitaskStrategy: records.StrategyRollback}); err != nil || c.Interrupted != "live" {
		t.Fatalf("own worker: %+v %v", c, err)
	}
	// A reservation without a lease blocks; one whose lease expired is taken.
	mustCreate(t, db, records.NewRun{RunID: "res", ThreadID: "t2", OperationKind: "checkpoint_write", Worker: "a"})
	_, err = r.Create(rctx, records.NewRun{RunID: "n2", ThreadID: "t2", Worker: "b", MultitaskStrategy: records.StrategyInterrupt})
	if !errors.As(err, &active) || !strings.Contains(active.Reason, "reservation") {
		t.Fatalf("interrupt of a reservation: %v", err)
	}
	mustCreate(t, db, records.NewRun{RunID: "res3", ThreadID: "t3", OperationKind: "checkpoint_write", Worker: "dead", WorkerLease: &expired})
	c, err := r.Create(rctx, records.NewRun{RunID: "n3", ThreadID: "t3", Worker: "b", MultitaskStrategy: records.StrategyInterrupt, WorkerGraceSeconds: 10})
	if err != nil || c.Interrupted != "res3" {
		t.Fatalf("interrupt of an expired reservation: %+v %v", c, err)
	}
	if old := getRun(t, db, "res3"); old.Status != records.RunInterrupted || old.Worker != "b" || old.OperationKind != "checkpoint_write" {
		t.Fatalf("taken reservation: %+v", old)
	}
	// Reservations are left out of RunsOnly listings.
	mustCreate(t, db, records.NewRun{RunID: "res4", ThreadID: "t4", OperationKind: "checkpoint_write"})
	all, _ := r.ListActive(rctx, records.ActiveQuery{})
	runs, _ := r.ListActive(rctx, records.ActiveQuery{RunsOnly: true})
	if len(all)-len(runs) != 2 { // res (t2) and res4
		t.Fatalf("RunsOnly left out %d rows, want 2", len(all)-len(runs))
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// OpStatus is DeerFlow's update_status: the status with its error and stop
// reason in one write, for a run still pending, running or interrupted;
// Done false (nothing written) for an ended or missing run.
func TestRunOpStatus(t *testing.T) {
	db, _ := openRec(t, nil)
	status := func(id string, to records.RunStatus, errText, reason string) bool {
		t.Helper()
		res, err := db.Runs().Apply(rctx, records.RunOp{Op: records.OpStatus, RunID: id, Status: to, Error: errText, StopReason: reason})
		if err != nil {
			t.Fatalf("status %s -> %s: %v", id, to, err)
		}
		return res.Done
	}
	mustCreate(t, db, records.NewRun{RunID: "r1", ThreadID: "t1"})
	if !status("r1", records.RunRunning, "", "") {
		t.Fatal("pending -> running refused")
	}
	// The rollback path: the cancel acknowledged with its reason, then the
	// error; "" keeps what is stored.
	if !status("r1", records.RunInterrupted, "cancelled", "user_cancel") {
		t.Fatal("running -> interrupted refused")
	}
	if !status("r1", records.RunError, "rolled back", "") {
		t.Fatal("interrupted -> error refused")
	}
	run := getRun(t, db, "r1")
	if run.Status != records.RunError || run.Error != "rolled back" || run.StopReason != "user_cancel" {
		t.Fatalf("after the rollback path: %s %q %q", run.Status, run.Error, run.StopReason)
	}
	// As DeerFlow's guard: a running run may go back to pending, an
	// interrupted one resume or succeed; an ended run stays as it is, its
	// own status included.
	mustCreate(t, db, records.NewRun{RunID: "r2", ThreadID: "t2", Status: records.RunRunning})
	for _, to := range []records.RunStatus{records.RunPending, records.RunRunning, records.RunInterrupted, records.RunRunning, records.RunInterrupted, records.RunSuccess} {
		if !status("r2", to, "", "") {
			t.Fatalf("r2 -> %s refused", to)
		}
	}
	mustCreate(t, db, records.NewRun{RunID: "r3", ThreadID: "t3", Status: records.RunRunning})
	status("r3", records.RunTimeout, "", "")
	before := dumpRecords(t, db)
	for _, c := range []struct {
		id string
		to records.RunStatus
	}{{"r1", records.RunError}, {"r1", records.RunSuccess}, {"r2", records.RunSuccess}, {"r2", records.RunRunning}, {"r3", records.RunRunning}, {"missing", records.RunError}} {
		if status(c.id, c.to, "late", "late") {
			t.Errorf("%s -> %s allowed", c.id, c.to)
		}
	}
	if diff := cmp.Diff(before, dumpRecords(t, db)); diff != "" {
		t.Fatalf("a refused status wrote:\n%s", diff)
	}
	if _, err := db.Runs().Apply(rctx, records.RunOp{Op: records.OpStatus, RunID: "r2", Status: "done"}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("unknown status: %v", err)
	}
}
