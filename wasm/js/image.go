//go:build js && wasm

package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/agentstate/agentstate/engine"
	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/ext/serdes"
	"github.com/ncruces/go-sqlite3/vfs/memdb"
)

// ncruces has no sqlite3_serialize in wasm builds: images are taken with
// the backup API (ext/serdes) from a side connection, and opened by handing
// the bytes to the memdb VFS.

// hostURI names path on the host VFS as an SQLite URI.
// Without WAL, the rollback journal is truncated, not deleted, after each
// commit: one system call fewer per transaction, and OPFS files cannot be
// deleted while their access handle is open anyway.
func hostURI(path, vfsName string, wal bool) string {
	if wal {
		return rawHostURI(path, vfsName)
	}
	return rawHostURI(path, vfsName, "journal_mode(truncate)")
}

func rawHostURI(path, vfsName string, pragmas ...string) string {
	q := url.Values{"vfs": {vfsName}}
	if len(pragmas) > 0 {
		q["_pragma"] = pragmas
	}
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}
	return u.String()
}

// memdb.Create and Delete take the bare name; the URI path is "/" + name
// (the slash makes the database shared between connections).
func memURI(name string) string {
	return "file:/" + name + "?vfs=memdb"
}

// openMemory opens a fresh in-memory database under a name this package
// knows, so that its image can be taken later.
func openMemory(ctx context.Context, data []byte, o *engine.Options) (*engine.DB, string, error) {
	name := "agentstate-js-" + rand.Text()
	memdb.Create(name, data)
	db, err := engine.Open(ctx, memURI(name), o)
	if err != nil {
		memdb.Delete(name)
		return nil, "", err
	}
	return db, name, nil
}

// openImage opens a private in-memory copy of a database file's bytes.
func openImage(ctx context.Context, image []byte, o *engine.Options) (*engine.DB, string, error) {
	if len(image) < 100 || string(image[:16]) != "SQLite format 3\x00" {
		return nil, "", fmt.Errorf("%w: the image is not an SQLite database (%d bytes)", engine.ErrNotAgentstate, len(image))
	}
	return openMemory(ctx, image, o)
}

// busyForImage bounds how long an image waits for a writer to finish.
const busyForImage = 30 * time.Second

// imageMu serialises images: serdes hands its target to the backup through
// one process-wide slot.
var imageMu sync.Mutex

// takeImage returns a consistent copy of the database at uri: the backup
// reads every page inside one read transaction.
func takeImage(ctx context.Context, uri string) ([]byte, error) {
	imageMu.Lock()
	defer imageMu.Unlock()
	c, err := sqlite3.OpenFlags(uri, sqlite3.OPEN_READONLY|sqlite3.OPEN_URI)
	if err != nil {
		return nil, fmt.Errorf("agentstate: image: %w", err)
	}
	defer c.Close()
	old := c.SetInterrupt(ctx)
	defer c.SetInterrupt(old)
	if err := c.BusyTimeout(busyForImage); err != nil {
		return nil, err
	}
	b, err := serdes.Serialize(c, "main")
	if err != nil {
		return nil, fmt.Errorf("agentstate: image: %w", err)
	}
	if len(b) == 0 {
		return nil, errors.New("agentstate: image: empty database")
	}
	return b, nil
}
