//go:build wasip1 || js

package langgraph

import (
	"context"
	"fmt"
)

// A WebAssembly build has no network to reach a PostgreSQL server with, so
// it leaves the PostgreSQL client out (several megabytes) and says so.
func openPostgres(ctx context.Context, src string) (source, error) {
	return nil, fmt.Errorf("%w: PostgresSaver databases cannot be read by a WebAssembly build (no network); run the native agentstate", ErrUnsupportedSource)
}
