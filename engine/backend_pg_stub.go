//go:build js || wasip1

package engine

import "fmt"

// openPGBackend: the WebAssembly builds carry no PostgreSQL driver.
func openPGBackend(path string, o Options) (backend, error) {
	return nil, fmt.Errorf("%w: %s: PostgreSQL is not available in WebAssembly builds", ErrInvalidArgument, displayPath(path))
}
