//go:build js || (wasip1 && hostsqlite)

package bridge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/engine/admin"
)

// Call runs op name on handle id.
func (b *Bridge) Call(id int, name string, req []byte, bufs [][]byte) (any, *Out, error) {
	h, err := b.get(id)
	if err != nil {
		return nil, nil, err
	}
	fn, ok := ops[name]
	if !ok {
		return nil, nil, errArg("unknown call %q", name)
	}
	ctx := context.Background()
	if h.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.timeout)
		defer cancel()
	}
	if !traceCalls {
		return fn(ctx, h, req, in{bufs})
	}
	t0 := time.Now()
	v, o, err := fn(ctx, h, req, in{bufs})
	fmt.Printf("agentstate: call %s %v\n", name, time.Since(t0))
	return v, o, err
}

// traceCalls (AGENTSTATE_TRACE=1 in the loader's environment) prints each
// call's time inside the engine, to tell it apart from the bridge's.
var traceCalls = os.Getenv("AGENTSTATE_TRACE") != ""

func opPut(ctx context.Context, h *handle, req []byte, i in) (any, *Out, error) {
	m, err := parseRequest(req)
	if err != nil {
		return nil, nil, err
	}
	return putParsed(ctx, h, m, i)
}

func putParsed(ctx context.Context, h *handle, m map[string]any, i in) (any, *Out, error) {
	r, err := readPut(m)
	if err != nil {
		return nil, nil, err
	}
	cp, err := r.Checkpoint.engine(i)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := h.db.Put(ctx, r.Config, cp, engine.Metadata(r.Metadata), r.NewVersions)
	if err != nil {
		return nil, nil, err
	}
	return map[string]any{"config": cfg}, nil, nil
}

func opPutWrites(ctx context.Context, h *handle, req []byte, i in) (any, *Out, error) {
	m, err := parseRequest(req)
	if err != nil {
		return nil, nil, err
	}
	return putWritesParsed(ctx, h, m, i)
}

func putWritesParsed(ctx context.Context, h *handle, m map[string]any, i in) (any, *Out, error) {
	r, err := readPutWrites(m)
	if err != nil {
		return nil, nil, err
	}
	ws := make([]engine.Write, len(r.Writes))
	for k, w := range r.Writes {
		b, err := i.blob(w.Value)
		if err != nil {
			return nil, nil, err
		}
		ws[k] = engine.Write{Channel: w.Channel, Value: b}
	}
	return struct{}{}, nil, h.db.PutWrites(ctx, r.Config, ws, r.TaskID, r.TaskPath)
}

// batchable are the ops a writes.batch may hold.
var batchable = map[string]func(context.Context, *handle, map[string]any, in) (any, *Out, error){
	"put": putParsed, "putWrites": putWritesParsed,
}

// opWritesBatch runs several puts and putWrites in one crossing of the
// bridge, in order, each as its own call would: the saver sends a
// checkpoint together with the writes that were waiting for it. A put
// followed by writes under the checkpoint it puts commits once
// (putWithWrites); any other batch runs each op in its own transaction.
// Each op succeeds or fails alone; a failure is reported in its slot as
// {"error": message, "code": code} and does not stop the ops after it (a
// write to a checkpoint whose put failed fails by itself, NOT_FOUND).
// Blob references index the byte arrays of the whole batch.
func opWritesBatch(ctx context.Context, h *handle, req []byte, i in) (any, *Out, error) {
	m, err := parseRequest(req)
	if err != nil {
		return nil, nil, err
	}
	list, err := fArr(m["ops"], "ops")
	if err != nil {
		return nil, nil, err
	}
	type batchOp struct {
		name string
		req  any
	}
	ops := make([]batchOp, len(list))
	for k, e := range list {
		o, err := fObj(e, "ops")
		if err != nil {
			return nil, nil, err
		}
		if ops[k].name, err = fStr(o["op"], "ops.op"); err != nil {
			return nil, nil, err
		}
		if batchable[ops[k].name] == nil {
			return nil, nil, errArg("writes.batch cannot hold %q", ops[k].name)
		}
		ops[k].req = o["req"]
	}
	if res := putWithWrites(ctx, h, ops[0].name, ops[0].req, len(ops), func(k int) (string, any) { return ops[k].name, ops[k].req }, i); res != nil {
		return map[string]any{"results": res}, nil, nil
	}
	res := make([]any, len(ops))
	for k, o := range ops {
		req, err := fObj(o.req, "req")
		var v any
		if err == nil {
			if req == nil {
				req = map[string]any{}
			}
			v, _, err = batchable[o.name](ctx, h, req, i)
		}
		if err != nil {
			res[k] = map[string]string{"error": err.Error(), "code": ErrorCode(err)}
			continue
		}
		res[k] = map[string]any{"ok": v}
	}
	return map[string]any{"results": res}, nil, nil
}

// putWithWrites runs a batch of one put followed by writes of tasks under
// the checkpoint it puts (what the saver sends) in one transaction
// (engine.DB.PutWithWrites): one commit, and no existence check per task.
// It answers nil, for the ops to run one by one, when the batch has
// another shape or a request does not parse (the one-by-one run reports
// it in its slot), and when the transaction failed: nothing of it was
// stored, and the ops one by one give each its own outcome, as before.
func putWithWrites(ctx context.Context, h *handle, first string, putReq any, n int, op func(int) (string, any), i in) []any {
	if first != "put" || n < 2 {
		return nil
	}
	m, err := fObj(putReq, "req")
	if err != nil || m == nil {
		return nil
	}
	r, err := readPut(m)
	if err != nil {
		return nil
	}
	cp, err := r.Checkpoint.engine(i)
	if err != nil {
		return nil
	}
	child := engine.Config{ThreadID: r.Config.ThreadID, CheckpointNS: r.Config.CheckpointNS, CheckpointID: cp.ID}
	tasks := make([][]engine.PendingWrite, 0, n-1)
	for k := 1; k < n; k++ {
		name, req := op(k)
		if name != "putWrites" {
			return nil
		}
		wm, err := fObj(req, "req")
		if err != nil || wm == nil {
			return nil
		}
		w, err := readPutWrites(wm)
		if err != nil || w.Config != child || len(w.Writes) == 0 {
			return nil
		}
		t := make([]engine.PendingWrite, len(w.Writes))
		for j, x := range w.Writes {
			b, err := i.blob(x.Value)
			if err != nil {
				return nil
			}
			t[j] = engine.PendingWrite{TaskID: w.TaskID, TaskPath: w.TaskPath, Channel: x.Channel, Value: b}
		}
		tasks = append(tasks, t)
	}
	refused, err := h.db.PutWithWrites(ctx, r.Config, cp, engine.Metadata(r.Metadata), r.NewVersions, tasks)
	if err != nil {
		if !errors.Is(err, engine.ErrOutcomeUnknown) {
			return nil
		}
		// The commit may have happened: no op runs again.
		res := make([]any, n)
		for k := range res {
			res[k] = map[string]string{"error": err.Error(), "code": ErrorCode(err)}
		}
		return res
	}
	res := make([]any, n)
	res[0] = map[string]any{"ok": map[string]any{"config": child}}
	for k, e := range refused {
		if e != nil {
			res[k+1] = map[string]string{"error": e.Error(), "code": ErrorCode(e)}
		} else {
			res[k+1] = map[string]any{"ok": struct{}{}}
		}
	}
	return res
}

// ErrorCode is the code a host gives err (INTERNAL when it matches no sentinel).
func ErrorCode(err error) string {
	for _, c := range errorCodes {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return "INTERNAL"
}

func opGetTuple(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		Config engine.Config // config
		// DeltaHistory (deltaHistory) asks, in the same call, for the
		// delta histories of the channels the checkpoint's metadata counts
		// as delta channels (counters_since_delta_snapshot) and that hold no
		// value in it: what LangGraph asks next when it loads the checkpoint.
		DeltaHistory bool
	}
	m, err := parseRequest(req)
	if err != nil {
		return nil, nil, err
	}
	if r.Config, err = fConfig(m["config"], "config"); err != nil {
		return nil, nil, err
	}
	if r.DeltaHistory, err = fBool(m["deltaHistory"], "deltaHistory"); err != nil {
		return nil, nil, err
	}
	t, err := h.db.GetTuple(ctx, r.Config)
	if errors.Is(err, engine.ErrNotFound) {
		return map[string]any{"tuple": nil}, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	o := &Out{}
	res := map[string]any{"tuple": o.tuple(t)}
	if chs := deltaChannels(t); r.DeltaHistory && len(chs) > 0 {
		// A history that cannot be read is left out: the tuple was asked
		// for, and getDeltaChannelHistory will report the error itself.
		if hist, err := h.db.DeltaChannelHistory(ctx, t.Config, chs); err == nil {
			res["history"] = o.histories(hist)
			res["historyChannels"] = chs
		}
	}
	return res, o, nil
}

// deltaChannels lists the channels a LangGraph checkpoint rebuilds from
// history: those its metadata counts since their last delta snapshot, that
// have a version and no value.
func deltaChannels(t engine.Tuple) []string {
	counters, _ := t.Metadata["counters_since_delta_snapshot"].(map[string]any)
	var chs []string
	for ch := range counters {
		if _, ok := t.Checkpoint.ChannelVersions[ch]; !ok {
			continue
		}
		if _, ok := t.Checkpoint.ChannelValues[ch]; ok {
			continue
		}
		chs = append(chs, ch)
	}
	slices.Sort(chs)
	return chs
}

func opListOpen(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		ThreadID  string         `json:"threadId"`
		Namespace *string        `json:"namespace"`
		Filter    map[string]any `json:"filter"`
		Before    string         `json:"before"`
		Limit     int            `json:"limit"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	filter, err := numbersMap(r.Filter)
	if err != nil {
		return nil, nil, err
	}
	seq := h.db.List(context.Background(), engine.ListOptions{
		ThreadID: r.ThreadID, Namespace: r.Namespace, Filter: filter, Before: r.Before, Limit: r.Limit,
	})
	return map[string]int{"cursor": h.addCursor(seq)}, nil, nil
}

// listNextBytes bounds the values and writes of one list.next response:
// past it the response ends early (it holds at least one tuple), so that a
// long thread of large checkpoints is handed over a few at a time.
const listNextBytes = 4 << 20

// opListNext returns up to n more tuples of a cursor, fewer once they hold
// listNextBytes; done reports that the listing is over (the cursor is then
// gone).
func opListNext(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		Cursor int `json:"cursor"`
		N      int `json:"n"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	c, ok := h.cursor(r.Cursor)
	if !ok {
		return nil, nil, errArg("no list cursor %d (closed or finished)", r.Cursor)
	}
	n := max(r.N, 1)
	o := &Out{}
	tuples := []wTuple{}
	size := 0
	for len(tuples) < n && size < listNextBytes {
		t, err, more := c.next()
		if !more {
			h.dropCursor(r.Cursor)
			return map[string]any{"tuples": tuples, "done": true}, o, nil
		}
		if err != nil {
			h.dropCursor(r.Cursor)
			return nil, nil, err
		}
		tuples = append(tuples, o.tuple(t))
		for _, b := range t.Checkpoint.ChannelValues {
			size += len(b.Data)
		}
		for _, w := range t.PendingWrites {
			size += len(w.Value.Data)
		}
	}
	return map[string]any{"tuples": tuples, "done": false}, o, nil
}

func opListClose(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		Cursor int `json:"cursor"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	h.dropCursor(r.Cursor)
	return struct{}{}, nil, nil
}

func opDeleteThread(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		ThreadID string `json:"threadId"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	return struct{}{}, nil, h.db.DeleteThread(ctx, r.ThreadID)
}

func opDeleteForRuns(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		RunIDs []string `json:"runIds"`
		// Reroot: admin.DeleteRunsOptions.Reroot (the Python saver's
		// LangGraph semantics).
		Reroot bool `json:"reroot"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	return struct{}{}, nil, h.db.DeleteForRuns(ctx, r.RunIDs, admin.DeleteRunsOptions{Reroot: r.Reroot})
}

func opCopyThread(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		Src string `json:"src"`
		Dst string `json:"dst"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	return struct{}{}, nil, h.db.CopyThread(ctx, r.Src, r.Dst)
}

func opPrune(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		ThreadIDs []string `json:"threadIds"`
		Strategy  string   `json:"strategy"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	if r.Strategy == "" {
		r.Strategy = string(admin.PruneKeepLatest)
	}
	rep, err := h.db.Prune(ctx, r.ThreadIDs, admin.PruneStrategy(r.Strategy))
	return rep, nil, err
}

func opDeltaHistory(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		Config   engine.Config `json:"config"`
		Channels []string      `json:"channels"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	hist, err := h.db.DeltaChannelHistory(ctx, r.Config, r.Channels)
	if err != nil {
		return nil, nil, err
	}
	o := &Out{}
	return o.histories(hist), o, nil
}

func opInfo(ctx context.Context, h *handle, _ []byte, _ in) (any, *Out, error) {
	info, err := h.db.Info(ctx)
	if err != nil {
		return nil, nil, err
	}
	if info.FileBytes == 0 {
		// The engine stats plain paths; ours are URIs. Pages are the file.
		info.FileBytes = info.PageSize * info.PageCount
	}
	return map[string]any{"info": info, "cache": h.db.CacheStats()}, nil, nil
}

func opImage(ctx context.Context, h *handle, _ []byte, _ in) (any, *Out, error) {
	b, err := takeImage(ctx, h.db)
	if err != nil {
		return nil, nil, fmt.Errorf("%w", err)
	}
	o := &Out{}
	return map[string]int{"image": o.add(b)}, o, nil
}
