package pg

import (
	"context"
	"errors"
	"strings"

	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/jackc/pgx/v5/pgconn"
)

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
