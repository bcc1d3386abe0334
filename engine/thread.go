package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
)

// The thread API is for programs that are not LangGraph: a Go agent or an
// edge function commits steps as task writes to named channels, and the
// engine applies the reducers of Options.Schema, writes the checkpoint and
// the writes in one transaction, and rebuilds state on read, in full or delta
// mode with the same results (contract §2).

// Schema maps the state channels of a thread to their reducing rules.
type Schema map[string]channels.Channel

// MessagesChannel is the name of the default schema's message channel.
const MessagesChannel = "messages"

// DefaultSchema is one "messages" channel with add_messages semantics.
func DefaultSchema() Schema { return Schema{MessagesChannel: channels.Messages{}} }

func (s Schema) validate() error {
	if len(s) == 0 {
		return fmt.Errorf("Schema has no channels")
	}
	for name, ch := range s {
		if err := validateChannel(name); err != nil {
			return fmt.Errorf("Schema channel %q: %w", name, err)
		}
		if ch == nil {
			return fmt.Errorf("Schema channel %q has no reducer", name)
		}
	}
	return nil
}

// ChannelWrite is one value a task writes to a state channel. For a message
// channel the value is a channels.MessageUpdate, a []codec.Message or a
// codec.Message; messages without an id get one before they are stored.
type ChannelWrite struct {
	Channel string
	Value   any
}

// TaskWrites are the writes of one task of a step. Within a step, writes
// apply in (TaskID, position) order, whatever order the tasks finished in.
type TaskWrites struct {
	TaskID string
	Writes []ChannelWrite
}

// Step is what Commit records: the writes of a step's tasks, applied to the
// state of Parent (the thread's head when empty).
type Step struct {
	Parent string
	Tasks  []TaskWrites
	// Source is LangGraph's metadata "source": "loop" (default), "input" or
	// "update".
	Source string
	// RunID ties the checkpoint and its writes to a run (see Rollback).
	RunID string
	// Metadata adds keys to the checkpoint's metadata; the keys the engine
	// sets itself (source, step, parents, run_id, counters) are refused.
	Metadata Metadata
}

// State is the materialized state of a checkpoint. Values may share memory
// with the engine's cache of recent states: treat them as read-only (append
// freely, but copy a message before changing it in place).
type State struct {
	Config       Config         `json:"config"`
	ParentConfig *Config        `json:"parent_config,omitempty"`
	Values       map[string]any `json:"values"`
	Metadata     Metadata       `json:"metadata"`
	CreatedAt    string         `json:"created_at"`
	// Stored lists the channels whose value this checkpoint stores itself
	// (every changed channel in full mode, the snapshots in delta mode).
	Stored []string `json:"stored"`
}

// metadataStep reads LangGraph's "step"; decoded msgpack holds int64 or,
// for values that needed an unsigned encoding, uint64.
func metadataStep(md Metadata) int64 {
	switch v := md["step"].(type) {
	case int64:
		return v
	case uint64:
		return int64(min(v, 1<<62))
	case float64:
		return int64(v)
	}
	return -1
}

// materialize rebuilds the schema channels of a checkpoint: a value the
// checkpoint stores is decoded, any other is folded from its history. The
// result is shared (cached, and handed to every caller that asked for the
// same checkpoint meanwhile): callers must not change it.
func (db *DB) materialize(c *conn, t Tuple) (map[string]any, error) {
	k := cpKey{t.Config.ThreadID, t.Config.CheckpointNS, t.Config.CheckpointID}
	if v, ok := db.cache.getState(k); ok {
		return v, nil
	}
	// A checkpoint's state depends only on its sealed ancestors, so
	// concurrent cold reads of one checkpoint can share one rebuild: the
	// others wait for it instead of each walking and decoding the same
	// snapshot (BenchmarkColdStateConcurrent).
	if noFlight {
		return db.rebuildState(c, t, k)
	}
	v, err, shared := db.flight.Do(k.thread+"\x00"+k.ns+"\x00"+k.id, func() (any, error) {
		return db.rebuildState(c, t, k)
	})
	if err != nil && shared {
		// The rebuild that failed ran on another call's connection and
		// context (which may have been cancelled): try on this call's own.
		return db.rebuildState(c, t, k)
	}
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// noFlight turns the sharing of cold rebuilds off, for the benchmark that
// measures what it saves.
var noFlight = false

func (db *DB) rebuildState(c *conn, t Tuple, k cpKey) (map[string]any, error) {
	if t.Checkpoint.ChannelValues == nil {
		ts := []Tuple{t}
		ts[0].Checkpoint.ChannelValues = map[string]codec.Blob{}
		if err := loadValues(c, ts); err != nil {
			return nil, err
		}
		t = ts[0]
	}
	values := map[string]any{}
	for name, ch := range db.opts.Schema {
		if _, ok := t.Checkpoint.ChannelVersions[name]; !ok {
			continue
		}
		if b, ok := t.Checkpoint.ChannelValues[name]; ok {
			v, err := decodeState(ch, name, k, b)
			if err != nil {
				return nil, err
			}
			values[name] = v
			continue
		}
		h, ok := db.cache.get(k, name)
		if !ok {
			e, err := walk(c, k, name)
			if err != nil {
				return nil, err
			}
			db.cache.add(e)
			h = e.hist
		}
		var seed any
		if h.Seed != nil {
			v, err := decodeState(ch, name, k, *h.Seed)
			if err != nil {
				return nil, err
			}
			seed = v
		}
		ups := make([]any, len(h.Writes))
		for i, w := range h.Writes {
			if w.Value.Type != codec.TypeMsgpack {
				return nil, fmt.Errorf("%w: thread %q channel %q: write of type %q is not ours to fold", ErrCorrupt, k.thread, name, w.Value.Type)
			}
			u, err := ch.DecodeUpdate(w.Value.Data)
			if err != nil {
				return nil, fmt.Errorf("%w: thread %q channel %q write of task %q: %w", undecodable(err), k.thread, name, w.TaskID, err)
			}
			ups[i] = u
		}
		v, err := channels.Fold(ch, seed, ups)
		if err != nil {
			return nil, fmt.Errorf("%w: rebuilding channel %q at checkpoint %q of thread %q: %w", undecodable(err), name, k.id, k.thread, err)
		}
		values[name] = v
	}
	db.cache.addState(k, values)
	return values, nil
}

func decodeState(ch channels.Channel, name string, k cpKey, b codec.Blob) (any, error) {
	if b.Type != codec.TypeMsgpack {
		return nil, fmt.Errorf("%w: thread %q channel %q holds a value of type %q, which the thread API did not write", ErrCorrupt, k.thread, name, b.Type)
	}
	v, err := ch.DecodeState(b.Data)
	if err != nil {
		return nil, fmt.Errorf("%w: thread %q channel %q at checkpoint %q: %w", undecodable(err), k.thread, name, k.id, err)
	}
	return v, nil
}

// State returns the materialized state of the checkpoint cfg names (the
// thread's head when cfg.CheckpointID is empty), in the root namespace.
func (db *DB) State(ctx context.Context, cfg Config) (State, error) {
	if err := validateThread(cfg); err != nil {
		return State{}, err
	}
	var out State
	err := db.read(ctx, func(c *conn) error {
		if err := db.checkThreadMode(c, cfg.ThreadID, false); err != nil {
			return err
		}
		t, err := db.resolveParent(c, cfg.ThreadID, cfg.CheckpointID)
		if err != nil {
			return err
		}
		if t == nil {
			return fmt.Errorf("%w: no checkpoint in thread %q", ErrNotFound, cfg.ThreadID)
		}
		out, err = db.stateOf(c, *t)
		return err
	})
	return out, err
}

func (db *DB) stateOf(c *conn, t Tuple) (State, error) {
	values, err := db.materialize(c, t)
	if err != nil {
		return State{}, err
	}
	stored := []string{}
	// No ORDER BY: sorting by channel would make SQLite scan the thread's
	// values in primary-key order instead of seeking by checkpoint.
	err = c.query(sqlStoredChannels,
		[]any{t.Config.ThreadID, t.Config.CheckpointNS, t.Config.CheckpointID}, func(st row) error {
			stored = append(stored, st.Text(0))
			return nil
		})
	if err != nil {
		return State{}, err
	}
	slices.Sort(stored)
	return State{
		Config: t.Config, ParentConfig: t.ParentConfig, Values: cloneValues(values), Metadata: t.Metadata,
		CreatedAt: t.Checkpoint.TS, Stored: stored,
	}, nil
}

// cloneValues copies the cached state's map and clips its lists, so that
// a caller adding channels or appending messages gets copies and cannot
// change the cache, while a warm read stays O(channels), not O(messages).
// The values inside are shared: State documents them as read-only.
func cloneValues(v map[string]any) map[string]any {
	out := make(map[string]any, len(v))
	for k, x := range v {
		if ms, ok := x.([]codec.Message); ok {
			x = slices.Clip(ms)
		}
		out[k] = x
	}
	return out
}

// HistoryOptions select the checkpoints StateHistory returns.
type HistoryOptions struct {
	Before string // only checkpoints whose id sorts before this one
	Limit  int    // 0: all
}

// StateHistory yields the thread's checkpoints newest first, each with its
// materialized state, a page at a time; a checkpoint another handle removes
// while the loop runs is skipped, as if it had been removed before.
func (db *DB) StateHistory(ctx context.Context, thread string, o HistoryOptions) iter.Seq2[State, error] {
	return func(yield func(State, error) bool) {
		root := ""
		for t, err := range db.List(ctx, ListOptions{ThreadID: thread, Namespace: &root, Before: o.Before, Limit: o.Limit}) {
			if err != nil {
				yield(State{}, err)
				return
			}
			var s State
			gone := false
			err := db.read(ctx, func(c *conn) error {
				if err := db.checkThreadMode(c, thread, false); err != nil {
					return err
				}
				var err error
				s, err = db.stateOf(c, t)
				if errors.Is(err, ErrNotFound) {
					// Its page was read before it was removed? Then it
					// is gone, not missing from a damaged chain.
					found, qerr := c.queryRow(sqlGetByID, []any{thread, "", t.Config.CheckpointID}, nil)
					if qerr != nil {
						return qerr
					}
					gone = !found
				}
				return err
			})
			if gone {
				continue
			}
			if !yield(s, err) || err != nil {
				return
			}
		}
	}
}

// Fork creates a new head that copies the state of the checkpoint cfg names
// (time travel): it consumes none of that checkpoint's writes, so the fork
// reads exactly as the checkpoint does, in either mode.
func (db *DB) Fork(ctx context.Context, cfg Config) (Config, error) {
	return db.copyOf(ctx, cfg, Metadata{"forked_from": cfg.CheckpointID}, "")
}

func (db *DB) copyOf(ctx context.Context, cfg Config, extra Metadata, rollbackRun string) (Config, error) {
	if err := validateThread(cfg); err != nil {
		return Config{}, err
	}
	if cfg.CheckpointID == "" && rollbackRun == "" {
		return Config{}, fmt.Errorf("%w: fork needs a checkpoint_id", ErrInvalidArgument)
	}
	var d *committed
	err := db.write(ctx, func(c *conn) error {
		if err := c.lock(cfg.ThreadID); err != nil {
			return err
		}
		if err := db.checkThreadMode(c, cfg.ThreadID, true); err != nil {
			return err
		}
		var first Tuple
		if rollbackRun != "" {
			f, err := loadTuples(c, sqlFirstOfRun, []any{cfg.ThreadID, rollbackRun})
			if err != nil {
				return err
			}
			if len(f) == 0 {
				return fmt.Errorf("%w: run %q has no checkpoint in thread %q", ErrNotFound, rollbackRun, cfg.ThreadID)
			}
			if f[0].ParentConfig == nil {
				return fmt.Errorf("%w: run %q started thread %q; there is no earlier state to roll back to", ErrConflict, rollbackRun, cfg.ThreadID)
			}
			first = f[0]
			cfg = *first.ParentConfig
		}
		parent, err := db.resolveParent(c, cfg.ThreadID, cfg.CheckpointID)
		if err != nil {
			return err
		}
		d, err = db.commitChild(c, *parent, "fork", "", extra, true)
		if err != nil {
			return err
		}
		if rollbackRun != "" {
			// The pending writes the pre-run checkpoint had before the run
			// started become the new head's.
			return c.exec(sqlReattach, d.tuple.Config.CheckpointID, cfg.ThreadID, cfg.CheckpointID, first.Config.CheckpointID, rollbackRun)
		}
		return nil
	})
	if err != nil {
		return Config{}, err
	}
	db.afterCommit(*d)
	return d.tuple.Config, nil
}

// Rollback restores the state a thread had before run runID started, as a
// new head (a checkpoint, not a database rollback), and gives it the pending
// writes that checkpoint had before the run. It reverts state, not the
// run's side effects outside the file.
func (db *DB) Rollback(ctx context.Context, thread, runID string) (Config, error) {
	if runID == "" {
		return Config{}, fmt.Errorf("%w: missing run id", ErrInvalidArgument)
	}
	return db.copyOf(ctx, Config{ThreadID: thread}, Metadata{"rollback_of": runID}, runID)
}

// UpdateState applies writes to the state of the checkpoint cfg names as if
// node asNode had made them, through the channels' reducers, as a new
// checkpoint (source "update"). From an older checkpoint it is a fork that
// edits the past.
func (db *DB) UpdateState(ctx context.Context, cfg Config, asNode string, writes []ChannelWrite) (Config, error) {
	if asNode == "" {
		return Config{}, fmt.Errorf("%w: missing node name", ErrInvalidArgument)
	}
	return db.Commit(ctx, cfg.ThreadID, Step{Parent: cfg.CheckpointID, Source: "update",
		Tasks: []TaskWrites{{TaskID: "update:" + asNode, Writes: writes}}})
}

// Compact replaces a message channel's list with summary (an Overwrite, so
// it survives the append reducer and the history before it is never folded
// again), as a new checkpoint after the one cfg names.
func (db *DB) Compact(ctx context.Context, cfg Config, channel string, summary []codec.Message) (Config, error) {
	if _, ok := db.opts.Schema[channel].(channels.Messages); !ok {
		return Config{}, fmt.Errorf("%w: %q is not a message channel of the schema", ErrInvalidArgument, channel)
	}
	return db.Commit(ctx, cfg.ThreadID, Step{Parent: cfg.CheckpointID, Source: "update", Metadata: Metadata{"compaction": true},
		Tasks: []TaskWrites{{TaskID: "compact", Writes: []ChannelWrite{{Channel: channel, Value: channels.MessageUpdate{Overwrite: true, Messages: summary}}}}}})
}

// compression is the effort spent compressing stored channel values: full
// mode stores the whole list at every change, so it favours speed; delta
// mode stores a snapshot every K updates, so it favours size.
func (db *DB) compression() int { return compressionFor(db.opts.Mode) }

// compress encodes a channel value to store, at the handle's effort. Its
// compressor remembers the frames of message-list chunks in up to an
// eighth of HistoryCacheBytes, so a delta snapshot of a long thread
// compresses only its last chunk (codec.ChunkBytes).
func (db *DB) compress(v any) ([]byte, error) {
	db.compressorOnce.Do(func() {
		// Both arguments were validated: NewCompressor cannot fail here.
		db.compressor, _ = codec.NewCompressor(db.compression(), db.opts.HistoryCacheBytes/8)
	})
	return db.compressor.MarshalMax(v, MaxListBytes)
}

func compressionFor(mode channels.Mode) int {
	if mode == channels.ModeFull {
		return codec.Fast
	}
	return codec.Small
}
