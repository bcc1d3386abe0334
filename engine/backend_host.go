//go:build js || (wasip1 && hostsqlite)

package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/engine/internal/driver/hostsqlite"
)

// hostBackend is SQLite provided by the host (GOOS=js builds, and GOOS=wasip1
// builds with the hostsqlite tag, which link no SQLite: the npm package's
// sqlite3.wasm, the Python package's SQLite): an in-memory database
// (memdb), an image opened in memory, or a file of a VFS the host
// registered (a "file:" URI naming it, or a plain path for the host's
// default VFS).
//
// A handle has one connection (oneConn): one host thread runs every
// statement anyway, an in-memory database or an image belongs to the
// connection that opened it, and a file needs no shared WAL-index between
// connections of one process.
//
// Files are in WAL mode, as natively (the engine asks for it). Over a VFS
// with shared memory (xShmMap), every connection of the SQLite instance
// shares the WAL-index, so several handles of one file work as natively.
// A VFS without it (io methods version 1, as the npm package's VFS over a
// file host) runs WAL only in exclusive locking mode, with the WAL-index in
// the connection's memory: the connection then keeps the file's lock until
// it closes, so one handle per file per process (the npm package shares
// one), and a file a native process left in WAL mode opens as it is.
type hostBackend struct {
	name  string // what the connection opens
	mem   bool
	image []byte // deserialized into the connection, for OpenImage
	fresh bool   // image is emptyImage's: its history is stamped at open
	o     Options
	funcs []driver.Func
}

func openBackend(path string, o Options, funcs []driver.Func) (backend, error) {
	if strings.HasPrefix(path, "postgres://") || strings.HasPrefix(path, "postgresql://") {
		return openPGBackend(path, o) // the host's PostgreSQL client, or a refusal (backend_pg_stub.go)
	}
	if err := hostsqlite.Available(); err != nil {
		return nil, err
	}
	b := &hostBackend{name: path, o: o, funcs: funcs}
	if path == Memory {
		b.mem = true
		// A memdb database without a leading slash in its name is private
		// to its connection; memdb hands out its bytes without a copy.
		b.name = "file:agentstate-memory?vfs=memdb"
		img, err := emptyImage()
		if err != nil {
			return nil, fmt.Errorf("agentstate: the build's empty database: %w", err)
		}
		b.image, b.fresh = img, true
	}
	return b, nil
}

func (b *hostBackend) dial(_ context.Context, write bool) (driver.Conn, error) {
	o := hostsqlite.Options{ReadOnly: b.o.ReadOnly, Create: write, BusyTimeout: b.o.BusyTimeout, Funcs: b.funcs}
	if b.image != nil {
		// The connection only carries the image, which is read-only or not.
		o.ReadOnly, o.Create = false, true
	}
	c, err := hostsqlite.Open(b.name, o)
	if err != nil {
		return nil, err
	}
	if b.image != nil {
		if err := c.Deserialize("main", b.image, b.o.ReadOnly); err != nil {
			c.Close()
			return nil, err
		}
		b.image = nil
		if b.fresh {
			// The schema is the build's; its history says when this
			// database got it.
			if _, err := c.Exec(sqlSchemaStamp, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
				c.Close()
				return nil, err
			}
		}
	}
	// The official wasm build defaults to 8 KiB pages and a 16 MiB page
	// cache; native builds to 4 KiB and 2 MB: the same here, so that a file
	// made in one looks like a file made in the other. page_size only
	// applies to a database that is still empty.
	if !b.mem {
		if err := walLocking(c); err != nil {
			c.Close()
			return nil, err
		}
	}
	settings := []string{"PRAGMA page_size=4096", "PRAGMA cache_size=-2000", "PRAGMA foreign_keys=ON", "PRAGMA synchronous=" + b.o.Synchronous}
	if b.builtSchema() {
		settings = settings[1:] // the build's image has 4 KiB pages
	}
	for _, p := range settings {
		if _, err := c.Exec(p); err != nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	return c, nil
}

// builtSchema reports that the connection holds the build's empty image,
// deserialized and stamped by dial: its header and schema are this build's,
// which prepareSchema then need not read back.
func (b *hostBackend) builtSchema() bool { return b.fresh && b.image == nil }

func (b *hostBackend) memory() bool  { return b.mem }
func (b *hostBackend) close()        {}
func (b *hostBackend) oneConn() bool { return true }

// liveness: none. The driver has no lock of its own that other processes
// can probe, so run leases alone decide whether a run's owner is alive.
func (b *hostBackend) liveness() driver.Liveness { return nil }

// scratchConn opens a private, empty in-memory SQLite database with the
// engine's functions.
func scratchConn() (driver.Conn, error) {
	return hostsqlite.Open(":memory:", hostsqlite.Options{Create: true, Funcs: sqlFuncs()})
}

// walLocking makes WAL possible on c's file: exclusive locking mode when
// its VFS has no shared memory (see hostBackend). It must run before the
// connection first reads the file.
func walLocking(c *hostsqlite.Conn) error {
	if c.SharedMemory() {
		return nil
	}
	_, err := c.Exec("PRAGMA locking_mode=EXCLUSIVE")
	return err
}

// imageBackend is an in-memory database holding img, for OpenImage: the
// host deserializes the bytes into the connection as they are.
func imageBackend(img []byte, o Options) (backend, error) {
	if err := hostsqlite.Available(); err != nil {
		return nil, err
	}
	return &hostBackend{name: "file:agentstate-image?vfs=memdb", mem: true, image: img, o: o, funcs: sqlFuncs()}, nil
}
