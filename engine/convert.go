package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
)

// ConvertThread rewrites a thread of the thread API into another channel
// mode (delta with the handle's K, on a delta handle only) in one
// transaction; every checkpoint reads the same before and after. A LangGraph
// thread is refused; ConvertFile converts a whole file.
func (db *DB) ConvertThread(ctx context.Context, thread string, mode channels.Mode) (admin.ConvertReport, error) {
	if mode != channels.ModeFull && mode != channels.ModeDelta {
		return admin.ConvertReport{}, fmt.Errorf("%w: mode %q is neither %q nor %q", ErrInvalidArgument, mode, channels.ModeFull, channels.ModeDelta)
	}
	if mode == channels.ModeDelta && db.opts.Mode != channels.ModeDelta {
		return admin.ConvertReport{}, modeMismatch("convert", db.path, thread, db.opts.Mode, db.opts.SnapshotEvery, channels.ModeDelta, db.opts.SnapshotEvery)
	}
	var rep admin.ConvertReport
	err := db.write(ctx, func(c *conn) error {
		// A file another handle converted since this one opened is in
		// another mode than this handle: converting a thread to this
		// handle's mode would undo that conversion for the thread.
		if err := db.checkFileModeNow(c); err != nil {
			return err
		}
		var err error
		rep, err = db.convertThread(c, thread, mode, db.opts.SnapshotEvery)
		return err
	})
	db.purge(thread)
	return rep, err
}

func (db *DB) convertThread(c *conn, thread string, mode channels.Mode, every int) (admin.ConvertReport, error) {
	rep := admin.ConvertReport{Threads: 1}
	if err := c.lock(thread); err != nil {
		return rep, err
	}
	if _, _, found, err := threadMode(c, thread); err != nil {
		return rep, err
	} else if !found {
		return rep, fmt.Errorf("%w: thread %q was not written by the thread API (or does not exist)", ErrNotFound, thread)
	}
	// Parents sort before children (ids grow along every chain), so one
	// pass in id order sees each parent's state before its children, in
	// every namespace.
	tuples, err := loadTuples(c, sqlConvertTuples, []any{thread})
	if err != nil {
		return rep, err
	}
	byID := map[cpKey]Tuple{}
	counters := map[cpKey]map[string]channels.Counter{}
	var dead []blobID
	cadence := channels.Cadence{K: every}
	for _, t := range tuples {
		ns := t.Config.CheckpointNS
		byID[cpKey{thread, ns, t.Config.CheckpointID}] = t
		var parent *Tuple
		if t.ParentConfig != nil {
			if p, ok := byID[cpKey{thread, ns, t.ParentConfig.CheckpointID}]; ok {
				parent = &p
			}
		}
		cs := map[string]channels.Counter{}
		if parent != nil {
			cs = maps.Clone(counters[cpKey{thread, ns, parent.Config.CheckpointID}])
		}
		values, err := db.materialize(c, t)
		if err != nil {
			return rep, err
		}
		for _, name := range slices.Sorted(maps.Keys(db.opts.Schema)) {
			v, ok := t.Checkpoint.ChannelVersions[name]
			if !ok {
				continue
			}
			var pv string
			hadVersion := false
			if parent != nil {
				pv, hadVersion = parent.Checkpoint.ChannelVersions[name]
			}
			changed := !hadVersion || pv != v
			_, stored := t.Checkpoint.ChannelValues[name]
			owns := stored && changed // the value is stored under this checkpoint's own version
			keepSnapshot := changed
			if mode == channels.ModeDelta {
				overwrite, err := stepOverwrites(c, db.opts.Schema[name], thread, parent, t.Config.CheckpointID, name)
				if err != nil {
					return rep, err
				}
				var next channels.Counter
				keepSnapshot, next = cadence.Next(cs[name], changed, overwrite, !hadVersion || parent == nil)
				keepSnapshot = keepSnapshot && changed
				cs[name] = next
			}
			switch {
			case keepSnapshot && !owns:
				data, err := codec.MarshalCompressedMax(values[name], compressionFor(mode), MaxListBytes)
				if err != nil {
					return rep, encodeError(fmt.Sprintf("thread %q channel %q at checkpoint %q (in %s mode every change stores the whole value; compact the thread first)",
						thread, name, t.Config.CheckpointID, mode), "MaxListBytes", MaxListBytes, err)
				}
				if err := c.exec(sqlInsertBlob, thread, ns, name, v, t.Config.CheckpointID, codec.TypeMsgpack, data, encPlain, nil); err != nil {
					return rep, err
				}
				rep.SnapshotsAdded++
			case !keepSnapshot && owns && t.ParentConfig != nil:
				// Deleted at the end, together: values stored as
				// deltas of it are rebased once (deleteValues).
				dead = append(dead, blobID{ns, name, v})
				rep.SnapshotsRemoved++
			}
		}
		counters[cpKey{thread, ns, t.Config.CheckpointID}] = cs
		md := Metadata(maps.Clone(map[string]any(t.Metadata)))
		if mode == channels.ModeDelta {
			md = channels.SetCounters(md, cs)
		} else {
			delete(md, channels.CountersKey)
		}
		b, err := marshalMetadata(md)
		if err != nil {
			return rep, err
		}
		if err := c.exec(sqlConvertMetadata, b, thread, ns, t.Config.CheckpointID); err != nil {
			return rep, err
		}
	}
	if err := deleteValues(c, thread, dead); err != nil {
		return rep, err
	}
	if err := releaseFreePages(c); err != nil {
		return rep, err
	}
	return rep, c.exec(sqlSetThreadMod, thread, mode, every)
}

// stepOverwrites reports whether the step that made checkpoint child wrote
// an Overwrite to the channel (which the cadence snapshots after).
func stepOverwrites(c *conn, ch channels.Channel, thread string, parent *Tuple, child, name string) (bool, error) {
	if parent == nil {
		return false, nil
	}
	found := false
	err := c.query(sqlConvertSealedWrite,
		[]any{thread, parent.Config.CheckpointNS, parent.Config.CheckpointID, child, name}, func(st row) error {
			data, err := loadWrite(st, 0)
			if err != nil {
				return err
			}
			u, err := ch.DecodeUpdate(data)
			if err != nil {
				return fmt.Errorf("%w: write to %q: %w", undecodable(err), name, err)
			}
			found = found || ch.IsOverwrite(u)
			return nil
		})
	return found, err
}

// ConvertFile rewrites every thread of the thread API in the file at path
// into mode (with K = every for delta) and records that mode for the file,
// so it then opens with Options.Mode = mode. opts may be nil; its Mode is
// ignored (the file is opened in the mode it records).
func ConvertFile(ctx context.Context, path string, opts *Options, mode channels.Mode, every int) (admin.ConvertReport, error) {
	if mode != channels.ModeFull && mode != channels.ModeDelta {
		return admin.ConvertReport{}, fmt.Errorf("%w: mode %q is neither %q nor %q", ErrInvalidArgument, mode, channels.ModeFull, channels.ModeDelta)
	}
	if every < 1 {
		return admin.ConvertReport{}, fmt.Errorf("%w: K %d must be >= 1", ErrInvalidArgument, every)
	}
	o := DefaultOptions()
	if opts != nil {
		o = *opts
	}
	o.Mode = channels.ModeAuto
	db, err := Open(ctx, path, &o)
	if err != nil {
		return admin.ConvertReport{}, err
	}
	defer db.Close()
	var rep admin.ConvertReport
	err = db.write(ctx, func(c *conn) error {
		rep = admin.ConvertReport{}
		var threads []string
		err := c.query(sqlThreadModesConvert, nil, func(st row) error {
			threads = append(threads, st.Text(0))
			return nil
		})
		if err != nil {
			return err
		}
		for _, th := range threads {
			r, err := db.convertThread(c, th, mode, every)
			if err != nil {
				return fmt.Errorf("thread %q: %w", th, err)
			}
			rep.Threads++
			rep.SnapshotsAdded += r.SnapshotsAdded
			rep.SnapshotsRemoved += r.SnapshotsRemoved
		}
		return setFileMode(c, mode, every)
	})
	return rep, err
}
