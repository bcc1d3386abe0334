package engine

import "github.com/agentstate/agentstate/engine/internal/driver"

// backend is where a handle's connections come from: one database of one
// driver. Everything above it (the surfaces, the schema, the caches) talks
// to driver.Conn only.
type backend interface {
	// dial opens one connection with the handle's per-connection settings:
	// the writer (which may create the database) or a read-only reader.
	dial(write bool) (driver.Conn, error)
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
