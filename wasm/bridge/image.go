//go:build js || (wasip1 && hostsqlite)

package bridge

import (
	"context"

	"github.com/agentstate/agentstate/engine"
)

// openImage opens a private in-memory copy of a database file's bytes.
func openImage(ctx context.Context, image []byte, o *engine.Options) (*engine.DB, error) {
	return engine.OpenImage(ctx, image, o)
}

// takeImage returns a consistent copy of the database: its pages, read in
// one read transaction on the handle's connection.
func takeImage(ctx context.Context, db *engine.DB) ([]byte, error) {
	return db.Image(ctx)
}
