package engine

import (
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"sort"
	"strconv"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
)

// errDryRun rolls back the transaction of a dry run.
var errDryRun = errors.New("dry run")

func allThreads(c *conn) ([]string, error) {
	var out []string
	err := c.query(sqlCheckpointThreads, nil, func(st row) error {
		out = append(out, st.Text(0))
		return nil
	})
	return out, err
}

// retainThread runs retention on one thread inside the caller's transaction.
func (db *DB) retainThread(c *conn, thread string, o admin.RetainOptions) (admin.RetainReport, error) {
	var rep admin.RetainReport
	mode, _, ours, err := threadMode(c, thread)
	if err != nil {
		return rep, err
	}
	rows, err := threadRows(c, thread)
	if err != nil || len(rows) == 0 {
		return rep, err
	}
	byNS := map[string][]cpRow{}
	for _, r := range rows {
		byNS[r.ns] = append(byNS[r.ns], r)
	}
	drop := map[cpKey]bool{}
	for _, nsRows := range byNS {
		for k := range pickDrops(nsRows, o) {
			drop[k] = true
		}
	}
	rep.Namespaces = len(byNS)
	if len(drop) > 0 {
		planned := len(drop)
		if err := db.protectSurvivors(c, thread, rows, drop, ours); err != nil {
			return rep, err
		}
		rep.CheckpointsSpared = planned - len(drop)
		n, err := c.queryInt64(sqlRetainWritesOf, thread, dropJSON(drop))
		if err != nil {
			return rep, err
		}
		rep.WritesRemoved = int(n)
		if err := dropCheckpoints(c, thread, rows, drop, true); err != nil {
			return rep, err
		}
		// Writes sealed by a removed checkpoint can never be replayed again.
		res, err := deleteSealedBy(c, thread, drop)
		if err != nil {
			return rep, err
		}
		rep.WritesRemoved += res
		if err := releaseFreePages(c); err != nil {
			return rep, err
		}
		if rows, err = threadRows(c, thread); err != nil {
			return rep, err
		}
	}
	rep.CheckpointsRemoved = len(drop)
	rep.CheckpointsKept = len(rows)
	for _, nsRows := range byNSOf(rows) {
		ns := nsRows[0].ns
		if ours && mode == channels.ModeDelta {
			r, err := db.thinSnapshots(c, thread, ns)
			if err != nil {
				return rep, err
			}
			rep.SnapshotsRemoved += r.SnapshotsRemoved
			rep.SnapshotsKept += r.SnapshotsKept
			rep.BytesFreed += r.BytesFreed
		}
		// The values the thread API did not write are chains of the
		// checkpoint protocol, thinned in both modes.
		n, freed, err := thinValues(c, thread, ns, func(ch string) bool {
			_, inSchema := db.opts.Schema[ch]
			return ours && inSchema
		})
		if err != nil {
			return rep, err
		}
		rep.ValuesThinned += n
		rep.BytesFreed += freed
	}
	return rep, nil
}

func byNSOf(rows []cpRow) map[string][]cpRow {
	m := map[string][]cpRow{}
	for _, r := range rows {
		m[r.ns] = append(m[r.ns], r)
	}
	return m
}

func dropJSON(drop map[cpKey]bool) string {
	ids := make([]string, 0, len(drop))
	for k := range drop {
		ids = append(ids, k.id)
	}
	s, _ := jsonArg(ids)
	return s
}

func deleteSealedBy(c *conn, thread string, drop map[cpKey]bool) (int, error) {
	n := 0
	for k := range drop {
		changed, err := c.execN(sqlDeleteSealedBy, thread, k.ns, k.id)
		if err != nil {
			return n, err
		}
		n += int(changed)
	}
	return n, nil
}

// pickDrops chooses the checkpoints of one namespace that KeepLatest and
// DropBranches remove.
func pickDrops(rows []cpRow, o admin.RetainOptions) map[cpKey]bool {
	drop := map[cpKey]bool{}
	if o.KeepLatest == 0 && !o.DropBranches {
		return drop
	}
	sorted := slices.Clone(rows)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].id > sorted[j].id })
	byID := map[string]cpRow{}
	for _, r := range rows {
		byID[r.id] = r
	}
	if o.DropBranches {
		onPath := map[string]bool{}
		for id := sorted[0].id; id != ""; id = byID[id].parent {
			if onPath[id] {
				break
			}
			onPath[id] = true
		}
		for _, r := range rows {
			if !onPath[r.id] {
				drop[r.cpKey] = true
			}
		}
	}
	if o.KeepLatest > 0 {
		kept := 0
		for _, r := range sorted {
			if drop[r.cpKey] {
				continue
			}
			if kept < o.KeepLatest {
				kept++
				continue
			}
			drop[r.cpKey] = true
		}
	}
	return drop
}

// protectSurvivors makes every surviving checkpoint whose parent goes
// self-sufficient: for each channel it does not hold, the engine stores the
// rebuilt value as a snapshot when it can fold the channel (a thread of the
// thread API), and otherwise spares the ancestors the walk needs.
func (db *DB) protectSurvivors(c *conn, thread string, rows []cpRow, drop map[cpKey]bool, ours bool) error {
	for _, r := range rows {
		if drop[r.cpKey] || r.parent == "" || !drop[cpKey{thread, r.ns, r.parent}] {
			continue
		}
		for _, ch := range slices.Sorted(maps.Keys(r.versions)) {
			v := r.versions[ch]
			held, err := c.queryRow(sqlBlobData, []any{thread, r.ns, ch, v}, nil)
			if err != nil || held {
				if err != nil {
					return err
				}
				continue
			}
			if _, inSchema := db.opts.Schema[ch]; ours && inSchema {
				ts, err := loadTuples(c, sqlGetByID, []any{thread, r.ns, r.id})
				if err != nil {
					return err
				}
				values, err := db.materialize(c, ts[0])
				if err != nil {
					return err
				}
				data, err := db.compress(values[ch])
				if err != nil {
					// A delta list may pass MaxListBytes between snapshots:
					// kept as the new root of its history, it cannot be stored.
					return encodeError(fmt.Sprintf("channel %q of checkpoint %q of thread %q, which retention would keep as a snapshot (Compact the thread first)",
						ch, r.id, thread), "MaxListBytes", MaxListBytes, err)
				}
				if err := c.exec(sqlInsertBlob, thread, r.ns, ch, v, r.id, codec.TypeMsgpack, data, encPlain, nil); err != nil {
					return err
				}
				continue
			}
			// Spare the chain up to the seed.
			err = c.query(sqlWalk, []any{ch, thread, r.ns, r.id}, func(st row) error {
				delete(drop, cpKey{thread, r.ns, st.Text(0)})
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

type snapBlob struct {
	channel, version, owner string
	size                    int64
	step                    int64
}

// thinSnapshots drops the snapshots of one namespace of a delta thread
// that no branch tip starts from and that are not the earliest of their
// step bucket [4^j, 4^(j+1)). Sizes grow with steps, so the kept older
// snapshots form a geometric series: the newest bucket's may be nearly as
// large as the newest snapshot, the ones below shrink by four each, for a
// total under about 2.4 times the newest. A snapshot, once dropped, would
// never be picked again:
// retention can run after every snapshot without undoing its own choices.
// It reads parent links, not checkpoints, so it costs little enough to run
// after every snapshot (AutoRetain).
func (db *DB) thinSnapshots(c *conn, thread, ns string) (admin.RetainReport, error) {
	var rep admin.RetainReport
	parentOf := map[string]string{}
	hasChild := map[string]bool{}
	err := c.query(sqlNSParents, []any{thread, ns},
		func(st row) error {
			parentOf[st.Text(0)] = st.Text(1)
			hasChild[st.Text(1)] = true
			return nil
		})
	if err != nil {
		return rep, err
	}
	var blobs []snapBlob
	err = c.query(sqlSnapshots, []any{thread, ns}, func(st row) error {
		b := snapBlob{channel: st.Text(0), version: st.Text(1), owner: st.Text(2), size: st.Int64(3), step: -1}
		if _, ok := db.opts.Schema[b.channel]; !ok {
			return nil
		}
		var md map[string]any
		if err := codec.Unmarshal(st.Blob(4), &md); err == nil {
			b.step = metadataStep(md)
		}
		blobs = append(blobs, b)
		return nil
	})
	if err != nil {
		return rep, err
	}
	keep := map[[2]string]bool{}
	for _, b := range blobs {
		if parent, ok := parentOf[b.owner]; !ok || parent == "" {
			keep[[2]string{b.channel, b.version}] = true // a root's value, or an owner already gone
		}
	}
	// The seed of every branch tip, per channel: the value the tip holds,
	// or the one its walk stops at.
	for id := range parentOf {
		if hasChild[id] {
			continue
		}
		for ch := range db.opts.Schema {
			k := cpKey{thread, ns, id}
			holds := false
			_, err := c.queryRow(sqlHolds, []any{ch, k.thread, k.ns, k.id}, func(st row) error {
				if holds = !st.Null(1); holds {
					keep[[2]string{ch, st.Text(0)}] = true
				}
				return nil
			})
			if err != nil || holds {
				if err != nil {
					return rep, err
				}
				continue
			}
			err = c.query(sqlWalkSeed, []any{ch, k.thread, k.ns, k.id}, func(st row) error {
				keep[[2]string{ch, st.Text(0)}] = true
				return nil
			})
			if err != nil {
				return rep, err
			}
		}
	}
	// The earliest snapshot of each step bucket, per channel.
	first := map[[2]string]snapBlob{} // channel, bucket
	for _, b := range blobs {
		k := [2]string{b.channel, strconv.Itoa((bits.Len64(uint64(b.step+1)) + 1) / 2)}
		if cur, ok := first[k]; !ok || b.step < cur.step || b.step == cur.step && b.owner < cur.owner {
			first[k] = b
		}
	}
	for _, b := range first {
		keep[[2]string{b.channel, b.version}] = true
	}
	var dead []snapBlob
	for _, b := range blobs {
		if !keep[[2]string{b.channel, b.version}] {
			dead = append(dead, b)
		}
	}
	ids := make([]blobID, len(dead))
	for i, b := range dead {
		ids[i] = blobID{ns, b.channel, b.version}
		rep.BytesFreed += b.size
	}
	if err := deleteValues(c, thread, ids); err != nil {
		return rep, err
	}
	if len(dead) > 0 {
		if err := releaseFreePages(c); err != nil {
			return rep, err
		}
	}
	rep.SnapshotsRemoved = len(dead)
	rep.SnapshotsKept = len(blobs) - len(dead)
	return rep, nil
}

// releaseFreePages gives free pages back to the file system in files
// created with auto_vacuum=INCREMENTAL (a no-op in older files).
func releaseFreePages(c *conn) error {
	return c.exec("PRAGMA incremental_vacuum")
}
