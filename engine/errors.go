package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentstate/agentstate/engine/internal/driver"
)

// Sentinel errors. Every error the engine returns for bad input or a bad file
// wraps one of these (or a context error), so callers can match with
// errors.Is and still read which name or value was refused.
var (
	// ErrClosed: the DB was closed before or during the call.
	ErrClosed = errors.New("agentstate: database is closed")
	// ErrInvalidOption: Open was given an option outside its range.
	ErrInvalidOption = errors.New("agentstate: invalid option")
	// ErrInvalidArgument: a call was given a missing or malformed argument.
	ErrInvalidArgument = errors.New("agentstate: invalid argument")
	// ErrNotFound: the named thing does not exist (or belongs to another owner).
	ErrNotFound = errors.New("agentstate: not found")
	// ErrConflict: the call would break a rule the database enforces (one
	// active run per thread, a duplicate id, a refused status transition).
	ErrConflict = errors.New("agentstate: conflict")
	// ErrNotAgentstate: the file is an SQLite database written by something else.
	ErrNotAgentstate = errors.New("agentstate: not an agentstate database")
	// ErrSchemaTooNew: the file was written by a newer agentstate than this one.
	ErrSchemaTooNew = errors.New("agentstate: database schema is newer than this build")
	// ErrModeMismatch: the file was written in another channel mode, or a
	// thread's mode does not match the handle's.
	ErrModeMismatch = errors.New("agentstate: channel mode mismatch")
	// ErrCorrupt: stored bytes or the file itself do not decode.
	ErrCorrupt = errors.New("agentstate: corrupt data")
	// ErrReadOnly: a write was attempted on a handle opened read-only.
	ErrReadOnly = errors.New("agentstate: database opened read-only")
)

// wrapErr turns the driver's errors into the engine's: an interrupt caused
// by a done context matches ctx.Err(), and so does a BUSY once the context
// is done (the busy handler stops waiting for a lock when the context ends,
// and the database then reports BUSY); damage matches ErrCorrupt. Other
// errors pass through with what the database said.
func wrapErr(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, ErrCorrupt) {
		return err
	}
	if ctx != nil && ctx.Err() != nil && (errors.Is(err, driver.ErrInterrupted) || errors.Is(err, driver.ErrBusy) || errors.Is(err, ctx.Err())) {
		if errors.Is(err, ctx.Err()) {
			return err
		}
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	if errors.Is(err, driver.ErrCorrupt) {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return err
}
