package engine

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/engine/records"
)

// Read-only views for operators (the CLI's state, history, threads and
// events commands): they show any thread, whoever wrote it.

// StateView is the materialized state of one checkpoint of any thread.
type StateView struct {
	Config       Config   `json:"config"`
	ParentConfig *Config  `json:"parent_config,omitempty"`
	CreatedAt    string   `json:"created_at"`
	Metadata     Metadata `json:"metadata"`
	// Mode is the thread's channel mode, "" for a thread the thread API
	// did not write (LangGraph's).
	Mode channels.Mode `json:"mode,omitempty"`
	// Values holds every channel with a value: the schema channels of
	// thread-API threads rebuilt as State does, other values decoded when
	// they are the engine's msgpack or LangGraph's "json", and shown as a
	// typed blob ({"type", "data" in base64}) otherwise.
	Values map[string]any `json:"values"`
	// Stored lists the channels whose value this checkpoint stores itself.
	Stored []string `json:"stored"`
	// Unresolved lists channels with a version but no stored value that the
	// engine cannot rebuild (a caller's delta channels): use
	// DeltaChannelHistory for them.
	Unresolved []string `json:"unresolved,omitempty"`
}

// ReadState returns the state of the checkpoint cfg names (the latest of
// its namespace when cfg.CheckpointID is empty). It only reads.
func (db *DB) ReadState(ctx context.Context, cfg Config) (StateView, error) {
	if err := validateThread(cfg); err != nil {
		return StateView{}, err
	}
	var out StateView
	err := db.read(ctx, func(c *conn) error {
		q, args := sqlGetLatest, []any{cfg.ThreadID, cfg.CheckpointNS}
		if cfg.CheckpointID != "" {
			q, args = sqlGetByID, append(args, cfg.CheckpointID)
		}
		ts, err := loadTuples(c, q, args)
		if err != nil {
			return err
		}
		if len(ts) == 0 {
			if cfg.CheckpointID == "" {
				return fmt.Errorf("%w: no checkpoint in thread %q (namespace %q)", ErrNotFound, cfg.ThreadID, cfg.CheckpointNS)
			}
			return fmt.Errorf("%w: checkpoint %q of thread %q (namespace %q)", ErrNotFound, cfg.CheckpointID, cfg.ThreadID, cfg.CheckpointNS)
		}
		t := ts[0]
		mode, _, ours, err := threadMode(c, cfg.ThreadID)
		if err != nil {
			return err
		}
		out = StateView{Config: t.Config, ParentConfig: t.ParentConfig, CreatedAt: t.Checkpoint.TS, Metadata: t.Metadata,
			Mode: mode, Values: map[string]any{}, Stored: []string{}}
		if ours {
			if err := db.checkThreadMode(c, cfg.ThreadID, false); err != nil {
				return err
			}
			values, err := db.materialize(c, t)
			if err != nil {
				return err
			}
			maps.Copy(out.Values, cloneValues(values))
		}
		for _, ch := range slices.Sorted(maps.Keys(t.Checkpoint.ChannelVersions)) {
			if _, done := out.Values[ch]; done {
				continue
			}
			b, ok := t.Checkpoint.ChannelValues[ch]
			if !ok {
				out.Unresolved = append(out.Unresolved, ch)
				continue
			}
			out.Values[ch] = decodeForDisplay(b)
		}
		return c.query(sqlInspectStored,
			[]any{t.Config.ThreadID, t.Config.CheckpointNS, t.Config.CheckpointID}, func(st row) error {
				out.Stored = append(out.Stored, st.Text(0))
				return nil
			})
	})
	return out, err
}

// decodeForDisplay decodes a stored value: the engine's msgpack and JSON
// ("json", LangGraph.js's serde) become values; anything else stays a blob.
func decodeForDisplay(b codec.Blob) any {
	switch b.Type {
	case codec.TypeMsgpack:
		var v any
		if err := codec.Unmarshal(b.Data, &v); err == nil {
			return v
		}
	case "json":
		if v, err := codec.DecodeJSON(b.Data); err == nil {
			return v
		}
	}
	return b
}

// CheckpointLog yields a thread's checkpoints newest first, one line of
// facts each: parent, step, source, changed channels, stored values. It
// never reads channel values, so it costs the same in full and delta mode;
// each page of 100 takes four queries.
func (db *DB) CheckpointLog(ctx context.Context, thread string, o admin.LogOptions) iter.Seq2[admin.LogEntry, error] {
	return func(yield func(admin.LogEntry, error) bool) {
		if thread == "" {
			yield(admin.LogEntry{}, fmt.Errorf("%w: missing thread_id", ErrInvalidArgument))
			return
		}
		if o.Limit < 0 {
			yield(admin.LogEntry{}, fmt.Errorf("%w: negative limit %d", ErrInvalidArgument, o.Limit))
			return
		}
		before, left := o.Before, o.Limit
		for {
			n := 100
			if o.Limit > 0 {
				n = min(n, left)
			}
			var page []admin.LogEntry
			err := db.read(ctx, func(c *conn) error {
				var err error
				page, err = logPage(c, thread, o.Namespace, before, n)
				return err
			})
			if err != nil {
				yield(admin.LogEntry{}, err)
				return
			}
			for _, e := range page {
				if !yield(e, nil) {
					return
				}
			}
			if len(page) < n {
				return
			}
			if o.Limit > 0 {
				if left -= len(page); left <= 0 {
					return
				}
			}
			before = page[len(page)-1].CheckpointID
		}
	}
}

func logPage(c *conn, thread, ns, before string, n int) ([]admin.LogEntry, error) {
	mode, _, _, err := threadMode(c, thread)
	if err != nil {
		return nil, err
	}
	var page []admin.LogEntry
	versions := map[string]map[string]string{}
	err = c.query(sqlLogPage, []any{thread, ns, before, n}, func(st row) error {
		e := admin.LogEntry{CheckpointID: st.Text(0), CheckpointNS: ns, ParentID: st.Text(1), Changed: []string{}, Stored: []string{}, Step: -1}
		var sc storedCheckpoint
		if err := codec.Unmarshal(st.Blob(2), &sc); err != nil {
			return fmt.Errorf("%w: checkpoint %q of thread %q: %w", undecodable(err), e.CheckpointID, thread, err)
		}
		var md map[string]any
		if err := codec.Unmarshal(st.Blob(3), &md); err != nil {
			return fmt.Errorf("%w: metadata of checkpoint %q of thread %q: %w", undecodable(err), e.CheckpointID, thread, err)
		}
		e.CreatedAt = sc.TS
		e.Step = metadataStep(md)
		e.Source, _ = md["source"].(string)
		versions[e.CheckpointID] = sc.ChannelVersions
		page = append(page, e)
		return nil
	})
	if err != nil || len(page) == 0 {
		return page, err
	}
	var missing, ids []string
	for _, e := range page {
		ids = append(ids, e.CheckpointID)
		if _, ok := versions[e.ParentID]; e.ParentID != "" && !ok {
			missing = append(missing, e.ParentID)
		}
	}
	if len(missing) > 0 {
		arg, _ := jsonArg(missing)
		err := c.query(sqlLogVersions, []any{thread, ns, arg}, func(st row) error {
			var sc storedCheckpoint
			if err := codec.Unmarshal(st.Blob(1), &sc); err != nil {
				return fmt.Errorf("%w: checkpoint %q of thread %q: %w", undecodable(err), st.Text(0), thread, err)
			}
			versions[st.Text(0)] = sc.ChannelVersions
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	idx := map[string]int{}
	for i, e := range page {
		idx[e.CheckpointID] = i
		mine, parent := versions[e.CheckpointID], versions[e.ParentID]
		for _, ch := range slices.Sorted(maps.Keys(mine)) {
			if pv, ok := parent[ch]; !ok || pv != mine[ch] {
				page[i].Changed = append(page[i].Changed, ch)
			}
		}
	}
	arg, _ := jsonArg(ids)
	err = c.query(sqlLogStored, []any{thread, ns, arg}, func(st row) error {
		i := idx[st.Text(0)]
		page[i].Stored = append(page[i].Stored, st.Text(1))
		page[i].Snapshot = mode == channels.ModeDelta
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = c.query(sqlLogWrites, []any{thread, ns, arg}, func(st row) error {
		page[idx[st.Text(0)]].PendingWrites = int(st.Int64(1))
		return nil
	})
	return page, err
}

// ListThreads lists threads with what each surface holds for them. It only
// reads.
func (db *DB) ListThreads(ctx context.Context, o admin.ThreadListOptions) ([]admin.ThreadSummary, error) {
	limit, err := pageLimit("thread list", o.Limit, 100)
	if err != nil {
		return nil, err
	}
	if err := pageOffset("thread list", o.Offset); err != nil {
		return nil, err
	}
	var only any
	var order []string
	if o.Owner != "" || o.Status != "" || len(o.Metadata) > 0 {
		owner := AnyOwner
		if o.Owner != "" {
			owner = User(o.Owner)
		}
		found, err := db.Threads().Search(ctx, owner, records.ThreadQuery{Metadata: o.Metadata, Status: o.Status, Limit: limit, Offset: o.Offset})
		if err != nil {
			return nil, err
		}
		for _, t := range found {
			order = append(order, t.ThreadID)
		}
		arg, _ := jsonArg(order)
		only, o.Offset = arg, 0
		if len(order) == 0 {
			return []admin.ThreadSummary{}, nil
		}
	}
	out := []admin.ThreadSummary{}
	err = db.read(ctx, func(c *conn) error {
		err := c.query(sqlThreadSummaries, []any{only, limit, o.Offset}, func(st row) error {
			out = append(out, admin.ThreadSummary{ThreadID: st.Text(0), Mode: channels.Mode(st.Text(1)), Checkpoints: st.Int64(2),
				Head: st.Text(3), Runs: st.Int64(4), Events: st.Int64(5)})
			return nil
		})
		if err != nil || len(out) == 0 {
			return err
		}
		ids := make([]string, len(out))
		at := map[string]int{}
		for i, s := range out {
			ids[i] = s.ThreadID
			at[s.ThreadID] = i
		}
		arg, _ := jsonArg(ids)
		return c.query(sqlThreadRecords, []any{arg}, func(st row) error {
			t, err := scanThread(st)
			if err != nil {
				return err
			}
			out[at[t.ThreadID]].Record = &t
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if order != nil {
		// Keep the search's order (pinned first, most recent first).
		rank := map[string]int{}
		for i, id := range order {
			rank[id] = i
		}
		slices.SortFunc(out, func(a, b admin.ThreadSummary) int { return rank[a.ThreadID] - rank[b.ThreadID] })
	}
	return out, nil
}

// ThreadEvents returns up to limit events of a thread of every category,
// in seq order, after seq afterSeq (0 for the first). limit defaults to
// 100, at most 1000.
func (db *DB) ThreadEvents(ctx context.Context, thread string, afterSeq int64, limit int) ([]records.Event, error) {
	if thread == "" {
		return nil, fmt.Errorf("%w: missing thread_id", ErrInvalidArgument)
	}
	limit, err := pageLimit("events", limit, 100)
	if err != nil {
		return nil, err
	}
	out := []records.Event{}
	err = db.read(ctx, func(c *conn) error {
		return c.query(sqlThreadEvents, []any{thread, afterSeq, limit}, func(st row) error {
			ev, err := scanEvent(st)
			if err != nil {
				return err
			}
			out = append(out, ev)
			return nil
		})
	})
	return out, err
}
