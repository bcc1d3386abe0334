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
