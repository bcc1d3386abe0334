package sqlite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentstate/agentstate/engine/internal/driver"
)

// OwnerLocks returns the liveness of the database file at name (a path or
// a "file:" URI): each owner holds an exclusive lock on a file of its own
// beside the database, "NAME-owner-HASH", for as long as its handle is
// open. The operating system drops the lock when the process ends, however
// it ends, and another process probes it without blocking, so a live owner
// stays visibly alive while it cannot write (another process holds the
// write lock for a minute) or cannot run (its CPU is starved). nil for
// in-memory databases and where the platform has no such lock (see
// lockFile).
func OwnerLocks(name string) driver.Liveness {
	if !haveFileLocks {
		return nil
	}
	path := name
	if strings.HasPrefix(name, "file:") {
		u, err := url.Parse(name)
		if err != nil || u.Query().Get("vfs") == "memdb" {
			return nil
		}
		path = u.Path
		if path == "" {
			path = u.Opaque
		}
	}
	if path == "" || path == ":memory:" {
		return nil
	}
	// Handles that name the file through different links must meet on the
	// same lock files.
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return &ownerLocks{prefix: path + "-owner-"}
}

type ownerLocks struct{ prefix string }

// heldHere are the lock files this process holds (file name -> the
// *os.File that holds it): a probe from another handle of the same process
// answers from here while that file is still the one at the name, whatever
// the file system's lock semantics between two descriptors of one process.
var heldHere sync.Map

func (l *ownerLocks) file(owner string) string {
	sum := sha256.Sum256([]byte(owner))
	return l.prefix + hex.EncodeToString(sum[:8])
}

// Hold implements driver.Liveness. It also clears lock files left by
// processes that ended without closing, so they do not pile up.
func (l *ownerLocks) Hold(_ context.Context, owner string) (driver.Hold, error) {
	l.sweep()
	h := &fileHold{owner: owner, name: l.file(owner)}
	f, err := takeLock(h.name, owner)
	if err != nil {
		return nil, err
	}
	h.f = f
	heldHere.Store(h.name, f)
	return h, nil
}

// takeLock creates (or opens) the lock file at name and locks it.
func takeLock(name, owner string) (*os.File, error) {
	for range 3 {
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		if ok, err := lockFile(f); err != nil || !ok {
			f.Close()
			if err == nil {
				err = errors.New("the owner's lock file is held by another process")
			}
			return nil, err
		}
		// A probe may have removed the file between our open and our lock
		// (it found it unlocked): then we hold a lock nobody can see.
		if !atName(f, name) {
			f.Close()
			continue
		}
		// For people reading the directory: who holds it.
		f.Truncate(0)
		f.WriteAt([]byte(owner+"\n"), 0)
		return f, nil
	}
	return nil, errors.New("the owner's lock file kept disappearing")
}

// atName reports whether f is the file at name now.
func atName(f *os.File, name string) bool {
	fi, ferr := f.Stat()
	pi, perr := os.Stat(name)
	return ferr == nil && perr == nil && os.SameFile(fi, pi)
}

// fileHold is a held lock file.
type fileHold struct {
	owner, name string
	mu          sync.Mutex
	f           *os.File // nil once released
}

// Check implements driver.Hold: a lock file deleted (or replaced) under
// its holder no longer shows anyone that it lives, so it is made again.
func (h *fileHold) Check(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.f == nil || atName(h.f, h.name) {
		return nil
	}
	f, err := takeLock(h.name, h.owner)
	if err != nil {
		return err
	}
	old := h.f
	h.f = f
	heldHere.Store(h.name, f)
	old.Close()
	return nil
}

// Release implements driver.Hold.
func (h *fileHold) Release() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.f == nil {
		return nil
	}
	heldHere.CompareAndDelete(h.name, h.f)
	if atName(h.f, h.name) {
		os.Remove(h.name)
	}
	err := h.f.Close()
	h.f = nil
	return err
}

// Probe implements driver.Liveness.
func (l *ownerLocks) Probe(_ context.Context, owner string) (driver.Presence, error) {
	return probeFile(l.file(owner))
}

func probeFile(name string) (driver.Presence, error) {
	if f, ok := heldHere.Load(name); ok && atName(f.(*os.File), name) {
		return driver.PresenceAlive, nil
	}
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return driver.PresenceUnknown, nil
	}
	if err != nil {
		return driver.PresenceUnknown, err
	}
	defer f.Close()
	ok, err := lockFile(f)
	switch {
	case err != nil:
		return driver.PresenceUnknown, err
	case !ok:
		return driver.PresenceAlive, nil
	}
	// Nobody held it: its owner ended without closing. Remove it while we
	// hold it, so that the next probe finds nothing to decide.
	os.Remove(name)
	return driver.PresenceGone, nil
}

// maxSweep bounds the stale lock files one Hold looks at.
const maxSweep = 64

func (l *ownerLocks) sweep() {
	names, _ := filepath.Glob(globEscape(l.prefix) + "*")
	for i, name := range names {
		if i == maxSweep {
			return
		}
		probeFile(name)
	}
}

// globEscape quotes the glob metacharacters of a literal path.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
