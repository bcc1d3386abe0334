// Package postgres links the PostgreSQL driver into a program that uses
// the engine. Import it for its side effect, as a database/sql driver:
//
//	import _ "github.com/agentstate/agentstate/engine/postgres"
//
// engine.Open then opens postgres:// and postgresql:// URLs (see
// docs/postgresql.md). Without it, engine.Open of such a URL fails with
// engine.ErrInvalidArgument naming this package, and the program links no
// PostgreSQL client: the driver is pgx's pgconn (pure Go, no cgo), about 85
// packages and 5.6 MB of a minimal binary, which a program that opens only
// SQLite files does without.
//
// The WebAssembly builds that take SQLite from their host (GOOS=js, and
// GOOS=wasip1 with the hostsqlite tag) take PostgreSQL from it too: there
// the package registers the host transport (engine/internal/driver/hostpg),
// and the host runs the statements on its own client (the Python package's
// psycopg); a host without one refuses the URL with a typed error.
package postgres
