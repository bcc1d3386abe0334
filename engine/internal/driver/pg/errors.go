package pg

import (
	"context"
	"errors"

	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/engine/internal/driver/pgwire"
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
		if kind = pgwire.Kind(pe.Code); kind == nil {
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
