package engine

import (
	"context"
	"fmt"
	"sort"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
)

// DeleteThread removes every checkpoint, channel value and write of a
// thread, in every namespace, in one transaction. Deleting a thread that
// does not exist is not an error.
func (db *DB) DeleteThread(ctx context.Context, threadID string) error {
	if threadID == "" {
		return fmt.Errorf("%w: missing thread_id", ErrInvalidArgument)
	}
	err := db.write(ctx, func(c *conn) error { return deleteThread(c, threadID) })
	db.purge(threadID)
	return err
}

func deleteThread(c *conn, threadID string) error {
	if err := c.lock(threadID); err != nil {
		return err
	}
	for _, q := range []string{sqlDeleteThreadWrites, sqlDeleteThreadBlobs, sqlDeleteThreadCheckpoints} {
		if err := c.exec(q, threadID); err != nil {
			return err
		}
	}
	return nil
}

// cpRow is the part of a checkpoint row the maintenance calls need.
type cpRow struct {
	cpKey
	parent   string
	versions map[string]string
}

func threadRows(c *conn, thread string) ([]cpRow, error) {
	var rows []cpRow
	err := c.query(sqlThreadRows, []any{thread}, func(st row) error {
		r := cpRow{cpKey: cpKey{thread, st.Text(0), st.Text(1)}, parent: st.Text(2)}
		var sc storedCheckpoint
		if err := codec.Unmarshal(st.Blob(3), &sc); err != nil {
			return fmt.Errorf("%w: checkpoint %q of thread %q: %w", undecodable(err), r.id, thread, err)
		}
		r.versions = sc.ChannelVersions
		rows = append(rows, r)
		return nil
	})
	return rows, err
}

// dropCheckpoints deletes the given checkpoints of one thread with their
// writes, then every channel value no surviving checkpoint's versions name.
// It refuses (ErrConflict) when a surviving checkpoint's parent would go,
// unless reroot allows making such survivors roots.
func dropCheckpoints(c *conn, thread string, rows []cpRow, drop map[cpKey]bool, reroot bool) error {
	for _, r := range rows {
		if drop[r.cpKey] || r.parent == "" || !drop[cpKey{thread, r.ns, r.parent}] {
			continue
		}
		if !reroot {
			return fmt.Errorf("%w: checkpoint %q of thread %q descends from %q, which would be deleted; delete its descendants too or prune the thread", ErrConflict, r.id, thread, r.parent)
		}
		if err := c.exec(sqlOrphanParent, thread, r.ns, r.id); err != nil {
			return err
		}
	}
	live := map[[3]string]bool{}
	for _, r := range rows {
		if drop[r.cpKey] {
			if err := c.exec(sqlDeleteCheckpoint, thread, r.ns, r.id); err != nil {
				return err
			}
			if err := c.exec(sqlDeleteCPWrites, thread, r.ns, r.id); err != nil {
				return err
			}
			continue
		}
		for ch, v := range r.versions {
			live[[3]string{r.ns, ch, v}] = true
		}
	}
	var dead []blobID
	err := c.query(sqlBlobKeys, []any{thread}, func(st row) error {
		k := [3]string{st.Text(0), st.Text(1), st.Text(2)}
		if !live[k] {
			dead = append(dead, blobID{k[0], k[1], k[2]})
		}
		return nil
	})
	if err != nil {
		return err
	}
	return deleteValues(c, thread, dead)
}

// DeleteForRuns removes the checkpoints whose metadata run_id is one of
// runIDs, with their writes and the channel values only they used. It
// refuses with ErrConflict, changing nothing, when a checkpoint of another
// run descends from one it would delete (its state would be lost), unless
// o.Reroot says to keep such checkpoints as roots.
func (db *DB) DeleteForRuns(ctx context.Context, runIDs []string, o admin.DeleteRunsOptions) error {
	runs := map[string]bool{}
	for _, r := range runIDs {
		if r == "" {
			return fmt.Errorf("%w: empty run id", ErrInvalidArgument)
		}
		runs[r] = true
	}
	var touched []string
	err := db.write(ctx, func(c *conn) error {
		threads := map[string]bool{}
		for r := range runs {
			err := c.query(sqlRunThreads, []any{r}, func(st row) error {
				threads[st.Text(0)] = true
				return nil
			})
			if err != nil {
				return err
			}
		}
		touched = sortedKeys(threads)
		for _, th := range touched {
			if err := c.lock(th); err != nil {
				return err
			}
			rows, err := threadRows(c, th)
			if err != nil {
				return err
			}
			drop := map[cpKey]bool{}
			err = c.query(sqlCheckpointsWithRun, []any{th}, func(st row) error {
				if runs[st.Text(2)] {
					drop[cpKey{th, st.Text(0), st.Text(1)}] = true
				}
				return nil
			})
			if err != nil {
				return err
			}
			if err := dropCheckpoints(c, th, rows, drop, o.Reroot); err != nil {
				return err
			}
		}
		return nil
	})
	for _, th := range touched {
		db.purge(th)
	}
	return err
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// CopyThread copies every checkpoint, channel value and write of thread src
// into thread dst, keeping checkpoint ids, parent links, namespaces and seals,
// so dst reads exactly as src did. src is unchanged. dst must hold no
// checkpoints (ErrConflict otherwise); a missing src is ErrNotFound.
func (db *DB) CopyThread(ctx context.Context, src, dst string) error {
	if src == "" || dst == "" {
		return fmt.Errorf("%w: copy needs a source and a target thread_id", ErrInvalidArgument)
	}
	if src == dst {
		return fmt.Errorf("%w: cannot copy thread %q onto itself", ErrInvalidArgument, src)
	}
	err := db.write(ctx, func(c *conn) error {
		for _, th := range sortedKeys(map[string]bool{src: true, dst: true}) {
			if err := c.lock(th); err != nil {
				return err
			}
		}
		if ok, err := c.queryRow(sqlThreadExists, []any{src}, nil); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("%w: thread %q", ErrNotFound, src)
		}
		if ok, err := c.queryRow(sqlThreadExists, []any{dst}, nil); err != nil {
			return err
		} else if ok {
			return fmt.Errorf("%w: target thread %q already has checkpoints", ErrConflict, dst)
		}
		// Writes may exist under a thread without checkpoints only through
		// damage; clear them so the copy is exact.
		if err := deleteThread(c, dst); err != nil {
			return err
		}
		for _, q := range []string{sqlCopyCheckpoints, sqlCopyBlobs, sqlCopyWrites} {
			if err := c.exec(q, src, dst); err != nil {
				return err
			}
		}
		return nil
	})
	db.purge(dst)
	return err
}

// Prune applies strategy to each thread in one transaction. keep_latest
// never breaks reconstruction: an ancestor the latest checkpoint's delta
// channels still need (up to the nearest stored value, with the writes on
// the way) is kept, and the oldest kept checkpoint becomes a root.
func (db *DB) Prune(ctx context.Context, threadIDs []string, strategy admin.PruneStrategy) (admin.PruneReport, error) {
	if strategy != admin.PruneKeepLatest && strategy != admin.PruneDelete {
		return admin.PruneReport{}, fmt.Errorf("%w: prune strategy %q (want %q or %q)", ErrInvalidArgument, strategy, admin.PruneKeepLatest, admin.PruneDelete)
	}
	for _, th := range threadIDs {
		if th == "" {
			return admin.PruneReport{}, fmt.Errorf("%w: empty thread_id", ErrInvalidArgument)
		}
	}
	var rep admin.PruneReport
	err := db.write(ctx, func(c *conn) error {
		rep = admin.PruneReport{}
		for _, th := range sortedKeys(func() map[string]bool {
			m := map[string]bool{}
			for _, th := range threadIDs {
				m[th] = true
			}
			return m
		}()) {
			if err := c.lock(th); err != nil {
				return err
			}
		}
		for _, th := range threadIDs {
			rows, err := threadRows(c, th)
			if err != nil {
				return err
			}
			if len(rows) == 0 {
				continue
			}
			rep.Threads++
			if strategy == admin.PruneDelete {
				rep.CheckpointsRemoved += len(rows)
				if err := deleteThread(c, th); err != nil {
					return err
				}
				continue
			}
			keep, err := keepLatest(c, th, rows)
			if err != nil {
				return err
			}
			drop := map[cpKey]bool{}
			for _, r := range rows {
				if !keep[r.cpKey] {
					drop[r.cpKey] = true
				}
			}
			rep.CheckpointsRemoved += len(drop)
			rep.CheckpointsKept += len(rows) - len(drop)
			if err := dropCheckpoints(c, th, rows, drop, true); err != nil {
				return err
			}
		}
		return nil
	})
	for _, th := range threadIDs {
		db.purge(th)
	}
	return rep, err
}

// keepLatest returns the latest checkpoint of each namespace and the
// ancestors its channels without a stored value need.
func keepLatest(c *conn, thread string, rows []cpRow) (map[cpKey]bool, error) {
	latest := map[string]cpRow{}
	byKey := map[cpKey]cpRow{}
	for _, r := range rows {
		byKey[r.cpKey] = r
		if cur, ok := latest[r.ns]; !ok || r.id > cur.id {
			latest[r.ns] = r
		}
	}
	keep := map[cpKey]bool{}
	for _, l := range latest {
		keep[l.cpKey] = true
		for ch, v := range l.versions {
			held, err := c.queryRow(sqlBlobData, []any{thread, l.ns, ch, v}, nil)
			if err != nil {
				return nil, err
			}
			if held {
				continue
			}
			// Keep the chain the walk used: from the latest up to the seed
			// (or the root).
			if err := markChain(c, l.cpKey, ch, keep); err != nil {
				return nil, err
			}
		}
	}
	return keep, nil
}

func markChain(c *conn, k cpKey, ch string, keep map[cpKey]bool) error {
	return c.query(sqlWalk, []any{ch, k.thread, k.ns, k.id}, func(st row) error {
		keep[cpKey{k.thread, k.ns, st.Text(0)}] = true
		return nil
	})
}
