package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/internal/driver"
)

// DB is one open agentstate file (or PostgreSQL database): every surface
// (checkpoints, store, runs, events, threads) lives in it. A DB is safe for
// concurrent use by many goroutines; on SQLite writes are serialised on one
// connection, on PostgreSQL they run on Options.WriteConns connections,
// serialised per thread; reads run in parallel on a small pool. Close
// releases it.
type DB struct {
	path string
	b    backend
	opts Options
	// shared: the file is a shared SQLite file (shared.go), known once
	// prepareSchema has read it; every connection dialled after is one.
	shared bool

	writer  *connPool
	readers *connPool
	cache   *historyCache
	flight  singleflight.Group // concurrent cold rebuilds of one checkpoint's state
	// compressor is made on first use, once the file's mode is known.
	compressor     *codec.Compressor
	compressorOnce sync.Once
	ids            idGen
	recs           recordsState // run ownership of this handle (records_common.go)
	vecs           vecCache     // the store's vectors, read once (store_vectors.go)

	closeMu sync.RWMutex // held for reading by every call, for writing by Close
	closed  bool
	closing atomic.Bool // Close has begun: new calls fail with ErrClosed at once
	all     []*conn
	// abort, on a server backend, ends every call in flight when Close has
	// waited CloseTimeout for them (abortCalls); nil on SQLite, whose
	// calls always end.
	abort      context.Context
	abortCalls context.CancelFunc

	hookMu    sync.Mutex
	stopHooks []func() // run by Close before the connections close, in reverse
}

// CloseTimeout bounds how long Close waits, on PostgreSQL, for calls in
// flight: it then ends them (they fail with ErrClosed), so Close returns
// within CloseTimeout and 2.5 s more whatever the server does. On SQLite
// Close waits for calls, which always end on their own.
const CloseTimeout = 5 * time.Second

// onClose registers fn to run when the DB closes, before its connections do.
func (db *DB) onClose(fn func()) {
	db.hookMu.Lock()
	defer db.hookMu.Unlock()
	db.stopHooks = append(db.stopHooks, fn)
}

// Open opens or creates the agentstate file at path (or, for path Memory, a
// fresh private in-memory database) and brings its schema to the current
// version. opts may be nil for DefaultOptions. A refused Open (a bad option,
// a file written by something else, a newer schema) returns a typed error and
// leaves the file as it was.
//
// A postgres:// or postgresql:// path opens the PostgreSQL schema the URL's
// search_path names, in a native program that imports engine/postgres
// (docs/postgresql.md): the same API and semantics, without SQLite's file
// maintenance.
func Open(ctx context.Context, path string, opts *Options) (*DB, error) {
	o := DefaultOptions()
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	if path == "" {
		return nil, fmt.Errorf("%w: empty path (use engine.Memory for an in-memory database)", ErrInvalidArgument)
	}
	if path == Memory && o.ReadOnly {
		return nil, fmt.Errorf("%w: ReadOnly makes no sense for a fresh in-memory database", ErrInvalidOption)
	}
	if path == Memory && o.SharedFile {
		return nil, fmt.Errorf("%w: SharedFile makes no sense for a fresh in-memory database: no other tool's tables are in it", ErrInvalidOption)
	}
	b, err := openBackend(path, o, sqlFuncs())
	if err != nil {
		return nil, err
	}
	return openWith(ctx, path, b, o)
}

// openWith opens a handle on the backend b, which has just been made.
func openWith(ctx context.Context, path string, b backend, o Options) (*DB, error) {
	db := &DB{path: displayPath(path), b: b, opts: o, cache: newHistoryCache(o.HistoryCacheBytes)}
	if _, ok := b.(serverBackend); ok {
		db.abort, db.abortCalls = context.WithCancel(context.Background())
	}
	if err := db.open(ctx); err != nil {
		db.closeConns()
		b.close()
		return nil, err
	}
	if !o.ReadOnly {
		if err := db.startRecords(ctx); err != nil {
			db.Close()
			return nil, openErr(db.path, err)
		}
	}
	return db, nil
}

func (db *DB) open(ctx context.Context) error {
	w, err := db.dial(ctx, true)
	if err != nil {
		return openErr(db.path, wrapErr(ctx, err))
	}
	writers := 1
	if sb := db.server(); sb != nil {
		writers = sb.writers()
	}
	db.writer = newConnPool(writers)
	db.writer.put(w)
	if err := db.prepareSchema(ctx, w); err != nil {
		return err
	}
	if err := db.checkFileMode(ctx, w); err != nil {
		return err
	}
	for range writers - 1 {
		w, err := db.dial(ctx, true)
		if err != nil {
			return openErr(db.path, wrapErr(ctx, err))
		}
		db.writer.put(w)
	}
	if one, ok := db.b.(oneConn); ok && one.oneConn() {
		db.readers = db.writer
		return nil
	}
	db.readers = newConnPool(db.opts.ReadConns)
	for range db.opts.ReadConns {
		r, err := db.dial(ctx, false)
		if err != nil {
			return openErr(db.path, wrapErr(ctx, err))
		}
		db.readers.put(r)
	}
	return nil
}

// dial opens one connection: the writer (which may create the database) or
// a reader.
func (db *DB) dial(ctx context.Context, write bool) (*conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d, err := db.b.dial(ctx, write)
	if err != nil {
		return nil, err
	}
	c := &conn{d: d, hc: db.cache, writer: write}
	if sb := db.server(); sb != nil {
		c.tr = sb.translate
	} else if db.shared {
		c.setShared()
	}
	db.all = append(db.all, c)
	return c, nil
}

// Close waits for running calls to finish and releases every connection.
// Calls made after Close fail with ErrClosed. Closing twice is harmless.
// On PostgreSQL it returns within CloseTimeout (and 2.5 s).
func (db *DB) Close() error {
	db.closing.Store(true)
	db.hookMu.Lock()
	hooks := db.stopHooks
	db.stopHooks = nil
	db.hookMu.Unlock()
	// Stop hooks run before taking the lock: a background sweeper may be in
	// the middle of a call that holds it for reading. Each ends its work
	// by cancelling its context, which ends a statement at once.
	for i := len(hooks) - 1; i >= 0; i-- {
		hooks[i]()
	}
	db.lockForClose()
	defer db.closeMu.Unlock()
	if db.closed {
		return nil
	}
	db.closed = true
	err := db.closeConns()
	db.b.close()
	if errors.Is(err, driver.ErrReplaced) {
		// Every connection says so; once is enough.
		return fmt.Errorf("%w: %w", ErrFileReplaced, firstKind(err, driver.ErrReplaced))
	}
	return err
}

// firstKind returns the first driver error of kind in err (a join of the
// connections' errors).
func firstKind(err, kind error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if de, ok := e.(*driver.Error); ok && de.Kind == kind {
				return de
			}
		}
	}
	return err
}

// lockForClose takes closeMu for writing once the calls in flight have
// ended: on a server backend, those still running after CloseTimeout are
// ended first.
func (db *DB) lockForClose() {
	if db.abort == nil {
		db.closeMu.Lock()
		return
	}
	locked := make(chan struct{})
	go func() {
		db.closeMu.Lock()
		close(locked)
	}()
	select {
	case <-locked:
	case <-time.After(CloseTimeout):
		db.abortCalls()
		<-locked
	}
	db.abortCalls()
}

// closeConns closes every connection; a server's at once (each waits a
// moment for the server to hang up).
func (db *DB) closeConns() error {
	errs := make([]error, len(db.all))
	var wg sync.WaitGroup
	for i, c := range db.all {
		if db.abort == nil {
			errs[i] = c.close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.close()
		}()
	}
	wg.Wait()
	db.all = nil
	return errors.Join(errs...)
}

// endedByClose turns the error of a call that Close ended (abortCalls)
// into ErrClosed.
func (db *DB) endedByClose(err error) error {
	if err != nil && db.abort != nil && db.abort.Err() != nil && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("%w: Close ended the call after waiting %v for it (%v)", ErrClosed, CloseTimeout, err)
	}
	return err
}

// Path returns the path the DB was opened with (a server URL without its
// password).
func (db *DB) Path() string { return db.path }

// Options returns the options in force for this handle.
func (db *DB) Options() Options { return db.opts }

// acquire takes a connection from pool, honouring ctx and Close.
func (db *DB) acquire(ctx context.Context, pool *connPool) (*conn, func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if db.closing.Load() {
		// Not behind Close, which may wait CloseTimeout for calls in
		// flight: this call could not run anyway.
		return nil, nil, ErrClosed
	}
	db.closeMu.RLock()
	if db.closed {
		db.closeMu.RUnlock()
		return nil, nil, ErrClosed
	}
	// A free connection is taken without a two-case select (the common
	// case; the runtime's select was hot enough at start-up in the js build
	// for V8 to recompile it with its optimising tier).
	select {
	case <-pool.tokens:
	default:
		select {
		case <-pool.tokens:
		case <-ctx.Done():
			db.closeMu.RUnlock()
			return nil, nil, ctx.Err()
		}
	}
	c := pool.take()
	cctx, stop := ctx, func() {}
	if db.abort != nil {
		// The call's statements end when its context does, or when
		// Close gives up waiting for it.
		var cancel context.CancelFunc
		cctx, cancel = context.WithCancel(ctx)
		unhook := context.AfterFunc(db.abort, cancel)
		stop = func() { unhook(); cancel() }
	}
	restore := c.withCtx(cctx)
	return c, func() {
		restore()
		stop()
		pool.put(c)
		db.closeMu.RUnlock()
	}, nil
}

// write runs fn inside one write transaction (BEGIN IMMEDIATE) on the writer
// connection: all of fn's changes commit together or none do.
func (db *DB) write(ctx context.Context, fn func(c *conn) error) (err error) {
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	c, release, err := db.acquire(ctx, db.writer)
	if err != nil {
		return err
	}
	defer release()
	if err := c.d.Begin(driver.TxWrite); err != nil {
		return db.endedByClose(wrapErr(ctx, err))
	}
	c.runsBefore = -1
	began := time.Now()
	defer func() { c.pending = nil }()
	if err := fn(c); err != nil {
		c.d.Rollback()
		db.redialAfter(c, err)
		return db.endedByClose(wrapErr(ctx, schemaErr(err)))
	}
	if err := db.extendLeases(c, time.Since(began)); err != nil {
		c.d.Rollback()
		return db.endedByClose(wrapErr(ctx, schemaErr(err)))
	}
	if err := c.d.Commit(); err != nil {
		c.d.Rollback()
		if err = wrapErr(ctx, err); errors.Is(err, ErrOutcomeUnknown) {
			return err // what Close did or not, the write may have happened
		}
		return db.endedByClose(err)
	}
	// Only now do the values this transaction stored exist for others.
	db.cache.publish(c.pending)
	return nil
}

// read runs fn inside one read transaction, so every query of fn sees the
// same snapshot of the file.
func (db *DB) read(ctx context.Context, fn func(c *conn) error) error {
	c, release, err := db.acquire(ctx, db.readers)
	if err != nil {
		return err
	}
	defer release()
	if err := c.d.Begin(driver.TxRead); err != nil {
		return db.endedByClose(wrapErr(ctx, err))
	}
	err = fn(c)
	// A read whose session ended after its last statement answered keeps
	// its answer: every row fn used came from one snapshot, which ending
	// the transaction cannot change (the next statement dials anew).
	if cerr := c.d.Commit(); cerr != nil && err == nil && !errors.Is(cerr, driver.ErrConnLost) {
		err = cerr
	}
	if err != nil {
		c.d.Rollback()
		db.redialAfter(c, err)
	}
	return db.endedByClose(wrapErr(ctx, schemaErr(err)))
}

// redialAfter replaces c's connection with a fresh one when err says SQLite
// ran out of its heap: what the failed call allocated leaves the old heap
// too fragmented for the next large value, and the handle must go on. When
// the new connection cannot be opened the old one stays.
func (db *DB) redialAfter(c *conn, err error) {
	if !errors.Is(err, driver.ErrNoMemory) {
		return
	}
	d, derr := db.b.dial(context.Background(), c.writer)
	if derr != nil {
		return
	}
	c.d.Close()
	c.d = d
}

// retryBusy retries fn while the database reports BUSY without waiting on
// its busy handler (SQLite does for some schema and journal-mode changes),
// up to the busy timeout.
func (db *DB) retryBusy(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(db.opts.BusyTimeout)
	for {
		err := fn()
		if err == nil || !errors.Is(err, driver.ErrBusy) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
