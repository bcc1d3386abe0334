//go:build js || (wasip1 && hostsqlite)

// Package hostsqlite is the engine's driver for SQLite provided by the
// program's host, for WebAssembly builds that link no SQLite of their own:
// under GOOS=js the official SQLite WebAssembly build, driven through the
// protocol object of the npm package's src/sqlite/host.js (host_js.go);
// under GOOS=wasip1 with the hostsqlite tag, the same protocol as imported
// functions of module "agentstate_sqlite", which the Python package
// implements over the host's SQLite (host_wasip1.go).
//
// Every call is synchronous and one crossing: a statement run binds its
// arguments, steps to the end (or until the result buffer is full) and
// writes every row into a buffer in Go memory, which the host reads and
// writes directly (Go's heap does not move). The statements of Queue wait
// and go with the transaction's next statement in one call (runBatch:
// entries {stmt i32, argLen u32, arguments}, the last one's result as a
// run's; the first statement that fails stops the batch and is reported
// by its index). The protocol is written out at the top of
// wasm/npm/src/sqlite/host.js.
//
// One host thread cannot wait for a lock that another connection of the
// same thread holds, so the host sets no busy handler: a statement that
// finds the database busy fails at once, and the driver retries it after
// sleeping (which yields to the JavaScript event loop, or sleeps the WASI
// host's thread) until the busy timeout.
package hostsqlite

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/agentstate/agentstate/engine/internal/driver"
)

// Open flags (sqlite3.h).
const (
	openReadOnly  = 0x01
	openReadWrite = 0x02
	openCreate    = 0x04
	openURI       = 0x40
)

// Run flags (host.js).
const (
	runFirstRow = 1
	runDiscard  = 2
)

// header is the size of a result's header (host.js HEADER).
const header = 32

// Options say how to open one connection.
type Options struct {
	ReadOnly    bool
	Create      bool // create the file if it is missing (ignored when ReadOnly)
	BusyTimeout time.Duration
	Funcs       []driver.Func
	// VFS names the SQLite VFS: "" for the host's default, "memdb" for
	// memory, or one the host registered.
	VFS string
}

// Conn is one connection with its cache of prepared statements.
type Conn struct {
	id    int
	stmts map[string]*stmt
	free  [][]byte // buffers not in use by a running Query
	busy  time.Duration
	ctx   context.Context

	autocommit bool
	changes    int64
	closed     bool

	// The statements of Queue not yet sent (flush): their entries, and
	// the batch as the host reads it.
	queued []queued
	batch  []byte
}

// queued is one statement of the batch, at offset off of Conn.batch.
type queued struct {
	st  *stmt
	off int
}

var _ driver.Conn = (*Conn)(nil)

type stmt struct {
	id       int
	ncols    int
	readonly bool
	commit   bool
}

const (
	bufSize    = 16 << 10
	maxKeptBuf = 1 << 20 // larger buffers are left to the collector
)

func (c *Conn) getBuf(n int) []byte {
	for i := len(c.free) - 1; i >= 0; i-- {
		if b := c.free[i]; cap(b) >= n {
			c.free = append(c.free[:i], c.free[i+1:]...)
			return b[:cap(b)]
		}
	}
	return make([]byte, max(n, bufSize))
}

func (c *Conn) putBuf(b []byte) {
	if cap(b) <= maxKeptBuf && len(c.free) < 4 {
		c.free = append(c.free, b)
	}
}

// Open opens one connection to name: a path, or a "file:" URI.
func Open(name string, o Options) (*Conn, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	flags := openReadWrite | openURI
	if o.ReadOnly {
		flags = openReadOnly | openURI
	} else if o.Create {
		flags |= openCreate
	}
	c := &Conn{stmts: map[string]*stmt{}, busy: o.BusyTimeout, ctx: context.Background(), autocommit: true}
	buf := c.getBuf(bufSize)
	defer c.putBuf(buf)
	r := hostOpen(name, flags, o.VFS, buf)
	if r < 0 {
		return nil, classify(decodeError(buf))
	}
	c.id = r
	for _, f := range o.Funcs {
		if err := c.createFunction(f, buf); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// Close finalizes the statements and closes the connection.
func (c *Conn) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	c.discard()
	c.stmts = nil
	hostClose(c.id)
	return nil
}

// prepare returns the cached statement for q.
func (c *Conn) prepare(q string) (*stmt, error) {
	if st, ok := c.stmts[q]; ok {
		return st, nil
	}
	buf := c.getBuf(len(q) + 64)
	defer c.putBuf(buf)
	st, tail, err := c.prepareText(q, buf)
	if err != nil {
		if !errors.Is(err, errSQLiteError) || errors.Is(err, driver.ErrCorrupt) {
			return nil, err
		}
		return nil, &driver.Error{Kind: driver.ErrSchema, Err: err}
	}
	if st == nil {
		return nil, fmt.Errorf("agentstate: internal: no statement in %q", q)
	}
	if strings.TrimSpace(q[tail:]) != "" {
		hostFinalize(st.id)
		return nil, fmt.Errorf("agentstate: internal: more than one statement in %q", q)
	}
	st.commit = strings.EqualFold(strings.TrimSpace(q), "COMMIT")
	c.stmts[q] = st
	return st, nil
}

// prepareText prepares the first statement of q; tail is how many bytes
// of q it took. A nil statement without error: q held only comments.
//
// Preparing reads the schema when the connection has not read it yet (its
// first statement, or after another process changed it), which takes a
// read lock: another process may hold the file then (a checkpoint on its
// last close, a WAL recovery). With no busy handler in the host, that
// fails at once, so it is retried like a busy statement (run), up to the
// busy timeout; preparing holds nothing, so it may always run again.
func (c *Conn) prepareText(q string, buf []byte) (*stmt, int, error) {
	if len(buf) < len(q) {
		buf = make([]byte, len(q))
	}
	var start time.Time
	wait := time.Millisecond
	var r int
	for {
		if err := c.done(); err != nil {
			return nil, 0, interrupted(err)
		}
		copy(buf, q)
		r = hostPrepare(c.id, buf, len(q))
		if r >= 0 {
			break
		}
		e := decodeError(buf)
		if e.code&0xff != codeBusy && e.code&0xff != codeLocked {
			return nil, 0, classify(e)
		}
		if start.IsZero() {
			start = time.Now()
		}
		if time.Since(start) >= c.busy {
			return nil, 0, classify(e)
		}
		select {
		case <-time.After(min(wait, c.busy-time.Since(start))):
		case <-c.ctx.Done():
			return nil, 0, interrupted(c.ctx.Err())
		}
		wait = min(wait*2, 50*time.Millisecond)
	}
	le := binary.LittleEndian
	tail := int(int32(le.Uint32(buf[4:])))
	if r == 1 {
		return nil, tail, nil
	}
	return &stmt{
		id:       int(int32(le.Uint32(buf))),
		ncols:    int(int32(le.Uint32(buf[8:]))),
		readonly: le.Uint32(buf[16:]) != 0,
	}, tail, nil
}

// Value tags (host.js).
const (
	tagNull = iota
	tagInt
	tagFloat
	tagText
	tagBlob
)

// encodeArgs writes args at the start of buf (grown if needed).
//
// It is kept small, with the copy of each value in appendArg: V8 charges a
// WebAssembly function's tier-up budget by the size of the code each loop
// iteration spans, and the inlined appends of one loop made this function
// large enough to be recompiled by the optimising tier at every start-up.
func encodeArgs(buf []byte, args []any) ([]byte, int, error) {
	b := buf[:0]
	for _, a := range args {
		var ok bool
		if b, ok = appendArg(b, a); !ok {
			return buf, 0, fmt.Errorf("agentstate: internal: cannot bind %T", a)
		}
	}
	return b[:cap(b)], len(b), nil
}

// appendArg appends a's tag and value; ok is false for a type the host
// cannot bind.
//
//go:noinline
func appendArg(b []byte, a any) (_ []byte, ok bool) {
	switch v := a.(type) {
	case nil:
		return append(b, tagNull), true
	case string:
		return appendBytes(b, tagText, v), true
	case []byte:
		if v == nil {
			return append(b, tagNull), true
		}
		return appendBytes(b, tagBlob, v), true
	case int:
		return appendWord(b, tagInt, uint64(v)), true
	case int64:
		return appendWord(b, tagInt, uint64(v)), true
	case float64:
		return appendWord(b, tagFloat, math.Float64bits(v)), true
	case bool:
		if v {
			return appendWord(b, tagInt, 1), true
		}
		return appendWord(b, tagInt, 0), true
	case *string:
		if v == nil {
			return append(b, tagNull), true
		}
		return appendBytes(b, tagText, *v), true
	}
	return b, false
}

//go:noinline
func appendWord(b []byte, tag byte, v uint64) []byte {
	return binary.LittleEndian.AppendUint64(append(b, tag), v)
}

//go:noinline
func appendBytes[T string | []byte](b []byte, tag byte, v T) []byte {
	return append(binary.LittleEndian.AppendUint32(append(b, tag), uint32(len(v))), v...)
}

// done is the context's error, or DeadlineExceeded once its deadline has
// passed: on one thread the context's own timer only fires when Go yields
// to the event loop, which a run of statements may not do.
func (c *Conn) done() error {
	if err := c.ctx.Err(); err != nil {
		return err
	}
	// Wall clocks on both sides (Round(0) drops the monotonic reading):
	// the host compares its deadline with Date.now().
	if d, ok := c.ctx.Deadline(); ok && !time.Now().Round(0).Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// deadline is the context's deadline as the host's Date.now() reads it,
// rounded up, so that a statement the host interrupts finds done set.
func (c *Conn) deadline() float64 {
	if d, ok := c.ctx.Deadline(); ok {
		return math.Ceil(float64(d.UnixNano()) / 1e6)
	}
	return 0
}

// run runs st with args into buf and returns the result (header and
// rows) and the buffer, which may have grown. It retries a busy statement
// that may be retried (see the package comment).
func (c *Conn) run(st *stmt, args []any, buf []byte, flags int) ([]byte, []byte, error) {
	buf, argLen, err := encodeArgs(buf, args)
	if err != nil {
		return nil, buf, err
	}
	return c.runEncoded(st, buf, argLen, flags)
}

// runEncoded is run with the arguments already encoded at buf[:argLen].
func (c *Conn) runEncoded(st *stmt, buf []byte, argLen, flags int) ([]byte, []byte, error) {
	var args0 []byte // a copy of the arguments, for a retry after a busy
	var start time.Time
	wait := time.Millisecond
	for {
		if err := c.done(); err != nil {
			return nil, buf, interrupted(err)
		}
		r := hostRun(st.id, buf, argLen, flags, c.deadline())
		if r <= -3 {
			// The first row needs a larger buffer; it stays pending.
			nb := make([]byte, -r-2)
			buf = nb
			r = hostNext(st.id, buf, c.deadline())
		}
		if r >= 0 {
			res := buf[:r]
			c.autocommit = res[1] != 0
			c.changes = int64(binary.LittleEndian.Uint64(res[16:]))
			return res, buf, nil
		}
		e := decodeError(buf)
		c.autocommit = hostAutocommit(c.id) != 0
		if e.code&0xff == codeInterrupt {
			return nil, buf, c.interruptErr(e)
		}
		if e.code != codeBusy && e.code != codeLocked {
			return nil, buf, classify(e)
		}
		// Only a statement that holds nothing of a transaction may run
		// again: one in autocommit mode, a read, or COMMIT.
		if !(c.autocommit || st.readonly || st.commit) {
			return nil, buf, classify(e)
		}
		if start.IsZero() {
			start = time.Now()
			args0 = append([]byte(nil), buf[:argLen]...)
		}
		if time.Since(start) >= c.busy {
			return nil, buf, classify(e)
		}
		select {
		case <-time.After(min(wait, c.busy-time.Since(start))):
		case <-c.ctx.Done():
			return nil, buf, interrupted(c.ctx.Err())
		}
		wait = min(wait*2, 50*time.Millisecond)
		copy(buf, args0)
	}
}

// more continues a result that said more rows remain.
func (c *Conn) more(st *stmt, buf []byte) ([]byte, []byte, error) {
	if err := c.done(); err != nil {
		hostReset(st.id)
		return nil, buf, interrupted(err)
	}
	r := hostNext(st.id, buf, c.deadline())
	if r <= -3 {
		buf = make([]byte, -r-2)
		r = hostNext(st.id, buf, c.deadline())
	}
	if r < 0 {
		e := decodeError(buf)
		c.autocommit = hostAutocommit(c.id) != 0
		if e.code&0xff == codeInterrupt {
			return nil, buf, c.interruptErr(e)
		}
		return nil, buf, classify(e)
	}
	res := buf[:r]
	c.autocommit = res[1] != 0
	return res, buf, nil
}

// Exec implements driver.Conn: after queued statements, it goes with
// them as the batch's last.
func (c *Conn) Exec(q string, args ...any) (int64, error) {
	st, err := c.prepare(q)
	if err != nil {
		return 0, err
	}
	if len(c.queued) > 0 {
		if err := c.enqueue(st, args); err != nil {
			c.discard()
			return 0, err
		}
		if err := c.flush(); err != nil {
			return 0, err
		}
		return c.changes, nil
	}
	buf := c.getBuf(bufSize)
	_, buf, err = c.run(st, args, buf, runDiscard)
	c.putBuf(buf)
	if err != nil {
		return 0, err
	}
	return c.changes, nil
}

// Queue implements driver.Conn: inside a transaction the statement waits,
// its arguments encoded, for the next statement (Exec, Query and Commit
// join the batch as its last, ExecScript, Serialize and Deserialize send it
// first), and the batch is one call into the host (runBatch), which stops
// at the first statement that fails; that statement's error is the error
// of the call that sent the batch. Outside a transaction the statement
// runs at once.
func (c *Conn) Queue(q string, args ...any) error {
	if c.autocommit {
		_, err := c.Exec(q, args...)
		return err
	}
	st, err := c.prepare(q)
	if err != nil {
		return err
	}
	if err := c.enqueue(st, args); err != nil {
		return err
	}
	if len(c.batch) >= maxBatch {
		return c.flush()
	}
	return nil
}

// maxBatch is the size of queued arguments past which Queue sends the
// batch at once, so that a transaction of many large values does not hold
// them all in one buffer.
const maxBatch = 1 << 20

// enqueue appends st and its encoded arguments to the batch: {stmt i32,
// argLen u32, arguments}.
func (c *Conn) enqueue(st *stmt, args []any) error {
	le := binary.LittleEndian
	start := len(c.batch)
	b := le.AppendUint32(le.AppendUint32(c.batch, uint32(st.id)), 0)
	for _, a := range args {
		var ok bool
		if b, ok = appendArg(b, a); !ok {
			c.batch = b[:start]
			return fmt.Errorf("agentstate: internal: cannot bind %T", a)
		}
	}
	le.PutUint32(b[start+4:], uint32(len(b)-start-8))
	c.batch = b
	c.queued = append(c.queued, queued{st: st, off: start})
	return nil
}

// discard drops the batch unsent (Rollback, Close, an argument that cannot
// be bound).
func (c *Conn) discard() {
	c.queued = c.queued[:0]
	if cap(c.batch) > maxKeptBuf+maxBatch {
		c.batch = nil
	}
	c.batch = c.batch[:0]
}

// flush sends the batch in one call.
func (c *Conn) flush() error {
	if len(c.queued) == 0 {
		return nil
	}
	out := c.getBuf(bufSize)
	_, out, err := c.sendBatch(out, runDiscard)
	c.putBuf(out)
	return err
}

// sendBatch runs the batch in one call, its last statement with flags, and
// returns that statement's result (as run does) and out, which may have
// grown. When a statement fails busy and may run again (see run: COMMIT,
// a read, or the transaction is gone), it and the statements after it run
// one by one, with run's retries.
func (c *Conn) sendBatch(out []byte, flags int) ([]byte, []byte, error) {
	defer c.discard()
	if err := c.done(); err != nil {
		return nil, out, interrupted(err)
	}
	le := binary.LittleEndian
	last := c.queued[len(c.queued)-1].st
	r := hostRunBatch(c.batch, out, flags, c.deadline())
	if r == -1-len(c.queued) {
		// The last statement's first row needs a larger buffer; it stays
		// pending.
		out = make([]byte, le.Uint32(out))
		r = hostNext(last.id, out, c.deadline())
		if r < 0 {
			r = -1 - (len(c.queued) - 1)
		}
	}
	if r >= 0 {
		res := out[:r]
		c.autocommit = res[1] != 0
		c.changes = int64(le.Uint64(res[16:]))
		return res, out, nil
	}
	i := -r - 1
	if i >= len(c.queued) {
		return nil, out, fmt.Errorf("agentstate: internal: the host failed statement %d of a batch of %d", i, len(c.queued))
	}
	e := decodeError(out)
	c.autocommit = hostAutocommit(c.id) != 0
	if e.code&0xff == codeInterrupt {
		return nil, out, c.interruptErr(e)
	}
	st := c.queued[i].st
	if (e.code != codeBusy && e.code != codeLocked) || !(c.autocommit || st.readonly || st.commit) {
		return nil, out, classify(e)
	}
	var res []byte
	for j, q := range c.queued[i:] {
		n := int(le.Uint32(c.batch[q.off+4:]))
		if cap(out) < n {
			out = make([]byte, max(n, bufSize))
		}
		out = out[:cap(out)]
		copy(out, c.batch[q.off+8:q.off+8+n])
		f := runDiscard
		if i+j == len(c.queued)-1 {
			f = flags
		}
		var err error
		if res, out, err = c.runEncoded(q.st, out, n, f); err != nil {
			return nil, out, err
		}
	}
	return res, out, nil
}

// Query implements driver.Conn.
func (c *Conn) Query(q string, args []any, fn func(driver.Row) error) error {
	st, err := c.prepare(q)
	if err != nil {
		return err
	}
	buf := c.getBuf(bufSize)
	defer func() { c.putBuf(buf) }()
	var res []byte
	if len(c.queued) > 0 {
		// The batch goes with the query, which comes last.
		if err := c.enqueue(st, args); err != nil {
			c.discard()
			return err
		}
		res, buf, err = c.sendBatch(buf, 0)
	} else {
		res, buf, err = c.run(st, args, buf, 0)
	}
	if err != nil {
		return err
	}
	r := &row{}
	for {
		more := res[0] == 1
		nrows := int(binary.LittleEndian.Uint32(res[4:]))
		r.reset(res[header:], int(binary.LittleEndian.Uint32(res[8:])))
		for range nrows {
			if err := r.scan(); err != nil {
				if more {
					hostReset(st.id)
				}
				return err
			}
			if err := fn(r); err != nil {
				if more {
					hostReset(st.id)
				}
				return err
			}
		}
		if !more {
			return nil
		}
		if res, buf, err = c.more(st, buf); err != nil {
			return err
		}
	}
}

// ExecScript implements driver.Conn: statements are split by SQLite's own
// parser. A statement SQLite refuses to prepare (ALTER TABLE ... ADD COLUMN
// of a column that exists) is shown to before up to its semicolon.
func (c *Conn) ExecScript(script string, before func(stmt string) (skip bool, err error)) error {
	if err := c.flush(); err != nil {
		return err
	}
	rest := script
	buf := c.getBuf(len(script) + 64)
	defer func() { c.putBuf(buf) }()
	for strings.TrimSpace(rest) != "" {
		st, tail, err := c.prepareText(rest, buf)
		text := rest[:tail]
		if err != nil {
			if end := strings.IndexByte(rest, ';'); end >= 0 {
				text = rest[:end+1]
			} else {
				text = rest
			}
		}
		if st == nil && err == nil {
			return nil // only comments and whitespace were left
		}
		if before != nil {
			skip, berr := before(text)
			if berr == nil && skip {
				if st != nil {
					hostFinalize(st.id)
				}
				rest = rest[len(text):]
				continue
			}
			if berr != nil {
				err = berr
			}
		}
		if err != nil {
			if st != nil {
				hostFinalize(st.id)
			}
			return err
		}
		_, buf, err = c.run(st, nil, buf, runDiscard)
		hostFinalize(st.id)
		if err != nil {
			return err
		}
		rest = rest[tail:]
	}
	return nil
}

// Begin implements driver.Conn: a write transaction takes SQLite's write
// lock at once (BEGIN IMMEDIATE), so writers are serial.
func (c *Conn) Begin(kind driver.TxKind) error {
	q := "BEGIN"
	if kind == driver.TxWrite {
		q = "BEGIN IMMEDIATE"
	}
	_, err := c.Exec(q)
	return err
}

// Commit implements driver.Conn.
func (c *Conn) Commit() error { _, err := c.Exec("COMMIT"); return err }

// Rollback implements driver.Conn; it runs even when the context of the
// call that opened the transaction is done.
func (c *Conn) Rollback() error {
	c.discard()
	if c.autocommit {
		return nil
	}
	old := c.ctx
	c.ctx = context.Background()
	defer func() { c.ctx = old }()
	_, err := c.Exec("ROLLBACK")
	return err
}

// InTx implements driver.Conn.
func (c *Conn) InTx() bool { return !c.autocommit }

// Lock implements driver.Conn: SQLite has one writer, so write transactions
// are serial already.
func (c *Conn) Lock(string) error { return nil }

// Interrupt implements driver.Conn: the context's deadline goes with each
// statement (the host interrupts it then); a context cancelled without a
// deadline is seen between statements.
func (c *Conn) Interrupt(ctx context.Context) func() {
	old := c.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	c.ctx = ctx
	return func() { c.ctx = old }
}

// SharedMemory reports whether the main database file's VFS has shared
// memory (xShmMap): without it, SQLite runs WAL only in exclusive locking
// mode.
func (c *Conn) SharedMemory() bool {
	return hostShm(c.id) == 1
}

// Serialize returns a copy of the bytes of schema's database ("main").
func (c *Conn) Serialize(schema string) ([]byte, error) {
	if err := c.flush(); err != nil {
		return nil, err
	}
	buf := c.getBuf(bufSize)
	defer c.putBuf(buf)
	out, ok := hostSerialize(c.id, schema, buf)
	if !ok {
		return nil, classify(decodeError(buf))
	}
	return out, nil
}

// Deserialize replaces schema's database by a private in-memory copy of
// data (an image).
func (c *Conn) Deserialize(schema string, data []byte, readOnly bool) error {
	if err := c.flush(); err != nil {
		return err
	}
	buf := c.getBuf(bufSize)
	defer c.putBuf(buf)
	if hostDeserialize(c.id, schema, data, readOnly, buf) < 0 {
		return classify(decodeError(buf))
	}
	return nil
}
