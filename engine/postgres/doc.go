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
// The Python package's WebAssembly build (GOOS=wasip1 with the hostsqlite
// tag) takes PostgreSQL from its host: there the package registers the host
// transport (engine/internal/driver/hostpg), and the host runs the
// statements on its own client (psycopg). The other WebAssembly builds
// (GOOS=js, the npm package's; GOOS=wasip1 without the tag) carry no
// PostgreSQL backend: the package registers nothing there, and engine.Open
// refuses the URL.
package postgres
