// Package driver is the storage seam under the engine: the few things the
// engine's surfaces need from a database, so that SQLite (ncruces, native
// and WASI), SQLite provided by a JavaScript host, and PostgreSQL can each
// sit behind it.
//
// A driver provides connections (Conn) that run one statement at a time,
// rows (Row) read by column index, and errors classified by the kinds below,
// so that the engine maps them to its own typed errors without knowing the
// driver. SQL text is the engine's: a driver receives it already in its
// dialect.
//
// What a driver must guarantee, beyond running SQL:
//
//   - A write transaction (Begin(TxWrite)) is serialisable with every other
//     write transaction on the same database, from this process or another:
//     SQLite gets this from its single writer; a driver whose server runs
//     writers concurrently must serialise them for the same lock keys the
//     engine names with Conn.Lock before it writes (one thread's checkpoints,
//     its event counter, its active run). The engine's invariants (one
//     active run per thread, gap-free event seq, a parent's writes sealed by
//     exactly one child) rest on this.
//   - A read transaction (Begin(TxRead)) sees one committed snapshot for all
//     of its statements.
//   - A statement interrupted by Conn.Interrupt's context fails with an
//     error of kind ErrInterrupted (or ErrBusy while waiting for a lock).
//   - A full disk or quota is reported as ErrFull, and a medium the
//     process cannot write as ErrReadOnly, each with what the system said
//     (for a file, its path); reading needs no write access where the
//     database can be read without it (for SQLite: a read-only file
//     system, a backup).
//   - A write transaction on a database that is no longer the one the
//     connection opened fails with ErrReplaced before writing anything,
//     and so does Close: for a file, when it was deleted or another file
//     was moved over its name since the connection opened it (writing on
//     would go to a file nobody can open again, and its write-ahead log,
//     found by name, would be applied to the other file). A server
//     database cannot be replaced under a session; its driver has nothing
//     to check.
//   - A handle that owns runs can show that it is alive without writing to
//     the database (Liveness), where the driver has a way to: a lease
//     written to the database can only be renewed by writing, so a long
//     write by another process or a starved CPU would otherwise make a
//     live owner look dead. SQLite files use a lock file per owner beside
//     the database; a server database would use a lock its sessions hold
//     (PostgreSQL: a session-level advisory lock on a hash of the owner,
//     probed with pg_try_advisory_lock from another session).
package driver

import (
	"context"
	"errors"
)

// Error kinds. A driver's errors wrap one of these (errors.Is) beside the
// driver's own error, whose text they keep.
var (
	// ErrBusy: a lock could not be taken before the busy timeout.
	ErrBusy = errors.New("database is busy")
	// ErrInterrupted: the statement was stopped by its context.
	ErrInterrupted = errors.New("statement interrupted")
	// ErrConstraint: a constraint (unique, foreign key, check) was violated.
	ErrConstraint = errors.New("constraint violated")
	// ErrUnique: a unique or primary key constraint was violated (also ErrConstraint).
	ErrUnique = errors.New("unique constraint violated")
	// ErrCorrupt: the stored bytes are damaged, or the store is not a database.
	ErrCorrupt = errors.New("database is damaged")
	// ErrSchema: the SQL names a table or column the database does not have.
	// The engine's SQL is constant, so this means the schema was damaged or
	// edited by hand.
	ErrSchema = errors.New("schema does not match")
	// ErrFull: the disk or a size quota is full.
	ErrFull = errors.New("database or disk is full")
	// ErrReadOnly: the database or its medium cannot be written.
	ErrReadOnly = errors.New("database is read-only")
	// ErrNoMemory: the database ran out of the memory it may use. A
	// driver whose library panics then (ncruces/go-sqlite3 does) recovers
	// and returns this, with the statement reset and the connection usable;
	// the caller rolls back.
	ErrNoMemory = errors.New("database is out of memory")
	// ErrReplaced: the database file was deleted, or another file was
	// moved over its name, since the connection opened it.
	ErrReplaced = errors.New("database file was deleted or replaced")
	// ErrValue: a value the database cannot store as given (PostgreSQL
	// text holds no NUL byte and only valid UTF-8, where SQLite text holds
	// any bytes). The engine reports it as a refused argument.
	ErrValue = errors.New("value cannot be stored")
	// ErrConnLost: the connection to a database server failed or was
	// ended by the server (a restart, a failover, a terminated session, a
	// network error). Nothing of the current transaction committed,
	// unless the error is also ErrOutcomeUnknown.
	ErrConnLost = errors.New("connection to the database server lost")
	// ErrOutcomeUnknown: COMMIT was sent and no answer came (the context
	// ended, the connection broke): the transaction may have committed or
	// not. The error also wraps what broke it.
	ErrOutcomeUnknown = errors.New("outcome of the commit is unknown")
)

// Error is a driver error: a kind and the driver's own error.
type Error struct {
	Kind error
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap exposes both the kind and the driver's error to errors.Is/As; a
// unique violation is a constraint violation too.
func (e *Error) Unwrap() []error {
	if e.Kind == ErrUnique {
		return []error{e.Kind, ErrConstraint, e.Err}
	}
	return []error{e.Kind, e.Err}
}

// TxKind says what a transaction may do.
type TxKind int

const (
	// TxRead: a read-only transaction on one snapshot.
	TxRead TxKind = iota
	// TxWrite: a write transaction, serialised with every other writer.
	TxWrite
)

// Conn is one connection. It is used by one goroutine at a time.
type Conn interface {
	// Exec runs one statement that returns no rows and reports how many
	// rows it inserted, updated or deleted.
	Exec(query string, args ...any) (changed int64, err error)
	// Queue runs a statement of the current transaction whose outcome the
	// caller needs only as the transaction's: a driver may send it with the
	// transaction's next statement or its commit, and its error (an error
	// of the bound values is reported at once) then comes from that call.
	// A driver without a network round trip to save runs it at once.
	Queue(query string, args ...any) error
	// Query runs one statement and calls fn for each row, in order, until
	// fn returns an error (which Query returns). fn must not keep a byte
	// slice of a row past its return.
	Query(query string, args []any, fn func(Row) error) error
	// ExecScript runs the statements of script (a migration file) in
	// order and stops at the first error. before, if not nil, sees each
	// statement's text first and may skip it or fail the script.
	ExecScript(script string, before func(stmt string) (skip bool, err error)) error

	// Begin starts a transaction; Commit and Rollback end it. InTx reports
	// whether one is open.
	Begin(kind TxKind) error
	Commit() error
	Rollback() error
	InTx() bool
	// Lock serialises the rest of the current write transaction with every
	// other write transaction that locks the same key (see the package
	// comment). A driver whose write transactions are already serial does
	// nothing.
	Lock(key string) error

	// Interrupt makes statements fail with ErrInterrupted once ctx is done,
	// until the returned function restores the previous context.
	Interrupt(ctx context.Context) (restore func())
	Close() error
}

// Row is the current row of a Query. Column indexes start at 0. Reading a
// column as another type converts it the way the database does; NULL reads
// as zero, "" or nil.
type Row interface {
	Columns() int
	Null(i int) bool
	Int64(i int) int64
	Float(i int) float64
	Text(i int) string
	// Blob returns the column's bytes (of a blob or a text), valid until the
	// row callback returns; nil for NULL.
	Blob(i int) []byte
}

// Value is an argument of a Func.
type Value interface {
	Null() bool
	Int64() int64
	Text() string
	// Blob is valid until the function returns.
	Blob() []byte
}

// Func is a deterministic scalar function of the engine that a driver
// able to call Go from SQL makes available to its statements. Drivers that
// cannot (a database server) must not receive SQL that calls one: the
// engine gives them other SQL for the same question.
type Func struct {
	Name string
	NArg int
	// Call computes the result for one row: nil (NULL), bool, int64,
	// string or []byte. aux persists across the rows of one statement, for
	// work that depends only on constant arguments (a compiled filter).
	Call func(aux *any, args []Value) (any, error)
}

// Presence is what a Liveness probe knows about an owner.
type Presence int

const (
	// PresenceUnknown: no sign either way (the owner never held a
	// liveness lock here, or released it on close); the engine falls back
	// to the owner's lease.
	PresenceUnknown Presence = iota
	// PresenceAlive: a live process holds the owner's lock right now.
	PresenceAlive
	// PresenceGone: the owner's lock exists but nobody holds it: the
	// process that took it ended without releasing it (killed, crashed).
	PresenceGone
)

// Liveness lets a handle show other processes that it is alive without
// taking the database's write lock, and lets them probe without blocking.
// The guarantee: while a Hold has not been released and the process lives,
// Probe of that owner, from any process or handle that can open the
// database, returns PresenceAlive, whatever the holder's CPU share or the
// database's locks; once the process ends, by any means, the hold ends
// with it. A hold can be lost from outside while its process lives (a
// server restart, failover or idle_session_timeout ends the session that
// held it; someone deletes the lock file): Hold.Check finds that out and
// takes it again, and the engine calls it before every lease renewal, so
// that a live owner is never without its hold for longer than that. A
// driver that cannot give this returns no Liveness, and the engine relies
// on leases alone.
type Liveness interface {
	// Hold marks owner as alive until the hold is released or the
	// process ends. ctx bounds the taking, not the hold.
	Hold(ctx context.Context, owner string) (Hold, error)
	// Probe reports what is known about owner without waiting for the
	// owner (ctx bounds the question to the server).
	Probe(ctx context.Context, owner string) (Presence, error)
}

// Hold is one owner's liveness hold.
type Hold interface {
	// Check makes sure the hold is still in force, taking it again if it
	// was lost; an error says it is not held now (the next Check tries
	// again).
	Check(ctx context.Context) error
	// Release ends the hold for good; Check does nothing after it.
	Release() error
}
