//go:build js && wasm

package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentstate/agentstate/engine"
)

// fileURI names path on the SQLite VFS vfsName (registered by the
// JavaScript side over a file host) as an SQLite URI; without a VFS name,
// the path is for SQLite's default VFS. SQLite decodes %HH escapes in a
// URI's path and parameters; the bytes that would end either are escaped.
func fileURI(path, vfsName string) string {
	if vfsName == "" {
		return path
	}
	p := uriEscape(path, "?#")
	if strings.HasPrefix(p, "//") {
		p = "//" + p // "file://" would make the first part an authority
	}
	return "file:" + p + "?vfs=" + uriEscape(vfsName, "?#&=")
}

func uriEscape(s, special string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' || c < 0x20 || c == 0x7f || strings.IndexByte(special, c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
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
