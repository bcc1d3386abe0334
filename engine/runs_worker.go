// Worker-level run changes: what a caller's own pool of workers records of
// a run (DeerFlow's RunStore: owner worker, lease, takeover, cancellation,
// put as an overwrite), beside the engine's handle owner and lease.

package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/engine/records"
)

// activeRow is a thread's active run as Create reads it.
type activeRow struct {
	runID   string
	status  records.RunStatus
	kind    string
	worker  string
	noLease bool
	lease   int64
}

// untakable says why an interrupting create may not take the active row:
// another worker holds a valid lease on it, or it is a reservation whose
// lease has not expired (a reservation without a lease never expires).
func (a activeRow) untakable(nr records.NewRun, now int64) string {
	expired := !a.noLease && a.lease < now-nr.WorkerGraceSeconds*int64(time.Second/time.Microsecond)
	if !a.noLease && !expired && a.worker != nr.Worker {
		return "owned by another worker whose lease is valid"
	}
	if a.kind != "" && !expired {
		return fmt.Sprintf("held by an active %s reservation", quoteCut(a.kind))
	}
	return ""
}

func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMicro()
}

func timeUS(v any) *time.Time {
	us, ok := v.(int64)
	if !ok {
		return nil
	}
	t := fromUS(us)
	return &t
}

func timeAt(st row, i int) *time.Time {
	if st.Null(i) {
		return nil
	}
	t := fromUS(st.Int64(i))
	return &t
}

const microsPerSecond = int64(time.Second / time.Microsecond)

// Apply makes one worker-level change of a run atomically (records.RunOp).
func (r Runs) Apply(ctx context.Context, op records.RunOp) (records.RunOpResult, error) {
	if err := checkID("run id", op.RunID); err != nil {
		return records.RunOpResult{}, err
	}
	for _, f := range []struct{ what, v string }{{"worker", op.Worker}, {"stop reason", op.StopReason}, {"cancel action", op.Action}} {
		if err := checkText(f.what, f.v, maxIDBytes); err != nil {
			return records.RunOpResult{}, err
		}
	}
	if err := checkText("run error", op.Error, maxTextLong); err != nil {
		return records.RunOpResult{}, err
	}
	switch op.Op {
	case records.OpPut:
		return r.put(ctx, op)
	case records.OpRenew:
		if err := checkID("worker", op.Worker); err != nil {
			return records.RunOpResult{}, err
		}
		if op.Lease == nil {
			return records.RunOpResult{}, fmt.Errorf("%w: renew needs a lease", ErrInvalidArgument)
		}
		return r.change(ctx, op.RunID, true, sqlRunRenewWorker, op.Lease.UnixMicro(), r.db.nowUS(), op.RunID, op.Worker)
	case records.OpCancel:
		if op.Action != "interrupt" && op.Action != "rollback" {
			return records.RunOpResult{}, fmt.Errorf("%w: cancel action %s (want interrupt or rollback)", ErrInvalidArgument, quoteCut(op.Action))
		}
		return r.change(ctx, op.RunID, false, sqlRunRequestCancel, op.Action, r.db.nowUS(), op.RunID)
	case records.OpFinalize:
		if err := checkStatus(op.Status); err != nil {
			return records.RunOpResult{}, err
		}
		if isActive(op.Status) {
			return records.RunOpResult{}, fmt.Errorf("%w: finalize needs a terminal status, not %s", ErrInvalidArgument, op.Status)
		}
		return r.change(ctx, op.RunID, false, sqlRunFinalize, op.Status, nullText(op.Error), nullText(op.StopReason), r.db.nowUS(), op.RunID)
	case records.OpStatus:
		if err := checkStatus(op.Status); err != nil {
			return records.RunOpResult{}, err
		}
		now := r.db.nowUS()
		return r.change(ctx, op.RunID, false, sqlRunOpStatus, op.Status, nullText(op.Error), nullText(op.StopReason), now,
			op.RunID, r.Owner(), now+r.db.opts.RunLease.Microseconds())
	case records.OpTakeover:
		if op.GraceSeconds < 0 || op.GraceSeconds > 1<<40 {
			return records.RunOpResult{}, fmt.Errorf("%w: grace of %d seconds", ErrInvalidArgument, op.GraceSeconds)
		}
		now := r.db.nowUS()
		return r.change(ctx, op.RunID, false, sqlRunTakeover, op.Error, nullText(op.StopReason), now, op.RunID, now-op.GraceSeconds*microsPerSecond)
	}
	return records.RunOpResult{}, fmt.Errorf("%w: run op %s (want put, renew, cancel, finalize, takeover or status)", ErrInvalidArgument, quoteCut(op.Op))
}

// change runs one conditional update of a run and reports whether it
// changed it and the run's cancellation action, read in the same
// transaction (after a change only, when onlyIfDone).
func (r Runs) change(ctx context.Context, runID string, onlyIfDone bool, q string, args ...any) (records.RunOpResult, error) {
	var out records.RunOpResult
	err := r.db.write(ctx, func(c *conn) error {
		out = records.RunOpResult{}
		n, err := c.execN(q, args...)
		if err != nil {
			return err
		}
		out.Done = n > 0
		if onlyIfDone && !out.Done {
			return nil
		}
		_, err = c.queryRow(sqlRunCancelAction, []any{runID}, func(st row) error {
			out.CancelAction = st.Text(0)
			return nil
		})
		return err
	})
	return out, err
}

// put writes a run whole: inserted, or every field of the existing one
// replaced (its thread and creation time stay). An active status takes the
// thread's one active slot, or fails with an *ActiveRunError.
func (r Runs) put(ctx context.Context, op records.RunOp) (records.RunOpResult, error) {
	nr := op.Run
	nr.RunID = op.RunID
	status := op.Status
	if status == "" {
		status = records.RunPending
	}
	if err := checkStatus(status); err != nil {
		return records.RunOpResult{}, err
	}
	if nr.MultitaskStrategy == "" {
		nr.MultitaskStrategy = records.StrategyReject
	}
	nr.Status = records.RunPending // checkNewRun's check of a created status
	if err := checkNewRun(nr); err != nil {
		return records.RunOpResult{}, err
	}
	md, err := encodeMap("run metadata", nr.Metadata)
	if err != nil {
		return records.RunOpResult{}, err
	}
	kw, err := encodeMap("run kwargs", nr.Kwargs)
	if err != nil {
		return records.RunOpResult{}, err
	}
	err = r.db.write(ctx, func(c *conn) error {
		if err := c.lock(nr.ThreadID); err != nil {
			return err
		}
		var thread string
		found, err := c.queryRow(sqlRunThread, []any{nr.RunID}, func(st row) error {
			thread = st.Text(0)
			return nil
		})
		if err != nil {
			return err
		}
		if found && thread != nr.ThreadID {
			return fmt.Errorf("%w: run id %q belongs to another thread", ErrConflict, nr.RunID)
		}
		if isActive(status) {
			var a activeRow
			if _, err := c.queryRow(sqlRunActive, []any{nr.ThreadID}, func(st row) error {
				a = activeRow{runID: st.Text(0), status: records.RunStatus(st.Text(1))}
				return nil
			}); err != nil {
				return err
			}
			if a.runID != "" && a.runID != nr.RunID {
				return &ActiveRunError{ThreadID: nr.ThreadID, RunID: a.runID, Status: a.status}
			}
		}
		now := r.db.nowUS()
		var lease any
		if isActive(status) {
			lease = now + r.db.opts.RunLease.Microseconds()
		}
		key := nullText(nr.IdempotencyKey)
		if found {
			return c.exec(sqlRunOverwrite, nr.AssistantID, nr.UserID, status, nr.ModelName, nr.MultitaskStrategy,
				md, kw, op.Error, nullText(op.StopReason), key, nullText(nr.OperationKind),
				nullText(nr.Worker), nullTime(nr.WorkerLease), now, r.Owner(), lease, nr.RunID)
		}
		created := now
		if !nr.CreatedAt.IsZero() {
			created = nr.CreatedAt.UnixMicro()
		}
		return c.exec(sqlRunInsert, nr.RunID, nr.ThreadID, nr.AssistantID, nr.UserID, status, nr.ModelName,
			nr.MultitaskStrategy, md, kw, created, now, key, r.Owner(), lease,
			nullText(nr.OperationKind), nullText(nr.Worker), nullTime(nr.WorkerLease), op.Error, nullText(op.StopReason))
	})
	if errors.Is(err, driver.ErrUnique) {
		return records.RunOpResult{}, fmt.Errorf("%w: run %q on thread %q: %v", ErrConflict, nr.RunID, nr.ThreadID, err)
	}
	if err != nil {
		return records.RunOpResult{}, err
	}
	return records.RunOpResult{Done: true}, nil
}
