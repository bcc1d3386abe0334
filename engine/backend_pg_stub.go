//go:build js || wasip1

package engine

import (
	"fmt"
	"strings"
)

// openPGBackend: the WebAssembly builds carry no PostgreSQL driver
// (engine/postgres registers none there), nor the schema code of
// backend_pg.go, whose catalogue is computed at start-up.
func openPGBackend(path string, o Options) (backend, error) {
	return nil, fmt.Errorf("%w: %s: PostgreSQL is not available in WebAssembly builds", ErrInvalidArgument, displayPath(path))
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
