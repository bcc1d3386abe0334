package engine

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/engine/records"
)

// Handles that outlive a change another process made to their file.

// TestFileReplacedUnderOpenHandle: the file of an open handle is deleted,
// or another agentstate file is moved over its path (mv other.db this.db),
// or it is moved away (mv this.db elsewhere.db). Every write surface must
// then fail with ErrFileReplaced before writing, and Close too; the file
// now at the path must read exactly as it was (none of the handle's
// commits applied to it); a file moved away keeps every commit made before
// the move.
func TestFileReplacedUnderOpenHandle(t *testing.T) {
	sqliteOnly(t, "deletes and replaces an SQLite file under an open handle")
	nativeFilesOnly(t, "the host VFS does not watch the file's identity")
	writes := []struct {
		name string
		fn   func(db *DB) error
	}{
		{"Commit", func(db *DB) error {
			_, err := db.Commit(rctx, "mine", relWork{seed: 1}.step("mine", 2, ""))
			return err
		}},
		{"Commit new thread", func(db *DB) error { _, err := db.Commit(rctx, "new", relWork{seed: 1}.step("new", 1, "")); return err }},
		{"Events.Put", func(db *DB) error { _, err := db.Events().Put(rctx, msg("mine", "r", "late")); return err }},
		{"Store.Put", func(db *DB) error { return db.Store().Put(rctx, []string{"ns"}, "late", map[string]any{"v": 1}) }},
		{"Runs.Create", func(db *DB) error {
			_, err := db.Runs().Create(rctx, records.NewRun{ThreadID: "late", Status: records.RunRunning})
			return err
		}},
		{"Threads.Create", func(db *DB) error {
			_, err := db.Threads().Create(rctx, AnyOwner, records.NewThread{ThreadID: "late"})
			return err
		}},
		{"Retain", func(db *DB) error { _, err := db.Retain(rctx, admin.RetainOptions{KeepLatest: 1}); return err }},
		{"Vacuum", func(db *DB) error { return db.Vacuum(rctx) }},
		{"CheckpointWAL", func(db *DB) error { _, err := db.CheckpointWAL(rctx); return err }},
	}
	for _, how := range []string{"deleted", "replaced", "moved away"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "this.db")
			db := openTest(t, path, nil)
			w := relWork{seed: 1}
			if _, err := db.Commit(rctx, "mine", w.step("mine", 1, "")); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Events().Put(rctx, msg("mine", "r", "before")); err != nil {
				t.Fatal(err)
			}
			var other bytes.Buffer
			switch how {
			case "deleted":
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			case "replaced":
				otherPath := filepath.Join(dir, "other.db")
				o := openTest(t, otherPath, nil)
				if _, err := o.Commit(rctx, "theirs", w.step("theirs", 1, "")); err != nil {
					t.Fatal(err)
				}
				if _, err := o.Export(rctx, &other, admin.ExportOptions{}); err != nil {
					t.Fatal(err)
				}
				o.Close()
				if err := os.Rename(otherPath, path); err != nil {
					t.Fatal(err)
				}
			case "moved away":
				if err := os.Rename(path, filepath.Join(dir, "elsewhere.db")); err != nil {
					t.Fatal(err)
				}
			}
			for _, wr := range writes {
				if err := wr.fn(db); !errors.Is(err, ErrFileReplaced) {
					t.Errorf("%s after the file was %s: %v, want ErrFileReplaced", wr.name, how, err)
				}
			}
			if err := db.Close(); !errors.Is(err, ErrFileReplaced) {
				t.Errorf("Close after the file was %s: %v, want ErrFileReplaced", how, err)
			}
			switch how {
			case "deleted":
				// A new file at the path starts empty: no commit of the old
				// one comes back from its log.
				fresh := openTest(t, path, nil)
				if _, err := fresh.State(rctx, Config{ThreadID: "mine"}); !errors.Is(err, ErrNotFound) {
					t.Errorf("a new file at the deleted path reads the old thread: %v", err)
				}
				mustVerify(t, fresh, "a new file at the deleted path")
			case "replaced":
				ro := readOnly(t, path)
				mustVerify(t, ro, "the file moved over the open one")
				var got bytes.Buffer
				if _, err := ro.Export(rctx, &got, admin.ExportOptions{}); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), other.Bytes()) {
					t.Errorf("the file moved over the open one changed: %d bytes exported, %d before", got.Len(), other.Len())
				}
			case "moved away":
				ro := readOnly(t, filepath.Join(dir, "elsewhere.db"))
				mustVerify(t, ro, "the file moved away")
				if evs, err := ro.Events().ListMessages(rctx, "mine", records.MessageQuery{Limit: 10}); err != nil || len(evs) != 1 {
					t.Errorf("the file moved away lost a commit: %d events, %v", len(evs), err)
				}
			}
		})
	}
}

// TestWALDeletedUnderOpenHandle: the -wal of an open handle is deleted (a
// cleanup script, an operator who thought it stale). The handle must stop
// writing (its commits would go to a log nobody else sees and die with the
// process) with ErrFileReplaced, keep every commit made before, and let
// another process open and write the file.
func TestWALDeletedUnderOpenHandle(t *testing.T) {
	sqliteOnly(t, "deletes an SQLite file's write-ahead log")
	nativeFilesOnly(t, "the host VFS does not watch the file's identity")
	path := filepath.Join(t.TempDir(), "w.db")
	a := openTest(t, path, nil)
	w := relWork{seed: 8}
	for n := 1; n <= 3; n++ {
		if _, err := a.Commit(rctx, "t", w.step("t", n, "")); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(path + "-wal"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Commit(rctx, "t", w.step("t", 4, "")); !errors.Is(err, ErrFileReplaced) || !strings.Contains(err.Error(), "-wal") {
		t.Fatalf("commit after the WAL was deleted: %v, want ErrFileReplaced naming the log", err)
	}
	if _, err := a.Events().Put(rctx, msg("t", "r", "late")); !errors.Is(err, ErrFileReplaced) {
		t.Fatalf("event after the WAL was deleted: %v, want ErrFileReplaced", err)
	}
	b := openTest(t, path, nil)
	if st, err := b.State(rctx, Config{ThreadID: "t"}); err != nil || relN(st.Metadata) != 3 {
		t.Fatalf("another handle reads step %d (%v), want 3: the commits before the deletion", relN(st.Metadata), err)
	}
	if _, err := b.Commit(rctx, "t", w.step("t", 4, "")); err != nil {
		t.Fatalf("another handle cannot write: %v", err)
	}
	if err := a.Close(); !errors.Is(err, ErrFileReplaced) {
		t.Fatalf("Close: %v, want ErrFileReplaced", err)
	}
	b.Close()
	c := openTest(t, path, nil)
	if st, err := c.State(rctx, Config{ThreadID: "t"}); err != nil || relN(st.Metadata) != 4 {
		t.Fatalf("after reopening: step %d (%v), want 4", relN(st.Metadata), err)
	}
	mustVerify(t, c, "after the WAL was deleted")
}

// TestHistoryWhileRetentionRuns: a reader walks a delta thread's history
// (pages of checkpoints, each state built in its own snapshot) while
// another handle's retention removes all but the newest checkpoints. The
// walk must end without an error, and every state it yields must be the
// one that checkpoint had.
func TestHistoryWhileRetentionRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	o := DefaultOptions()
	o.Mode, o.SnapshotEvery, o.HistoryCacheBytes = channels.ModeDelta, 3, 0
	a := openTest(t, path, &o)
	w := relWork{seed: 6}
	for n := 1; n <= 150; n++ {
		if _, err := a.Commit(rctx, "t", w.step("t", n, "")); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{}
	for st, err := range a.StateHistory(rctx, "t", HistoryOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		want[st.Config.CheckpointID] = fmt.Sprint(st.Values)
	}
	b := openTest(t, path, &o)
	n, removed := 0, 0
	for st, err := range a.StateHistory(rctx, "t", HistoryOptions{}) {
		if err != nil {
			t.Fatalf("history after %d states, with retention run at the 5th: %v", n, err)
		}
		if got := fmt.Sprint(st.Values); got != want[st.Config.CheckpointID] {
			t.Fatalf("checkpoint %s read differently during retention", st.Config.CheckpointID)
		}
		n++
		if n == 5 {
			rep, err := b.Retain(rctx, admin.RetainOptions{KeepLatest: 3})
			if err != nil {
				t.Fatal(err)
			}
			removed = rep.CheckpointsRemoved
		}
	}
	if removed < 100 {
		t.Fatalf("retention removed %d checkpoints: the test proves nothing", removed)
	}
	t.Logf("%d states read while retention removed %d checkpoints", n, removed)
}

// TestCachesAfterRetentionElsewhere: a handle has read (and cached) every
// checkpoint of a thread; another handle's retention removes all but the
// newest. The first handle must report the removed checkpoints as not
// found, never serve them from its caches, in either mode.
func TestCachesAfterRetentionElsewhere(t *testing.T) {
	for _, mode := range []channels.Mode{channels.ModeFull, channels.ModeDelta} {
		path := filepath.Join(t.TempDir(), "c.db")
		o := DefaultOptions()
		o.Mode, o.SnapshotEvery = mode, 3
		a := openTest(t, path, &o)
		w := relWork{seed: 12}
		var cfgs []Config
		for n := 1; n <= 8; n++ {
			c, err := a.Commit(rctx, "t", w.step("t", n, ""))
			if err != nil {
				t.Fatal(err)
			}
			cfgs = append(cfgs, c)
		}
		for _, c := range cfgs {
			if _, err := a.State(rctx, c); err != nil {
				t.Fatal(err)
			}
		}
		b := openTest(t, path, &o)
		if _, err := b.Retain(rctx, admin.RetainOptions{KeepLatest: 1}); err != nil {
			t.Fatal(err)
		}
		for _, c := range cfgs[:len(cfgs)-1] {
			if _, err := a.State(rctx, c); !errors.Is(err, ErrNotFound) {
				t.Fatalf("%s: state of a checkpoint another handle removed: %v, want ErrNotFound", mode, err)
			}
			if _, err := a.GetTuple(rctx, c); !errors.Is(err, ErrNotFound) {
				t.Fatalf("%s: tuple of a checkpoint another handle removed: %v, want ErrNotFound", mode, err)
			}
		}
	}
}

// TestConvertsInOppositeDirections: two converts of one file run at once,
// to full and to delta with another K; the second must convert what the
// first left, so the file verifies in one mode, whichever won.
func TestConvertsInOppositeDirections(t *testing.T) {
	for round := range 4 {
		path := filepath.Join(t.TempDir(), "c.db")
		o := DefaultOptions()
		o.Mode, o.SnapshotEvery = channels.ModeDelta, 3
		a := openTest(t, path, &o)
		w := relWork{seed: uint64(round)}
		for _, th := range []string{"x", "y", "z"} {
			if err := runWorkload(rctx, a, w, th, 20, func(string, ...any) {}); err != nil {
				t.Fatal(err)
			}
		}
		a.Close()
		var wg sync.WaitGroup
		errs := make([]error, 2)
		wg.Go(func() { _, errs[0] = ConvertFile(rctx, testPath(t, path), nil, channels.ModeFull, 3) })
		wg.Go(func() { _, errs[1] = ConvertFile(rctx, testPath(t, path), nil, channels.ModeDelta, 5) })
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		ro := readOnly(t, path)
		mustVerify(t, ro, fmt.Sprintf("round %d, after two converts (the file is in %s)", round, describeMode(ro.Options().Mode, ro.Options().SnapshotEvery)))
	}
}
