package engine

import (
	"context"

	"github.com/agentstate/agentstate/engine/internal/driver"
)

// backend is where a handle's connections come from: one database of one
// driver. Everything above it (the surfaces, the schema, the caches) talks
// to driver.Conn only.
type backend interface {
	// dial opens one connection with the handle's per-connection settings:
	// the writer (which may create the database) or a read-only reader.
	// ctx bounds the dialling where it waits on a network.
	dial(ctx context.Context, write bool) (driver.Conn, error)
	// memory reports a private in-memory database, which has no file.
	memory() bool
	// close frees what the connections shared, once they are closed.
	close()
	// liveness is how this handle shows other processes that it is alive
	// and probes whether the owners of runs are (driver.Liveness), or nil
	// where the driver has no way, and leases alone decide.
	liveness() driver.Liveness
}

// oneConn is implemented by backends whose handle has one connection that
// serves writes and reads alike (SQLite in a JavaScript host, where one
// thread runs everything and an in-memory database or an image belongs to
// its connection). Calls then take turns on it.
type oneConn interface{ oneConn() bool }

// builtImage is implemented by backends that may open a private in-memory
// database from the build's empty image (SQLite in a host): builtSchema
// reports that this handle's connection holds it, so its header and schema
// are this build's and it holds no one's rows yet.
type builtImage interface{ builtSchema() bool }

// serverBackend is a backend whose database is a server (PostgreSQL):
// several writers at once, SQL translated from the engine's SQLite text,
// and its own schema management. The engine asks for it where a file and a
// server differ; SQLite's backend does not implement it.
type serverBackend interface {
	backend
	// writers is the number of writer connections.
	writers() int
	// translate maps a statement of the engine and its arguments to the
	// server's dialect.
	translate(q string, args []any) (string, []any, error)
	// prepareSchema checks and migrates the schema (Open).
	prepareSchema(ctx context.Context, db *DB, w *conn) error
	// verify adds the server's own checks to a Verify (the catalogue, the
	// columns derived from stored bytes) in place of SQLite's.
	verify(v *verifier) error
}

// server returns the handle's server backend, or nil for SQLite.
func (db *DB) server() serverBackend {
	sb, _ := db.b.(serverBackend)
	return sb
}
