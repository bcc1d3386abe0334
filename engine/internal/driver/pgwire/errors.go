package pgwire

import (
	"strings"

	"github.com/agentstate/agentstate/engine/internal/driver"
)

// Kind maps a server's SQLSTATE to the driver's kind of error, or nil for
// a statement's own failure of no kind the engine tells apart (both
// drivers classify the server's answers with it).
func Kind(code string) error {
	switch {
	case code == "40001", code == "40P01", code == "55P03":
		return driver.ErrBusy
	case code == "23505":
		return driver.ErrUnique
	case strings.HasPrefix(code, "23"):
		return driver.ErrConstraint
	case code == "57014":
		return driver.ErrInterrupted
	case code == "42P01", code == "42703", code == "42883", code == "3F000":
		return driver.ErrSchema
	case code == "53100":
		return driver.ErrFull
	case code == "25006":
		return driver.ErrReadOnly
	case code == "XX001", code == "XX002":
		return driver.ErrCorrupt
	case strings.HasPrefix(code, "08"), code == "57P01", code == "57P02", code == "57P03":
		// A connection failure, or the session ended by the server
		// (pg_terminate_backend, a shutdown, a restart).
		return driver.ErrConnLost
	case strings.HasPrefix(code, "22"), code == "54000":
		return driver.ErrValue
	}
	return nil
}
