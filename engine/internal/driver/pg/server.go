//go:build !js && !wasip1

package pg

import (
	"context"
	"sync"

	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/engine/internal/driver/pgwire"
)

// Server is one database as a handle uses it (driver.Server): writers,
// read-only readers, and the sessions of liveness, each from a Dialer of
// its own.
type Server struct {
	w, r     *Dialer // writers, readers (read-only sessions)
	l        *Dialer // liveness: the writers' sessions, never idle-timed-out
	liveOnce sync.Once
	live     *liveness
}

var (
	_ driver.OpenServer = Open
	_ driver.Breaker    = (*Conn)(nil)
)

// Open implements driver.OpenServer: it parses url (a postgres:// or
// postgresql:// URL, or a key=value connection string) and dials nothing.
func Open(url string, o driver.ServerOptions) (driver.Server, error) {
	po := Options{BusyTimeout: o.BusyTimeout, SyncFull: o.SyncFull, ReadOnly: o.ReadOnly}
	w, err := NewDialer(url, po)
	if err != nil {
		return nil, err
	}
	lo := po
	lo.Setup = pgwire.NoIdleTimeout
	l, err := NewDialer(url, lo)
	if err != nil {
		return nil, err
	}
	po.ReadOnly = true
	r, err := NewDialer(url, po)
	if err != nil {
		return nil, err
	}
	return &Server{w: w, r: r, l: l}, nil
}

// Dial implements driver.Server: a session within ctx; a server that does
// not answer fails it when ctx ends.
func (s *Server) Dial(ctx context.Context, write bool) (driver.Conn, error) {
	d := s.r
	if write {
		d = s.w
	}
	c, err := d.Dial(ctx)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// SearchPath implements driver.Server.
func (s *Server) SearchPath() string { return s.w.SearchPath() }

// Liveness implements driver.Server (see liveness).
func (s *Server) Liveness() driver.Liveness {
	s.liveOnce.Do(func() { s.live = &liveness{d: s.l} })
	return s.live
}

// Close implements driver.Server.
func (s *Server) Close() {
	if s.live != nil {
		s.live.close()
	}
}
