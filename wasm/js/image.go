//go:build js && wasm

package main

import (
	"context"
	"net/url"

	"github.com/agentstate/agentstate/engine"
)

// fileURI names path on the SQLite VFS vfsName (registered by the
// JavaScript side over a file host) as an SQLite URI; without a VFS name,
// the path is for SQLite's default VFS.
func fileURI(path, vfsName string) string {
	if vfsName == "" {
		return path
	}
	u := url.URL{Scheme: "file", Path: path, RawQuery: url.Values{"vfs": {vfsName}}.Encode()}
	return u.String()
}

// openImage opens a private in-memory copy of a database file's bytes.
func openImage(ctx context.Context, image []byte, o *engine.Options) (*engine.DB, error) {
	return engine.OpenImage(ctx, image, o)
}

// takeImage returns a consistent copy of the database: its pages, read in
// one read transaction on the handle's connection.
func takeImage(ctx context.Context, db *engine.DB) ([]byte, error) {
	return db.Image(ctx)
}
