//go:build !js && !wasip1

// Package pg is the engine's driver for PostgreSQL, over pgconn (the wire
// protocol layer of github.com/jackc/pgx/v5, pure Go). It is built for
// native targets only: the WebAssembly builds never link it.
//
// A Conn prepares each statement once and binds arguments by the parameter
// types the server reports, so the engine's Go values (strings, byte
// slices, integers, booleans) need no casts in its SQL. A transaction
// begins lazily: BEGIN and the advisory locks Lock asks for travel in the
// same round trip as the transaction's first statement.
//
// What the driver guarantees (see package driver):
//
//   - Write transactions run at READ COMMITTED and are serialised per lock
//     key by pg_advisory_xact_lock on a 64-bit hash of the schema's name and
//     the key, computed by the server (so that every process locks the same
//     number for the same schema, however its URL names it, and two schemas
//     of one database do not contend): each statement after the lock sees
//     every transaction that held the lock before as committed.
//   - Read transactions run at REPEATABLE READ, READ ONLY: one snapshot.
//   - A statement whose context ends is cancelled on the server (a cancel
//     request, not a closed connection) and fails with ErrInterrupted.
package pg

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// Options say how to open connections.
type Options struct {
	// ReadOnly makes every transaction read-only (default_transaction_read_only).
	ReadOnly bool
	// BusyTimeout bounds every wait for a lock (lock_timeout).
	BusyTimeout time.Duration
	// SyncFull waits for the server's WAL flush at every commit
	// (synchronous_commit=on); otherwise commits return once written
	// (synchronous_commit=off), the analogue of SQLite's synchronous=NORMAL
	// in WAL mode: a commit that returned survives the client's death, and
	// a crash of the server may lose the last fraction of a second of
	// commits, never part of one.
	SyncFull bool
	// Setup, when set, runs on every new session right after it connects
	// (a session setting the server cannot take at startup on every
	// version).
	Setup string
}

// Dialer opens connections to one database with one set of options.
type Dialer struct {
	cfg   *pgconn.Config
	setup string
}

// NewDialer parses a postgres:// or postgresql:// URL (or key=value
// connection string); nothing is dialled yet.
func NewDialer(url string, o Options) (*Dialer, error) {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "agentstate"
	}
	cfg.RuntimeParams["lock_timeout"] = strconv.FormatInt(max(o.BusyTimeout.Milliseconds(), 1), 10)
	cfg.RuntimeParams["synchronous_commit"] = "off"
	if o.SyncFull {
		cfg.RuntimeParams["synchronous_commit"] = "on"
	}
	if o.ReadOnly {
		cfg.RuntimeParams["default_transaction_read_only"] = "on"
	}
	// A done context ends the wait at once, whatever the server does (it
	// may not be answering at all): the connection is given up, and pgconn
	// sends the server a cancel request and a goodbye in the background, so
	// that the statement stops there too. The next use of the Conn dials a
	// new session. Keeping the connection instead (a cancel request, then
	// waiting for the server's answer) would make a call outlive its
	// context by as long as the server takes to answer, unbounded when it
	// is stopped.
	cfg.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: pc.Conn()}
	}
	return &Dialer{cfg: cfg, setup: o.Setup}, nil
}

// SearchPath is the search_path the URL sets, or "".
func (d *Dialer) SearchPath() string { return d.cfg.RuntimeParams["search_path"] }

// Dial opens one connection.
func (d *Dialer) Dial(ctx context.Context) (*Conn, error) {
	c := &Conn{d: d, ctx: context.Background(), locked: map[string]bool{}}
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Conn is one server connection with its prepared statements.
type Conn struct {
	d      *Dialer
	pc     *pgconn.PgConn
	ctx    context.Context
	stmts  map[string]*stmt
	nstmt  int
	lockSt *stmt

	tx      txState
	kind    driver.TxKind
	pending []string // lock keys to take before the next statement
	locked  map[string]bool
	queued  []queued // statements to send with the next one
}

// queued is a statement of Queue, bound and waiting for the next round trip.
type queued struct {
	st   *stmt
	vals [][]byte
	fmts []int16
}

var _ driver.Conn = (*Conn)(nil)

type txState uint8

const (
	txNone    txState = iota
	txPending         // Begin was called; BEGIN goes with the first statement
	txOpen
)

type stmt struct {
	sd            *pgconn.StatementDescription
	resultFormats []int16
}

func (c *Conn) connect(ctx context.Context) error {
	pc, err := pgconn.ConnectConfig(ctx, c.d.cfg.Copy())
	if err != nil {
		return classify(ctx, err)
	}
	if enc := pc.ParameterStatus("server_encoding"); enc != "UTF8" {
		closeQuickly(pc)
		return &driver.Error{Kind: driver.ErrValue, Err: fmt.Errorf("agentstate: the database's encoding is %s; agentstate needs a UTF8 database", enc)}
	}
	if c.d.setup != "" {
		if _, err := pc.Exec(ctx, c.d.setup).ReadAll(); err != nil {
			closeQuickly(pc)
			return classify(ctx, err)
		}
	}
	c.pc, c.stmts, c.lockSt = pc, map[string]*stmt{}, nil
	return nil
}

// ensure reconnects a connection that broke (a server restart, a network
// error) between transactions; inside one, the transaction is lost.
func (c *Conn) ensure() error {
	if c.pc != nil && !c.pc.IsClosed() {
		return nil
	}
	if c.tx == txOpen {
		return &driver.Error{Kind: driver.ErrConnLost, Err: errors.New("agentstate: the connection to the server was lost inside a transaction")}
	}
	return c.connect(c.ctx)
}

// Broken reports a connection that is closed or was found broken: the
// next statement dials a new session (and the old one's locks are gone).
func (c *Conn) Broken() bool { return c.pc == nil || c.pc.IsClosed() }

// Raw returns the pgconn connection, for tests and benchmarks.
func (c *Conn) Raw() *pgconn.PgConn { return c.pc }

// Close implements driver.Conn. It says goodbye to the server and waits
// at most CloseWait for the server to hang up: a server that does not
// answer (stopped, unreachable) costs no more; it ends the session when it
// finds the connection closed.
func (c *Conn) Close() error {
	if c.pc == nil {
		return nil
	}
	err := closeQuickly(c.pc)
	c.pc = nil
	if err != nil && !pgconn.Timeout(err) {
		return classify(nil, err)
	}
	return nil
}

// CloseWait bounds how long closing a connection waits for the server.
const CloseWait = 100 * time.Millisecond

func closeQuickly(pc *pgconn.PgConn) error {
	ctx, cancel := context.WithTimeout(context.Background(), CloseWait)
	defer cancel()
	return pc.Close(ctx)
}

// discard gives up the connection at once (its state is unknown); the next
// statement dials a new one.
func (c *Conn) discard() {
	if c.pc != nil {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		c.pc.Close(ctx)
	}
}

// Interrupt implements driver.Conn.
func (c *Conn) Interrupt(ctx context.Context) func() {
	old := c.ctx
	c.ctx = ctx
	return func() { c.ctx = old }
}

func (c *Conn) prepare(q string) (*stmt, error) {
	if st, ok := c.stmts[q]; ok {
		return st, nil
	}
	c.nstmt++
	sd, err := c.pc.Prepare(c.ctx, "as"+strconv.Itoa(c.nstmt), q, nil)
	if err != nil {
		return nil, classify(c.ctx, err)
	}
	st := &stmt{sd: sd, resultFormats: make([]int16, len(sd.Fields))}
	for i, f := range sd.Fields {
		if binaryResult(f.DataTypeOID) {
			st.resultFormats[i] = 1
		}
	}
	c.stmts[q] = st
	return st, nil
}

// Exec implements driver.Conn. The empty statement is the dialect's way to
// say "nothing to do here" (an SQLite PRAGMA with no PostgreSQL meaning).
func (c *Conn) Exec(q string, args ...any) (int64, error) {
	return c.run(q, args, nil)
}

// Query implements driver.Conn.
func (c *Conn) Query(q string, args []any, fn func(driver.Row) error) error {
	_, err := c.run(q, args, fn)
	return err
}

func (c *Conn) run(q string, args []any, fn func(driver.Row) error) (int64, error) {
	// The first statement of a transaction (sent with its BEGIN) may find
	// the connection closed by the server since its last use (a restart, a
	// terminated session): nothing of the transaction ran, so it runs again
	// once on a new connection.
	first := c.tx == txPending && len(c.queued) == 0
	locks := slices.Clone(c.pending)
	rows := false
	var wrapped func(driver.Row) error
	if fn != nil {
		wrapped = func(r driver.Row) error { rows = true; return fn(r) }
	}
	n, err := c.run1(q, args, wrapped)
	if err != nil && first && !rows && c.pc != nil && c.pc.IsClosed() && c.ctx.Err() == nil && connectionLost(err) {
		c.tx, c.pending, c.pc = txPending, locks, nil
		return c.run1(q, args, fn)
	}
	return n, err
}

// connectionLost reports an error that says the connection is gone, not
// that a statement failed.
func connectionLost(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "57P") || strings.HasPrefix(pe.Code, "08")
	}
	return true
}

func (c *Conn) run1(q string, args []any, fn func(driver.Row) error) (int64, error) {
	if strings.TrimSpace(q) == "" {
		return 0, nil
	}
	if err := c.ensure(); err != nil {
		return 0, err
	}
	st, err := c.prepare(q)
	if err != nil {
		return 0, err
	}
	vals, fmts, err := encodeArgs(st.sd.ParamOIDs, args)
	if err != nil {
		return 0, err
	}
	if c.tx != txPending && len(c.pending) == 0 && len(c.queued) == 0 {
		rr := c.pc.ExecStatement(c.ctx, st.sd, vals, fmts, st.resultFormats)
		n, ferr := readRows(rr, fn)
		tag, err := rr.Close()
		if ferr != nil {
			return 0, ferr
		}
		if err != nil {
			return 0, classify(c.ctx, err)
		}
		if n < 0 {
			n = tag.RowsAffected()
		}
		return n, nil
	}
	// BEGIN, pending locks and queued statements go with this one, in one
	// round trip.
	b, pre, err := c.batch()
	if err != nil {
		return 0, err
	}
	b.ExecStatement(st.sd, vals, fmts, st.resultFormats)
	mrr := c.pc.ExecBatch(c.ctx, b)
	var n int64
	var ferr, rerr error
	for i := 0; mrr.NextResult(); i++ {
		rr := mrr.ResultReader()
		if i < pre {
			if _, err := rr.Close(); err != nil && rerr == nil {
				rerr = err
			}
			continue
		}
		n, ferr = readRows(rr, fn)
		tag, err := rr.Close()
		if err != nil && rerr == nil {
			rerr = err
		}
		if n < 0 {
			n = tag.RowsAffected()
		}
	}
	if err := mrr.Close(); err != nil && rerr == nil {
		rerr = err
	}
	if rerr != nil {
		return 0, classify(c.ctx, rerr)
	}
	return n, ferr
}

// batch starts a batch with what must precede the next statement: BEGIN,
// the pending locks, the queued statements; pre counts them.
func (c *Conn) batch() (b *pgconn.Batch, pre int, err error) {
	b = &pgconn.Batch{}
	if c.tx == txPending {
		// Prepared, like every statement: BEGIN runs once per transaction.
		begin, err := c.prepare(beginSQL(c.kind))
		if err != nil {
			return nil, 0, err
		}
		b.ExecStatement(begin.sd, nil, nil, nil)
		pre++
		c.tx = txOpen
	}
	if len(c.pending) > 0 {
		if c.lockSt == nil {
			if c.lockSt, err = c.prepare(lockSQL); err != nil {
				return nil, 0, err
			}
		}
		for _, k := range c.pending {
			b.ExecStatement(c.lockSt.sd, [][]byte{[]byte(k)}, []int16{1}, nil)
			pre++
		}
		c.pending = c.pending[:0]
	}
	for _, q := range c.queued {
		b.ExecStatement(q.st.sd, q.vals, q.fmts, q.st.resultFormats)
		pre++
	}
	c.queued = c.queued[:0]
	return b, pre, nil
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
	st, err := c.prepare(q)
	if err != nil {
		return err
	}
	vals, fmts, err := encodeArgs(st.sd.ParamOIDs, args)
	if err != nil {
		return err
	}
	c.queued = append(c.queued, queued{st: st, vals: vals, fmts: fmts})
	return nil
}

// readRows calls fn for each row; n is the number of rows seen when fn is
// set, -1 otherwise (the command tag counts changed rows).
func readRows(rr *pgconn.ResultReader, fn func(driver.Row) error) (int64, error) {
	if fn == nil {
		return -1, nil
	}
	var n int64
	r := &row{}
	for rr.NextRow() {
		n++
		r.vals, r.fds = rr.Values(), rr.FieldDescriptions()
		if err := fn(r); err != nil {
			return n, err
		}
	}
	return n, nil
}

func beginSQL(kind driver.TxKind) string {
	if kind == driver.TxWrite {
		return "BEGIN ISOLATION LEVEL READ COMMITTED"
	}
	return "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
}

// ExecScript implements driver.Conn: the script is split into statements
// at semicolons outside quotes, comments and dollar-quoted bodies.
func (c *Conn) ExecScript(script string, before func(stmt string) (skip bool, err error)) error {
	if err := c.ensure(); err != nil {
		return err
	}
	for _, s := range SplitScript(script) {
		if before != nil {
			skip, err := before(s)
			if err != nil {
				return err
			}
			if skip {
				continue
			}
		}
		if err := c.simple(s); err != nil {
			return err
		}
	}
	return nil
}

// simple runs text with the simple query protocol (no parameters), after a
// pending BEGIN.
func (c *Conn) simple(q string) error {
	if c.tx == txPending {
		q = beginSQL(c.kind) + "; " + q
		c.tx = txOpen
	}
	if len(c.pending) > 0 || len(c.queued) > 0 {
		return errors.New("agentstate: internal: a script cannot follow Lock or Queue")
	}
	_, err := c.pc.Exec(c.ctx, q).ReadAll()
	return classify(c.ctx, err)
}

// SplitScript cuts an SQL script into statements (without the semicolons),
// dropping empty ones.
func SplitScript(script string) []string {
	var out []string
	start := 0
	flush := func(end int) {
		if s := strings.TrimSpace(script[start:end]); s != "" && !onlyComments(s) {
			out = append(out, s)
		}
	}
	for i := 0; i < len(script); i++ {
		switch ch := script[i]; {
		case ch == '\'' || ch == '"':
			j := strings.IndexByte(script[i+1:], ch)
			if j < 0 {
				i = len(script)
			} else {
				i += j + 1
			}
		case ch == '-' && strings.HasPrefix(script[i:], "--"):
			j := strings.IndexByte(script[i:], '\n')
			if j < 0 {
				i = len(script)
			} else {
				i += j
			}
		case ch == '/' && strings.HasPrefix(script[i:], "/*"):
			j := strings.Index(script[i+2:], "*/")
			if j < 0 {
				i = len(script)
			} else {
				i += j + 3
			}
		case ch == '$':
			// A dollar quote: $tag$ ... $tag$.
			j := i + 1
			for j < len(script) && (script[j] == '_' || script[j] >= 'a' && script[j] <= 'z' || script[j] >= 'A' && script[j] <= 'Z' || script[j] >= '0' && script[j] <= '9') {
				j++
			}
			if j < len(script) && script[j] == '$' && (j == i+1 || !(script[i+1] >= '0' && script[i+1] <= '9')) {
				tag := script[i : j+1]
				k := strings.Index(script[j+1:], tag)
				if k < 0 {
					i = len(script)
				} else {
					i = j + 1 + k + len(tag) - 1
				}
			}
		case ch == ';':
			flush(i)
			start = i + 1
		}
	}
	flush(len(script))
	return out
}

func onlyComments(s string) bool {
	for _, line := range strings.Split(s, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "--") {
			return false
		}
	}
	return true
}

// Begin implements driver.Conn: nothing is sent until the first statement.
func (c *Conn) Begin(kind driver.TxKind) error {
	if c.InTx() {
		return errors.New("agentstate: internal: Begin inside a transaction")
	}
	if err := c.ensure(); err != nil {
		return err
	}
	c.tx, c.kind = txPending, kind
	return nil
}

func (c *Conn) endTx() {
	c.tx = txNone
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
	if c.pc == nil || c.pc.IsClosed() {
		return &driver.Error{Kind: driver.ErrConnLost, Err: errors.New("agentstate: the connection to the server was lost before COMMIT")}
	}
	if c.pc.TxStatus() == 'E' {
		c.rollback()
		return errors.New("agentstate: internal: COMMIT of a failed transaction")
	}
	var err error
	if len(c.queued) > 0 {
		b, _, berr := c.batch()
		if berr != nil {
			c.rollback()
			return berr
		}
		commit, perr := c.prepare("COMMIT")
		if perr != nil {
			c.rollback()
			return perr
		}
		b.ExecStatement(commit.sd, nil, nil, nil)
		_, err = c.pc.ExecBatch(c.ctx, b).ReadAll()
		if err == nil && c.pc.TxStatus() != 'I' {
			c.rollback()
			return errors.New("agentstate: internal: the transaction did not commit")
		}
	} else {
		_, err = c.pc.Exec(c.ctx, "COMMIT").ReadAll()
	}
	if err != nil {
		if c.kind == driver.TxWrite {
			err = commitErr(c.ctx, err)
		} else {
			err = classify(c.ctx, err) // a read's outcome is known: nothing
		}
		if c.pc != nil && !c.pc.IsClosed() && c.pc.TxStatus() != 'I' {
			c.rollback()
		}
	}
	return err
}

// commitErr classifies an error of the round trip that carried COMMIT.
// The server's own error (a failed statement, a constraint checked at
// commit) means the transaction rolled back, and an error before anything
// was sent means it never reached the server; anything else (the context
// ended or the connection broke after COMMIT was sent, before its answer
// came) leaves it unknown whether the server committed.
func commitErr(ctx context.Context, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) || pgconn.SafeToRetry(err) {
		return classify(ctx, err)
	}
	return &driver.Error{Kind: driver.ErrOutcomeUnknown, Err: classify(ctx, err)}
}

// Rollback implements driver.Conn; it runs even when the context of the
// call that opened the transaction is done.
func (c *Conn) Rollback() error {
	defer c.endTx()
	if c.tx != txOpen || c.pc == nil || c.pc.IsClosed() || c.pc.TxStatus() == 'I' {
		return nil
	}
	return c.rollback()
}

// rollback ends the transaction on the server, within the current call's
// context; when that is done, or ROLLBACK fails, the connection is given
// up instead (the server rolls back a session that ends).
func (c *Conn) rollback() error {
	if c.ctx.Err() != nil {
		c.discard()
		return nil
	}
	_, err := c.pc.Exec(c.ctx, "ROLLBACK").ReadAll()
	if err != nil {
		c.discard()
	}
	return classify(c.ctx, err)
}

// InTx implements driver.Conn.
func (c *Conn) InTx() bool {
	return c.tx != txNone || (c.pc != nil && !c.pc.IsClosed() && c.pc.TxStatus() != 'I')
}

// lockSQL takes the advisory lock of a key for the rest of the transaction.
const lockSQL = `SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || '/' || $1::text, 0))`

// Lock implements driver.Conn: the advisory lock of key, held until the
// transaction ends, taken before the transaction's next statement.
func (c *Conn) Lock(key string) error {
	if c.tx == txNone {
		return errors.New("agentstate: internal: Lock outside a transaction")
	}
	if err := CheckText([]byte(key)); err != nil {
		return err
	}
	if c.locked[key] {
		return nil
	}
	c.locked[key] = true
	c.pending = append(c.pending, key)
	return nil
}

// Type OIDs the driver reads and writes in binary.
const (
	oidBool    = 16
	oidBytea   = 17
	oidName    = 19
	oidInt8    = 20
	oidInt2    = 21
	oidInt4    = 23
	oidText    = 25
	oidOID     = 26
	oidJSON    = 114
	oidFloat4  = 700
	oidFloat8  = 701
	oidUnknown = 705
	oidBPChar  = 1042
	oidVarchar = 1043
	oidNumeric = 1700
	oidJSONB   = 3802
)

func binaryResult(oid uint32) bool {
	switch oid {
	case oidBool, oidBytea, oidName, oidInt8, oidInt2, oidInt4, oidText, oidOID, oidFloat4, oidFloat8, oidBPChar, oidVarchar, oidJSONB:
		return true
	}
	return false
}

// encodeArgs encodes the engine's Go values for the parameter types the
// server chose: a nil or nil *string is NULL.
func encodeArgs(oids []uint32, args []any) ([][]byte, []int16, error) {
	if len(args) != len(oids) {
		return nil, nil, fmt.Errorf("agentstate: internal: %d arguments for %d parameters", len(args), len(oids))
	}
	vals := make([][]byte, len(args))
	fmts := make([]int16, len(args))
	for i, a := range args {
		if p, ok := a.(*string); ok {
			if p == nil {
				a = nil
			} else {
				a = *p
			}
		}
		if a == nil {
			fmts[i] = 1
			continue
		}
		v, f, err := encode(oids[i], a)
		if err != nil {
			return nil, nil, err
		}
		vals[i], fmts[i] = v, f
	}
	return vals, fmts, nil
}

func encode(oid uint32, a any) ([]byte, int16, error) {
	switch oid {
	case oidInt8, oidInt4, oidInt2, oidOID:
		n, err := asInt(a)
		if err != nil {
			return nil, 0, err
		}
		switch oid {
		case oidInt8:
			return binary.BigEndian.AppendUint64(nil, uint64(n)), 1, nil
		case oidInt4, oidOID:
			if n < math.MinInt32 || n > math.MaxInt32 {
				return nil, 0, &driver.Error{Kind: driver.ErrValue, Err: fmt.Errorf("%d does not fit a 32-bit column", n)}
			}
			return binary.BigEndian.AppendUint32(nil, uint32(n)), 1, nil
		default:
			if n < math.MinInt16 || n > math.MaxInt16 {
				return nil, 0, &driver.Error{Kind: driver.ErrValue, Err: fmt.Errorf("%d does not fit a 16-bit column", n)}
			}
			return binary.BigEndian.AppendUint16(nil, uint16(n)), 1, nil
		}
	case oidBool:
		switch v := a.(type) {
		case bool:
			return []byte{b2b(v)}, 1, nil
		case int:
			return []byte{b2b(v != 0)}, 1, nil
		case int64:
			return []byte{b2b(v != 0)}, 1, nil
		}
	case oidFloat8, oidFloat4:
		var f float64
		switch v := a.(type) {
		case float64:
			f = v
		case int:
			f = float64(v)
		case int64:
			f = float64(v)
		default:
			return nil, 0, cannotBind(a, oid)
		}
		if oid == oidFloat4 {
			return binary.BigEndian.AppendUint32(nil, math.Float32bits(float32(f))), 1, nil
		}
		return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)), 1, nil
	case oidBytea:
		switch v := a.(type) {
		case []byte:
			return v, 1, nil
		case string:
			return []byte(v), 1, nil
		}
	case oidJSONB:
		b, err := textBytes(a)
		if err != nil {
			return nil, 0, err
		}
		return append([]byte{1}, b...), 1, nil
	case oidNumeric:
		b, err := textBytes(a)
		return b, 0, err
	default:
		// text, varchar, name, unknown, json and anything else in text form.
		b, err := textBytes(a)
		if err != nil {
			return nil, 0, err
		}
		if oid == oidText || oid == oidVarchar || oid == oidBPChar || oid == oidName || oid == oidUnknown {
			return b, 1, nil
		}
		return b, 0, nil
	}
	return nil, 0, cannotBind(a, oid)
}

func b2b(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func asInt(a any) (int64, error) {
	switch v := a.(type) {
	case int64:
		return v, nil
	case int:
		return int64(v), nil
	case bool:
		if v {
			return 1, nil
		}
		return 0, nil
	case float64:
		if v == math.Trunc(v) && v >= math.MinInt64 && v < math.MaxInt64 {
			return int64(v), nil
		}
	case string:
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n, nil
		}
	}
	return 0, cannotBind(a, oidInt8)
}

// textBytes renders a value as text the server accepts: valid UTF-8
// without NUL bytes (which no PostgreSQL text can hold).
func textBytes(a any) ([]byte, error) {
	var b []byte
	switch v := a.(type) {
	case string:
		b = []byte(v)
	case []byte:
		b = v
	case int64:
		return strconv.AppendInt(nil, v, 10), nil
	case int:
		return strconv.AppendInt(nil, int64(v), 10), nil
	case float64:
		return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
	case bool:
		if v {
			return []byte("true"), nil
		}
		return []byte("false"), nil
	default:
		return nil, fmt.Errorf("agentstate: internal: cannot bind %T", a)
	}
	if err := CheckText(b); err != nil {
		return nil, err
	}
	return b, nil
}

// CheckText refuses what PostgreSQL text cannot hold, with ErrValue.
func CheckText(b []byte) error {
	if bytes.IndexByte(b, 0) >= 0 {
		return &driver.Error{Kind: driver.ErrValue, Err: errors.New("PostgreSQL text cannot hold a NUL byte")}
	}
	if !utf8.Valid(b) {
		return &driver.Error{Kind: driver.ErrValue, Err: errors.New("PostgreSQL text must be valid UTF-8")}
	}
	return nil
}

func cannotBind(a any, oid uint32) error {
	return fmt.Errorf("agentstate: internal: cannot bind %T to a parameter of type %d", a, oid)
}

// row reads a result row by column type, converting the way SQLite would
// (a boolean reads as 0 or 1, a number as its text).
type row struct {
	vals [][]byte
	fds  []pgconn.FieldDescription
}

func (r *row) Columns() int    { return len(r.fds) }
func (r *row) Null(i int) bool { return r.vals[i] == nil }

func (r *row) Int64(i int) int64 {
	v := r.vals[i]
	if v == nil {
		return 0
	}
	fd := r.fds[i]
	if fd.Format == 1 {
		switch fd.DataTypeOID {
		case oidInt8:
			return int64(binary.BigEndian.Uint64(v))
		case oidInt4:
			return int64(int32(binary.BigEndian.Uint32(v)))
		case oidOID:
			return int64(binary.BigEndian.Uint32(v))
		case oidInt2:
			return int64(int16(binary.BigEndian.Uint16(v)))
		case oidBool:
			return int64(v[0])
		case oidFloat8, oidFloat4:
			return int64(r.Float(i))
		}
	}
	s := string(r.text(i))
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return int64(f)
	}
	return 0
}

func (r *row) Float(i int) float64 {
	v := r.vals[i]
	if v == nil {
		return 0
	}
	fd := r.fds[i]
	if fd.Format == 1 {
		switch fd.DataTypeOID {
		case oidFloat8:
			return math.Float64frombits(binary.BigEndian.Uint64(v))
		case oidFloat4:
			return float64(math.Float32frombits(binary.BigEndian.Uint32(v)))
		case oidInt8, oidInt4, oidInt2, oidOID, oidBool:
			return float64(r.Int64(i))
		}
	}
	f, _ := strconv.ParseFloat(string(r.text(i)), 64)
	return f
}

// text returns the column as text bytes (aliasing the row).
func (r *row) text(i int) []byte {
	v := r.vals[i]
	fd := r.fds[i]
	if fd.Format != 1 {
		return v
	}
	switch fd.DataTypeOID {
	case oidInt8, oidInt4, oidInt2, oidOID:
		return strconv.AppendInt(nil, r.Int64(i), 10)
	case oidBool:
		return strconv.AppendInt(nil, int64(v[0]), 10)
	case oidFloat8, oidFloat4:
		return strconv.AppendFloat(nil, r.Float(i), 'g', -1, 64)
	case oidJSONB:
		if len(v) > 0 {
			return v[1:]
		}
	}
	return v
}

func (r *row) Text(i int) string {
	if r.vals[i] == nil {
		return ""
	}
	return string(r.text(i))
}

func (r *row) Blob(i int) []byte {
	if r.vals[i] == nil {
		return nil
	}
	b := r.text(i)
	if b == nil {
		return []byte{}
	}
	return b
}

// classify wraps a pgconn error with the driver's kind of it.
func classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var kind error
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe):
		switch code := pe.Code; {
		case code == "40001", code == "40P01", code == "55P03":
			kind = driver.ErrBusy
		case code == "23505":
			kind = driver.ErrUnique
		case strings.HasPrefix(code, "23"):
			kind = driver.ErrConstraint
		case code == "57014":
			kind = driver.ErrInterrupted
		case code == "42P01", code == "42703", code == "42883", code == "3F000":
			kind = driver.ErrSchema
		case code == "53100":
			kind = driver.ErrFull
		case code == "25006":
			kind = driver.ErrReadOnly
		case code == "XX001", code == "XX002":
			kind = driver.ErrCorrupt
		case strings.HasPrefix(code, "08"), code == "57P01", code == "57P02", code == "57P03":
			// A connection failure, or the session ended by the server
			// (pg_terminate_backend, a shutdown, a restart).
			kind = driver.ErrConnLost
		case strings.HasPrefix(code, "22"), code == "54000":
			kind = driver.ErrValue
		default:
			return err
		}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), pgconn.Timeout(err),
		ctx != nil && ctx.Err() != nil:
		kind = driver.ErrInterrupted
	default:
		// Not the server's answer: the connection failed (refused, reset,
		// closed by the server or the network).
		kind = driver.ErrConnLost
	}
	return &driver.Error{Kind: kind, Err: err}
}
