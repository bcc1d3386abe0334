package driver

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// A server driver (PostgreSQL) is linked into a program only when the
// program asks for it, the way database/sql drivers are: a small public
// package (engine/postgres) registers it from init, and the engine looks it
// up by name when a URL asks for a server. A program that opens only SQLite
// files then links none of the server's client library.

// ServerOptions are the handle's settings a server driver applies to every
// session it dials.
type ServerOptions struct {
	// BusyTimeout bounds every wait for a lock.
	BusyTimeout time.Duration
	// SyncFull waits for the server's durable flush at every commit.
	SyncFull bool
	// ReadOnly makes every transaction read-only, writers' too.
	ReadOnly bool
}

// Server is one server database, as one handle uses it: where its sessions
// come from.
type Server interface {
	// Dial opens a session within ctx: a writer, or a read-only reader.
	Dial(ctx context.Context, write bool) (Conn, error)
	// Liveness is the handle's liveness, on sessions of its own (dialled
	// on first use).
	Liveness() Liveness
	// SearchPath is the search_path the URL sets, or "".
	SearchPath() string
	// Close frees what the sessions shared (the liveness probe's session),
	// once the handle's connections are closed.
	Close()
}

// OpenServer parses url and returns its Server; nothing is dialled yet.
type OpenServer func(url string, o ServerOptions) (Server, error)

// Breaker is implemented by a Conn whose session can be found gone (closed,
// or broken by the server or the network): its session-level locks went
// with it, and the next statement dials a new session.
type Breaker interface {
	Broken() bool
}

// LastQuerier is implemented by a Conn that can end a read transaction with
// its last statement: QueryLast is Query followed by COMMIT in the same round
// trip (outside a read transaction it is Query). Once it returns without
// error the transaction is over and Commit has nothing left to do; after an
// error the caller rolls back as after Query.
type LastQuerier interface {
	QueryLast(query string, args []any, fn func(Row) error) error
}

var servers struct {
	mu sync.RWMutex
	m  map[string]OpenServer
}

// RegisterServer makes a server driver available under name ("postgres").
// It panics if open is nil or name is taken, as database/sql.Register does:
// two packages claiming one name is a mistake in the program.
func RegisterServer(name string, open OpenServer) {
	servers.mu.Lock()
	defer servers.mu.Unlock()
	if open == nil {
		panic("agentstate: RegisterServer of a nil driver for " + name)
	}
	if _, dup := servers.m[name]; dup {
		panic(fmt.Sprintf("agentstate: RegisterServer called twice for %q", name))
	}
	if servers.m == nil {
		servers.m = map[string]OpenServer{}
	}
	servers.m[name] = open
}

// LookupServer returns the server driver registered under name, or nil
// when the program links none.
func LookupServer(name string) OpenServer {
	servers.mu.RLock()
	defer servers.mu.RUnlock()
	return servers.m[name]
}
