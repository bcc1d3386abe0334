//go:build js && wasm

package main

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall/js"

	"github.com/agentstate/agentstate/engine"
	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/util/vfsutil"
	"github.com/ncruces/go-sqlite3/vfs"
)

// hostVFS is an SQLite VFS whose files live on the JavaScript side: Node's
// synchronous fs calls, or the browser's OPFS sync access handles in a
// worker. Every call is synchronous, so SQLite never waits on the event loop
// and no callback re-enters Go (Go's own os package under GOOS=js goes
// through Node's callback API, one event-loop turn per call, several times
// slower).
//
// Locks are kept in this process only: two connections of one handle
// coordinate here, and the host keeps other processes away (Node: an owner
// file naming a live pid; browsers: OPFS handles are exclusive). Nothing on
// disk records a lock, so a process that dies leaves nothing stale behind:
// the next open finds at most a hot journal, which SQLite rolls back.
//
// Hosts that set wal: true (Node) get WAL mode: the WAL-index lives in this
// process's memory (ncruces' shared memory of the sqlite3_dotlk build),
// with a "-shm" directory on disk as a dead man's switch that keeps native
// processes from opening the file meanwhile (the Node host removes one
// left by a dead owner). Other hosts (OPFS) use a rollback journal: the
// engine's request for WAL is declined by SQLite without error.
//
// The host object must provide, all synchronous:
//
//	open(name, create, readOnly) -> id (number >= 0), or -1 when the file is missing and create is false
//	read(id, n, offset) -> bytes read into buf      write(id, n, offset) from buf
//	size(id) -> bytes   truncate(id, n)   sync(id)   close(id)
//	remove(name)        exists(name) -> boolean
//	buf: a Uint8Array used for transfers; reserve(n) grows it to at least n bytes
//	wal: true when the host's files may use WAL mode (see above)
type hostVFS struct {
	host js.Value
	wal  bool

	mu    sync.Mutex // serialises host calls that use buf
	buf   js.Value
	bufSz int

	locksMu sync.Mutex
	locks   map[string]*lockState
}

var (
	hostVFSMu   sync.Mutex
	hostVFSNext int
)

// registerHostVFS registers a VFS for host and returns its name.
func registerHostVFS(host js.Value) (string, *hostVFS) {
	hostVFSMu.Lock()
	hostVFSNext++
	name := fmt.Sprintf("agentstate-host-%d", hostVFSNext)
	hostVFSMu.Unlock()
	v := &hostVFS{host: host, wal: host.Get("wal").Truthy(), locks: map[string]*lockState{}}
	vfs.Register(name, v)
	return name, v
}

func unregisterHostVFS(name string) { vfs.Unregister(name) }

// call invokes a host method, turning a thrown JavaScript error into an
// error that SQLite sees as code (the message is kept as the system error).
func (v *hostVFS) call(code sqlite3.ExtendedErrorCode, method string, args ...any) (res js.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			res = js.Undefined()
			err = vfs.SystemError(fmt.Errorf("agentstate host %s: %v", method, r), code)
		}
	}()
	return v.host.Call(method, args...), nil
}

// scratch returns the host's transfer buffer, at least n bytes long.
// v.mu must be held.
func (v *hostVFS) scratch(n int) (js.Value, error) {
	if v.bufSz >= n && !v.buf.IsUndefined() {
		return v.buf, nil
	}
	if _, err := v.call(sqlite3.IOERR_NOMEM, "reserve", n); err != nil {
		return js.Undefined(), err
	}
	v.buf = v.host.Get("buf")
	v.bufSz = v.buf.Get("length").Int()
	if v.bufSz < n {
		return js.Undefined(), vfs.SystemError(errors.New("agentstate host: reserve did not grow buf"), sqlite3.IOERR_NOMEM)
	}
	return v.buf, nil
}

func isTemp(flags vfs.OpenFlag) bool {
	return flags&(vfs.OPEN_TEMP_DB|vfs.OPEN_TEMP_JOURNAL|vfs.OPEN_SUBJOURNAL|vfs.OPEN_TRANSIENT_DB|vfs.OPEN_MEMORY) != 0 ||
		flags&vfs.OPEN_DELETEONCLOSE != 0
}

// Open implements vfs.VFS.
func (v *hostVFS) Open(name string, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	if name == "" || isTemp(flags) {
		// Temporary files (statement journals, sorter spills) never need to
		// outlive the connection: keep them in memory.
		return &memFile{}, flags, nil
	}
	res, err := v.call(sqlite3.ExtendedErrorCode(sqlite3.CANTOPEN), "open", name, flags&vfs.OPEN_CREATE != 0, flags&vfs.OPEN_READONLY != 0)
	if err != nil {
		return nil, flags, err
	}
	id := res.Int()
	if id < 0 {
		return nil, flags, sqlite3.CANTOPEN
	}
	f := &hostFile{v: v, name: name, id: id, readOnly: flags&vfs.OPEN_READONLY != 0}
	if flags&vfs.OPEN_MAIN_DB != 0 {
		f.locker = v.locker(name)
		if v.wal {
			f.shm = vfs.NewSharedMemory(name+"-shm", flags)
		}
	}
	return f, flags, nil
}

// Delete implements vfs.VFS.
func (v *hostVFS) Delete(name string, syncDir bool) error {
	_, err := v.call(sqlite3.IOERR_DELETE, "remove", name)
	return err
}

// Access implements vfs.VFS.
func (v *hostVFS) Access(name string, flag vfs.AccessFlag) (bool, error) {
	res, err := v.call(sqlite3.IOERR_ACCESS, "exists", name)
	if err != nil {
		return false, err
	}
	return res.Bool(), nil
}

// FullPathname implements vfs.VFS: the host resolves paths before opening.
func (v *hostVFS) FullPathname(name string) (string, error) { return name, nil }

// hostFile is one open host file.
type hostFile struct {
	v        *hostVFS
	name     string
	id       int
	readOnly bool
	lock     vfs.LockLevel
	locker   *lockState // main database files only
	shm      vfs.SharedMemory
	closed   bool
}

// SharedMemory implements vfs.FileSharedMemory (nil: no WAL).
func (f *hostFile) SharedMemory() vfs.SharedMemory { return f.shm }

func (f *hostFile) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	if f.locker != nil && f.lock > vfs.LOCK_NONE {
		f.Unlock(vfs.LOCK_NONE)
	}
	if f.locker != nil {
		f.v.releaseLocker(f.name)
	}
	if c, ok := f.shm.(io.Closer); ok {
		c.Close()
	}
	_, err := f.v.call(sqlite3.IOERR_CLOSE, "close", f.id)
	return err
}

func (f *hostFile) ReadAt(b []byte, off int64) (int, error) {
	f.v.mu.Lock()
	defer f.v.mu.Unlock()
	buf, err := f.v.scratch(len(b))
	if err != nil {
		return 0, err
	}
	res, err := f.v.call(sqlite3.IOERR_READ, "read", f.id, len(b), float64(off))
	if err != nil {
		return 0, err
	}
	n := res.Int()
	if n > 0 {
		js.CopyBytesToGo(b[:n], buf)
	}
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

func (f *hostFile) WriteAt(b []byte, off int64) (int, error) {
	f.v.mu.Lock()
	defer f.v.mu.Unlock()
	buf, err := f.v.scratch(len(b))
	if err != nil {
		return 0, err
	}
	js.CopyBytesToJS(buf, b)
	if _, err := f.v.call(sqlite3.IOERR_WRITE, "write", f.id, len(b), float64(off)); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (f *hostFile) Truncate(size int64) error {
	_, err := f.v.call(sqlite3.IOERR_TRUNCATE, "truncate", f.id, float64(size))
	return err
}

func (f *hostFile) Sync(flags vfs.SyncFlag) error {
	_, err := f.v.call(sqlite3.IOERR_FSYNC, "sync", f.id)
	return err
}

func (f *hostFile) Size() (int64, error) {
	res, err := f.v.call(sqlite3.IOERR_FSTAT, "size", f.id)
	if err != nil {
		return 0, err
	}
	return int64(res.Float()), nil
}

func (f *hostFile) SectorSize() int { return 4096 }

func (f *hostFile) DeviceCharacteristics() vfs.DeviceCharacteristic {
	return vfs.IOCAP_POWERSAFE_OVERWRITE | vfs.IOCAP_SUBPAGE_READ
}

// lockState is the in-process lock of one database file, shared by every
// connection that has it open (SQLite's shared / reserved / pending /
// exclusive protocol, as in ncruces' dot-lock VFS without the lock file).
type lockState struct {
	refs     int
	shared   int
	reserved *hostFile
	pending  *hostFile
}

func (v *hostVFS) locker(name string) *lockState {
	v.locksMu.Lock()
	defer v.locksMu.Unlock()
	l := v.locks[name]
	if l == nil {
		l = &lockState{}
		v.locks[name] = l
	}
	l.refs++
	return l
}

func (v *hostVFS) releaseLocker(name string) {
	v.locksMu.Lock()
	defer v.locksMu.Unlock()
	if l := v.locks[name]; l != nil {
		if l.refs--; l.refs == 0 {
			delete(v.locks, name)
		}
	}
}

var errLockState = errors.New("agentstate host: lock called on a file that is not a main database")

func (f *hostFile) Lock(lock vfs.LockLevel) error {
	if f.locker == nil {
		return errLockState
	}
	if f.lock >= lock {
		return nil
	}
	if lock >= vfs.LOCK_RESERVED && f.readOnly {
		return sqlite3.IOERR_LOCK
	}
	f.v.locksMu.Lock()
	defer f.v.locksMu.Unlock()
	l := f.locker
	switch lock {
	case vfs.LOCK_SHARED:
		if l.pending != nil {
			return sqlite3.BUSY
		}
		l.shared++
	case vfs.LOCK_RESERVED:
		if l.reserved != nil && l.reserved != f {
			return sqlite3.BUSY
		}
		l.reserved = f
	case vfs.LOCK_EXCLUSIVE:
		if l.pending != nil && l.pending != f {
			return sqlite3.BUSY
		}
		// Pending keeps new readers out while the others finish; the
		// file stays pending until it gets exclusive or unlocks.
		l.pending = f
		if l.shared > 1 {
			f.lock = vfs.LOCK_PENDING
			return sqlite3.BUSY
		}
	default:
		return sqlite3.IOERR_LOCK
	}
	f.lock = lock
	return nil
}

func (f *hostFile) Unlock(lock vfs.LockLevel) error {
	if f.locker == nil {
		return errLockState
	}
	if f.lock <= lock {
		return nil
	}
	f.v.locksMu.Lock()
	defer f.v.locksMu.Unlock()
	l := f.locker
	if l.reserved == f {
		l.reserved = nil
	}
	if l.pending == f {
		l.pending = nil
	}
	if lock == vfs.LOCK_NONE && f.lock >= vfs.LOCK_SHARED {
		l.shared--
	}
	f.lock = lock
	return nil
}

func (f *hostFile) CheckReservedLock() (bool, error) {
	if f.locker == nil {
		return false, nil
	}
	if f.lock >= vfs.LOCK_RESERVED {
		return true, nil
	}
	f.v.locksMu.Lock()
	defer f.v.locksMu.Unlock()
	return f.locker.reserved != nil, nil
}

// LockState implements vfs.FileLockState.
func (f *hostFile) LockState() vfs.LockLevel { return f.lock }

// memFile is a temporary file held in memory.
type memFile struct{ vfsutil.SliceFile }

func (*memFile) Lock(vfs.LockLevel) error         { return nil }
func (*memFile) Unlock(vfs.LockLevel) error       { return nil }
func (*memFile) CheckReservedLock() (bool, error) { return false, nil }
func (*memFile) SectorSize() int                  { return 0 }
func (m *memFile) DeviceCharacteristics() vfs.DeviceCharacteristic {
	return m.SliceFile.DeviceCharacteristics()
}

// leaveWAL converts, for hosts without WAL support, a file written in WAL
// mode (by a native process or Node) to a rollback journal, which this VFS can share between
// connections: one connection in exclusive locking mode needs no WAL-index,
// recovers any frames left in the -wal file, checkpoints them and switches
// the header. Files already in rollback mode are left untouched.
func (v *hostVFS) leaveWAL(vfsName, path string, readOnly bool) error {
	if v.wal {
		return nil
	}
	wal, err := v.headerIsWAL(path)
	if err != nil || !wal {
		return err
	}
	if readOnly {
		return fmt.Errorf("%w: %s is in WAL mode (written by a native process); open it read-write once to convert it", engine.ErrReadOnly, path)
	}
	c, err := sqlite3.OpenFlags(rawHostURI(path, vfsName), sqlite3.OPEN_READWRITE|sqlite3.OPEN_URI)
	if err != nil {
		return fmt.Errorf("agentstate: open %s: %w", path, err)
	}
	defer c.Close()
	for _, q := range []string{"PRAGMA locking_mode=EXCLUSIVE", "PRAGMA journal_mode=DELETE"} {
		if err := c.Exec(q); err != nil {
			return fmt.Errorf("agentstate: open %s: leave WAL mode: %w", path, err)
		}
	}
	return nil
}

// headerIsWAL reads the file's header: bytes 18 and 19 are 2 in WAL mode.
func (v *hostVFS) headerIsWAL(path string) (bool, error) {
	res, err := v.call(sqlite3.ExtendedErrorCode(sqlite3.CANTOPEN), "open", path, false, true)
	if err != nil {
		return false, err
	}
	id := res.Int()
	if id < 0 {
		return false, nil
	}
	f := &hostFile{v: v, name: path, id: id}
	defer f.Close()
	hdr := make([]byte, 20)
	n, err := f.ReadAt(hdr, 0)
	if n < len(hdr) {
		return false, nil // empty or new: nothing to convert
	}
	if err != nil {
		return false, err
	}
	return hdr[18] == 2 || hdr[19] == 2, nil
}
