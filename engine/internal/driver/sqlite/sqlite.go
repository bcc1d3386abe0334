// Package sqlite is the engine's driver for SQLite through ncruces/go-sqlite3
// (SQLite translated to Go, no cgo): the driver of native and WASI builds.
//
// Besides driver.Conn it offers what only an SQLite file has (the raw
// connection for PRAGMAs, backups and VFS tricks) and private in-memory
// databases shared by the connections of one handle.
package sqlite

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/ext/serdes"
	"github.com/ncruces/go-sqlite3/util/vfsutil"
	"github.com/ncruces/go-sqlite3/vfs"
	"github.com/ncruces/go-sqlite3/vfs/memdb"
)

// Options say how to open one connection.
type Options struct {
	ReadOnly    bool
	Create      bool // create the file if it is missing (ignored when ReadOnly)
	BusyTimeout time.Duration
	Funcs       []driver.Func
}

// Conn is one SQLite connection with its cache of prepared statements. The
// engine's SQL text is constant, so the cache stays small.
type Conn struct {
	c     *sqlite3.Conn
	stmts map[string]*sqlite3.Stmt
	busy  time.Duration
	// The identity of the open file and its name, for replaced; noFile
	// once known to have none.
	ident  os.FileInfo
	name   string
	noFile bool
	wal    statFile // the write-ahead log's file, once looked up
}

var _ driver.Conn = (*Conn)(nil)

// Open opens one connection to name: a path or a "file:" URI. A path
// opens through the driver's VFS (see osVFSName). A read-only connection
// to a file whose directory cannot be written (a read-only file system, a
// backup, a mounted image) works when the file's -wal and -shm exist, or
// when the file has no write-ahead log to read: it is then opened
// immutable, without locks or log, which is safe because nobody can write
// a WAL-mode file whose -shm cannot be created (see Options.ReadOnly of
// the engine). A read-write connection there fails with ErrReadOnly.
func Open(name string, o Options) (*Conn, error) {
	if strings.HasPrefix(name, "file:") || name == ":memory:" || !haveOSVFS {
		return open(name, o)
	}
	c, err := open(fileURI(name, nil), o)
	if err != nil {
		return nil, err
	}
	// The first read opens the -wal and -shm files: try it now, so that
	// a medium we cannot write is handled here, not in the engine's first
	// statement.
	perr := c.probe()
	if perr == nil || !(errors.Is(perr, sqlite3.CANTOPEN) || errors.Is(perr, sqlite3.READONLY)) {
		if perr != nil {
			c.Close()
			return nil, classify(perr)
		}
		return c, nil
	}
	c.Close()
	if !o.ReadOnly {
		return nil, &driver.Error{Kind: driver.ErrReadOnly, Err: fmt.Errorf(
			"%s cannot be written here (a read-only file system, or a directory or file without write permission): %w; open it read-only", name, perr)}
	}
	if fi, err := os.Stat(name + "-wal"); err == nil && fi.Size() > 0 {
		return nil, &driver.Error{Kind: driver.ErrReadOnly, Err: fmt.Errorf(
			"%s: its write-ahead log %s-wal holds commits that cannot be read without creating %s-shm, and the directory cannot be written (%w); copy the files to a writable directory",
			name, name, name, perr)}
	}
	return open(fileURI(name, url.Values{"immutable": {"1"}}), o)
}

// fileURI is the URI of path through the driver's VFS, with params.
func fileURI(path string, params url.Values) string {
	if params == nil {
		params = url.Values{}
	}
	params.Set("vfs", osVFSName)
	u := url.URL{Scheme: "file", OmitHost: true, Path: filepath.ToSlash(path), RawQuery: params.Encode()}
	return u.String()
}

// probe reads the schema version, which opens the write-ahead log.
func (c *Conn) probe() error {
	st, _, err := c.c.Prepare("PRAGMA schema_version")
	if err != nil {
		return err
	}
	defer st.Close()
	st.Step()
	return st.Err()
}

func open(name string, o Options) (*Conn, error) {
	flags := sqlite3.OPEN_READWRITE
	if o.ReadOnly {
		flags = sqlite3.OPEN_READONLY
	} else if o.Create {
		flags |= sqlite3.OPEN_CREATE
	}
	if strings.HasPrefix(name, "file:") {
		flags |= sqlite3.OPEN_URI
	}
	sc, err := sqlite3.OpenFlags(name, flags)
	if err != nil {
		return nil, classify(err)
	}
	c := &Conn{c: sc, stmts: make(map[string]*sqlite3.Stmt), busy: o.BusyTimeout}
	if err := sc.BusyTimeout(o.BusyTimeout); err != nil {
		c.Close()
		return nil, classify(err)
	}
	for _, f := range o.Funcs {
		if err := sc.CreateFunction(f.Name, f.NArg, sqlite3.DETERMINISTIC|sqlite3.INNOCUOUS, scalar(f)); err != nil {
			c.Close()
			return nil, classify(err)
		}
	}
	return c, nil
}

// NewMemory creates a private in-memory database and returns the name to
// Open its connections with; DeleteMemory frees it once they are closed.
func NewMemory() (id, name string) { return NewMemoryFrom(nil) }

// NewMemoryFrom is NewMemory with data (the bytes of a database file, which
// it takes) as the database's first contents.
func NewMemoryFrom(data []byte) (id, name string) {
	// memdb names its databases without the slash that makes a URI path
	// shared between connections.
	id = "agentstate-" + rand.Text()
	memdb.Create(id, data)
	return id, "file:/" + id + "?vfs=memdb"
}

// Serialize copies the database schema ("main") into bytes, from the
// connection's transaction when it has one (SQLite's backup of the
// connection's own pages).
func (c *Conn) Serialize(schema string) ([]byte, error) {
	b, err := serdes.Serialize(c.c, schema)
	if err != nil {
		return nil, classify(err)
	}
	return b, nil
}

// DeleteMemory frees an in-memory database made by NewMemory.
func DeleteMemory(id string) { memdb.Delete(id) }

// Raw returns the ncruces connection, for what only SQLite has.
func (c *Conn) Raw() *sqlite3.Conn { return c.c }

// Close closes the statements and the connection; it reports ErrReplaced
// (after closing) when the file was deleted or replaced while open.
func (c *Conn) Close() error {
	replaced := c.replaced()
	if replaced != nil {
		c.evacuate()
	}
	for _, s := range c.stmts {
		s.Close()
	}
	c.stmts = nil
	if err := classify(c.c.Close()); err != nil {
		return err
	}
	return replaced
}

// statFile is a VFS file over an *os.File (ncruces' OS VFS).
type statFile interface {
	vfs.File
	Stat() (os.FileInfo, error)
}

// replaced compares the file this connection has open with the one at its
// name now (device and inode, as the VFS's SQLITE_FCNTL_HAS_MOVED does),
// and returns an ErrReplaced error when they differ or the name is gone.
// The open file's identity is read once; each check then costs one stat of
// the path. A database without a file (in memory) is never replaced; a
// check that cannot be made (a permission error on the directory) passes.
func (c *Conn) replaced() error {
	if c.ident == nil {
		if c.noFile {
			return nil
		}
		c.noFile = true
		f, err := c.c.FileControl("main", sqlite3.FCNTL_FILE_POINTER)
		if err != nil {
			return nil
		}
		file, ok := f.(vfs.File)
		if !ok {
			return nil
		}
		// ncruces wraps the OS file in its checksum shim.
		osf, ok := vfsutil.UnwrapFile[statFile](file)
		if !ok {
			return nil
		}
		fi, err := osf.Stat()
		if err != nil {
			return nil
		}
		c.ident, c.name, c.noFile = fi, c.c.Filename("main").String(), false
	}
	pi, err := os.Stat(c.name)
	if err == nil && os.SameFile(c.ident, pi) || err != nil && !errors.Is(err, fs.ErrNotExist) {
		if c.walUnlinked() {
			return &driver.Error{Kind: driver.ErrReplaced,
				Err: fmt.Errorf("%s-wal, the write-ahead log of %s, was deleted while open: commits would go to a file nobody else can see and be lost with this process", c.name, c.name)}
		}
		return nil
	}
	return &driver.Error{Kind: driver.ErrReplaced,
		Err: fmt.Errorf("%s was deleted, or another file was moved over it, after it was opened", c.name)}
}

// walUnlinked reports that the write-ahead log this connection has open
// has no name left (someone deleted it, or moved another file over it): one
// fstat. Its commits are then in a file only this process sees; other
// processes start another log and fail to open the database.
func (c *Conn) walUnlinked() bool {
	if c.wal == nil {
		f, err := c.c.FileControl("main", sqlite3.FCNTL_JOURNAL_POINTER)
		if err != nil {
			return false
		}
		file, ok := f.(vfs.File)
		if !ok {
			return false
		}
		if c.wal, ok = vfsutil.UnwrapFile[statFile](file); !ok {
			c.wal = nil
			return false
		}
	}
	fi, err := c.wal.Stat()
	if err != nil {
		c.wal = nil // closed and reopened: look it up again next time
		return false
	}
	return links(fi) == 0
}

// prepare returns the cached statement for q, reset, with args bound.
func (c *Conn) prepare(q string, args []any) (*sqlite3.Stmt, error) {
	st, ok := c.stmts[q]
	if !ok {
		var tail string
		var err error
		st, tail, err = c.c.Prepare(q)
		if err != nil {
			if err := c.classify(err); !errors.Is(err, sqlite3.ERROR) || errors.Is(err, driver.ErrCorrupt) {
				return nil, err
			}
			return nil, &driver.Error{Kind: driver.ErrSchema, Err: err}
		}
		if st == nil {
			return nil, fmt.Errorf("agentstate: internal: no statement in %q", q)
		}
		if tail != "" {
			st.Close()
			return nil, fmt.Errorf("agentstate: internal: more than one statement in %q", q)
		}
		c.stmts[q] = st
	}
	if err := bind(st, args); err != nil {
		st.Reset()
		return nil, err
	}
	return st, nil
}

func bind(st *sqlite3.Stmt, args []any) error {
	st.ClearBindings()
	for i, a := range args {
		p := i + 1
		var err error
		switch v := a.(type) {
		case nil:
			err = st.BindNull(p)
		case string:
			err = st.BindText(p, v)
		case []byte:
			if v == nil {
				err = st.BindNull(p)
			} else {
				err = st.BindBlob(p, v)
			}
		case int:
			err = st.BindInt64(p, int64(v))
		case int64:
			err = st.BindInt64(p, v)
		case float64:
			err = st.BindFloat(p, v)
		case bool:
			err = st.BindBool(p, v)
		case *string:
			if v == nil {
				err = st.BindNull(p)
			} else {
				err = st.BindText(p, *v)
			}
		default:
			return fmt.Errorf("agentstate: internal: cannot bind %T", a)
		}
		if err != nil {
			return classify(err)
		}
	}
	return nil
}

// Exec implements driver.Conn.
func (c *Conn) Exec(q string, args ...any) (_ int64, err error) {
	defer c.recoverPanic(&err)
	st, err := c.prepare(q, args)
	if err != nil {
		return 0, err
	}
	err = st.Exec()
	st.Reset()
	if err != nil {
		return 0, c.classify(err)
	}
	return c.c.Changes(), nil
}

// Queue implements driver.Conn: an SQLite statement costs no round trip,
// so it runs at once.
func (c *Conn) Queue(q string, args ...any) error {
	_, err := c.Exec(q, args...)
	return err
}

// Query implements driver.Conn.
func (c *Conn) Query(q string, args []any, fn func(driver.Row) error) (err error) {
	defer c.recoverPanic(&err)
	st, err := c.prepare(q, args)
	if err != nil {
		return err
	}
	defer st.Reset()
	r := row{st}
	for st.Step() {
		if err := fn(r); err != nil {
			return err
		}
	}
	return c.classify(st.Err())
}

// ExecScript implements driver.Conn: statements are split by SQLite's own
// parser. A statement SQLite refuses to prepare (ALTER TABLE ... ADD COLUMN
// of a column that exists) is shown to before up to its semicolon.
func (c *Conn) ExecScript(script string, before func(stmt string) (skip bool, err error)) (err error) {
	defer c.recoverPanic(&err)
	rest := script
	for strings.TrimSpace(rest) != "" {
		st, tail, err := c.c.Prepare(rest)
		text := rest[:len(rest)-len(tail)]
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
					st.Close()
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
				st.Close()
			}
			return c.classify(err)
		}
		err = st.Exec()
		st.Close()
		if err != nil {
			return c.classify(err)
		}
		rest = tail
	}
	return nil
}

// Begin implements driver.Conn: a write transaction takes SQLite's write
// lock at once (BEGIN IMMEDIATE), so writers are serial, and then checks
// that the file is still the one at its name (two stats), so that nothing
// is written to a deleted or replaced file.
func (c *Conn) Begin(kind driver.TxKind) error {
	q := "BEGIN"
	if kind == driver.TxWrite {
		q = "BEGIN IMMEDIATE"
	}
	if _, err := c.Exec(q); err != nil {
		if kind == driver.TxWrite {
			// SQLite may notice first, as a bare I/O error.
			if rerr := c.replaced(); rerr != nil {
				c.evacuate()
				return rerr
			}
		}
		return err
	}
	if kind == driver.TxWrite {
		if err := c.replaced(); err != nil {
			c.Rollback()
			c.evacuate()
			return err
		}
	}
	return nil
}

// evacuate runs when the file was found deleted or replaced. The commits
// in the write-ahead log belong to the file this connection has open, but
// the log is found by name: the file now at the name (or one created there
// later) would take them for its own and be corrupted. So they are copied
// into the file they belong to (wherever it went) and the log is emptied.
// Other connections get a second to finish their reads; SQLite itself does
// not checkpoint a moved file on close. What this cannot undo: a process
// that opened the new file at the name before this connection noticed
// shares the log with it, and its view already held these commits.
func (c *Conn) evacuate() {
	c.c.BusyTimeout(time.Second)
	c.c.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	c.c.BusyTimeout(c.busy)
}

// Commit implements driver.Conn.
func (c *Conn) Commit() error { _, err := c.Exec("COMMIT"); return err }

// Rollback implements driver.Conn; it runs even when the context of the
// call that opened the transaction is done.
func (c *Conn) Rollback() error {
	if c.c.GetAutocommit() {
		return nil
	}
	old := c.c.SetInterrupt(context.Background())
	defer c.c.SetInterrupt(old)
	_, err := c.Exec("ROLLBACK")
	return err
}

// InTx implements driver.Conn.
func (c *Conn) InTx() bool { return !c.c.GetAutocommit() }

// Lock implements driver.Conn: SQLite has one writer, so write transactions
// are serial already.
func (c *Conn) Lock(string) error { return nil }

// Interrupt implements driver.Conn.
func (c *Conn) Interrupt(ctx context.Context) func() {
	old := c.c.SetInterrupt(ctx)
	return func() { c.c.SetInterrupt(old) }
}

type row struct{ st *sqlite3.Stmt }

func (r row) Columns() int        { return r.st.ColumnCount() }
func (r row) Null(i int) bool     { return r.st.ColumnType(i) == sqlite3.NULL }
func (r row) Int64(i int) int64   { return r.st.ColumnInt64(i) }
func (r row) Float(i int) float64 { return r.st.ColumnFloat(i) }
func (r row) Text(i int) string   { return r.st.ColumnText(i) }
func (r row) Blob(i int) []byte   { return r.st.ColumnRawBlob(i) }

type value struct{ v sqlite3.Value }

func (v value) Null() bool   { return v.v.Type() == sqlite3.NULL }
func (v value) Int64() int64 { return v.v.Int64() }
func (v value) Text() string { return v.v.Text() }
func (v value) Blob() []byte { return v.v.RawBlob() }

func scalar(f driver.Func) sqlite3.ScalarFunction {
	auxArg := f.NArg - 1
	return func(ctx sqlite3.Context, arg ...sqlite3.Value) {
		vals := make([]driver.Value, len(arg))
		for i, a := range arg {
			vals[i] = value{a}
		}
		var aux any
		if auxArg >= 0 {
			aux = ctx.GetAuxData(auxArg)
		}
		res, err := f.Call(&aux, vals)
		if err != nil {
			ctx.ResultError(err)
			return
		}
		if auxArg >= 0 && aux != nil {
			ctx.SetAuxData(auxArg, aux)
		}
		switch v := res.(type) {
		case nil:
			ctx.ResultNull()
		case bool:
			ctx.ResultBool(v)
		case int64:
			ctx.ResultInt64(v)
		case string:
			ctx.ResultText(v)
		case []byte:
			ctx.ResultBlob(v)
		default:
			ctx.ResultError(fmt.Errorf("agentstate: internal: function %s returned %T", f.Name, res))
		}
	}
}

// recoverPanic, deferred by every call that runs SQL, turns a panic of
// ncruces into an error. ncruces panics instead of returning an error when
// SQLite runs out of its WebAssembly heap ("sqlite3: out of memory"; 256
// MiB per connection) and on its own assertions; the engine bounds what it
// stores so that this should not happen, and a host process (a browser tab,
// an edge function) must not die when it does. The connection's statements
// are reset, so the next call can bind them again. Any other panic (one of
// the engine's own row callbacks) is not ours to hide and goes on.
func (c *Conn) recoverPanic(err *error) {
	p := recover()
	if p == nil {
		return
	}
	perr, ok := p.(error)
	if !ok || !strings.HasPrefix(perr.Error(), "sqlite3: ") {
		panic(p)
	}
	for _, st := range c.stmts {
		func() {
			// Resetting a statement whose step failed reports the
			// failure again, as a panic for out of memory.
			defer func() { recover() }()
			st.Reset()
		}()
	}
	kind := driver.ErrNoMemory
	if !strings.Contains(perr.Error(), "out of memory") {
		*err = fmt.Errorf("agentstate: the SQLite driver failed: %w", perr)
		return
	}
	*err = &driver.Error{Kind: kind, Err: perr}
}

// classify is the package's classify, and for a full disk it adds which
// file and what the system said, which ncruces does not keep.
func (c *Conn) classify(err error) error {
	err = classify(err)
	if errors.Is(err, driver.ErrFull) {
		if cause := fullCause(c.c.Filename("main").String()); cause != nil {
			err = &driver.Error{Kind: driver.ErrFull, Err: fmt.Errorf("%w: %w", err.(*driver.Error).Err, cause)}
		}
	}
	return err
}

// classify wraps an ncruces error with the driver's kind of it.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var kind error
	switch {
	case errors.Is(err, sqlite3.BUSY), errors.Is(err, sqlite3.LOCKED):
		kind = driver.ErrBusy
	case errors.Is(err, sqlite3.INTERRUPT):
		kind = driver.ErrInterrupted
	case errors.Is(err, sqlite3.CONSTRAINT_UNIQUE), errors.Is(err, sqlite3.CONSTRAINT_PRIMARYKEY):
		kind = driver.ErrUnique
	case errors.Is(err, sqlite3.CONSTRAINT):
		kind = driver.ErrConstraint
	// IOERR_DATA is a page whose checksum does not match (SQLite's checksum
	// VFS shim); a damaged schema-format byte in the header is a plain
	// ERROR with this text.
	case errors.Is(err, sqlite3.CORRUPT), errors.Is(err, sqlite3.NOTADB), errors.Is(err, sqlite3.IOERR_DATA),
		errors.Is(err, sqlite3.ERROR) && strings.Contains(err.Error(), "unsupported file format"):
		kind = driver.ErrCorrupt
	case errors.Is(err, sqlite3.FULL):
		kind = driver.ErrFull
	case errors.Is(err, sqlite3.READONLY):
		kind = driver.ErrReadOnly
	default:
		return err
	}
	return &driver.Error{Kind: kind, Err: err}
}
