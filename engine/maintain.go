package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentstate/agentstate/engine/admin"
)

// Retain keeps storage linear in the length of a thread (contract §2.5), in
// one transaction (rolled back for a dry run): it thins delta snapshots to
// geometrically spaced ones (heads stay within K writes of one) and, with
// KeepLatest or DropBranches, removes checkpoints. Every surviving checkpoint
// reads exactly as before; LangGraph's threads lose no snapshot. The report
// gives the stored bytes before and after; o.Progress, if set, is called
// after each thread.
func (db *DB) Retain(ctx context.Context, o admin.RetainOptions) (admin.RetainReport, error) {
	if o.KeepLatest < 0 {
		return admin.RetainReport{}, fmt.Errorf("%w: KeepLatest %d is negative", ErrInvalidArgument, o.KeepLatest)
	}
	var res admin.RetainReport
	var touched []string
	err := db.write(ctx, func(c *conn) error {
		res = admin.RetainReport{DryRun: o.DryRun}
		threads := []string{o.ThreadID}
		if o.ThreadID == "" {
			var err error
			if threads, err = allThreads(c); err != nil {
				return err
			}
		} else if ok, err := c.queryRow(sqlThreadExists, []any{o.ThreadID}, nil); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("%w: thread %q has no checkpoints", ErrNotFound, o.ThreadID)
		}
		var err error
		if res.DataBytesBefore, err = dataBytes(c); err != nil {
			return err
		}
		for i, th := range threads {
			if err := c.lock(th); err != nil {
				return err
			}
			r, err := db.retainThread(c, th, o)
			if err != nil {
				return fmt.Errorf("thread %q: %w", th, err)
			}
			if r.CheckpointsKept+r.CheckpointsRemoved > 0 {
				res.Threads++
			}
			addRetained(&res, r)
			if o.Progress != nil {
				o.Progress(i+1, len(threads))
			}
		}
		touched = threads
		if res.DataBytesAfter, err = dataBytes(c); err != nil {
			return err
		}
		res.DataBytesFreed = res.DataBytesBefore - res.DataBytesAfter
		if o.DryRun {
			return errDryRun
		}
		return nil
	})
	if errors.Is(err, errDryRun) {
		err = nil
	}
	if !o.DryRun {
		for _, th := range touched {
			db.purge(th)
		}
	}
	return res, err
}

// addRetained adds o's counts to r (a thread's report to the run's).
func addRetained(r *admin.RetainReport, o admin.RetainReport) {
	r.CheckpointsRemoved += o.CheckpointsRemoved
	r.CheckpointsKept += o.CheckpointsKept
	r.SnapshotsRemoved += o.SnapshotsRemoved
	r.SnapshotsKept += o.SnapshotsKept
	r.WritesRemoved += o.WritesRemoved
	r.Namespaces += o.Namespaces
	r.CheckpointsSpared += o.CheckpointsSpared
	r.ValuesThinned += o.ValuesThinned
	r.BytesFreed += o.BytesFreed
}
