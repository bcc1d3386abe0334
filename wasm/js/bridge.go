//go:build js && wasm

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"runtime/debug"
	"strings"
	"sync"
	"syscall/js"
	"time"

	"github.com/agentstate/agentstate/engine"
)

// bridge owns the open handles of one wasm instance.
type bridge struct {
	mu      sync.Mutex
	next    int
	handles map[int]*handle
}

// handle is one open database and its live list cursors.
type handle struct {
	db *engine.DB

	mu      sync.Mutex
	cursors map[int]*cursor
	nextCur int
}

type cursor struct {
	next func() (engine.Tuple, error, bool)
	stop func()
}

func newBridge() *bridge { return &bridge{handles: map[int]*handle{}} }

// api returns the object handed to JavaScript. Every method returns a
// Promise of {json, bufs}: a JSON text and the byte arrays it refers to by
// index ({"t": type, "b": index} for a typed blob).
//
//	open(json, bufs)          -> {"h": handle}
//	call(h, op, json, bufs)   -> op's result
//	close(h)
func (b *bridge) api() js.Value {
	obj := js.Global().Get("Object").New()
	obj.Set("open", guarded(func(args []js.Value) any {
		req, bufs := argJSON(args, 0), argBufs(args, 1)
		return promise(func() (any, *out, error) { return b.open(req, bufs) })
	}))
	obj.Set("call", guarded(func(args []js.Value) any {
		if len(args) < 2 || args[0].Type() != js.TypeNumber || args[1].Type() != js.TypeString {
			return rejected(errArg("call(h, op, json, bufs)"))
		}
		h, op, req, bufs := args[0].Int(), args[1].String(), argJSON(args, 2), argBufs(args, 3)
		return promise(func() (any, *out, error) { return b.call(h, op, req, bufs) })
	}))
	obj.Set("close", guarded(func(args []js.Value) any {
		h := -1
		if len(args) > 0 && args[0].Type() == js.TypeNumber {
			h = args[0].Int()
		}
		return promise(func() (any, *out, error) { return nil, nil, b.close(h) })
	}))
	obj.Set("version", "1")
	return obj
}

// guarded turns a panic while reading a call's arguments (a value of the
// wrong type from JavaScript) into a rejected Promise: a panic that escapes
// a js.Func stops the whole Go program, and with it every open database.
func guarded(fn func(args []js.Value) any) js.Func {
	return js.FuncOf(func(_ js.Value, args []js.Value) (res any) {
		defer func() {
			if r := recover(); r != nil {
				res = rejected(errArg("%v", r))
			}
		}()
		return fn(args)
	})
}

func rejected(err error) js.Value {
	return js.Global().Get("Promise").Call("reject", jsError(err))
}

func argJSON(args []js.Value, i int) []byte {
	if len(args) <= i || args[i].Type() != js.TypeString {
		return nil
	}
	return []byte(args[i].String())
}

// argBufs copies the byte arrays of a call out of JavaScript before the
// call's goroutine starts, so the caller may reuse them at once.
func argBufs(args []js.Value, i int) [][]byte {
	if len(args) <= i || args[i].IsUndefined() || args[i].IsNull() {
		return nil
	}
	arr := args[i]
	n := arr.Length()
	out := make([][]byte, n)
	for j := range n {
		u8 := arr.Index(j)
		out[j] = make([]byte, u8.Length())
		js.CopyBytesToGo(out[j], u8)
	}
	return out
}

// promise runs fn in a goroutine and settles a Promise with its result: the
// JSON of the first value and the buffers collected in out.
func promise(fn func() (any, *out, error)) js.Value {
	var resolve, reject js.Value
	executor := js.FuncOf(func(_ js.Value, args []js.Value) any {
		resolve, reject = args[0], args[1]
		return nil
	})
	p := js.Global().Get("Promise").New(executor)
	executor.Release()
	go func() {
		var v any
		var o *out
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("agentstate: internal error: %v\n%s", r, debug.Stack())
				}
			}()
			v, o, err = fn()
		}()
		if err != nil {
			reject.Invoke(jsError(err))
			return
		}
		res, err := o.result(v)
		if err != nil {
			reject.Invoke(jsError(err))
			return
		}
		resolve.Invoke(res)
	}()
	return p
}

// Error codes JavaScript can match on (AgentStateError.code).
var errorCodes = []struct {
	err  error
	code string
}{
	{engine.ErrNotFound, "NOT_FOUND"},
	{engine.ErrConflict, "CONFLICT"},
	{engine.ErrInvalidArgument, "INVALID_ARGUMENT"},
	{engine.ErrInvalidOption, "INVALID_OPTION"},
	{engine.ErrClosed, "CLOSED"},
	{engine.ErrReadOnly, "READ_ONLY"},
	{engine.ErrModeMismatch, "MODE_MISMATCH"},
	{engine.ErrSchemaTooNew, "SCHEMA_TOO_NEW"},
	{engine.ErrNotAgentstate, "NOT_AGENTSTATE"},
	{engine.ErrCorrupt, "CORRUPT"},
	{context.Canceled, "CANCELED"},
	{context.DeadlineExceeded, "TIMEOUT"},
}

func jsError(err error) js.Value {
	e := js.Global().Get("Error").New(err.Error())
	code := "INTERNAL"
	for _, c := range errorCodes {
		if errors.Is(err, c.err) {
			code = c.code
			break
		}
	}
	e.Set("code", code)
	return e
}

func errArg(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{engine.ErrInvalidArgument}, args...)...)
}

// out collects the byte arrays of a result.
type out struct{ bufs [][]byte }

func (o *out) add(b []byte) int {
	o.bufs = append(o.bufs, b)
	return len(o.bufs) - 1
}

func (o *out) result(v any) (js.Value, error) {
	text, err := json.Marshal(v)
	if err != nil {
		return js.Undefined(), fmt.Errorf("agentstate: encode result: %w", err)
	}
	res := js.Global().Get("Object").New()
	res.Set("json", string(text))
	arr := js.Global().Get("Array").New()
	if o != nil {
		u8 := js.Global().Get("Uint8Array")
		for _, b := range o.bufs {
			a := u8.New(len(b))
			js.CopyBytesToJS(a, b)
			arr.Call("push", a)
		}
	}
	res.Set("bufs", arr)
	return res, nil
}

// openRequest is what open accepts. Exactly one source: Path (a file, on
// the SQLite VFS named VFS, which the JavaScript side registered over a
// file host), Image (bytes of a database file, opened in memory), or
// neither (a fresh in-memory database).
type openRequest struct {
	Path       string  `json:"path"`
	VFS        string  `json:"vfs"`
	Disk       bool    `json:"disk"` // the file is on a disk the native CLI can reach
	Name       string  `json:"name"` // the path as the caller wrote it, for messages`
	Image      *int    `json:"image"`
	Mode       string  `json:"mode"`
	Every      int     `json:"every"`
	CacheBytes *int64  `json:"cacheBytes"`
	ReadConns  int     `json:"readConns"`
	ReadOnly   bool    `json:"readOnly"`
	BusyMs     *int64  `json:"busyTimeoutMs"`
	StoreTTL   float64 `json:"storeDefaultTtlMs"`
	RefreshTTL *bool   `json:"storeRefreshOnRead"`
	SweepMs    float64 `json:"storeSweepIntervalMs"`
}

func (b *bridge) open(reqJSON []byte, bufs [][]byte) (any, *out, error) {
	var req openRequest
	if err := decodeJSON(reqJSON, &req); err != nil {
		return nil, nil, err
	}
	o := engine.DefaultOptions()
	// One reader is enough: a wasm instance runs one goroutine at a time,
	// and every connection holds its own SQLite heap.
	o.ReadConns = 1
	if req.ReadConns > 0 {
		o.ReadConns = req.ReadConns
	}
	// Without a mode an existing file opens in the mode it records and a
	// new one in full mode: a file written in delta mode must not need its
	// mode repeated by every program that opens it.
	o.Mode = engine.ModeAuto
	if req.Mode != "" {
		o.Mode = engine.Mode(req.Mode)
	}
	if req.Every != 0 {
		o.SnapshotEvery = req.Every
	}
	if req.CacheBytes != nil {
		o.HistoryCacheBytes = *req.CacheBytes
	}
	if req.BusyMs != nil {
		o.BusyTimeout = time.Duration(*req.BusyMs) * time.Millisecond
	}
	o.ReadOnly = req.ReadOnly
	o.StoreDefaultTTL = time.Duration(req.StoreTTL * float64(time.Millisecond))
	if req.RefreshTTL != nil {
		o.StoreRefreshOnRead = *req.RefreshTTL
	}
	o.StoreSweepInterval = time.Duration(req.SweepMs * float64(time.Millisecond))

	ctx := context.Background()
	h := &handle{cursors: map[int]*cursor{}}
	var err error
	switch {
	case req.Path != "" && req.Image != nil:
		return nil, nil, errArg("open takes a path or an image, not both")
	case req.Path != "":
		h.db, err = engine.Open(ctx, fileURI(req.Path, req.VFS), &o)
	case req.Image != nil:
		if *req.Image < 0 || *req.Image >= len(bufs) {
			return nil, nil, errArg("image buffer %d missing", *req.Image)
		}
		h.db, err = openImage(ctx, bufs[*req.Image], &o)
	default:
		h.db, err = engine.Open(ctx, engine.Memory, &o)
	}
	if err != nil {
		return nil, nil, openErrorForJS(err, req, req.Disk)
	}
	b.mu.Lock()
	b.next++
	id := b.next
	b.handles[id] = h
	b.mu.Unlock()
	// The mode the handle resolved to (the file's, with mode "auto" or no
	// mode), so that a second open of the same file can be checked.
	ro := h.db.Options()
	return map[string]any{"h": id, "mode": ro.Mode, "every": ro.SnapshotEvery}, nil, nil
}

// jsAdvice replaces an engine error's text, whose advice names Go options
// and shows the VFS URI, with one in the package's terms and the caller's
// path; the error still matches its sentinel.
type jsAdvice struct {
	msg string
	err error
}

func (e *jsAdvice) Error() string { return e.msg }
func (e *jsAdvice) Unwrap() error { return e.err }

func openErrorForJS(err error, req openRequest, disk bool) error {
	name := req.Name
	if name == "" {
		name = req.Path
	}
	if name == "" {
		name = "the database"
	}
	var mm *engine.ModeMismatchError
	switch {
	case errors.As(err, &mm) && mm.Op == "open":
		msg := fmt.Sprintf(`agentstate: channel mode mismatch: %s was written in %s, not %s; open it with mode: "auto" (the mode the file records) or %s`,
			name, jsMode(mm.Mode, mm.Every), jsMode(mm.WantMode, mm.WantEvery), jsModeOptions(mm.Mode, mm.Every))
		if disk && !mm.Race {
			cmd := "agentstate convert " + shellQuote(req.Path) + " --mode " + string(mm.WantMode)
			if mm.WantMode == engine.ModeDelta {
				cmd += fmt.Sprintf(" --every %d", mm.WantEvery)
			}
			msg += ", or convert the file first with the agentstate CLI (not in this package: go install ./cmd/agentstate in a clone of the repository): " + cmd
		}
		return &jsAdvice{msg, err}
	case errors.Is(err, engine.ErrReadOnly) && req.ReadOnly:
		return &jsAdvice{fmt.Sprintf("agentstate: %s cannot be opened with readOnly: true: it was written by an older agentstate or is empty, "+
			"and a read-only open does not upgrade or create its schema; open it once without readOnly", name), err}
	}
	return err
}

func jsMode(mode engine.Mode, every int) string {
	if mode == engine.ModeDelta {
		return fmt.Sprintf("delta mode with K=%d", every)
	}
	return string(mode) + " mode"
}

func jsModeOptions(mode engine.Mode, every int) string {
	if mode == engine.ModeDelta {
		return fmt.Sprintf(`mode: "delta", every: %d`, every)
	}
	return fmt.Sprintf(`mode: %q`, mode)
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./:@%+=,-", r)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

func (b *bridge) get(id int) (*handle, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.handles[id]
	if h == nil {
		return nil, fmt.Errorf("%w (handle %d)", engine.ErrClosed, id)
	}
	return h, nil
}

func (b *bridge) close(id int) error {
	b.mu.Lock()
	h := b.handles[id]
	delete(b.handles, id)
	b.mu.Unlock()
	if h == nil {
		return nil
	}
	h.mu.Lock()
	for _, c := range h.cursors {
		c.stop()
	}
	h.cursors = nil
	h.mu.Unlock()
	return h.db.Close()
}

// addCursor keeps a pulled iterator for list.next calls.
func (h *handle) addCursor(seq iter.Seq2[engine.Tuple, error]) int {
	next, stop := iter.Pull2(seq)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextCur++
	h.cursors[h.nextCur] = &cursor{next: next, stop: stop}
	return h.nextCur
}

func (h *handle) cursor(id int) (*cursor, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.cursors[id]
	return c, ok
}

func (h *handle) dropCursor(id int) {
	h.mu.Lock()
	c, ok := h.cursors[id]
	delete(h.cursors, id)
	h.mu.Unlock()
	if ok {
		c.stop()
	}
}
