//go:build (js && !hostpg) || (wasip1 && !hostsqlite)

package engine

import (
	"fmt"
	"strings"
)

// openPGBackend: the npm package's build (GOOS=js) and the WASI build with
// SQLite of its own carry no PostgreSQL backend (the dialect, the schema
// code of backend_pg.go, regexp and net/url), which the Python package's
// reactor (wasip1 with hostsqlite) has over its host's client
// (internal/driver/hostpg). The npm package refuses a URL before it gets
// here.
func openPGBackend(path string, o Options) (backend, error) {
	return nil, fmt.Errorf("%w: %s: PostgreSQL is not available in this WebAssembly build (the Python package and native programs open it)", ErrInvalidArgument, displayPath(path))
}

// displayPath is the path as messages show it. A URL, which this build
// refuses anyway, is shown by its scheme alone: parsing it for its password
// would link net/url into the WebAssembly builds.
func displayPath(path string) string {
	if scheme, _, ok := strings.Cut(path, "://"); ok {
		return scheme + "://(a server URL)"
	}
	return path
}
