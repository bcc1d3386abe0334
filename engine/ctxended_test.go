package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentstate/agentstate/engine/internal/driver"
)

// lateCtx is a context whose deadline has passed but whose timer has not
// fired yet (Err is still nil): what a dial sees when the network deadline
// taken from the context fires first.
type lateCtx struct{ context.Context }

func (lateCtx) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }
func (lateCtx) Err() error                  { return nil }

// TestInterruptAtTheDeadlineIsTheContexts: a statement or dial interrupted
// when the call's deadline has passed is the context's DeadlineExceeded,
// even in the moment before the context's own timer fires, not
// ErrInterrupted (which says the server cancelled it): CI once saw a dial
// that timed out at the test's deadline reported as a server cancel.
func TestInterruptAtTheDeadlineIsTheContexts(t *testing.T) {
	dialErr := &driver.Error{Kind: driver.ErrInterrupted, Err: errors.New("dial tcp 127.0.0.1:5432: i/o timeout")}
	err := wrapErr(lateCtx{context.Background()}, dialErr)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrInterrupted) {
		t.Errorf("at the deadline: %v, want the context's DeadlineExceeded", err)
	}
	if err := wrapErr(context.Background(), dialErr); !errors.Is(err, ErrInterrupted) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("with no deadline: %v, want ErrInterrupted", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if err := wrapErr(ctx, dialErr); !errors.Is(err, ErrInterrupted) {
		t.Errorf("an hour before the deadline: %v, want ErrInterrupted", err)
	}
	lost := &driver.Error{Kind: driver.ErrConnLost, Err: errors.New("the connection to the server was lost inside a transaction")}
	if err := wrapErr(lateCtx{context.Background()}, lost); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a connection cut at the deadline: %v, want the context's DeadlineExceeded", err)
	}
	if err := wrapErr(ctx, lost); !errors.Is(err, ErrConnectionLost) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a connection lost an hour before the deadline: %v, want ErrConnectionLost", err)
	}
}
