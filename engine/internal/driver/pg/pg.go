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
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/engine/internal/driver/pgwire"
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
	// commitAfter: the next statement ends its read transaction (QueryLast).
	commitAfter bool
	// ended: QueryLast committed; no statement may follow before Commit.
	ended bool
}

// queued is a statement of Queue, bound and waiting for the next round trip.
type queued struct {
	st   *stmt
	vals [][]byte
	fmts []int16
}

var (
	_ driver.Conn        = (*Conn)(nil)
	_ driver.LastQuerier = (*Conn)(nil)
)

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
		if pgwire.BinaryResult(f.DataTypeOID) {
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

// QueryLast implements driver.LastQuerier: in a read transaction the
// COMMIT goes in the query's round trip.
func (c *Conn) QueryLast(q string, args []any, fn func(driver.Row) error) error {
	if c.tx == txNone || c.kind != driver.TxRead || strings.TrimSpace(q) == "" {
		return c.Query(q, args, fn)
	}
	c.commitAfter = true
	_, err := c.run(q, args, fn)
	c.commitAfter = false
	if c.pc != nil && !c.pc.IsClosed() && c.pc.TxStatus() == 'I' {
		c.endTx() // committed (fn's error too leaves nothing to roll back)
		c.ended = true
	}
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
	st, err := c.prepare(q)
	if err != nil {
		return 0, err
	}
	vals, fmts, err := pgwire.EncodeArgs(st.sd.ParamOIDs, args)
	if err != nil {
		return 0, err
	}
	var commit *stmt
	if c.commitAfter {
		if commit, err = c.prepare("COMMIT"); err != nil {
			return 0, err
		}
	}
	if commit == nil && c.tx != txPending && len(c.pending) == 0 && len(c.queued) == 0 {
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
	if commit != nil {
		b.ExecStatement(commit.sd, nil, nil, nil)
	}
	mrr := c.pc.ExecBatch(c.ctx, b)
	var n int64
	var ferr, rerr error
	for i := 0; mrr.NextResult(); i++ {
		rr := mrr.ResultReader()
		if i != pre {
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
	vals, fmts, err := pgwire.EncodeArgs(st.sd.ParamOIDs, args)
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
	if err := pgwire.CheckText([]byte(key)); err != nil {
		return err
	}
	if c.locked[key] {
		return nil
	}
	c.locked[key] = true
	c.pending = append(c.pending, key)
	return nil
}
