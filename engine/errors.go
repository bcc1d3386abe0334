package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/internal/driver"
)

// Sentinel errors. Every error the engine returns for bad input or a bad file
// wraps one of these (or a context error), so callers can match with
// errors.Is and still read which name or value was refused. docs/contract.md
// (§5, §7) says when each backend returns which.
var (
	// ErrClosed: the DB was closed before or during the call.
	ErrClosed = errors.New("agentstate: database is closed")
	// ErrInvalidOption: Open was given an option outside its range.
	ErrInvalidOption = errors.New("agentstate: invalid option")
	// ErrInvalidArgument: a missing or malformed argument (or Open's path).
	ErrInvalidArgument = errors.New("agentstate: invalid argument")
	// ErrNotFound: no such thing (or another owner's; Open: no directory).
	ErrNotFound = errors.New("agentstate: not found")
	// ErrConflict: the call would break a rule the database enforces.
	ErrConflict = errors.New("agentstate: conflict")
	// ErrNotAgentstate: another tool's SQLite database, or not one at all.
	ErrNotAgentstate = errors.New("agentstate: not an agentstate database")
	// ErrSchemaTooNew: the file was written by a newer agentstate.
	ErrSchemaTooNew = errors.New("agentstate: database schema is newer than this build")
	// ErrSchemaTooOld: an older schema a read-only handle cannot upgrade.
	ErrSchemaTooOld = errors.New("agentstate: database schema is older than this build")
	// ErrModeMismatch: another channel mode (see ModeMismatchError).
	ErrModeMismatch = errors.New("agentstate: channel mode mismatch")
	// ErrCorrupt: stored bytes or the file itself do not decode.
	ErrCorrupt = errors.New("agentstate: corrupt data")
	// ErrFormatTooNew: bytes of a newer agentstate (matches ErrSchemaTooNew).
	ErrFormatTooNew error = formatTooNewError{}
	// ErrReadOnly: a write on a handle opened read-only, or on a file its
	// process cannot write.
	ErrReadOnly = errors.New("agentstate: database opened read-only")
	// ErrTooLarge: past MaxValueBytes or the limits beside it, or past
	// SQLite's memory. It matches ErrInvalidArgument too.
	ErrTooLarge error = tooLargeError{}
	// ErrDiskFull: the disk or the user's quota is full; nothing written.
	ErrDiskFull = errors.New("agentstate: disk or quota full")
	// ErrBusy: a lock held past Options.BusyTimeout; nothing written.
	ErrBusy = errors.New("agentstate: database is busy")
	// ErrFileReplaced: the file was deleted or replaced under the handle;
	// writes and Close fail with it before writing: open the path again.
	ErrFileReplaced = errors.New("agentstate: database file was deleted or replaced while open")
	// ErrConnectionLost (PostgreSQL): the session ended; nothing written
	// unless also ErrOutcomeUnknown (docs/contract.md §7).
	ErrConnectionLost = errors.New("agentstate: connection to the database server lost")
	// ErrOutcomeUnknown (PostgreSQL): a COMMIT's answer never came: read
	// before retrying; test for it first (docs/contract.md §7).
	ErrOutcomeUnknown = errors.New("agentstate: outcome of the write is unknown")
	// ErrInterrupted (PostgreSQL): the server cancelled a statement; nothing
	// was written.
	ErrInterrupted = errors.New("agentstate: statement cancelled, not by the call's context (the server's statement_timeout, or pg_cancel_backend)")
)

// HeldError is the error (also ErrConflict) of an Open refused because a
// JavaScript process (the npm package in Node) has the file open: Holder
// names it. Nothing was written to the file. Every build has the type; only
// native and WASI builds return it (in the GOOS=js build the JavaScript
// host keeps processes apart).
type HeldError struct {
	Path   string // the database file
	Record string // the file beside it that records the holder
	Holder Holder
	Stale  string // advice when the holder could not be checked (another host, an unreadable record), or ""
	err    error  // the driver's error, with its message
}

// Holder is a process that has a database file open, as the record beside
// the file names it.
type Holder struct {
	Runtime string `json:"runtime"`           // "node", "native", "wasi" or "python"
	PID     int    `json:"pid,omitempty"`     // 0 when not recorded
	Host    string `json:"host,omitempty"`    // the host name it runs on
	Since   string `json:"since,omitempty"`   // when it opened the file (RFC 3339)
	Program string `json:"program,omitempty"` // its program (for Node, the script)
}

func (e *HeldError) Error() string { return ErrConflict.Error() + ": " + e.err.Error() }

// Unwrap makes a HeldError match ErrConflict and the driver's busy error.
func (e *HeldError) Unwrap() []error { return []error{ErrConflict, e.err} }

// ModeMismatchError is every ErrModeMismatch error: what the file, thread
// or export records (Mode, Every: K, 0 unless delta) and what was asked
// (WantMode, WantEvery). Its message tells a Go caller what to call; other
// front ends read the fields.
type ModeMismatchError struct {
	// Op is where the modes met: "open", "thread", "import", "convert" or
	// "converted" (docs/contract.md §5).
	Op               string
	Path             string // the file as the handle was opened
	Thread           string // the thread, for "thread" and "convert"
	Mode, WantMode   channels.Mode
	Every, WantEvery int
	Race             bool // another process recorded another mode while Open looked
}

func (e *ModeMismatchError) Error() string {
	what, want := describeMode(e.Mode, e.Every), describeMode(e.WantMode, e.WantEvery)
	switch e.Op {
	case "thread":
		return fmt.Sprintf("%v: thread %q of %s is in %s and this handle is in %s; convert the thread with db.ConvertThread(ctx, %q, %q)",
			ErrModeMismatch, e.Thread, e.Path, what, want, e.Thread, e.WantMode)
	case "import":
		if e.Thread != "" {
			return fmt.Sprintf("%v: thread %q of the export is in %s and %s is in %s, so this file could not write it; convert the thread in the source (db.ConvertThread(ctx, %q, %q)) and export it again",
				ErrModeMismatch, e.Thread, what, e.Path, want, e.Thread, e.WantMode)
		}
		return fmt.Sprintf("%v: the export is in %s and %s is in %s; import it into a new file (ImportFile creates one in the export's mode), or convert the file first with engine.ConvertFile(ctx, %q, nil, %q, %d)",
			ErrModeMismatch, want, e.Path, what, e.Path, e.WantMode, e.convertK())
	case "converted":
		return fmt.Sprintf("%v: %s was converted to %s by another handle after this one opened it in %s; close this handle and open the file again (Options.Mode = channels.ModeAuto adopts the file's mode)",
			ErrModeMismatch, e.Path, what, want)
	case "convert":
		return fmt.Sprintf("%v: thread %q cannot become a delta thread in %s, which is in %s (it could not read it back); convert the whole file with engine.ConvertFile(ctx, %q, nil, %q, %d)",
			ErrModeMismatch, e.Thread, e.Path, what, e.Path, e.WantMode, e.convertK())
	}
	if e.Race {
		return fmt.Sprintf("%v: %s was just created in %s by another process, not in %s; open it with Options.Mode = channels.ModeAuto to adopt the file's mode",
			ErrModeMismatch, e.Path, what, want)
	}
	hint := fmt.Sprintf("Mode %q", e.Mode)
	if e.Mode == channels.ModeDelta {
		hint += fmt.Sprintf(" and SnapshotEvery %d", e.Every)
	}
	return fmt.Sprintf("%v: %s was written in %s, not %s; open it with Options.Mode = channels.ModeAuto (the mode the file records) or %s, or convert it first with engine.ConvertFile(ctx, %q, nil, %q, %d)",
		ErrModeMismatch, e.Path, what, want, hint, e.Path, e.WantMode, e.convertK())
}

// modeMismatch builds a ModeMismatchError; K is kept only for delta modes.
func modeMismatch(op, path, thread string, mode channels.Mode, every int, wantMode channels.Mode, wantEvery int) *ModeMismatchError {
	if mode != channels.ModeDelta {
		every = 0
	}
	if wantMode != channels.ModeDelta {
		wantEvery = 0
	}
	return &ModeMismatchError{Op: op, Path: path, Thread: thread, Mode: mode, Every: every, WantMode: wantMode, WantEvery: wantEvery}
}

// convertK is the K argument of a suggested ConvertFile call: the wanted
// K, or the default for a conversion to full mode (which ignores it).
func (e *ModeMismatchError) convertK() int {
	if e.WantEvery > 0 {
		return e.WantEvery
	}
	return DefaultOptions().SnapshotEvery
}

// Is makes errors.Is(err, ErrModeMismatch) hold.
func (e *ModeMismatchError) Is(target error) bool { return target == ErrModeMismatch }

type tooLargeError struct{}

func (tooLargeError) Error() string { return "agentstate: too large" }

func (tooLargeError) Is(target error) bool { return target == ErrInvalidArgument }

type formatTooNewError struct{}

func (formatTooNewError) Error() string {
	return "agentstate: data written by a newer agentstate (a format this build does not read; upgrade agentstate)"
}

func (formatTooNewError) Is(target error) bool { return target == ErrSchemaTooNew }

// undecodable is the sentinel of stored bytes that did not decode with
// err: ErrFormatTooNew when a newer build wrote them (codec.ErrUnsupported),
// ErrCorrupt otherwise.
func undecodable(err error) error {
	if errors.Is(err, codec.ErrUnsupported) {
		return ErrFormatTooNew
	}
	return ErrCorrupt
}

// ctxEnded is ctx's error, or context.DeadlineExceeded once its deadline
// has passed though its timer has not fired yet: a network deadline taken
// from the context (a dial's) can fire first, and a call that the
// context's deadline ended must say so, not that the server cancelled it.
func ctxEnded(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// wrapErr turns the driver's errors into the engine's: an interrupt caused
// by a done context matches ctx.Err(), and so does a BUSY once the context
// is done (the busy handler stops waiting for a lock when the context ends,
// and the database then reports BUSY); damage matches ErrCorrupt. Other
// errors pass through with what the database said.
func wrapErr(ctx context.Context, err error) error {
	if errors.Is(err, codec.ErrTooLarge) && !errors.Is(err, ErrTooLarge) {
		// A stored value a reader refused to inflate or decode: the
		// codec's limits are the engine's, and no writer of the engine
		// stores such a value (so it is damage, not a bad argument).
		if !errors.Is(err, ErrCorrupt) {
			err = fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return fmt.Errorf("%w: a stored value inflates past MaxListBytes (%d bytes) or would decode to more than codec.MaxCost (%d): %w", ErrTooLarge, MaxListBytes, codec.MaxCost, err)
	}
	if err == nil || errors.Is(err, ErrCorrupt) {
		return err
	}
	if errors.Is(err, driver.ErrOutcomeUnknown) && !errors.Is(err, ErrOutcomeUnknown) {
		// Said first: it must not read as a call that did nothing. It
		// matches what ended the wait too (the context's error, or a lost
		// connection).
		switch cerr := ctxEnded(ctx); {
		case cerr != nil:
			return fmt.Errorf("%w (%w): the server may or may not have committed it: %v", ErrOutcomeUnknown, cerr, err)
		case errors.Is(err, driver.ErrConnLost):
			return fmt.Errorf("%w (%w): the server may or may not have committed it: %v", ErrOutcomeUnknown, ErrConnectionLost, err)
		}
		return fmt.Errorf("%w: the server may or may not have committed it: %v", ErrOutcomeUnknown, err)
	}
	// A connection lost once the context ended is the context's doing on
	// PostgreSQL: its watcher cuts a connection whose call outlives it.
	if cerr := ctxEnded(ctx); cerr != nil && (errors.Is(err, driver.ErrInterrupted) || errors.Is(err, driver.ErrBusy) || errors.Is(err, driver.ErrConnLost) || errors.Is(err, cerr)) {
		if errors.Is(err, cerr) {
			return err
		}
		return fmt.Errorf("%w (%v)", cerr, err)
	}
	if errors.Is(err, driver.ErrCorrupt) {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if errors.Is(err, driver.ErrNoMemory) {
		return fmt.Errorf("%w: %w: the call writes more large values in one transaction than SQLite holds (see MaxCallBytes)", ErrTooLarge, err)
	}
	if errors.Is(err, driver.ErrReplaced) && !errors.Is(err, ErrFileReplaced) {
		return fmt.Errorf("%w: %w", ErrFileReplaced, err)
	}
	if errors.Is(err, driver.ErrFull) && !errors.Is(err, ErrDiskFull) {
		return fmt.Errorf("%w: %w", ErrDiskFull, err)
	}
	if errors.Is(err, driver.ErrReadOnly) && !errors.Is(err, ErrReadOnly) {
		return fmt.Errorf("%w: %w", ErrReadOnly, err)
	}
	if errors.Is(err, driver.ErrBusy) && !errors.Is(err, ErrBusy) {
		return fmt.Errorf("%w: another connection held the lock past the busy timeout: %w", ErrBusy, err)
	}
	if errors.Is(err, driver.ErrValue) && !errors.Is(err, ErrInvalidArgument) {
		return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	if errors.Is(err, driver.ErrConnLost) && !errors.Is(err, ErrConnectionLost) {
		return fmt.Errorf("%w: %w", ErrConnectionLost, err)
	}
	if errors.Is(err, driver.ErrInterrupted) && !errors.Is(err, ErrInterrupted) {
		return fmt.Errorf("%w: %w", ErrInterrupted, err)
	}
	return err
}

// openError is an error of Open on path: its message names the path once
// and says "agentstate:" once, however many layers of the engine's own
// errors (each "agentstate: ...") it wraps.
type openError struct {
	path string
	err  error
}

func openErr(path string, err error) error { return &openError{path, err} }

func (e *openError) Error() string {
	return "agentstate: open " + e.path + ": " + strings.TrimPrefix(e.err.Error(), "agentstate: ")
}

func (e *openError) Unwrap() error { return e.err }
