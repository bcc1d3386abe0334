//go:build js || (wasip1 && hostsqlite)

package hostpg

import (
	"context"
	"errors"
	"sync"

	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/engine/internal/driver/pgwire"
)

// liveness is driver.Liveness over the host's sessions, as the native
// driver gives it (engine/internal/driver/pg/liveness.go, whose comment
// says why): a session-level advisory lock per owner, held on a session of
// its own, probed with pg_try_advisory_lock from another; a free lock is
// PresenceUnknown, and Hold.Check takes a lost lock again on a new session.
// The SQL is pgwire's, the native driver's, so that both lock the same
// number.
type liveness struct {
	s     *Server
	mu    sync.Mutex
	probe *Conn // dialled on first use
}

type hold struct {
	s     *Server
	owner string
	mu    sync.Mutex
	c     *Conn // nil once released
}

func (l *liveness) Hold(ctx context.Context, owner string) (driver.Hold, error) {
	c, err := l.s.dial(ctx, l.s.l, pgwire.NoIdleTimeout)
	if err != nil {
		return nil, err
	}
	h := &hold{s: l.s, owner: owner, c: c}
	if err := h.Check(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return h, nil
}

// Check implements driver.Hold.
func (h *hold) Check(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.c == nil {
		return nil
	}
	defer h.c.Interrupt(ctx)()
	held, err := ask(ctx, h.c, pgwire.HeldSQL, h.owner)
	if err != nil || held {
		return err
	}
	_, err = h.c.Exec(pgwire.LockSQL, h.owner)
	return err
}

// ask runs q, a boolean of owner, on c; once more when c's session was
// ended, which c dials anew.
func ask(ctx context.Context, c *Conn, q, owner string) (bool, error) {
	var v bool
	read := func(r driver.Row) error { v = r.Int64(0) != 0; return nil }
	err := c.Query(q, []any{owner}, read)
	if err != nil && errors.Is(err, driver.ErrConnLost) && done(ctx) == nil {
		err = c.Query(q, []any{owner}, read)
	}
	return v, err
}

// Release implements driver.Hold.
func (h *hold) Release() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.c == nil {
		return nil
	}
	if !h.c.Broken() {
		ctx, cancel := context.WithTimeout(context.Background(), pgwire.ReleaseWait)
		restore := h.c.Interrupt(ctx)
		h.c.Exec(pgwire.UnlockSQL, h.owner)
		restore()
		cancel()
	}
	err := h.c.Close()
	h.c = nil
	return err
}

func (l *liveness) Probe(ctx context.Context, owner string) (driver.Presence, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.probe == nil {
		c, err := l.s.dial(ctx, l.s.l, pgwire.NoIdleTimeout)
		if err != nil {
			return driver.PresenceUnknown, err
		}
		l.probe = c
	}
	defer l.probe.Interrupt(ctx)()
	held, err := ask(ctx, l.probe, pgwire.ProbeSQL, owner)
	switch {
	case err != nil:
		return driver.PresenceUnknown, err
	case held:
		return driver.PresenceAlive, nil
	}
	return driver.PresenceUnknown, nil
}

func (l *liveness) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.probe != nil {
		l.probe.Close()
		l.probe = nil
	}
}
