package engine

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentstate/agentstate/channels"
	"github.com/google/go-cmp/cmp"
)

// TestConvertFileBothWays: a file written in full mode converts to delta
// and back, and every checkpoint reads the same at each stage.
func TestConvertFileBothWays(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	ops := genOps(rand.New(rand.NewPCG(seed, 1)), 60)
	path, cfgs, _ := runOps(t, ops, channels.ModeFull, 10)
	want := readStates(t, path, cfgs)
	o := DefaultOptions()
	o.Schema = oracleSchema()
	for _, step := range []struct {
		mode channels.Mode
		k    int
	}{{channels.ModeDelta, 3}, {channels.ModeFull, 3}, {channels.ModeDelta, 1}} {
		rep, err := ConvertFile(bg, testPath(t, path), &o, step.mode, step.k)
		if err != nil {
			t.Fatalf("convert to %s: %v", step.mode, err)
		}
		// (K=1 snapshots every update: the same storage as full mode.)
		if rep.Threads != 1 || step.mode == channels.ModeDelta && step.k > 1 && rep.SnapshotsRemoved == 0 || step.mode == channels.ModeFull && rep.SnapshotsAdded == 0 {
			t.Fatalf("converting to %s changed nothing: %+v", step.mode, rep)
		}
		// The file now opens in the new mode only.
		o2 := o
		o2.Mode, o2.SnapshotEvery = step.mode, step.k
		db, err := Open(bg, testPath(t, path), &o2)
		if err != nil {
			t.Fatalf("open after converting to %s: %v", step.mode, err)
		}
		db.Close()
		if diff := cmp.Diff(want, readStates(t, path, cfgs)); diff != "" {
			t.Fatalf("states after converting to %s K=%d (-before +after):\n%s", step.mode, step.k, diff)
		}
	}
	o.Mode = channels.ModeFull
	if _, err := Open(bg, testPath(t, path), &o); !errors.Is(err, ErrModeMismatch) {
		t.Fatalf("opening a delta file in full mode: %v", err)
	}
}

// TestConvertThreadOnDeltaHandle: a delta handle converts a thread to full
// and back, reads it the same, and can commit to it again.
func TestConvertThreadOnDeltaHandle(t *testing.T) {
	o := DefaultOptions()
	o.Mode, o.SnapshotEvery = channels.ModeDelta, 3
	db := openTest(t, Memory, &o)
	var cfgs []Config
	for i := range 10 {
		cfgs = append(cfgs, mustCommit(t, db, "th", Step{Tasks: []TaskWrites{say("t", human(string(rune('a'+i)), "x"))}}))
	}
	read := func() [][]string {
		var out [][]string
		for _, c := range cfgs {
			var ids []string
			for _, m := range messagesAt(t, db, c) {
				ids = append(ids, m.ID)
			}
			out = append(out, ids)
		}
		return out
	}
	want := read()
	if _, err := db.Commit(bg, "th", Step{}); err != nil {
		t.Fatal(err)
	}
	rep, err := db.ConvertThread(bg, "th", channels.ModeFull)
	if err != nil || rep.SnapshotsAdded == 0 {
		t.Fatalf("to full: %+v %v", rep, err)
	}
	if diff := cmp.Diff(want, read()); diff != "" {
		t.Fatalf("after converting to full (-before +after):\n%s", diff)
	}
	if _, err := db.Commit(bg, "th", Step{}); !errors.Is(err, ErrModeMismatch) {
		t.Fatalf("a delta handle wrote into a full thread: %v", err)
	}
	rep, err = db.ConvertThread(bg, "th", channels.ModeDelta)
	if err != nil || rep.SnapshotsRemoved == 0 {
		t.Fatalf("to delta: %+v %v", rep, err)
	}
	if diff := cmp.Diff(want, read()); diff != "" {
		t.Fatalf("after converting back (-before +after):\n%s", diff)
	}
	mustCommit(t, db, "th", Step{Tasks: []TaskWrites{say("t", human("z", "x"))}})
	full := openTest(t, Memory, nil)
	if _, err := full.ConvertThread(bg, "th", channels.ModeDelta); !errors.Is(err, ErrModeMismatch) {
		t.Fatalf("a full handle converting to delta: %v", err)
	}
	if _, err := db.ConvertThread(bg, "langgraph-thread", channels.ModeFull); !errors.Is(err, ErrNotFound) {
		t.Fatalf("converting a thread the thread API never wrote: %v", err)
	}
}

// TestDefaultOpenIsTheFilesMode: without a mode (nil options, or
// DefaultOptions unchanged) an existing file opens in the mode and K it
// records, as the npm package opens one without a mode; a new file is
// created in full mode; only an explicit mode can mismatch.
func TestDefaultOpenIsTheFilesMode(t *testing.T) {
	if got := DefaultOptions().Mode; got != channels.ModeAuto {
		t.Fatalf("DefaultOptions().Mode = %q, want %q", got, channels.ModeAuto)
	}
	path := testPath(t, filepath.Join(t.TempDir(), "agent.db"))
	o := DefaultOptions()
	o.Mode, o.SnapshotEvery = channels.ModeDelta, 4
	db := openTest(t, path, &o)
	mustCommit(t, db, "th", Step{Tasks: []TaskWrites{say("t", human("h1", "hi"))}})
	db.Close()

	d := DefaultOptions()
	for name, opts := range map[string]*Options{"nil": nil, "DefaultOptions": &d} {
		db, err := Open(bg, path, opts)
		if err != nil {
			t.Fatalf("%s: open a delta file: %v", name, err)
		}
		if got := db.Options(); got.Mode != channels.ModeDelta || got.SnapshotEvery != 4 {
			t.Errorf("%s: opened in %s K=%d, want the file's delta K=4", name, got.Mode, got.SnapshotEvery)
		}
		mustCommit(t, db, "th", Step{Tasks: []TaskWrites{say("t", human("h2", "again"))}})
		db.Close()
	}
	full := DefaultOptions()
	full.Mode = channels.ModeFull
	if _, err := Open(bg, path, &full); !errors.Is(err, ErrModeMismatch) {
		t.Errorf("an explicit full mode on a delta file: %v, want ErrModeMismatch", err)
	}

	fresh := testPath(t, filepath.Join(t.TempDir(), "new.db"))
	db, err := Open(bg, fresh, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := db.Options().Mode; got != channels.ModeFull {
		t.Errorf("a new file opened without a mode is in %s, want full", got)
	}
	db.Close()
	if _, err := Open(bg, fresh, &o); !errors.Is(err, ErrModeMismatch) {
		t.Errorf("the new file did not record full mode: delta opens it: %v", err)
	}
}

// TestMemoryDatabaseRecordsItsMode: a fresh in-memory database (in the
// WebAssembly builds, the build's image, whose mode the open records
// without reading first) records the handle's mode and K, full without
// one, as a new file does; on SQLite its image reopens in that mode, and
// another mode mismatches it.
func TestMemoryDatabaseRecordsItsMode(t *testing.T) {
	delta := DefaultOptions()
	delta.Mode, delta.SnapshotEvery = channels.ModeDelta, 7
	full := DefaultOptions()
	full.Mode = channels.ModeFull
	for _, tc := range []struct {
		name  string
		opts  *Options
		mode  channels.Mode
		every int
		other *Options
	}{
		{"no mode", nil, channels.ModeFull, DefaultOptions().SnapshotEvery, &delta},
		{"full", &full, channels.ModeFull, DefaultOptions().SnapshotEvery, &delta},
		{"delta K=7", &delta, channels.ModeDelta, 7, &full},
	} {
		db := openTest(t, Memory, tc.opts)
		if got := db.Options(); got.Mode != tc.mode || got.SnapshotEvery != tc.every {
			t.Errorf("%s: opened in %s K=%d, want %s K=%d", tc.name, got.Mode, got.SnapshotEvery, tc.mode, tc.every)
		}
		var mode channels.Mode
		var every int
		var found bool
		if err := db.read(bg, func(c *conn) (err error) { mode, every, found, err = fileMode(c); return err }); err != nil {
			t.Fatal(err)
		}
		if !found || mode != tc.mode || (mode == channels.ModeDelta && every != tc.every) {
			t.Errorf("%s: the database records %s K=%d (found %v), want %s K=%d", tc.name, mode, every, found, tc.mode, tc.every)
		}
		mustCommit(t, db, "th", Step{Tasks: []TaskWrites{say("t", human("h1", "hi"))}})
		if testBackend != "sqlite" {
			continue // what follows is about the SQLite image; a PostgreSQL database has none
		}
		img, err := db.Image(bg)
		if err != nil {
			t.Fatal(err)
		}
		again, err := OpenImage(bg, img, nil)
		if err != nil {
			t.Fatalf("%s: reopen its image: %v", tc.name, err)
		}
		if got := again.Options(); got.Mode != tc.mode || got.SnapshotEvery != tc.every {
			t.Errorf("%s: its image reopened in %s K=%d, want %s K=%d", tc.name, got.Mode, got.SnapshotEvery, tc.mode, tc.every)
		}
		again.Close()
		if _, err := OpenImage(bg, img, tc.other); !errors.Is(err, ErrModeMismatch) {
			t.Errorf("%s: its image opened in another mode: %v, want ErrModeMismatch", tc.name, err)
		}
	}
}
