// Package faultvfs is an SQLite VFS for tests that simulates losing power.
//
// It wraps the operating system's VFS and remembers, for every database,
// WAL and journal file, the writes (and truncations) made since the file was
// last synced. At a chosen moment (a call to Crash, or the Nth write, sync or
// truncation) the machine "loses power": from then on every write, sync,
// truncation and deletion fails, so nothing more reaches the disk. Once the
// caller has closed its connections, PowerCycle puts each file back as the
// disk could hold it after the cut: the last synced contents plus, if asked,
// a random subset of the unsynced writes (a disk cache flushes in any order).
//
// It is test code: one VFS value serves one scenario at a time.
package faultvfs

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/util/vfsutil"
	"github.com/ncruces/go-sqlite3/vfs"
)

// VFS is the fault-injecting VFS. Register it with vfs.Register and open
// databases with "file:PATH?vfs=NAME".
type VFS struct {
	base vfs.VFS

	mu      sync.Mutex
	files   map[string]*fileState // by path, shared by every handle on it
	ops     int64                 // writes, syncs and truncations so far
	crashAt int64                 // 0: never
	crashed bool
}

// New returns a VFS over the operating system's.
func New() *VFS { return &VFS{base: vfs.Find(""), files: map[string]*fileState{}} }

// fileState is what one path holds that the disk does not yet have for sure.
type fileState struct {
	path     string
	unsynced []op // since the last sync, in order
}

// op is one unsynced change with what it replaced.
type op struct {
	off      int64  // write offset, or the new size of a truncation
	data     []byte // bytes written (nil for a truncation)
	old      []byte // bytes the change overwrote or cut, from off
	oldSize  int64  // file size before the change
	truncate bool
}

// errPowerLost is returned by every mutating call after the cut.
var errPowerLost = sqlite3.IOERR

// CrashAfter makes the nth mutating operation from now (1 = the next one)
// fail and cut the power; n <= 0 disarms it.
func (v *VFS) CrashAfter(n int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if n <= 0 {
		v.crashAt = 0
		return
	}
	v.crashAt = v.ops + n
}

// Crash cuts the power now.
func (v *VFS) Crash() {
	v.mu.Lock()
	v.crashed = true
	v.mu.Unlock()
}

// Crashed reports whether the power has been cut.
func (v *VFS) Crashed() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.crashed
}

// Ops returns how many writes, syncs and truncations were made so far.
func (v *VFS) Ops() int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.ops
}

// Unsynced returns how many changes are not yet synced, over all files.
func (v *VFS) Unsynced() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for _, f := range v.files {
		n += len(f.unsynced)
	}
	return n
}

// Loss says which unsynced writes survive a power cut.
type Loss int

const (
	// DropAll loses every write not synced: the disk holds exactly what
	// the last syncs made durable.
	DropAll Loss = iota
	// DropRandom keeps a random subset of the unsynced writes, applied in
	// their order (a disk cache that flushed some of them).
	DropRandom
)

// PowerCycle restores every file to what the disk could hold after the cut
// and makes the VFS usable again. Every connection through this VFS must be
// closed first. It reports how many unsynced changes were dropped and kept.
func (v *VFS) PowerCycle(loss Loss, rng *rand.Rand) (dropped, kept int, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, f := range v.files {
		keep := make([]bool, len(f.unsynced))
		if loss == DropRandom {
			for i := range keep {
				keep[i] = rng.IntN(2) == 0
			}
		}
		d, k, err := f.restore(keep)
		if err != nil {
			return dropped, kept, fmt.Errorf("faultvfs: restore %s: %w", f.path, err)
		}
		dropped, kept = dropped+d, kept+k
		f.unsynced = nil
	}
	v.crashed = false
	v.crashAt = 0
	return dropped, kept, nil
}

// restore undoes every unsynced change (newest first), then replays the
// ones to keep (oldest first), straight on the file.
func (f *fileState) restore(keep []bool) (dropped, kept int, err error) {
	if len(f.unsynced) == 0 {
		return 0, 0, nil
	}
	fh, err := os.OpenFile(f.path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	defer fh.Close()
	for i := len(f.unsynced) - 1; i >= 0; i-- {
		o := f.unsynced[i]
		if len(o.old) > 0 {
			if _, err := fh.WriteAt(o.old, o.off); err != nil {
				return 0, 0, err
			}
		}
		if err := fh.Truncate(o.oldSize); err != nil {
			return 0, 0, err
		}
	}
	for i, o := range f.unsynced {
		if !keep[i] {
			dropped++
			continue
		}
		kept++
		if o.truncate {
			err = fh.Truncate(o.off)
		} else {
			_, err = fh.WriteAt(o.data, o.off)
		}
		if err != nil {
			return 0, 0, err
		}
	}
	return dropped, kept, fh.Sync()
}

// step counts one mutating operation and reports whether it may proceed.
// Callers hold v.mu.
func (v *VFS) step() bool {
	if v.crashed {
		return false
	}
	v.ops++
	if v.crashAt > 0 && v.ops >= v.crashAt {
		v.crashed = true
		return false
	}
	return true
}

// Open is never called by SQLite for named files (OpenFilename is).
func (v *VFS) Open(name string, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	return vfsutil.WrapOpen(v.base, name, flags)
}

// OpenFilename opens through the OS VFS and tracks database, WAL and
// journal files.
func (v *VFS) OpenFilename(name *vfs.Filename, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	file, flags, err := vfsutil.WrapOpenFilename(v.base, name, flags)
	if err != nil || name == nil || flags&(vfs.OPEN_MAIN_DB|vfs.OPEN_WAL|vfs.OPEN_MAIN_JOURNAL) == 0 {
		return file, flags, err
	}
	path := name.String()
	v.mu.Lock()
	st := v.files[path]
	if st == nil {
		st = &fileState{path: path}
		v.files[path] = st
	}
	v.mu.Unlock()
	return &faultFile{File: file, vfs: v, st: st}, flags, nil
}

// Delete refuses after the cut: a file unlinked after the power went is
// still on the disk.
func (v *VFS) Delete(name string, syncDir bool) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.crashed {
		return sqlite3.IOERR_DELETE
	}
	if err := v.base.Delete(name, syncDir); err != nil {
		return err
	}
	if st := v.files[name]; st != nil {
		st.unsynced = nil
	}
	return nil
}

// Access asks the OS VFS.
func (v *VFS) Access(name string, flags vfs.AccessFlag) (bool, error) {
	return v.base.Access(name, flags)
}

// FullPathname asks the OS VFS.
func (v *VFS) FullPathname(name string) (string, error) { return v.base.FullPathname(name) }

type faultFile struct {
	vfs.File
	vfs *VFS
	st  *fileState
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	v := f.vfs
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.step() {
		return 0, errPowerLost
	}
	size, err := f.File.Size()
	if err != nil {
		return 0, err
	}
	o := op{off: off, data: append([]byte(nil), p...), oldSize: size}
	if off < size {
		o.old = make([]byte, min(int64(len(p)), size-off))
		if _, err := f.File.ReadAt(o.old, off); err != nil {
			return 0, err
		}
	}
	n, err := f.File.WriteAt(p, off)
	if n > 0 {
		f.st.unsynced = append(f.st.unsynced, o)
	}
	return n, err
}

func (f *faultFile) Truncate(size int64) error {
	v := f.vfs
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.step() {
		return errPowerLost
	}
	cur, err := f.File.Size()
	if err != nil {
		return err
	}
	o := op{off: size, oldSize: cur, truncate: true}
	if size < cur {
		o.old = make([]byte, cur-size)
		if _, err := f.File.ReadAt(o.old, size); err != nil {
			return err
		}
	}
	if err := f.File.Truncate(size); err != nil {
		return err
	}
	f.st.unsynced = append(f.st.unsynced, o)
	return nil
}

func (f *faultFile) Sync(flags vfs.SyncFlag) error {
	v := f.vfs
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.step() {
		return errPowerLost
	}
	if err := f.File.Sync(flags); err != nil {
		return err
	}
	// fsync makes the file durable whichever handle wrote it.
	f.st.unsynced = nil
	return nil
}

// The optional methods SQLite needs for WAL mode and locking go to the
// wrapped file. Memory mapping is not passed on, so every read goes through
// ReadAt and sees what the writes left.

func (f *faultFile) Unwrap() vfs.File                     { return f.File }
func (f *faultFile) SharedMemory() vfs.SharedMemory       { return vfsutil.WrapSharedMemory(f.File) }
func (f *faultFile) LockState() vfs.LockLevel             { return vfsutil.WrapLockState(f.File) }
func (f *faultFile) PersistWAL() bool                     { return vfsutil.WrapPersistWAL(f.File) }
func (f *faultFile) SetPersistWAL(keepWAL bool)           { vfsutil.WrapSetPersistWAL(f.File, keepWAL) }
func (f *faultFile) PowersafeOverwrite() bool             { return vfsutil.WrapPowersafeOverwrite(f.File) }
func (f *faultFile) SetPowersafeOverwrite(psow bool)      { vfsutil.WrapSetPowersafeOverwrite(f.File, psow) }
func (f *faultFile) HasMoved() (bool, error)              { return vfsutil.WrapHasMoved(f.File) }
func (f *faultFile) BusyHandler(handler func() bool)      { vfsutil.WrapBusyHandler(f.File, handler) }
func (f *faultFile) CheckpointStart()                     { vfsutil.WrapCheckpointStart(f.File) }
func (f *faultFile) CheckpointDone()                      { vfsutil.WrapCheckpointDone(f.File) }
func (f *faultFile) Pragma(n, val string) (string, error) { return vfsutil.WrapPragma(f.File, n, val) }

// DeviceCharacteristics hides batch-atomic writes: they would bypass the
// write-by-write record this VFS keeps.
func (f *faultFile) DeviceCharacteristics() vfs.DeviceCharacteristic {
	return f.File.DeviceCharacteristics() &^ vfs.IOCAP_BATCH_ATOMIC
}
