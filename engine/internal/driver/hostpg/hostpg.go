//go:build js || (wasip1 && hostsqlite)

// Package hostpg is the engine's PostgreSQL driver for the WebAssembly
// builds: the host runs the statements on its own PostgreSQL client (the
// Python package over psycopg 3, wasm/reactor) and returns rows and
// classified errors, so that the engine's PostgreSQL code (schema,
// migrations, advisory locks, the contract) is the same code as natively.
//
// The host is thin: it opens sessions, prepares and describes statements,
// and runs a batch of them in one round trip (a pipeline), passing values
// as the bytes of PostgreSQL's wire formats. The transaction logic is
// here, as in the native driver (engine/internal/driver/pg): a transaction
// begins lazily, BEGIN and the advisory locks of Lock travel with its first
// statement, statements of Queue with the next one or the COMMIT; write
// transactions run at READ COMMITTED serialised per lock key by
// pg_advisory_xact_lock, reads at REPEATABLE READ READ ONLY.
//
// The protocol (every integer little-endian; a string is u32 length and
// bytes). Imports of module "agentstate_pg" (WASI) or methods of the
// JavaScript host object:
//
//	connect(url, params, buf, cap, deadline) -> id | -1 (error in buf)
//	    params: key NUL value NUL ... (session settings); on success buf
//	    holds the server_encoding as a string
//	exec(id, buf, cap, reqLen, deadline) -> n | -1 (error in buf) | -(2+size)
//	    the request is buf[:reqLen]; the response is buf[:n], or, when it
//	    needs size bytes, taken with take(id, buf, cap)
//	take(id, buf, cap) -> n
//	close(id)
//
// deadline is the call's end in milliseconds since the epoch (0: none):
// a host that reaches it gives the session up (a cancel request for the
// server, the connection closed) and reports kind 2.
//
// A request: u32 count, then per statement u8 op (0 prepare and describe
// name as sql, 1 run prepared name, 2 run sql with the simple protocol,
// alone in its request), u8 result format (0 text, 1 binary), u8 flags (1:
// send the rows), string name, string sql, u16 count of parameters, each
// i32 length (-1: NULL), u8 format (0 text, 1 binary) and the bytes.
//
// A response: u8 transaction status ('I', 'T', 'E'), then per statement
// i64 rows changed (-1: unknown), u32 count and OIDs of the result's
// fields, for op 0 u32 count and OIDs of the parameters, u32 count of rows
// and each row's fields as i32 length (-1: NULL) and bytes.
//
// An error: u8 kind (0 the server refused a statement, the session lives;
// 1 the connection is lost or could not be made, the session is gone; 2
// the deadline passed, the session is gone; 3 the host cannot serve
// PostgreSQL: its message says what to install), u8 transaction status,
// the SQLSTATE's 5 bytes (zero when none), string message.
package hostpg

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/engine/internal/driver/pgwire"
)

// Error kinds of the protocol.
const (
	kindServer      = 0
	kindLost        = 1
	kindDeadline    = 2
	kindUnavailable = 3
)

// Ops of a request.
const (
	opPrepare = 0
	opRun     = 1
	opSimple  = 2
)

// ErrUnavailable: the host cannot open PostgreSQL sessions (no client
// library installed, or a host without a network).
var ErrUnavailable = errors.New("PostgreSQL is not available in this host")

// Server is one database as a handle uses it (driver.Server).
type Server struct {
	url        string
	w, r, l    []string // session settings of writers, readers, liveness
	searchPath string
	live       *liveness
}

var _ driver.OpenServer = Open

// Open implements driver.OpenServer: it reads url's settings; nothing is
// dialled yet.
func Open(rawURL string, o driver.ServerOptions) (driver.Server, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, errors.New("cannot parse the URL")
	}
	sync := "off"
	if o.SyncFull {
		sync = "on"
	}
	w := []string{"lock_timeout", strconv.FormatInt(max(o.BusyTimeout.Milliseconds(), 1), 10), "synchronous_commit", sync}
	if !u.Query().Has("application_name") {
		w = append(w, "application_name", "agentstate")
	}
	r := append(slices.Clone(w), "default_transaction_read_only", "on")
	if o.ReadOnly {
		w = r
	}
	s := &Server{url: rawURL, w: w, r: r, l: w, searchPath: u.Query().Get("search_path")}
	s.live = &liveness{s: s}
	return s, nil
}

// Dial implements driver.Server.
func (s *Server) Dial(ctx context.Context, write bool) (driver.Conn, error) {
	p := s.r
	if write {
		p = s.w
	}
	return s.dial(ctx, p, "")
}

func (s *Server) dial(ctx context.Context, params []string, setup string) (*Conn, error) {
	c := &Conn{s: s, params: params, setup: setup, id: -1, ctx: context.Background(), locked: map[string]bool{}}
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// SearchPath implements driver.Server.
func (s *Server) SearchPath() string { return s.searchPath }

// Liveness implements driver.Server.
func (s *Server) Liveness() driver.Liveness { return s.live }

// Close implements driver.Server.
func (s *Server) Close() { s.live.close() }

// Conn is one session of the host with its prepared statements.
type Conn struct {
	s      *Server
	params []string
	setup  string
	id     int // the host's session, -1 when there is none
	ctx    context.Context
	buf    []byte
	stmts  map[string]*stmt
	nstmt  int
	status byte // the transaction status the host last reported

	tx      txState
	kind    driver.TxKind
	pending []string // lock keys to take before the next statement
	locked  map[string]bool
	queued  []call // statements to send with the next one
	// commitAfter: the next statement ends its read transaction (QueryLast).
	commitAfter bool
	// ended: QueryLast committed; no statement may follow before Commit.
	ended bool
}

var (
	_ driver.Conn        = (*Conn)(nil)
	_ driver.Breaker     = (*Conn)(nil)
	_ driver.LastQuerier = (*Conn)(nil)
)

type txState uint8

const (
	txNone    txState = iota
	txPending         // Begin was called; BEGIN goes with the first statement
	txOpen
)

type stmt struct {
	name   string
	params []uint32
	fields []uint32
	format byte
}

// call is one statement of a request.
type call struct {
	op     byte
	st     *stmt // op 1
	sql    string
	args   []arg
	fields []uint32
	format byte
	rows   bool
}

type arg struct {
	v      []byte
	null   bool
	binary bool
}

// deadline is ctx's deadline in milliseconds since the epoch, 0 for none.
func deadline(ctx context.Context) float64 {
	if d, ok := ctx.Deadline(); ok {
		return math.Ceil(float64(d.UnixNano()) / 1e6)
	}
	return 0
}

// done is the context's error, or DeadlineExceeded once its deadline has
// passed (the context's timer fires only when Go gets to run).
func done(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Round(0).Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

func (c *Conn) connect(ctx context.Context) error {
	if err := done(ctx); err != nil {
		return &driver.Error{Kind: driver.ErrInterrupted, Err: err}
	}
	c.grow(4096)
	var p []byte
	for _, s := range c.params {
		p = append(append(p, s...), 0)
	}
	id := hostConnect(c.s.url, p, c.buf, deadline(ctx))
	if id < 0 {
		return c.hostErr(c.buf)
	}
	c.id, c.stmts, c.status = id, map[string]*stmt{}, 'I'
	n := binary.LittleEndian.Uint32(c.buf)
	if enc := string(c.buf[4 : 4+n]); enc != "UTF8" {
		c.Close()
		return &driver.Error{Kind: driver.ErrValue, Err: fmt.Errorf("agentstate: the database's encoding is %s; agentstate needs a UTF8 database", enc)}
	}
	if c.setup != "" {
		if _, err := c.roundTrip(ctx, []call{{op: opSimple, sql: c.setup}}, nil); err != nil {
			c.Close()
			return err
		}
	}
	return nil
}

func (c *Conn) grow(n int) {
	if len(c.buf) < n {
		c.buf = make([]byte, max(n, 64<<10))
	}
}

// hostErr decodes an error the host wrote into b. A session the host gave
// up is forgotten: the next statement dials a new one.
func (c *Conn) hostErr(b []byte) error {
	kind, status := b[0], b[1]
	code := strings.TrimRight(string(b[2:7]), "\x00")
	n := binary.LittleEndian.Uint32(b[7:])
	e := &Error{Code: code, Message: string(b[11 : 11+n])}
	if kind == kindLost || kind == kindDeadline {
		c.id = -1
	} else {
		c.status = status
	}
	var k error
	switch kind {
	case kindLost:
		k = driver.ErrConnLost
	case kindDeadline:
		k = driver.ErrInterrupted
	case kindUnavailable:
		return fmt.Errorf("%w: %s", ErrUnavailable, e.Message)
	default:
		k = pgwire.Kind(code)
		if k == nil {
			return e
		}
	}
	return &driver.Error{Kind: k, Err: e}
}

// Error is an error the host reported: the server's SQLSTATE (or "") and
// its message.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string {
	if e.Code != "" {
		return e.Message + " (SQLSTATE " + e.Code + ")"
	}
	return e.Message
}

var le = binary.LittleEndian

func appendStr(b []byte, s string) []byte {
	return append(le.AppendUint32(b, uint32(len(s))), s...)
}

// roundTrip sends calls in one request and decodes their results; each
// call with rows set gets fn called for each of its rows.
func (c *Conn) roundTrip(ctx context.Context, calls []call, fn func(driver.Row) error) ([]result, error) {
	if c.id < 0 {
		return nil, &driver.Error{Kind: driver.ErrConnLost, Err: errors.New("agentstate: the connection to the server was lost")}
	}
	if err := done(ctx); err != nil {
		return nil, &driver.Error{Kind: driver.ErrInterrupted, Err: err}
	}
	req := le.AppendUint32(c.buf[:0], uint32(len(calls)))
	for _, k := range calls {
		name := ""
		if k.st != nil {
			name = k.st.name
		}
		var flags byte
		if k.rows {
			flags = 1
		}
		req = append(req, k.op, k.format, flags)
		req = appendStr(appendStr(req, name), k.sql)
		req = le.AppendUint16(req, uint16(len(k.args)))
		for _, a := range k.args {
			if a.null {
				req = le.AppendUint32(req, math.MaxUint32)
				req = append(req, 0)
				continue
			}
			req = le.AppendUint32(req, uint32(len(a.v)))
			f := byte(0)
			if a.binary {
				f = 1
			}
			req = append(append(req, f), a.v...)
		}
	}
	if cap(req) > len(c.buf) {
		c.buf = req[:cap(req)]
	}
	c.grow(64)
	n := hostExec(c.id, c.buf, len(req), deadline(ctx))
	if n <= -2 {
		c.buf = make([]byte, -n-2)
		n = hostTake(c.id, c.buf)
	}
	if n < 0 {
		return nil, c.hostErr(c.buf)
	}
	resp := c.buf[:n]
	c.status = resp[0]
	return decode(resp[1:], calls, fn)
}

// result is what one statement returned besides its rows.
type result struct {
	changed int64
	fields  []uint32
	params  []uint32
}

var errShort = errors.New("agentstate: internal: short response from the PostgreSQL host")

func decode(b []byte, calls []call, fn func(driver.Row) error) ([]result, error) {
	out := make([]result, len(calls))
	u32 := func() (uint32, bool) {
		if len(b) < 4 {
			return 0, false
		}
		v := le.Uint32(b)
		b = b[4:]
		return v, true
	}
	oids := func() ([]uint32, bool) {
		n, ok := u32()
		if !ok || len(b) < 4*int(n) {
			return nil, false
		}
		o := make([]uint32, n)
		for i := range o {
			o[i], _ = u32()
		}
		return o, true
	}
	var ferr error
	r := &row{}
	for i, k := range calls {
		if len(b) < 8 {
			return nil, errShort
		}
		out[i].changed = int64(le.Uint64(b))
		b = b[8:]
		var ok bool
		if out[i].fields, ok = oids(); !ok {
			return nil, errShort
		}
		if k.op == opPrepare {
			if out[i].params, ok = oids(); !ok {
				return nil, errShort
			}
		}
		nrows, ok := u32()
		if !ok {
			return nil, errShort
		}
		r.fields, r.format = out[i].fields, k.format
		if cap(r.vals) < len(r.fields) {
			r.vals = make([][]byte, len(r.fields))
		}
		r.vals = r.vals[:len(r.fields)]
		for range nrows {
			for j := range r.vals {
				n, ok := u32()
				if !ok {
					return nil, errShort
				}
				if n == math.MaxUint32 {
					r.vals[j] = nil
					continue
				}
				if len(b) < int(n) {
					return nil, errShort
				}
				r.vals[j] = b[:n:n]
				if n == 0 {
					r.vals[j] = []byte{}
				}
				b = b[n:]
			}
			if fn != nil && k.rows && ferr == nil {
				ferr = fn(r)
			}
		}
	}
	return out, ferr
}

// Broken implements driver.Breaker.
func (c *Conn) Broken() bool { return c.id < 0 }

// ensure dials a new session for one the host gave up, between
// transactions; inside one, the transaction is lost.
func (c *Conn) ensure() error {
	if c.id >= 0 {
		return nil
	}
	if c.tx == txOpen {
		return &driver.Error{Kind: driver.ErrConnLost, Err: errors.New("agentstate: the connection to the server was lost inside a transaction")}
	}
	return c.connect(c.ctx)
}

// Close implements driver.Conn.
func (c *Conn) Close() error {
	if c.id >= 0 {
		hostClose(c.id)
		c.id = -1
	}
	return nil
}

// Interrupt implements driver.Conn: the context's deadline goes with each
// call (the host gives the session up then); a context cancelled without
// one is seen between calls.
func (c *Conn) Interrupt(ctx context.Context) func() {
	old := c.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	c.ctx = ctx
	return func() { c.ctx = old }
}

func (c *Conn) prepare(q string) (*stmt, error) {
	if st, ok := c.stmts[q]; ok {
		return st, nil
	}
	c.nstmt++
	st := &stmt{name: "as" + strconv.Itoa(c.nstmt)}
	res, err := c.roundTrip(c.ctx, []call{{op: opPrepare, st: st, sql: q}}, nil)
	if err != nil {
		return nil, err
	}
	st.params, st.fields, st.format = res[0].params, res[0].fields, 1
	for _, f := range st.fields {
		if !pgwire.BinaryResult(f) {
			st.format = 0
		}
	}
	c.stmts[q] = st
	return st, nil
}

func (c *Conn) bind(q string, args []any) (call, error) {
	st, err := c.prepare(q)
	if err != nil {
		return call{}, err
	}
	vals, err := encodeArgs(st.params, args)
	if err != nil {
		return call{}, err
	}
	return call{op: opRun, st: st, args: vals, fields: st.fields, format: st.format}, nil
}

// Exec implements driver.Conn. The empty statement is the dialect's way to
// say "nothing to do here".
func (c *Conn) Exec(q string, args ...any) (int64, error) { return c.run(q, args, nil) }

// Query implements driver.Conn.
func (c *Conn) Query(q string, args []any, fn func(driver.Row) error) error {
	_, err := c.run(q, args, fn)
	return err
}

// QueryLast implements driver.LastQuerier: in a read transaction the
// COMMIT goes in the query's round trip.
func (c *Conn) QueryLast(q string, args []any, fn func(driver.Row) error) error {
	if c.tx == txNone || c.kind != driver.TxRead || strings.TrimSpace(q) == "" {
		return c.Query(q, args, fn)
	}
	c.commitAfter = true
	_, err := c.run(q, args, fn)
	c.commitAfter = false
	if c.id >= 0 && c.status == 'I' {
		c.endTx() // committed (fn's error too leaves nothing to roll back)
		c.ended = true
	}
	return err
}

func (c *Conn) run(q string, args []any, fn func(driver.Row) error) (int64, error) {
	// The first statement of a transaction may find the session ended by
	// the server since its last use: nothing of the transaction ran, so it
	// runs once more on a new session.
	first := c.tx == txPending && len(c.queued) == 0
	locks := slices.Clone(c.pending)
	n, err := c.run1(q, args, fn)
	if err != nil && first && c.id < 0 && done(c.ctx) == nil && errors.Is(err, driver.ErrConnLost) {
		c.tx, c.pending = txPending, locks
		return c.run1(q, args, fn)
	}
	return n, err
}

func (c *Conn) run1(q string, args []any, fn func(driver.Row) error) (int64, error) {
	if c.ended {
		// It would run outside the snapshot the caller thinks it reads.
		return 0, errors.New("agentstate: internal: a statement after the read transaction's last query")
	}
	if strings.TrimSpace(q) == "" {
		return 0, nil
	}
	if err := c.ensure(); err != nil {
		return 0, err
	}
	k, err := c.bind(q, args)
	if err != nil {
		return 0, err
	}
	k.rows = fn != nil
	var commit []call
	if c.commitAfter {
		ck, err := c.bind("COMMIT", nil)
		if err != nil {
			return 0, err
		}
		commit = append(commit, ck)
	}
	calls, err := c.batch()
	if err != nil {
		return 0, err
	}
	calls = append(calls, k)
	last := len(calls) - 1
	calls = append(calls, commit...)
	res, err := c.roundTrip(c.ctx, calls, fn)
	if err != nil {
		return 0, err
	}
	return res[last].changed, nil
}

// batch is what must precede the next statement: BEGIN, the pending
// locks, the queued statements.
func (c *Conn) batch() ([]call, error) {
	var calls []call
	if c.tx == txPending {
		b, err := c.bind(beginSQL(c.kind), nil)
		if err != nil {
			return nil, err
		}
		calls = append(calls, b)
		c.tx = txOpen
	}
	for _, key := range c.pending {
		l, err := c.bind(lockSQL, []any{key})
		if err != nil {
			return nil, err
		}
		calls = append(calls, l)
	}
	c.pending = c.pending[:0]
	calls = append(calls, c.queued...)
	c.queued = c.queued[:0]
	return calls, nil
}

// Queue implements driver.Conn: inside a transaction the statement waits
// for the next one (or the commit) and travels with it.
func (c *Conn) Queue(q string, args ...any) error {
	if c.tx == txNone || strings.TrimSpace(q) == "" {
		_, err := c.run(q, args, nil)
		return err
	}
	if err := c.ensure(); err != nil {
		return err
	}
	k, err := c.bind(q, args)
	if err != nil {
		return err
	}
	c.queued = append(c.queued, k)
	return nil
}

func beginSQL(kind driver.TxKind) string {
	if kind == driver.TxWrite {
		return "BEGIN ISOLATION LEVEL READ COMMITTED"
	}
	return "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
}

// lockSQL takes the advisory lock of a key for the rest of the
// transaction (the native driver's, so that both lock the same number).
const lockSQL = `SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || '/' || $1::text, 0))`

// ExecScript implements driver.Conn: the script is split into statements
// at semicolons outside quotes, comments and dollar-quoted bodies, each
// run with the simple protocol.
func (c *Conn) ExecScript(script string, before func(stmt string) (skip bool, err error)) error {
	if err := c.ensure(); err != nil {
		return err
	}
	for _, s := range pgwire.SplitScript(script) {
		if before != nil {
			skip, err := before(s)
			if err != nil {
				return err
			}
			if skip {
				continue
			}
		}
		if c.tx == txPending {
			s = beginSQL(c.kind) + "; " + s
			c.tx = txOpen
		}
		if len(c.pending) > 0 || len(c.queued) > 0 {
			return errors.New("agentstate: internal: a script cannot follow Lock or Queue")
		}
		if _, err := c.roundTrip(c.ctx, []call{{op: opSimple, sql: s}}, nil); err != nil {
			return err
		}
	}
	return nil
}

// Begin implements driver.Conn: nothing is sent until the first statement.
func (c *Conn) Begin(kind driver.TxKind) error {
	if c.InTx() {
		return errors.New("agentstate: internal: Begin inside a transaction")
	}
	if err := c.ensure(); err != nil {
		return err
	}
	c.tx, c.kind, c.ended = txPending, kind, false
	return nil
}

func (c *Conn) endTx() {
	c.tx, c.ended = txNone, false
	c.pending = c.pending[:0]
	c.queued = c.queued[:0]
	clear(c.locked)
}

// Commit implements driver.Conn; queued statements travel with the COMMIT.
func (c *Conn) Commit() error {
	defer c.endTx()
	if c.tx == txNone || c.tx == txPending && len(c.queued) == 0 {
		return nil // nothing reached the server
	}
	if c.id < 0 {
		return &driver.Error{Kind: driver.ErrConnLost, Err: errors.New("agentstate: the connection to the server was lost before COMMIT")}
	}
	if c.status == 'E' {
		c.rollback()
		return errors.New("agentstate: internal: COMMIT of a failed transaction")
	}
	calls, err := c.batch()
	if err == nil {
		var k call
		if k, err = c.bind("COMMIT", nil); err == nil {
			_, err = c.roundTrip(c.ctx, append(calls, k), nil)
		}
	}
	if err == nil && c.status != 'I' {
		c.rollback()
		return errors.New("agentstate: internal: the transaction did not commit")
	}
	if err != nil {
		var e *driver.Error
		if c.kind == driver.TxWrite && c.id < 0 && errors.As(err, &e) && (e.Kind == driver.ErrConnLost || e.Kind == driver.ErrInterrupted) {
			// COMMIT was sent and no answer came: the server may have
			// committed or not.
			err = &driver.Error{Kind: driver.ErrOutcomeUnknown, Err: err}
		}
		if c.id >= 0 && c.status != 'I' {
			c.rollback()
		}
	}
	return err
}

// Rollback implements driver.Conn; it runs even when the context of the
// call that opened the transaction is done.
func (c *Conn) Rollback() error {
	defer c.endTx()
	if c.tx != txOpen || c.id < 0 || c.status == 'I' {
		return nil
	}
	return c.rollback()
}

// rollback ends the transaction on the server within the call's context;
// when that is done, or ROLLBACK fails, the session is given up instead
// (the server rolls back a session that ends).
func (c *Conn) rollback() error {
	if done(c.ctx) != nil {
		c.Close()
		return nil
	}
	_, err := c.roundTrip(c.ctx, []call{{op: opSimple, sql: "ROLLBACK"}}, nil)
	if err != nil {
		c.Close()
	}
	return err
}

// InTx implements driver.Conn.
func (c *Conn) InTx() bool { return c.tx != txNone || (c.id >= 0 && c.status != 'I') }

// Lock implements driver.Conn: the advisory lock of key, held until the
// transaction ends, taken before the transaction's next statement.
func (c *Conn) Lock(key string) error {
	if c.tx == txNone {
		return errors.New("agentstate: internal: Lock outside a transaction")
	}
	if err := pgwire.CheckText([]byte(key)); err != nil {
		return err
	}
	if !c.locked[key] {
		c.locked[key] = true
		c.pending = append(c.pending, key)
	}
	return nil
}
