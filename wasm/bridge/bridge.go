//go:build js || (wasip1 && hostsqlite)

// Package bridge is the engine's call table for WebAssembly hosts: the
// GOOS=js module the npm package loads (wasm/js) and the WASI reactor the
// Python package loads (wasm/reactor) both hand their host the same calls,
// with the same requests (JSON, with typed blobs as references to byte
// arrays sent beside it) and the same results. Only the transport differs:
// Promises and syscall/js there, exported functions and linear memory here.
package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine"
)

// Bridge owns the open handles of one wasm instance.
type Bridge struct {
	mu      sync.Mutex
	next    int
	handles map[int]*handle
}

// handle is one open database and its live list cursors.
type handle struct {
	db      *engine.DB
	timeout time.Duration // each call's deadline (timeoutMs), or 0

	mu      sync.Mutex
	cursors map[int]*cursor
	nextCur int
}

type cursor struct {
	next func() (engine.Tuple, error, bool)
	stop func()
}

// New returns a bridge with no open handles.
func New() *Bridge { return &Bridge{handles: map[int]*handle{}} }

// Error codes the hosts can match on (AgentStateError.code in JavaScript,
// the exception class in Python).
var errorCodes = []struct {
	err  error
	code string
}{
	{engine.ErrOutcomeUnknown, "OUTCOME_UNKNOWN"}, // before what it wraps
	{engine.ErrConnectionLost, "CONNECTION_LOST"},
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
	{engine.ErrFileReplaced, "FILE_REPLACED"},
	{engine.ErrBusy, "BUSY"},
	{engine.ErrDiskFull, "DISK_FULL"},
	{context.Canceled, "CANCELED"},
	{context.DeadlineExceeded, "TIMEOUT"},
}

func errArg(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{engine.ErrInvalidArgument}, args...)...)
}

// Out collects the byte arrays of a result.
type Out struct{ bufs [][]byte }

func (o *Out) add(b []byte) int {
	o.bufs = append(o.bufs, b)
	return len(o.bufs) - 1
}

// Bufs are the byte arrays a result's JSON refers to.
func (o *Out) Bufs() [][]byte {
	if o == nil {
		return nil
	}
	return o.bufs
}

// Encode is a result's JSON text: appendJSON's for the results it knows
// (open's and a turn's), json.Marshal's for the others.
func Encode(v any) ([]byte, error) {
	if text, ok := appendJSON(make([]byte, 0, 256), v); ok {
		return text, nil
	}
	text, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("agentstate: encode result: %w", err)
	}
	return text, nil
}

// openRequest is what open accepts. Exactly one source: Path (a file, on
// the SQLite VFS named VFS, which the JavaScript side registered over a
// file host), Image (bytes of a database file, opened in memory), or
// neither (a fresh in-memory database).
type openRequest struct {
	Path       string  `json:"path"`
	VFS        string  `json:"vfs"`
	Disk       bool    `json:"disk"` // the file is on a disk the native CLI can reach
	Name       string  `json:"name"` // the path as the caller wrote it, for messages
	Image      *int    `json:"image"`
	Mode       string  `json:"mode"`
	Every      int     `json:"every"`
	CacheBytes *int64  `json:"cacheBytes"`
	ReadConns  int     `json:"readConns"`
	WriteConns int     `json:"writeConns"` // a server database's writer sessions
	TimeoutMs  int     `json:"timeoutMs"`  // each call's deadline, open's too (0: none)
	ReadOnly   bool    `json:"readOnly"`
	Shared     bool    `json:"shared"` // engine.Options.SharedFile
	BusyMs     *int64  `json:"busyTimeoutMs"`
	Sync       string  `json:"synchronous"` // engine.Options.Synchronous ("": its default)
	StoreTTL   float64 `json:"storeDefaultTtlMs"`
	RefreshTTL *bool   `json:"storeRefreshOnRead"`
	SweepMs    float64 `json:"storeSweepIntervalMs"`
	AutoRetain *bool   `json:"autoRetain"` // nil: the engine's default (on)
	Host       string  `json:"host"`       // "python": advice in the Python package's terms; else the npm package's
}

// Open opens a handle.
func (b *Bridge) Open(reqJSON []byte, bufs [][]byte) (any, *Out, error) {
	m, err := parseRequest(reqJSON)
	if err != nil {
		return nil, nil, err
	}
	req, err := readOpen(m)
	if err != nil {
		return nil, nil, err
	}
	o := engine.DefaultOptions()
	// One reader is enough: a wasm instance runs one goroutine at a time,
	// and every connection holds its own SQLite heap.
	o.ReadConns = 1
	if req.ReadConns > 0 {
		o.ReadConns = req.ReadConns
	}
	o.WriteConns = req.WriteConns
	// Without a mode an existing file opens in the mode it records and a
	// new one in full mode: a file written in delta mode must not need its
	// mode repeated by every program that opens it.
	o.Mode = channels.ModeAuto
	if req.Mode != "" {
		o.Mode = channels.Mode(req.Mode)
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
	if req.Sync != "" {
		o.Synchronous = req.Sync // Open refuses any other than normal and full
	}
	o.ReadOnly = req.ReadOnly
	o.SharedFile = req.Shared
	o.StoreDefaultTTL = time.Duration(req.StoreTTL * float64(time.Millisecond))
	if req.RefreshTTL != nil {
		o.StoreRefreshOnRead = *req.RefreshTTL
	}
	o.StoreSweepInterval = time.Duration(req.SweepMs * float64(time.Millisecond))
	if req.AutoRetain != nil {
		o.AutoRetain = *req.AutoRetain
	}

	ctx := context.Background()
	h := &handle{cursors: map[int]*cursor{}, timeout: time.Duration(req.TimeoutMs) * time.Millisecond}
	if h.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.timeout)
		defer cancel()
	}
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
	return map[string]any{"h": id, "mode": ro.Mode, "every": ro.SnapshotEvery, "autoRetain": ro.AutoRetain, "shared": ro.SharedFile}, nil, nil
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
		auto := `mode: "auto"`
		if req.Host == "python" {
			auto = `mode="auto"`
		}
		msg := fmt.Sprintf(`agentstate: channel mode mismatch: %s was written in %s, not %s; open it with %s (the mode the file records) or %s`,
			name, jsMode(mm.Mode, mm.Every), jsMode(mm.WantMode, mm.WantEvery), auto, modeOptions(req.Host, mm.Mode, mm.Every))
		if disk && !mm.Race {
			cmd := "agentstate convert " + shellQuote(req.Path) + " --mode " + string(mm.WantMode)
			if mm.WantMode == channels.ModeDelta {
				cmd += fmt.Sprintf(" --every %d", mm.WantEvery)
			}
			msg += ", or convert the file first with the agentstate CLI (not in this package: go install ./cmd/agentstate in a clone of the repository): " + cmd
		}
		return &jsAdvice{msg, err}
	case errors.Is(err, engine.ErrReadOnly) && req.ReadOnly:
		opt, without := "readOnly: true", "readOnly"
		if req.Host == "python" {
			opt, without = "read_only=True", "read_only"
		}
		return &jsAdvice{fmt.Sprintf("agentstate: %s cannot be opened with %s: it was written by an older agentstate or is empty, "+
			"and a read-only open does not upgrade or create its schema; open it once without %s", name, opt, without), err}
	}
	return err
}

func jsMode(mode channels.Mode, every int) string {
	if mode == channels.ModeDelta {
		return fmt.Sprintf("delta mode with K=%d", every)
	}
	return string(mode) + " mode"
}

// modeOptions is how a host's package spells the open options of a mode.
func modeOptions(host string, mode channels.Mode, every int) string {
	if host == "python" {
		if mode == channels.ModeDelta {
			return fmt.Sprintf(`mode="delta", every=%d`, every)
		}
		return fmt.Sprintf(`mode=%q`, mode)
	}
	if mode == channels.ModeDelta {
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

func (b *Bridge) get(id int) (*handle, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.handles[id]
	if h == nil {
		return nil, fmt.Errorf("%w (handle %d)", engine.ErrClosed, id)
	}
	return h, nil
}

// Close closes handle id (a handle already closed is no error).
func (b *Bridge) Close(id int) error {
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

// fileURI names path on the SQLite VFS vfsName (registered by the
// JavaScript side over a file host) as an SQLite URI; without a VFS name,
// the path is for SQLite's default VFS. SQLite decodes %HH escapes in a
// URI's path and parameters; the bytes that would end either are escaped.
func fileURI(path, vfsName string) string {
	if vfsName == "" {
		return path
	}
	p := uriEscape(path, "?#")
	if strings.HasPrefix(p, "//") {
		p = "//" + p // "file://" would make the first part an authority
	}
	return "file:" + p + "?vfs=" + uriEscape(vfsName, "?#&=")
}

func uriEscape(s, special string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' || c < 0x20 || c == 0x7f || strings.IndexByte(special, c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// AddTestHooks adds calls that only the packages' own tests ask for:
// "test.crash" panics on a goroutine of its own, where no recover can
// catch it, as a bug in a background task would, to prove that the host
// survives the engine stopping.
func AddTestHooks() {
	ops["test.crash"] = func(context.Context, *handle, []byte, in) (any, *Out, error) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			panic("agentstate test hook: crash on purpose")
		}()
		<-done
		return nil, nil, nil
	}
}
