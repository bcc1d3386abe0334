//go:build js || (wasip1 && hostsqlite)

package bridge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/engine/records"
)

// The record surfaces (store, runs, events, threads) cross as plain JSON:
// their values are JSON-compatible maps the engine reads itself.

// wStoreOp is one operation of a store batch: op is "get", "put", "search"
// or "list". For put, a null value deletes; ttlMs (0 or absent: the
// default TTL) and noExpiry set the item's lifetime. refresh (get, search)
// overrides whether the read pushes back expiry.
type wStoreOp struct {
	Op        string   `json:"op"`
	Namespace []string `json:"namespace"`
	Key       string   `json:"key"`
	Value     rawJSON  `json:"value"` // checked for size before it is decoded (limits.go)
	TTLMs     float64  `json:"ttlMs"`
	NoExpiry  bool     `json:"noExpiry"`
	Refresh   *bool    `json:"refresh"`
	Prefix    []string `json:"prefix"`
	Suffix    []string `json:"suffix"`
	Filter    rawJSON  `json:"filter"` // decoded with numbers kept (decodeJSON)
	Limit     int      `json:"limit"`
	Offset    int      `json:"offset"`
	MaxDepth  int      `json:"maxDepth"`
	// Semantic search: a put's vectors by field path and a search's query
	// vector, each the base64 of float32 little-endian values (or a JSON
	// array of numbers), and the search's distance type.
	Vectors  map[string]json.RawMessage `json:"vectors"`
	Query    json.RawMessage            `json:"query"`
	Distance string                     `json:"distance"`
}

// wVector reads a vector of the wire: the number of one of the call's
// binary buffers, or base64 (in a string), of float32 little-endian values;
// or an array of numbers.
func wVector(what string, raw json.RawMessage, bin in) ([]float32, error) {
	if len(raw) > 0 && raw[0] >= '0' && raw[0] <= '9' {
		i, err := strconv.Atoi(string(raw))
		if err != nil || i >= len(bin.bufs) {
			return nil, errArg("%s: buffer %s of %d", what, raw, len(bin.bufs))
		}
		return floats(what, bin.bufs[i])
	}
	if len(raw) > 0 && raw[0] == '"' {
		// Base64 needs no JSON escapes: the bytes between the quotes are
		// it, unless a host escaped a "/" (then JSON reads them first).
		s := raw[1 : len(raw)-1]
		if bytes.IndexByte(s, '\\') >= 0 {
			var str string
			if err := json.Unmarshal(raw, &str); err != nil {
				return nil, errArg("%s: %v", what, err)
			}
			s = []byte(str)
		}
		b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
		n, err := base64.StdEncoding.Decode(b, s)
		if err != nil {
			return nil, errArg("%s: want the base64 of float32 little-endian values", what)
		}
		return floats(what, b[:n])
	}
	var fs []float64
	if err := json.Unmarshal(raw, &fs); err != nil {
		return nil, errArg("%s: want an array of numbers or base64 float32", what)
	}
	v := make([]float32, len(fs))
	for i, f := range fs {
		v[i] = float32(f)
	}
	return v, nil
}

func floats(what string, b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, errArg("%s: %d bytes are not float32 values", what, len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

func refresh(b *bool) records.TTLRefresh {
	switch {
	case b == nil:
		return records.RefreshDefault
	case *b:
		return records.RefreshOn
	}
	return records.RefreshOff
}

func (w wStoreOp) engine(bin in) (records.StoreOp, error) {
	switch w.Op {
	case "get":
		return records.GetOp{Namespace: w.Namespace, Key: w.Key, Refresh: refresh(w.Refresh)}, nil
	case "put":
		var value map[string]any
		if len(w.Value) > 0 && string(w.Value) != "null" {
			if err := checkValueJSON("store value for key "+quoteShort(w.Key), w.Value); err != nil {
				return nil, err
			}
			if err := decodeJSON(w.Value, &value); err != nil {
				return nil, err
			}
			if value == nil {
				return nil, errArg("store put: value must be an object")
			}
			var err error
			if value, err = numbersMap(value); err != nil {
				return nil, err
			}
		}
		ttl := time.Duration(w.TTLMs * float64(time.Millisecond))
		if w.NoExpiry {
			ttl = records.NoExpiry
		}
		var vs map[string][]float32
		if len(w.Vectors) > 0 {
			vs = make(map[string][]float32, len(w.Vectors))
			for path, raw := range w.Vectors {
				v, err := wVector("store put: vector of "+path, raw, bin)
				if err != nil {
					return nil, err
				}
				vs[path] = v
			}
		}
		return records.PutOp{Namespace: w.Namespace, Key: w.Key, Value: value, TTL: ttl, Vectors: vs}, nil
	case "search":
		var filter map[string]any
		if len(w.Filter) > 0 && string(w.Filter) != "null" {
			if err := decodeJSON(w.Filter, &filter); err != nil {
				return nil, err
			}
		}
		filter, err := numbersMap(filter)
		if err != nil {
			return nil, err
		}
		op := records.SearchOp{Prefix: w.Prefix, Filter: filter, Limit: w.Limit, Offset: w.Offset, Refresh: refresh(w.Refresh), Distance: w.Distance}
		if len(w.Query) > 0 && string(w.Query) != "null" {
			if op.Query, err = wVector("store search: query", w.Query, bin); err != nil {
				return nil, err
			}
		}
		return op, nil
	case "list":
		return records.ListNamespacesOp{Prefix: w.Prefix, Suffix: w.Suffix, MaxDepth: w.MaxDepth, Limit: w.Limit, Offset: w.Offset}, nil
	}
	return nil, errArg("store op %q (want get, put, search or list)", w.Op)
}

func opStoreBatch(ctx context.Context, h *handle, req []byte, bin in) (any, *Out, error) {
	var r struct {
		Ops []wStoreOp `json:"ops"`
	}
	if err := decodeInPlace(req, &r); err != nil {
		return nil, nil, err
	}
	ops := make([]records.StoreOp, len(r.Ops))
	for i, w := range r.Ops {
		op, err := w.engine(bin)
		if err != nil {
			return nil, nil, err
		}
		ops[i] = op
	}
	res, err := h.db.Store().Batch(ctx, ops...)
	if err != nil {
		return nil, nil, err
	}
	results := make([]any, len(res))
	for i, r := range res {
		switch ops[i].(type) {
		case records.GetOp:
			results[i] = map[string]any{"item": r.Item}
		case records.SearchOp:
			items := r.Items
			if items == nil {
				items = []records.Item{}
			}
			results[i] = map[string]any{"items": items}
		case records.ListNamespacesOp:
			ns := r.Namespaces
			if ns == nil {
				ns = [][]string{}
			}
			results[i] = map[string]any{"namespaces": ns}
		default:
			results[i] = map[string]any{}
		}
	}
	return map[string]any{"results": results}, nil, nil
}

func opStoreSweep(ctx context.Context, h *handle, _ []byte, _ in) (any, *Out, error) {
	n, err := h.db.Store().Sweep(ctx)
	return map[string]int64{"deleted": n}, nil, err
}

func opRunsCreate(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r records.NewRun
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	var err error
	if r.Metadata, err = numbersMap(r.Metadata); err != nil {
		return nil, nil, err
	}
	if r.Kwargs, err = numbersMap(r.Kwargs); err != nil {
		return nil, nil, err
	}
	c, err := h.db.Runs().Create(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	return map[string]any{"run": c.Run, "new": c.New, "interrupted": c.Interrupted}, nil, nil
}

type wRunRef struct {
	RunID    string `json:"run_id"`
	ThreadID string `json:"thread_id"`
	Status   string `json:"status"`
	Error    string `json:"error"`
}

func opRunsGet(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r wRunRef
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	run, err := h.db.Runs().Get(ctx, r.RunID)
	return map[string]any{"run": run}, nil, err
}

func opRunsList(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r wRunRef
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	runs := []records.Run{}
	for run, err := range h.db.Runs().List(ctx, r.ThreadID) {
		if err != nil {
			return nil, nil, err
		}
		runs = append(runs, run)
	}
	return map[string]any{"runs": runs}, nil, nil
}

func opRunsSetStatus(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r wRunRef
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	return struct{}{}, nil, h.db.Runs().SetStatus(ctx, r.RunID, records.RunStatus(r.Status), r.Error)
}

func opRunsComplete(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		wRunRef
		Totals records.RunTotals `json:"totals"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	return struct{}{}, nil, h.db.Runs().Complete(ctx, r.RunID, records.RunStatus(r.Status), r.Error, r.Totals)
}

func opRunsDelete(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r wRunRef
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	return struct{}{}, nil, h.db.Runs().Delete(ctx, r.RunID)
}

func opRunsSetModelName(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		RunID     string `json:"run_id"`
		ModelName string `json:"model_name"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	return struct{}{}, nil, h.db.Runs().SetModelName(ctx, r.RunID, r.ModelName)
}

func opRunsProgress(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		RunID    string              `json:"run_id"`
		Progress records.RunProgress `json:"progress"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	return struct{}{}, nil, h.db.Runs().Progress(ctx, r.RunID, r.Progress)
}

func opRunsListActive(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		PendingOnly       bool      `json:"pending_only"`
		Before            time.Time `json:"before"`
		Limit             int       `json:"limit"`
		RunsOnly          bool      `json:"runs_only"`
		WorkerLeaseBefore time.Time `json:"worker_lease_before"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	runs, err := h.db.Runs().ListActive(ctx, records.ActiveQuery{PendingOnly: r.PendingOnly, Before: r.Before, Limit: r.Limit,
		RunsOnly: r.RunsOnly, WorkerLeaseBefore: r.WorkerLeaseBefore})
	return map[string]any{"runs": runs}, nil, err
}

func opRunsApply(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var op records.RunOp
	if err := decodeJSON(req, &op); err != nil {
		return nil, nil, err
	}
	res, err := h.db.Runs().Apply(ctx, op)
	return res, nil, err
}

func opRunsTokenUsage(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		ThreadID      string `json:"thread_id"`
		IncludeActive bool   `json:"include_active"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	u, err := h.db.Runs().TokenUsage(ctx, r.ThreadID, r.IncludeActive)
	return map[string]any{"usage": u}, nil, err
}

func opEventsPut(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		Events     []records.Event `json:"events"`
		TraceLimit int             `json:"trace_limit"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	for i := range r.Events {
		c, err := numbers(r.Events[i].Content)
		if err != nil {
			return nil, nil, err
		}
		r.Events[i].Content = c
		if r.Events[i].Metadata, err = numbersMap(r.Events[i].Metadata); err != nil {
			return nil, nil, err
		}
	}
	evs, err := h.db.Events().WithTraceContentLimit(r.TraceLimit).PutBatch(ctx, r.Events)
	return map[string]any{"events": evs}, nil, err
}

// opEventsPutIfAbsent stores one event unless its run already has one of
// its event type; returns the stored or the existing event and created.
func opEventsPutIfAbsent(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		Event      records.Event `json:"event"`
		TraceLimit int           `json:"trace_limit"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	c, err := numbers(r.Event.Content)
	if err != nil {
		return nil, nil, err
	}
	r.Event.Content = c
	if r.Event.Metadata, err = numbersMap(r.Event.Metadata); err != nil {
		return nil, nil, err
	}
	ev, created, err := h.db.Events().WithTraceContentLimit(r.TraceLimit).PutIfAbsent(ctx, r.Event)
	if err != nil {
		return nil, nil, err
	}
	return map[string]any{"event": ev, "created": created}, nil, nil
}

func opEventsListRunMessages(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		ThreadID  string `json:"thread_id"`
		RunID     string `json:"run_id"`
		Limit     int    `json:"limit"`
		BeforeSeq *int64 `json:"before_seq"`
		AfterSeq  *int64 `json:"after_seq"`
		UserID    string `json:"user_id"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	evs, err := h.db.Events().ForUser(r.UserID).ListRunMessages(ctx, r.ThreadID, r.RunID, records.MessageQuery{Limit: r.Limit, BeforeSeq: r.BeforeSeq, AfterSeq: r.AfterSeq})
	return map[string]any{"events": nonNilEvents(evs)}, nil, err
}

func opEventsLastVisibleAISeq(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		ThreadID string   `json:"thread_id"`
		RunIDs   []string `json:"run_ids"`
		UserID   string   `json:"user_id"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	m, err := h.db.Events().ForUser(r.UserID).LastVisibleAISeq(ctx, r.ThreadID, r.RunIDs)
	return map[string]any{"seqs": m}, nil, err
}

func opEventsListMessages(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		ThreadID  string `json:"thread_id"`
		Limit     int    `json:"limit"`
		BeforeSeq *int64 `json:"before_seq"`
		AfterSeq  *int64 `json:"after_seq"`
		UserID    string `json:"user_id"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	evs, err := h.db.Events().ForUser(r.UserID).ListMessages(ctx, r.ThreadID, records.MessageQuery{Limit: r.Limit, BeforeSeq: r.BeforeSeq, AfterSeq: r.AfterSeq})
	return map[string]any{"events": nonNilEvents(evs)}, nil, err
}

func opEventsListRunEvents(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		ThreadID string   `json:"thread_id"`
		RunID    string   `json:"run_id"`
		Types    []string `json:"types"`
		TaskID   string   `json:"task_id"`
		AfterSeq int64    `json:"after_seq"`
		Limit    int      `json:"limit"`
		UserID   string   `json:"user_id"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	evs, err := h.db.Events().ForUser(r.UserID).ListRunEvents(ctx, r.ThreadID, r.RunID, records.RunEventQuery{Types: r.Types, TaskID: r.TaskID, AfterSeq: r.AfterSeq, Limit: r.Limit})
	return map[string]any{"events": nonNilEvents(evs)}, nil, err
}

func nonNilEvents(evs []records.Event) []records.Event {
	if evs == nil {
		return []records.Event{}
	}
	return evs
}

type wThreadRef struct {
	ThreadID string `json:"thread_id"`
	RunID    string `json:"run_id"`
	// UserID, when set, scopes an events call to that user's events.
	UserID string `json:"user_id"`
}

func opEventsCount(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r wThreadRef
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	n, err := h.db.Events().ForUser(r.UserID).CountMessages(ctx, r.ThreadID)
	return map[string]int64{"count": n}, nil, err
}

func opEventsDeleteThread(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r wThreadRef
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	n, err := h.db.Events().ForUser(r.UserID).DeleteThread(ctx, r.ThreadID)
	return map[string]int64{"deleted": n}, nil, err
}

func opEventsDeleteRun(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r wThreadRef
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	n, err := h.db.Events().ForUser(r.UserID).DeleteRun(ctx, r.ThreadID, r.RunID)
	return map[string]int64{"deleted": n}, nil, err
}

// wOwner scopes a thread call: a user id, or any_owner for admin tools.
type wOwner struct {
	Owner    string `json:"owner"`
	AnyOwner bool   `json:"any_owner"`
}

func (w wOwner) engine() engine.Owner {
	if w.AnyOwner {
		return engine.AnyOwner
	}
	return engine.User(w.Owner)
}

func opThreadsCreate(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		wOwner
		ThreadID    string         `json:"thread_id"`
		AssistantID string         `json:"assistant_id"`
		DisplayName string         `json:"display_name"`
		Status      string         `json:"status"`
		Metadata    map[string]any `json:"metadata"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	md, err := numbersMap(r.Metadata)
	if err != nil {
		return nil, nil, err
	}
	t, err := h.db.Threads().Create(ctx, r.engine(), records.NewThread{
		ThreadID: r.ThreadID, AssistantID: r.AssistantID, DisplayName: r.DisplayName, Status: records.ThreadStatus(r.Status), Metadata: md,
	})
	return map[string]any{"thread": t}, nil, err
}

func opThreadsGet(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		wOwner
		ThreadID string `json:"thread_id"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	t, err := h.db.Threads().Get(ctx, r.engine(), r.ThreadID)
	return map[string]any{"thread": t}, nil, err
}

func opThreadsSearch(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		wOwner
		Metadata map[string]any `json:"metadata"`
		Status   string         `json:"status"`
		Limit    int            `json:"limit"`
		Offset   int            `json:"offset"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	md, err := numbersMap(r.Metadata)
	if err != nil {
		return nil, nil, err
	}
	ts, err := h.db.Threads().Search(ctx, r.engine(), records.ThreadQuery{Metadata: md, Status: records.ThreadStatus(r.Status), Limit: r.Limit, Offset: r.Offset})
	if ts == nil {
		ts = []records.Thread{}
	}
	return map[string]any{"threads": ts}, nil, err
}

// opThreadsUpdate sets the display name and/or status, and/or merges a
// metadata patch (touch: also bump updated_at).
func opThreadsUpdate(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		wOwner
		ThreadID    string         `json:"thread_id"`
		DisplayName *string        `json:"display_name"`
		Status      string         `json:"status"`
		Metadata    map[string]any `json:"metadata"`
		Touch       bool           `json:"touch"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	t := h.db.Threads()
	if r.DisplayName != nil {
		if err := t.SetDisplayName(ctx, r.engine(), r.ThreadID, *r.DisplayName); err != nil {
			return nil, nil, err
		}
	}
	if r.Status != "" {
		if err := t.SetStatus(ctx, r.engine(), r.ThreadID, records.ThreadStatus(r.Status)); err != nil {
			return nil, nil, err
		}
	}
	if r.Metadata != nil {
		md, err := numbersMap(r.Metadata)
		if err != nil {
			return nil, nil, err
		}
		if err := t.MergeMetadata(ctx, r.engine(), r.ThreadID, md, r.Touch); err != nil {
			return nil, nil, err
		}
	}
	return struct{}{}, nil, nil
}

func opThreadsSetOwner(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		wOwner
		ThreadID string `json:"thread_id"`
		NewOwner string `json:"new_owner"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	return struct{}{}, nil, h.db.Threads().SetOwner(ctx, r.engine(), r.ThreadID, r.NewOwner)
}

func opThreadsDelete(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		wOwner
		ThreadID string `json:"thread_id"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	return struct{}{}, nil, h.db.Threads().Delete(ctx, r.engine(), r.ThreadID)
}
