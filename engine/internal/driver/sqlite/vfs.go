package sqlite

import (
	"errors"
	"io/fs"
	"os"
	"sync"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/util/vfsutil"
	"github.com/ncruces/go-sqlite3/vfs"
)

// osVFSName is the VFS the driver opens files with (haveOSVFS): the
// operating system's VFS of ncruces with two things SQLite's own unix VFS
// does and ncruces v0.37 does not.
//
//   - A write that fails because the disk or the user's quota is full
//     reports SQLITE_FULL ("database or disk is full") with the path and
//     the system's error, not SQLITE_IOERR ("disk I/O error"): ncruces
//     tests the error of os.File.WriteAt for unix.Errno, but WriteAt
//     returns an *fs.PathError around it, so ENOSPC is never recognised.
//     The same goes for truncations, syncs and allocations, and for EDQUOT,
//     which it does not test at all.
//   - A file that exists but cannot be opened for writing (a read-only
//     file system, a file or directory without write permission) is opened
//     read-only instead, as SQLite's unix VFS does: a read-only connection
//     then reads a WAL-mode database whose -wal and -shm files exist, from
//     a backup or a mounted image.
const osVFSName = "agentstate-os"

func init() {
	if haveOSVFS {
		vfs.Register(osVFSName, osVFS{vfs.Find("")})
	}
}

type osVFS struct{ vfs.VFS }

func (v osVFS) Open(name string, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	f, flags, err := vfsutil.WrapOpen(v.VFS, name, flags)
	if err != nil {
		return f, flags, err
	}
	return osFile{File: f}, flags, nil
}

func (v osVFS) OpenFilename(name *vfs.Filename, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	f, outFlags, err := vfsutil.WrapOpenFilename(v.VFS, name, flags)
	if err != nil && name != nil && flags&vfs.OPEN_READWRITE != 0 && cannotWrite(err) {
		if _, serr := os.Stat(name.String()); serr == nil {
			ro := flags&^(vfs.OPEN_READWRITE|vfs.OPEN_CREATE) | vfs.OPEN_READONLY
			f, outFlags, err = vfsutil.WrapOpenFilename(v.VFS, name, ro)
		}
	}
	if err != nil {
		return f, outFlags, err
	}
	var db string
	if name != nil {
		db = name.Database()
	}
	return osFile{File: f, db: db}, outFlags, nil
}

func cannotWrite(err error) bool {
	return errors.Is(err, fs.ErrPermission) || isReadOnlyFS(err)
}

// lastFull holds, by database path, the last disk-full error of one of its
// files: ncruces keeps the system's error of SQLITE_IOERR and
// SQLITE_CANTOPEN for the connection's error, not of SQLITE_FULL, so the
// connection looks it up here to say which file and what the system said.
var lastFull sync.Map // database path -> error

// full maps a disk-full or quota error to SQLITE_FULL and remembers it.
func (f osFile) full(err error) error {
	if err != nil && isFull(err) {
		if f.db != "" {
			lastFull.Store(f.db, err)
		}
		return vfs.SystemError(err, sqlite3.FULL)
	}
	return err
}

// fullCause returns the system's error behind the last SQLITE_FULL of the
// database at path, once.
func fullCause(path string) error {
	if err, ok := lastFull.LoadAndDelete(path); ok {
		return err.(error)
	}
	return nil
}

type osFile struct {
	vfs.File
	db string // the path of the database the file belongs to, if known
}

func (f osFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	return n, f.full(err)
}

func (f osFile) Truncate(size int64) error     { return f.full(f.File.Truncate(size)) }
func (f osFile) Sync(flags vfs.SyncFlag) error { return f.full(f.File.Sync(flags)) }
func (f osFile) SizeHint(size int64) error     { return f.full(vfsutil.WrapSizeHint(f.File, size)) }

// The optional interfaces of the wrapped file, passed on.

func (f osFile) Unwrap() vfs.File                     { return f.File }
func (f osFile) SharedMemory() vfs.SharedMemory       { return vfsutil.WrapSharedMemory(f.File) }
func (f osFile) MemoryMapper() vfs.MemoryMapper       { return vfsutil.WrapMemoryMapper(f.File) }
func (f osFile) LockState() vfs.LockLevel             { return vfsutil.WrapLockState(f.File) }
func (f osFile) PersistWAL() bool                     { return vfsutil.WrapPersistWAL(f.File) }
func (f osFile) SetPersistWAL(keepWAL bool)           { vfsutil.WrapSetPersistWAL(f.File, keepWAL) }
func (f osFile) PowersafeOverwrite() bool             { return vfsutil.WrapPowersafeOverwrite(f.File) }
func (f osFile) SetPowersafeOverwrite(psow bool)      { vfsutil.WrapSetPowersafeOverwrite(f.File, psow) }
func (f osFile) ChunkSize(size int)                   { vfsutil.WrapChunkSize(f.File, size) }
func (f osFile) HasMoved() (bool, error)              { return vfsutil.WrapHasMoved(f.File) }
func (f osFile) BeginAtomicWrite() error              { return vfsutil.WrapBeginAtomicWrite(f.File) }
func (f osFile) CommitAtomicWrite() error             { return f.full(vfsutil.WrapCommitAtomicWrite(f.File)) }
func (f osFile) RollbackAtomicWrite() error           { return vfsutil.WrapRollbackAtomicWrite(f.File) }
func (f osFile) BusyHandler(handler func() bool)      { vfsutil.WrapBusyHandler(f.File, handler) }
func (f osFile) CheckpointStart()                     { vfsutil.WrapCheckpointStart(f.File) }
func (f osFile) CheckpointDone()                      { vfsutil.WrapCheckpointDone(f.File) }
func (f osFile) Pragma(n, val string) (string, error) { return vfsutil.WrapPragma(f.File, n, val) }
