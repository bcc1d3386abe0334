// Committing a step of the thread API: its writes encoded and checked, the
// child checkpoint that applies them (or copies its parent's state) put.

package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
)

var reservedMetadata = []string{"source", "step", "parents", "run_id", channels.CountersKey}

// taskWrites is one task's writes, encoded and ready to store, with the
// decoded values the fold uses.
type encodedTask struct {
	id     string
	writes []Write
}

// encodeTasks validates the step's writes against the schema, gives every
// message an id, and encodes each write as it will be stored.
func (db *DB) encodeTasks(tasks []TaskWrites) ([]encodedTask, error) {
	out := make([]encodedTask, 0, len(tasks))
	seen := map[string]bool{}
	// The writes, and the lists the step stores (at most MaxListBytes
	// for a message channel) share MaxCallBytes.
	budget := callBudget{what: "the step's writes", n: MaxListBytes}
	for _, t := range tasks {
		if t.TaskID == "" {
			return nil, fmt.Errorf("%w: task without id", ErrInvalidArgument)
		}
		if seen[t.TaskID] {
			return nil, fmt.Errorf("%w: task %q appears twice in one step", ErrInvalidArgument, t.TaskID)
		}
		seen[t.TaskID] = true
		et := encodedTask{id: t.TaskID}
		for i, w := range t.Writes {
			ch, ok := db.opts.Schema[w.Channel]
			if !ok {
				return nil, fmt.Errorf("%w: task %q write %d: channel %q is not in the schema", ErrInvalidArgument, t.TaskID, i, w.Channel)
			}
			data, err := encodeUpdate(ch, w.Value)
			if err != nil {
				return nil, encodeError(fmt.Sprintf("task %q write %d to %q", t.TaskID, i, w.Channel), "MaxValueBytes", MaxValueBytes, err)
			}
			if err := budget.add(len(data)); err != nil {
				return nil, err
			}
			et.writes = append(et.writes, Write{Channel: w.Channel, Value: codec.Blob{Type: codec.TypeMsgpack, Data: data}})
		}
		out = append(out, et)
	}
	return out, nil
}

func encodeUpdate(ch channels.Channel, v any) ([]byte, error) {
	if _, ok := ch.(channels.Messages); ok {
		var u channels.MessageUpdate
		switch x := v.(type) {
		case channels.MessageUpdate:
			u = x
		case *channels.MessageUpdate:
			if x == nil {
				return nil, fmt.Errorf("nil message update")
			}
			u = *x
		case []codec.Message:
			u = channels.MessageUpdate{Messages: x}
		case codec.Message:
			u = channels.MessageUpdate{Messages: []codec.Message{x}}
		default:
			return nil, fmt.Errorf("a message channel takes messages, not %T", v)
		}
		// MessageUpdate.Encode, bounded while encoding.
		u = u.WithIDs(nil)
		if err := u.Validate(); err != nil {
			return nil, err
		}
		return codec.MarshalMax(u, MaxValueBytes)
	}
	return codec.MarshalMax(v, MaxValueBytes)
}

// Commit records one step of a thread: the tasks' writes go under the parent
// checkpoint and a new child checkpoint applies every write the parent holds
// that no earlier child consumed (those of this step, and any left by an
// interrupted step), all in one transaction. A write the reducers refuse (a
// remove of an unknown id, two Overwrites in one step) fails the whole call
// and writes nothing. The first commit of a thread also creates its empty
// input checkpoint.
func (db *DB) Commit(ctx context.Context, thread string, step Step) (Config, error) {
	if thread == "" {
		return Config{}, fmt.Errorf("%w: missing thread_id", ErrInvalidArgument)
	}
	for _, k := range reservedMetadata {
		if _, ok := step.Metadata[k]; ok {
			return Config{}, fmt.Errorf("%w: metadata key %q is set by the engine", ErrInvalidArgument, k)
		}
	}
	source := step.Source
	if source == "" {
		source = "loop"
	}
	tasks, err := db.encodeTasks(step.Tasks)
	if err != nil {
		return Config{}, err
	}
	var done []committed
	err = db.write(ctx, func(c *conn) error {
		done = done[:0]
		if err := c.lock(thread); err != nil {
			return err
		}
		if err := db.checkThreadMode(c, thread, true); err != nil {
			return err
		}
		parent, err := db.resolveParent(c, thread, step.Parent)
		if err != nil {
			return err
		}
		if parent == nil {
			root, err := db.putRoot(c, thread, step.RunID)
			if err != nil {
				return err
			}
			done = append(done, *root)
			parent = &root.tuple
		}
		var runID any
		if step.RunID != "" {
			runID = step.RunID
		}
		for _, t := range tasks {
			if err := putWritesTx(c, parent.Config, t.writes, t.id, "", runID, true); err != nil {
				return err
			}
		}
		child, err := db.commitChild(c, *parent, source, step.RunID, step.Metadata, false)
		if err != nil {
			return err
		}
		done = append(done, *child)
		if db.opts.AutoRetain && db.opts.Mode == channels.ModeDelta && len(child.tuple.Checkpoint.ChannelValues) > 0 {
			// A new snapshot may make older ones redundant.
			_, err := db.thinSnapshots(c, thread, "")
			return err
		}
		return nil
	})
	if err != nil {
		return Config{}, err
	}
	for _, d := range done {
		db.afterCommit(d)
	}
	return done[len(done)-1].tuple.Config, nil
}

// committed is a checkpoint written by the thread API, with its state for
// the state cache.
type committed struct {
	put    *put
	tuple  Tuple
	values map[string]any
}

func (db *DB) afterCommit(d committed) {
	db.afterPut(d.put)
	db.cache.addState(cpKey{d.tuple.Config.ThreadID, d.tuple.Config.CheckpointNS, d.tuple.Config.CheckpointID}, d.values)
}

// resolveParent loads the checkpoint a step builds on: id, or the head.
// A thread without checkpoints and no id gives nil.
func (db *DB) resolveParent(c *conn, thread, id string) (*Tuple, error) {
	q, args := sqlGetLatest, []any{thread, ""}
	if id != "" {
		q, args = sqlGetByID, append(args, id)
	}
	// Values are loaded only if the state cache cannot answer (materialize).
	ts, err := loadTuplesWith(c, q, args, false, false)
	if err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		if id != "" {
			return nil, fmt.Errorf("%w: checkpoint %q of thread %q", ErrNotFound, id, thread)
		}
		return nil, nil
	}
	return &ts[0], nil
}

// putRoot creates the empty input checkpoint of a new thread and records
// the thread's mode.
func (db *DB) putRoot(c *conn, thread, runID string) (*committed, error) {
	if err := db.checkFileModeNow(c); err != nil {
		return nil, err
	}
	if err := c.exec(sqlSetThreadMod, thread, db.opts.Mode, db.opts.SnapshotEvery); err != nil {
		return nil, err
	}
	now := db.opts.Now()
	cp := Checkpoint{V: 4, ID: db.ids.next(now, ""), TS: now.UTC().Format(time.RFC3339Nano),
		ChannelValues: map[string]codec.Blob{}, ChannelVersions: map[string]string{}, VersionsSeen: map[string]map[string]string{}}
	md := Metadata{"source": "input", "step": int64(-1), "parents": map[string]any{}}
	if runID != "" {
		md["run_id"] = runID
	}
	return db.putChild(c, Config{ThreadID: thread}, cp, md, nil, map[string]any{}, false)
}

func (db *DB) putChild(c *conn, parent Config, cp Checkpoint, md Metadata, nv map[string]string, values map[string]any, noSeal bool) (*committed, error) {
	p, err := preparePut(parent, cp, md, nv)
	if err != nil {
		return nil, err
	}
	p.noSeal, p.trusted = noSeal, true
	p.wantSealed = parent.CheckpointID != "" && db.cache.tracks(parent.ThreadID, parent.CheckpointNS, parent.CheckpointID)
	if err := p.run(c); err != nil {
		return nil, err
	}
	cfg := Config{ThreadID: parent.ThreadID, CheckpointNS: parent.CheckpointNS, CheckpointID: cp.ID}
	var pc *Config
	if parent.CheckpointID != "" {
		pc = &parent
	}
	return &committed{put: p, tuple: Tuple{Config: cfg, Checkpoint: cp, Metadata: md, ParentConfig: pc}, values: values}, nil
}

// commitChild writes the child of parent that applies the parent's
// unconsumed writes (or, with copyState, consumes none and copies the
// parent's state: a fork).
func (db *DB) commitChild(c *conn, parent Tuple, source, runID string, extra Metadata, copyState bool) (*committed, error) {
	state, err := db.materialize(c, parent)
	if err != nil {
		return nil, err
	}
	// The writes this child will seal, grouped by channel, in apply order.
	pending := map[string][]channels.TaskWrite{}
	if !copyState {
		if pending, err = db.unconsumedWrites(c, parent.Config); err != nil {
			return nil, err
		}
	}
	after, err := sortAfter(c, parent.Config)
	if err != nil {
		return nil, err
	}
	now := db.opts.Now()
	cp := Checkpoint{V: 4, ID: db.ids.next(now, after), TS: now.UTC().Format(time.RFC3339Nano),
		ChannelValues: map[string]codec.Blob{}, ChannelVersions: maps.Clone(parent.Checkpoint.ChannelVersions),
		VersionsSeen: map[string]map[string]string{}}
	values := maps.Clone(state)
	counters, err := channels.ReadCounters(parent.Metadata)
	if err != nil {
		return nil, fmt.Errorf("%w: checkpoint %q: %w", undecodable(err), parent.Config.CheckpointID, err)
	}
	cadence := channels.Cadence{K: db.opts.SnapshotEvery}
	version := versionOf(cp.ID)
	nv := map[string]string{}
	var updated []string
	for _, name := range slices.Sorted(maps.Keys(db.opts.Schema)) {
		ch := db.opts.Schema[name]
		ws := pending[name]
		if len(ws) > 0 {
			ordered, err := channels.OrderStep(ch, ws)
			if err != nil {
				return nil, fmt.Errorf("%w: channel %q: %w", ErrInvalidArgument, name, err)
			}
			nvalue, err := ch.Apply(state[name], ordered)
			if err != nil {
				return nil, fmt.Errorf("%w: channel %q: %w", ErrInvalidArgument, name, err)
			}
			values[name] = nvalue
			updated = append(updated, name)
		}
		if _, has := values[name]; !has {
			continue
		}
		_, hadVersion := parent.Checkpoint.ChannelVersions[name]
		store := len(ws) > 0
		if db.opts.Mode == channels.ModeDelta {
			overwrite := slices.ContainsFunc(ws, func(w channels.TaskWrite) bool { return ch.IsOverwrite(w.Value) })
			var next channels.Counter
			store, next = cadence.Next(counters[name], len(ws) > 0, overwrite, !hadVersion)
			counters[name] = next
		}
		if len(ws) > 0 || store {
			cp.ChannelVersions[name] = version
			nv[name] = version
		}
		if store {
			data, err := db.compress(values[name])
			if err != nil {
				return nil, encodeError(fmt.Sprintf("the value of channel %q this step would store (Compact the thread to go on)", name), "MaxListBytes", MaxListBytes, err)
			}
			cp.ChannelValues[name] = codec.Blob{Type: codec.TypeMsgpack, Data: data}
		}
	}
	cp.UpdatedChannels = updated
	if cp.UpdatedChannels == nil {
		cp.UpdatedChannels = []string{}
	}
	md := Metadata{}
	maps.Copy(md, extra)
	md["source"] = source
	md["step"] = metadataStep(parent.Metadata) + 1
	md["parents"] = map[string]any{}
	if runID != "" {
		md["run_id"] = runID
	}
	if db.opts.Mode == channels.ModeDelta {
		md = channels.SetCounters(md, counters)
	}
	return db.putChild(c, parent.Config, cp, md, nv, values, copyState)
}

// unconsumedWrites reads the writes of checkpoint parent that no child has
// consumed yet, those to schema channels decoded, grouped by channel in
// apply order.
func (db *DB) unconsumedWrites(c *conn, parent Config) (map[string][]channels.TaskWrite, error) {
	type unconsumed struct {
		channels.TaskWrite
		path, channel string
	}
	var ws []unconsumed
	err := c.query(sqlUnconsumed, []any{parent.ThreadID, parent.CheckpointNS, parent.CheckpointID}, func(st row) error {
		name := st.Text(2)
		ch, ok := db.opts.Schema[name]
		if !ok {
			return nil // not state: special channels and LangGraph bookkeeping
		}
		data, err := loadWrite(st, 3)
		if err != nil {
			return err
		}
		v, err := ch.DecodeUpdate(data)
		if err != nil {
			return fmt.Errorf("%w: write of task %q to %q: %w", undecodable(err), st.Text(0), name, err)
		}
		ws = append(ws, unconsumed{channels.TaskWrite{TaskID: st.Text(0), Idx: int(st.Int64(1)), Value: v}, st.Text(5), name})
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Apply order: task path, task id, index (as sortWrites).
	slices.SortStableFunc(ws, func(a, b unconsumed) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		if c := strings.Compare(a.TaskID, b.TaskID); c != 0 {
			return c
		}
		return a.Idx - b.Idx
	})
	pending := map[string][]channels.TaskWrite{}
	for _, w := range ws {
		pending[w.channel] = append(pending[w.channel], w.TaskWrite)
	}
	return pending, nil
}

// sortAfter returns the id a new child of parent must sort after. The new
// checkpoint becomes the thread's latest (a fork, a rollback, a commit on
// an older checkpoint too), so its id must sort after every id of the
// namespace, not only its parent's: after the clock went back (a restart,
// another process whose clock is behind) an id from the clock alone would
// sort before the head, and the fork would be lost.
func sortAfter(c *conn, parent Config) (string, error) {
	after := parent.CheckpointID
	var latest string
	if _, err := c.queryRow(sqlLatestID, []any{parent.ThreadID, parent.CheckpointNS}, func(r row) error { latest = r.Text(0); return nil }); err != nil {
		return "", err
	}
	if latest > after {
		after = latest
	}
	return after, nil
}
