//go:build js || (wasip1 && hostsqlite)

// SQLite's result codes and the engine's errors they map to.

package hostsqlite

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/agentstate/agentstate/engine/internal/driver"
)

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
	extReadOnlyDBMoved  = codeReadOnly | 4<<8
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
	// SQLite's own code for a write to a file that moved; the Python host
	// also returns it when a write transaction finds its file deleted or
	// replaced, or its write-ahead log deleted.
	case err.Extended == extReadOnlyDBMoved:
		kind = driver.ErrReplaced
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
