//go:build !js && !(wasip1 && hostsqlite)

package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/engine/internal/driver/sqlite"
	"github.com/agentstate/agentstate/internal/pgurl"
)

// sqliteBackend is an SQLite file (or a private in-memory database) through
// ncruces/go-sqlite3.
type sqliteBackend struct {
	name  string // what connections open: the path, or a URI
	memID string // the in-memory database, or ""
	o     Options
	funcs []driver.Func
	// release withdraws this handle's registration beside the file (see
	// sqlite.Register), or is nil.
	release func()
}

func openBackend(path string, o Options, funcs []driver.Func) (backend, error) {
	if pgurl.Is(path) {
		return openPGBackend(path, o)
	}
	if o.WriteConns > 1 {
		return nil, fmt.Errorf("%w: WriteConns %d: an SQLite file has one writer", ErrInvalidOption, o.WriteConns)
	}
	b := &sqliteBackend{name: path, o: o, funcs: funcs}
	if path == Memory {
		b.memID, b.name = sqlite.NewMemory()
		return b, nil
	}
	if !strings.HasPrefix(path, "file:") {
		if err := checkFilePath(path); err != nil {
			return nil, err
		}
		// The npm package cannot take SQLite's POSIX locks: it and this
		// process take turns by a protocol of files beside the database.
		release, err := sqlite.Register(path, o.BusyTimeout)
		if err != nil {
			if held, ok := errors.AsType[*sqlite.HeldError](err); ok {
				return nil, heldError(held)
			}
			return nil, openErr(path, err)
		}
		b.release = release
	}
	return b, nil
}

// heldError is the engine's HeldError for the driver's (only this
// backend's driver refuses a file held by a JavaScript process).
func heldError(d *driver.HeldError) *HeldError {
	return &HeldError{Path: d.Path, Record: d.Record, Stale: d.Stale, err: d, Holder: Holder{
		Runtime: d.Holder.Runtime, PID: d.Holder.PID, Host: d.Holder.Host, Since: d.Holder.Since, Program: d.Holder.Program,
	}}
}

// imageBackend is an in-memory database whose first bytes are img, for
// OpenImage.
func imageBackend(img []byte, o Options) (backend, error) {
	b := &sqliteBackend{o: o, funcs: sqlFuncs()}
	b.memID, b.name = sqlite.NewMemoryFrom(img)
	return b, nil
}

func (b *sqliteBackend) dial(_ context.Context, write bool) (driver.Conn, error) {
	c, err := sqlite.Open(b.name, sqlite.Options{
		ReadOnly:    b.o.ReadOnly,
		Create:      write,
		BusyTimeout: b.o.BusyTimeout,
		Funcs:       b.funcs,
	})
	if err != nil {
		return nil, err
	}
	// Synchronous is validated to be SyncNormal or SyncFull, which are
	// pragma values.
	settings := []string{"PRAGMA foreign_keys=ON", "PRAGMA synchronous=" + b.o.Synchronous}
	if !write {
		settings = append(settings, "PRAGMA query_only=ON")
	}
	for _, p := range settings {
		if _, err := c.Exec(p); err != nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	return c, nil
}

func (b *sqliteBackend) memory() bool { return b.memID != "" }

// liveness: a lock file per owner beside the database (sqlite.OwnerLocks).
func (b *sqliteBackend) liveness() driver.Liveness {
	if b.memID != "" {
		return nil
	}
	return sqlite.OwnerLocks(b.name)
}

func (b *sqliteBackend) close() {
	if b.memID != "" {
		sqlite.DeleteMemory(b.memID)
	}
	if b.release != nil {
		b.release()
		b.release = nil
	}
}

// scratchConn opens a private, empty in-memory SQLite database with the
// engine's functions.
func scratchConn() (driver.Conn, error) {
	return sqlite.Open(":memory:", sqlite.Options{Create: true, Funcs: sqlFuncs()})
}

// fileKind names what a file that is not regular is.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

// sqliteMagic is how every SQLite database file begins.
const sqliteMagic = "SQLite format 3\x00"

// checkFilePath refuses, before anything is created beside it, a path that
// cannot be a database file: a directory (ErrInvalidArgument), a file in a
// directory that does not exist (ErrNotFound: Open creates the file, not
// its directory), and a file that is not an SQLite database
// (ErrNotAgentstate). What it cannot tell (no permission to look) is left
// to SQLite.
func checkFilePath(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		dir := filepath.Dir(path)
		if _, derr := os.Stat(dir); errors.Is(derr, fs.ErrNotExist) {
			return fmt.Errorf("%w: open %s: directory %s does not exist (Open creates the file, not its directory)", ErrNotFound, path, dir)
		}
		return nil
	}
	if err != nil {
		return nil
	}
	if fi.IsDir() {
		return fmt.Errorf("%w: open %s: it is a directory, not a database file", ErrInvalidArgument, path)
	}
	if !fi.Mode().IsRegular() {
		// A named pipe, a socket or a device: SQLite said "disk I/O
		// error", and opening a pipe to read its first bytes would wait
		// for a writer.
		return fmt.Errorf("%w: open %s: it is not a regular file (%s), not a database file", ErrInvalidArgument, path, fileKind(fi.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	n, err := io.ReadFull(f, head)
	if n == 0 || (err != nil && !errors.Is(err, io.ErrUnexpectedEOF)) {
		return nil // empty (SQLite makes it a database) or unreadable
	}
	if !bytes.Equal(head[:n], []byte(sqliteMagic)) {
		return fmt.Errorf("%w: %s is not an SQLite database (it begins %q)", ErrNotAgentstate, path, head[:n])
	}
	return nil
}
