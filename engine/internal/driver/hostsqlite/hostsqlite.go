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
// writes directly (Go's heap does not move). The protocol is written out
// at the top of wasm/npm/src/sqlite/host.js.
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
	"strconv"
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
func (c *Conn) prepareText(q string, buf []byte) (*stmt, int, error) {
	if err := c.done(); err != nil {
		return nil, 0, interrupted(err)
	}
	if len(buf) < len(q) {
		buf = make([]byte, len(q))
	}
	copy(buf, q)
	r := hostPrepare(c.id, buf, len(q))
	if r < 0 {
		return nil, 0, classify(decodeError(buf))
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
func encodeArgs(buf []byte, args []any) ([]byte, int, error) {
	b := buf[:0]
	le := binary.LittleEndian
	for _, a := range args {
		switch v := a.(type) {
		case nil:
			b = append(b, tagNull)
		case string:
			b = append(le.AppendUint32(append(b, tagText), uint32(len(v))), v...)
		case []byte:
			if v == nil {
				b = append(b, tagNull)
			} else {
				b = append(le.AppendUint32(append(b, tagBlob), uint32(len(v))), v...)
			}
		case int:
			b = le.AppendUint64(append(b, tagInt), uint64(v))
		case int64:
			b = le.AppendUint64(append(b, tagInt), uint64(v))
		case float64:
			b = le.AppendUint64(append(b, tagFloat), math.Float64bits(v))
		case bool:
			i := uint64(0)
			if v {
				i = 1
			}
			b = le.AppendUint64(append(b, tagInt), i)
		case *string:
			if v == nil {
				b = append(b, tagNull)
			} else {
				b = append(le.AppendUint32(append(b, tagText), uint32(len(*v))), *v...)
			}
		default:
			return buf, 0, fmt.Errorf("agentstate: internal: cannot bind %T", a)
		}
	}
	return b[:cap(b)], len(b), nil
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

// Exec implements driver.Conn.
func (c *Conn) Exec(q string, args ...any) (int64, error) {
	st, err := c.prepare(q)
	if err != nil {
		return 0, err
	}
	buf := c.getBuf(bufSize)
	_, buf, err = c.run(st, args, buf, runDiscard)
	c.putBuf(buf)
	if err != nil {
		return 0, err
	}
	return c.changes, nil
}

// Queue implements driver.Conn: a call into the host has no round trip to
// save, so the statement runs at once.
func (c *Conn) Queue(q string, args ...any) error {
	_, err := c.Exec(q, args...)
	return err
}

// Query implements driver.Conn.
func (c *Conn) Query(q string, args []any, fn func(driver.Row) error) error {
	st, err := c.prepare(q)
	if err != nil {
		return err
	}
	buf := c.getBuf(bufSize)
	defer func() { c.putBuf(buf) }()
	res, buf, err := c.run(st, args, buf, 0)
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
	buf := c.getBuf(bufSize)
	defer c.putBuf(buf)
	if hostDeserialize(c.id, schema, data, readOnly, buf) < 0 {
		return classify(decodeError(buf))
	}
	return nil
}

// ---- rows

// row decodes the values of one row of a result in place.
type row struct {
	b    []byte // the rest of the result
	cols []col
}

type col struct {
	tag byte
	v   []byte // the value's bytes (8 for numbers)
}

func (r *row) reset(b []byte, ncols int) {
	r.b = b
	if cap(r.cols) < ncols {
		r.cols = make([]col, ncols)
	}
	r.cols = r.cols[:ncols]
}

var errShortResult = errors.New("agentstate: internal: short result from the SQLite host")

func (r *row) scan() error {
	b := r.b
	for i := range r.cols {
		if len(b) < 1 {
			return errShortResult
		}
		t := b[0]
		b = b[1:]
		switch t {
		case tagInt, tagFloat:
			if len(b) < 8 {
				return errShortResult
			}
			r.cols[i] = col{t, b[:8:8]}
			b = b[8:]
		case tagText, tagBlob:
			if len(b) < 4 {
				return errShortResult
			}
			n := int(binary.LittleEndian.Uint32(b))
			if len(b) < 4+n {
				return errShortResult
			}
			r.cols[i] = col{t, b[4 : 4+n : 4+n]}
			b = b[4+n:]
		default:
			r.cols[i] = col{tagNull, nil}
		}
	}
	r.b = b
	return nil
}

func (r *row) Columns() int        { return len(r.cols) }
func (r *row) Null(i int) bool     { return r.cols[i].tag == tagNull }
func (r *row) Int64(i int) int64   { return r.cols[i].int64() }
func (r *row) Float(i int) float64 { return r.cols[i].float() }
func (r *row) Text(i int) string   { return r.cols[i].text() }
func (r *row) Blob(i int) []byte   { return r.cols[i].blob() }

// Conversions between storage classes follow SQLite's (sqlite3_column_*).
func (c col) int64() int64 {
	switch c.tag {
	case tagInt:
		return int64(binary.LittleEndian.Uint64(c.v))
	case tagFloat:
		return floatToInt(math.Float64frombits(binary.LittleEndian.Uint64(c.v)))
	case tagText, tagBlob:
		return textToInt(c.v)
	}
	return 0
}

func (c col) float() float64 {
	switch c.tag {
	case tagInt:
		return float64(int64(binary.LittleEndian.Uint64(c.v)))
	case tagFloat:
		return math.Float64frombits(binary.LittleEndian.Uint64(c.v))
	case tagText, tagBlob:
		return textToFloat(c.v)
	}
	return 0
}

func (c col) text() string {
	switch c.tag {
	case tagText, tagBlob:
		return string(c.v)
	case tagInt:
		return strconv.FormatInt(int64(binary.LittleEndian.Uint64(c.v)), 10)
	case tagFloat:
		return floatText(math.Float64frombits(binary.LittleEndian.Uint64(c.v)))
	}
	return ""
}

func (c col) blob() []byte {
	switch c.tag {
	case tagText, tagBlob:
		return c.v
	case tagInt, tagFloat:
		return []byte(c.text())
	}
	return nil
}

func floatToInt(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f <= math.MinInt64:
		return math.MinInt64
	case f >= math.MaxInt64:
		return math.MaxInt64
	}
	return int64(f)
}

// textToInt reads the integer prefix of b, as SQLite does for a text read
// as an integer ("12abc" is 12, "abc" is 0).
func textToInt(b []byte) int64 {
	s := strings.TrimLeft(string(b), " \t\n\f\r")
	end := 0
	if end < len(s) && (s[end] == '+' || s[end] == '-') {
		end++
	}
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if v, err := strconv.ParseInt(s[:end], 10, 64); err == nil {
		return v
	}
	if f := textToFloat(b); f != 0 {
		return floatToInt(f)
	}
	return 0
}

func textToFloat(b []byte) float64 {
	s := strings.TrimSpace(string(b))
	for end := len(s); end > 0; end-- {
		if f, err := strconv.ParseFloat(s[:end], 64); err == nil {
			return f
		}
	}
	return 0
}

// floatText renders f as SQLite does: the shortest text that reads back
// as f, with ".0" on whole numbers.
func floatText(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEnN") {
		s += ".0"
	}
	return s
}

// ---- errors

// SQLite's primary result codes the driver tells apart.
const (
	codeError     = 1
	codeNoMem     = 7
	codeReadOnly  = 8
	codeInterrupt = 9
	codeIOErr     = 10
	codeCorrupt   = 11
	codeFull      = 13
	codeBusy      = 5
	codeLocked    = 6
	codeConstr    = 19
	codeNotADB    = 26

	extIOErrData        = codeIOErr | 32<<8
	extConstrPrimaryKey = codeConstr | 6<<8
	extConstrUnique     = codeConstr | 8<<8
)

// Error is an error SQLite reported, with its result codes.
type Error struct {
	Code, Extended int
	msg            string
}

func (e *Error) Error() string {
	s := "sqlite3: " + errstr(e.Code)
	if e.msg != "" && e.msg != errstr(e.Code) {
		s += ": " + e.msg
	}
	return s
}

// Is matches the driver's internal sentinel of a plain SQLITE_ERROR.
func (e *Error) Is(target error) bool { return target == errSQLiteError && e.Code == codeError }

var errSQLiteError = errors.New("sqlite3: SQL logic error")

type sqlError struct {
	code, extended int
	msg            string
}

func decodeError(buf []byte) sqlError {
	le := binary.LittleEndian
	if len(buf) < 16 {
		return sqlError{code: codeError, msg: "agentstate: internal: no room for the host's error"}
	}
	n := int(le.Uint32(buf[12:]))
	if n > len(buf)-16 {
		n = len(buf) - 16
	}
	return sqlError{code: int(int32(le.Uint32(buf))), extended: int(int32(le.Uint32(buf[4:]))), msg: string(buf[16 : 16+n])}
}

// interruptErr is SQLite's INTERRUPT, which the host raises at the
// context's deadline: it carries the context's error too, which the
// context itself may not report yet (its timer fires when Go yields).
func (c *Conn) interruptErr(e sqlError) error {
	err := classify(e)
	if cerr := c.done(); cerr != nil {
		return &driver.Error{Kind: driver.ErrInterrupted, Err: fmt.Errorf("%w: %w", err.(*driver.Error).Err, cerr)}
	}
	return err
}

func interrupted(err error) error {
	return &driver.Error{Kind: driver.ErrInterrupted, Err: fmt.Errorf("sqlite3: interrupted: %w", err)}
}

// classify wraps an SQLite error with the driver's kind of it, as the
// ncruces driver does.
func classify(se sqlError) error {
	err := &Error{Code: se.code & 0xff, Extended: se.extended, msg: se.msg}
	var kind error
	switch {
	case err.Code == codeBusy, err.Code == codeLocked:
		kind = driver.ErrBusy
	case err.Code == codeInterrupt:
		kind = driver.ErrInterrupted
	case err.Extended == extConstrUnique, err.Extended == extConstrPrimaryKey:
		kind = driver.ErrUnique
	case err.Code == codeConstr:
		kind = driver.ErrConstraint
	// IOERR_DATA is a page whose checksum does not match; a damaged
	// schema-format byte in the header is a plain ERROR with this text.
	case err.Code == codeCorrupt, err.Code == codeNotADB, err.Extended == extIOErrData,
		err.Code == codeError && strings.Contains(err.msg, "unsupported file format"):
		kind = driver.ErrCorrupt
	case err.Code == codeFull:
		kind = driver.ErrFull
	case err.Code == codeReadOnly:
		kind = driver.ErrReadOnly
	case err.Code == codeNoMem:
		kind = driver.ErrNoMemory
	default:
		return err
	}
	return &driver.Error{Kind: kind, Err: err}
}

// errstr is sqlite3_errstr of a primary code.
func errstr(code int) string {
	if code >= 0 && code < len(errstrs) && errstrs[code] != "" {
		return errstrs[code]
	}
	return "unknown error"
}

var errstrs = [...]string{
	0:  "not an error",
	1:  "SQL logic error",
	2:  "unknown error",
	3:  "access permission denied",
	4:  "query aborted",
	5:  "database is locked",
	6:  "database table is locked",
	7:  "out of memory",
	8:  "attempt to write a readonly database",
	9:  "interrupted",
	10: "disk I/O error",
	11: "database disk image is malformed",
	12: "unknown operation",
	13: "database or disk is full",
	14: "unable to open database file",
	15: "locking protocol",
	17: "database schema has changed",
	18: "string or blob too big",
	19: "constraint failed",
	20: "datatype mismatch",
	21: "bad parameter or other API misuse",
	23: "authorization denied",
	25: "column index out of range",
	26: "file is not a database",
	27: "notification message",
	28: "warning message",
}
