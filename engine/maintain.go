package engine

import (
	"context"
	"errors"
	"fmt"
)

// RetainResult is a RetainReport with the stored bytes measured before and
// after, so that a dry run can say what retention would free in total
// (checkpoints and writes included, not only snapshots).
type RetainResult struct {
	RetainReport
	DataBytesBefore int64 `json:"data_bytes_before"`
	DataBytesAfter  int64 `json:"data_bytes_after"`
	DataBytesFreed  int64 `json:"data_bytes_freed"`
}

// RetainMeasured runs retention exactly as Retain does (one transaction,
// rolled back for a dry run) and measures the stored bytes of every surface
// before and after. progress, if not nil, is called after each thread with
// the number of threads done and the total.
func (db *DB) RetainMeasured(ctx context.Context, o RetainOptions, progress func(done, total int)) (RetainResult, error) {
	if o.KeepLatest < 0 {
		return RetainResult{}, fmt.Errorf("%w: KeepLatest %d is negative", ErrInvalidArgument, o.KeepLatest)
	}
	var res RetainResult
	var touched []string
	err := db.write(ctx, func(c *conn) error {
		res = RetainResult{RetainReport: RetainReport{DryRun: o.DryRun}}
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
			res.add(r)
			if progress != nil {
				progress(i+1, len(threads))
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
