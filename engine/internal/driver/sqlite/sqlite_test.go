package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/ncruces/go-sqlite3/util/vfsutil"
	"github.com/ncruces/go-sqlite3/vfs"
)

// BenchmarkReplacedCheck is what each write transaction pays to make sure
// its file was not deleted or replaced: two stats.
func BenchmarkReplacedCheck(b *testing.B) {
	c, err := Open(filepath.Join(b.TempDir(), "a.db"), Options{Create: true})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Exec("CREATE TABLE t(x)"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := c.replaced(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBeginWriteRefusesReplacedFile: the driver-level guarantee.
func TestBeginWriteRefusesReplacedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	c, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec("CREATE TABLE t(x)"); err != nil {
		t.Fatal(err)
	}
	if err := c.Begin(driver.TxWrite); err != nil {
		t.Fatal(err)
	}
	c.Rollback()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := c.Begin(driver.TxRead); err != nil {
		t.Fatalf("a read transaction on a deleted file: %v", err)
	}
	c.Rollback()
	if err := c.Begin(driver.TxWrite); !errors.Is(err, driver.ErrReplaced) {
		t.Fatalf("a write transaction on a deleted file: %v, want ErrReplaced", err)
	}
	if c.InTx() {
		t.Fatal("the refused write transaction is still open")
	}
	if err := c.Close(); !errors.Is(err, driver.ErrReplaced) {
		t.Fatalf("Close of a deleted file: %v, want ErrReplaced", err)
	}
}

// fullBase is the OS VFS on a disk that is full once armed: writes fail as
// os.File.WriteAt fails on a full disk, with an *fs.PathError around
// ENOSPC (or EDQUOT).
type fullBase struct {
	vfs.VFS
	armed *atomic.Bool
	errno syscall.Errno
}

func (b fullBase) OpenFilename(name *vfs.Filename, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	f, flags, err := vfsutil.WrapOpenFilename(b.VFS, name, flags)
	if err != nil {
		return f, flags, err
	}
	return fullFile{File: f, b: b, name: name.String()}, flags, nil
}

type fullFile struct {
	vfs.File
	b    fullBase
	name string
}

func (f fullFile) WriteAt(p []byte, off int64) (int, error) {
	if f.b.armed.Load() {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: f.b.errno}
	}
	return f.File.WriteAt(p, off)
}

func (f fullFile) Unwrap() vfs.File               { return f.File }
func (f fullFile) SharedMemory() vfs.SharedMemory { return vfsutil.WrapSharedMemory(f.File) }
func (f fullFile) LockState() vfs.LockLevel       { return vfsutil.WrapLockState(f.File) }

// TestFullMapsENOSPC: a write that fails with ENOSPC or EDQUOT reaches the
// connection as a full disk (driver.ErrFull, SQLite's "database or disk is
// full") naming the file and the system's error, not as "disk I/O error".
func TestFullMapsENOSPC(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT} {
		var armed atomic.Bool
		name := fmt.Sprintf("agentstate-test-full-%d", int(errno))
		vfs.Register(name, osVFS{fullBase{VFS: vfs.Find(""), armed: &armed, errno: errno}})
		path := filepath.Join(t.TempDir(), "a.db")
		c, err := open("file:"+path+"?vfs="+name, Options{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec("PRAGMA journal_mode=WAL"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec("CREATE TABLE t(x)"); err != nil {
			t.Fatal(err)
		}
		armed.Store(true)
		_, err = c.Exec("INSERT INTO t VALUES (randomblob(10000))")
		if !errors.Is(err, driver.ErrFull) || !strings.Contains(err.Error(), "database or disk is full") ||
			!strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), errno.Error()) {
			t.Errorf("%v: %v, want ErrFull naming %s and the system's error", errno, err, path)
		}
		armed.Store(false)
		if _, err := c.Exec("INSERT INTO t VALUES (1)"); err != nil {
			t.Errorf("after space came back: %v", err)
		}
		c.Close()
	}
}
