package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/internal/testmedia"
)

// Files on media this process cannot write, and disks that fill up.

// copyFile copies src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReadOnlyMedia: files in a directory this process cannot write (a
// read-only mount as root, mode 0555 otherwise), as a backup or a mounted
// image holds them: closed cleanly (no -wal), copied while open (-wal and
// -shm beside), and copied without the -shm. Read-only handles must read
// every surface exactly as the original does; a file whose log cannot be
// read must be refused with ErrReadOnly saying why, and a read-write
// handle too, before touching anything.
func TestReadOnlyMedia(t *testing.T) {
	sqliteOnly(t, "an SQLite file on a read-only medium")
	nativeFilesOnly(t, "a WAL file opened read-only needs its -shm file")
	src := t.TempDir()
	w := relWork{seed: 11}
	make := func(name string) *DB {
		o := DefaultOptions()
		o.Mode, o.SnapshotEvery = channels.ModeDelta, 4
		db := openTest(t, filepath.Join(src, name), &o)
		for _, th := range []string{"a", "b"} {
			if err := runWorkload(rctx, db, w, th, 9, func(string, ...any) {}); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Store().Put(rctx, []string{"ns"}, "k", map[string]any{"v": 1}); err != nil {
			t.Fatal(err)
		}
		return db
	}
	exportOf := func(db *DB) []byte {
		var b bytes.Buffer
		if _, err := db.Export(rctx, &b, admin.ExportOptions{}); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	want := map[string][]byte{}
	closed := make("closed.db")
	want["closed.db"] = exportOf(closed)
	closed.Close()
	// Copied while a handle has it open: the last commits are in the log.
	live := make("live.db")
	want["live.db"] = exportOf(live)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		copyFile(t, filepath.Join(src, "live.db"+suffix), filepath.Join(src, "copy.db"+suffix))
	}
	for _, suffix := range []string{"", "-wal"} {
		copyFile(t, filepath.Join(src, "live.db"+suffix), filepath.Join(src, "noshm.db"+suffix))
	}
	live.Close()
	want["copy.db"] = want["live.db"]
	if fi, err := os.Stat(filepath.Join(src, "copy.db-wal")); err != nil || fi.Size() == 0 {
		t.Fatalf("the copy has no log to read (%v): the test proves nothing", err)
	}
	os.Remove(filepath.Join(src, "live.db"))
	os.Remove(filepath.Join(src, "live.db-wal"))
	os.Remove(filepath.Join(src, "live.db-shm"))

	view, kind := testmedia.ReadOnlyView(t, src)
	t.Logf("the files sit in %s", kind)
	before := listDir(t, src)

	for _, name := range []string{"closed.db", "copy.db"} {
		o := DefaultOptions()
		o.Mode, o.ReadOnly = channels.ModeAuto, true
		db, err := Open(rctx, filepath.Join(view, name), &o)
		if err != nil {
			t.Errorf("%s: read-only open on %s: %v", name, kind, err)
			continue
		}
		if got := exportOf(db); !bytes.Equal(got, want[name]) {
			t.Errorf("%s: export on %s differs from the original's (%d bytes, want %d)", name, kind, len(got), len(want[name]))
		}
		rep, err := db.Verify(rctx, admin.VerifyOptions{})
		if err != nil || !rep.OK || rep.Checkpoints == 0 {
			t.Errorf("%s: verify on %s: %v %v (%d checkpoints)", name, kind, err, rep.Problems, rep.Checkpoints)
		}
		if _, err := db.Info(rctx); err != nil {
			t.Errorf("%s: info: %v", name, err)
		}
		if _, err := db.State(rctx, Config{ThreadID: "a"}); err != nil {
			t.Errorf("%s: state: %v", name, err)
		}
		if err := db.Close(); err != nil {
			t.Errorf("%s: close: %v", name, err)
		}
	}

	o := DefaultOptions()
	o.Mode, o.ReadOnly = channels.ModeAuto, true
	_, err := Open(rctx, filepath.Join(view, "noshm.db"), &o)
	if !errors.Is(err, ErrReadOnly) || !strings.Contains(fmt.Sprint(err), "-shm") {
		t.Errorf("a file whose log cannot be read without creating its -shm: %v, want ErrReadOnly naming the -shm", err)
	}
	rw := DefaultOptions()
	rw.Mode = channels.ModeAuto
	if _, err := Open(rctx, filepath.Join(view, "closed.db"), &rw); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-write open on %s: %v, want ErrReadOnly", kind, err)
	}
	if after := listDir(t, src); after != before {
		t.Errorf("the directory changed:\n%s\nwas\n%s", after, before)
	}
}

func listDir(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range es {
		fi, _ := e.Info()
		fmt.Fprintf(&b, "%s %d %v\n", e.Name(), fi.Size(), fi.ModTime().UnixNano())
	}
	return b.String()
}

// TestDiskFull: a file on a small file system that fills up. Every write
// surface must fail with ErrDiskFull, naming the file and the system's
// error; what was committed before stays readable and the file verifies;
// once space is freed, writes work again.
func TestDiskFull(t *testing.T) {
	sqliteOnly(t, "fills the disk under an SQLite file")
	dir := testmedia.FullDisk(t, "1m")
	path := filepath.Join(dir, "full.db")
	db := openTest(t, path, nil)
	w := relWork{seed: 5}
	if _, err := db.Commit(rctx, "t", w.step("t", 1, "")); err != nil {
		t.Fatal(err)
	}
	ballast := filepath.Join(dir, "ballast")
	// Fill the disk, then give back 100 KB: a few commits fit.
	f, err := os.Create(ballast)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	var size int64
	for {
		n, err := f.Write(chunk)
		size += int64(n)
		if err != nil {
			break
		}
	}
	if err := f.Truncate(size - 100<<10); err != nil {
		t.Fatal(err)
	}
	f.Close()
	committed := 1
	var full error
	for n := 2; n <= 200; n++ {
		_, err := db.Commit(rctx, "t", w.step("t", n, ""))
		if err != nil {
			full = err
			break
		}
		committed = n
	}
	if full == nil {
		t.Fatal("200 commits fit on a full disk: the test proves nothing")
	}
	if !errors.Is(full, ErrDiskFull) || !strings.Contains(full.Error(), dir) || !strings.Contains(full.Error(), "no space left") {
		t.Fatalf("commit on a full disk: %v, want ErrDiskFull naming the file and the system's error", full)
	}
	t.Logf("%d commits fitted, then: %v", committed, full)
	for name, fn := range map[string]func() error{
		"Events.Put": func() error { _, err := db.Events().Put(rctx, msg("t", "r", strings.Repeat("x", 20000))); return err },
		"Store.Put": func() error {
			return db.Store().Put(rctx, []string{"ns"}, "k", map[string]any{"v": strings.Repeat("y", 20000)})
		},
	} {
		if err := fn(); err != nil && !errors.Is(err, ErrDiskFull) {
			t.Errorf("%s on a full disk: %v, want nil or ErrDiskFull", name, err)
		}
	}
	if st, err := db.State(rctx, Config{ThreadID: "t"}); err != nil || relN(st.Metadata) != committed {
		t.Fatalf("after the disk filled: head step %v (%v), want %d", st.Metadata, err, committed)
	}
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Commit(rctx, "t", w.step("t", committed+1, "")); err != nil {
		t.Fatalf("commit after space was freed: %v", err)
	}
	mustVerify(t, db, "after the disk filled and was freed")
}

// TestCheckpointWALWithReader: while another connection reads an
// older snapshot, a WAL checkpoint cannot empty the log: it must say so
// (Truncated false, fewer pages copied than logged) instead of reporting
// success, and succeed once the reader is done.
func TestCheckpointWALWithReader(t *testing.T) {
	sqliteOnly(t, "SQLite's WAL checkpoint")
	path := filepath.Join(t.TempDir(), "wal.db")
	o := DefaultOptions()
	o.BusyTimeout = 200 * time.Millisecond
	a := openTest(t, path, &o)
	b := openTest(t, path, &o)
	w := relWork{seed: 2}
	if _, err := a.Commit(rctx, "t", w.step("t", 1, "")); err != nil {
		t.Fatal(err)
	}
	reading, done := make(chan struct{}), make(chan struct{})
	go b.read(rctx, func(c *conn) error {
		c.queryInt64("SELECT count(*) FROM checkpoints")
		close(reading)
		<-done
		return nil
	})
	<-reading
	for n := 2; n <= 5; n++ {
		if _, err := a.Commit(rctx, "t", w.step("t", n, "")); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Vacuum(rctx); err != nil {
		t.Fatal(err)
	}
	st, err := a.CheckpointWAL(rctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Truncated || st.CopiedFrames >= st.LogFrames {
		t.Fatalf("checkpoint with a reader on an older snapshot: %+v, want not truncated", st)
	}
	close(done)
	time.Sleep(50 * time.Millisecond)
	if st, err := a.CheckpointWAL(rctx); err != nil || !st.Truncated {
		t.Fatalf("checkpoint once the reader is done: %+v %v, want truncated", st, err)
	}
}
