//go:build !js && !wasip1

package pg

import (
	"context"
	"errors"
	"sync"

	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/engine/internal/driver/pgwire"
)

// liveness is driver.Liveness for PostgreSQL: a session-level advisory lock
// per owner, held on a connection of its own while the handle lives, and
// probed with pg_try_advisory_lock from another session. A server cannot
// tell an owner that never held the lock from one that died, so a free lock
// is PresenceUnknown: the lease decides, as it does on SQLite without a
// lock file.
//
// The server may end the holding session while the handle lives (a
// restart, a failover, pg_terminate_backend): Hold.Check, before every
// lease renewal, finds the lock gone and takes it again on a new session.
// The sessions of liveness turn idle_session_timeout off, which would
// otherwise end them between checks.
type liveness struct {
	d     *Dialer
	mu    sync.Mutex
	probe *Conn // dialled on first use
}

// hold is an owner's advisory lock and the session that holds it.
type hold struct {
	d     *Dialer
	owner string
	mu    sync.Mutex
	c     *Conn // nil once released
}

func (l *liveness) Hold(ctx context.Context, owner string) (driver.Hold, error) {
	c, err := l.d.Dial(ctx)
	if err != nil {
		return nil, err
	}
	h := &hold{d: l.d, owner: owner, c: c}
	if err := h.Check(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return h, nil
}

// Check implements driver.Hold: the session still holds the lock, or
// (a new session, dialled when the old one is found gone) takes it.
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
// ended (a restart, a failover, idle_session_timeout), which c dials anew,
// rather than leave the owner to its lease.
func ask(ctx context.Context, c *Conn, q, owner string) (bool, error) {
	var v bool
	read := func(r driver.Row) error { v = r.Int64(0) != 0; return nil }
	err := c.Query(q, []any{owner}, read)
	if err != nil && errors.Is(err, driver.ErrConnLost) && ctx.Err() == nil {
		err = c.Query(q, []any{owner}, read)
	}
	return v, err
}

// Release implements driver.Hold. The lock is given back before the
// session ends, so that the owner is gone for everyone once Release
// returns (a session's end releases its locks too, but the server gets to
// it in its own time); a server that does not answer gets pgwire.ReleaseWait.
func (h *hold) Release() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.c == nil {
		return nil
	}
	if !h.c.Broken() { // a broken session took the lock with it
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
		c, err := l.d.Dial(ctx)
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
