//go:build js || (wasip1 && hostsqlite)

package hostpg

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/agentstate/agentstate/engine/internal/driver"
)

// liveness is driver.Liveness over the host's sessions, as the native
// driver gives it (engine/internal/driver/pg/liveness.go, whose comment
// says why): a session-level advisory lock per owner, held on a session of
// its own, probed with pg_try_advisory_lock from another; a free lock is
// PresenceUnknown, and Hold.Check takes a lost lock again on a new session.
type liveness struct {
	s     *Server
	mu    sync.Mutex
	probe *Conn // dialled on first use
}

// releaseWait bounds the unlock of a hold's release.
const releaseWait = 2 * time.Second

// ownerKey is the native driver's, so that both lock the same number.
const ownerKey = `hashtextextended('agentstate owner/' || current_schema() || '/' || $1::text, 0)`

// noIdleTimeout runs on every session of liveness: a hold sits idle
// between checks, and idle_session_timeout would end it.
const noIdleTimeout = `SELECT set_config(name, '0', false) FROM pg_catalog.pg_settings WHERE name = 'idle_session_timeout'`

type hold struct {
	s     *Server
	owner string
	mu    sync.Mutex
	c     *Conn // nil once released
}

func (l *liveness) Hold(ctx context.Context, owner string) (driver.Hold, error) {
	c, err := l.s.dial(ctx, l.s.l, noIdleTimeout)
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
	held, err := ask(ctx, h.c, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
		AND objsubid = 1 AND (classid::bigint << 32 | objid::bigint) = `+ownerKey+`)`, h.owner)
	if err != nil || held {
		return err
	}
	_, err = h.c.Exec(`SELECT pg_advisory_lock(`+ownerKey+`)`, h.owner)
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
		ctx, cancel := context.WithTimeout(context.Background(), releaseWait)
		restore := h.c.Interrupt(ctx)
		h.c.Exec(`SELECT pg_advisory_unlock(`+ownerKey+`)`, h.owner)
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
		c, err := l.s.dial(ctx, l.s.l, noIdleTimeout)
		if err != nil {
			return driver.PresenceUnknown, err
		}
		l.probe = c
	}
	defer l.probe.Interrupt(ctx)()
	q := `SELECT CASE WHEN pg_try_advisory_lock(` + ownerKey + `) THEN NOT pg_advisory_unlock(` + ownerKey + `) ELSE true END`
	held, err := ask(ctx, l.probe, q, owner)
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
