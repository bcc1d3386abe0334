package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/google/go-cmp/cmp"
)

// chat commits n turns of a human and an AI message to thread th.
func chat(t testing.TB, db *DB, th string, from, n int) []Config {
	var cfgs []Config
	for i := from; i < from+n; i++ {
		cfgs = append(cfgs, mustCommit(t, db, th, Step{Tasks: []TaskWrites{say("user", human(fmt.Sprintf("h%d", i), sentenceOf(i, 200)))}}))
		cfgs = append(cfgs, mustCommit(t, db, th, Step{Tasks: []TaskWrites{say("agent", ai(fmt.Sprintf("a%d", i), sentenceOf(i+7, 800)))}}))
	}
	return cfgs
}

// sentenceOf is n pseudo-random letters: text that compresses little, so
// snapshot sizes grow with the list.
func sentenceOf(seed, n int) string {
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = "abcdefghijklmnopqrstuvwxyz "[rng.IntN(27)]
	}
	return string(b)
}

func blobBytes(t testing.TB, db *DB) (n, bytes int64) {
	t.Helper()
	err := db.read(bg, func(c *conn) error {
		var err error
		if n, err = c.queryInt64(`SELECT count(*) FROM blobs`); err != nil {
			return err
		}
		bytes, err = c.queryInt64(`SELECT coalesce(sum(length(data)), 0) FROM blobs`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n, bytes
}

// TestRetainKeepsSnapshotsLinear: with AutoRetain, a long delta thread keeps
// a handful of snapshots whose total stays under 2.5 times the newest, the
// head stays within K writes of a snapshot, and every checkpoint still reads
// as it did.
func TestRetainKeepsSnapshotsLinear(t *testing.T) {
	o := DefaultOptions()
	o.Mode, o.SnapshotEvery, o.AutoRetain = channels.ModeDelta, 5, true
	path := filepath.Join(t.TempDir(), "r.db")
	db := openTest(t, path, &o)
	cfgs := chat(t, db, "th", 0, 150)
	n, total := blobBytes(t, db)
	var newest int64
	db.read(bg, func(c *conn) (err error) {
		newest, err = c.queryInt64(`SELECT length(data) FROM blobs ORDER BY checkpoint_id DESC LIMIT 1`)
		return err
	})
	if n > 8 || total*2 > 5*newest {
		t.Fatalf("%d snapshots of %d bytes kept, newest %d: not a geometric series", n, total, newest)
	}
	h, err := db.DeltaChannelHistory(bg, Config{ThreadID: "th"}, []string{MessagesChannel})
	if err != nil || len(h[MessagesChannel].Writes) >= o.SnapshotEvery || h[MessagesChannel].Seed == nil {
		t.Fatalf("head is %d writes from its snapshot (K=%d): %v", len(h[MessagesChannel].Writes), o.SnapshotEvery, err)
	}
	// Every checkpoint reads the same as in a full-mode twin.
	fo := DefaultOptions()
	twin := openTest(t, Memory, &fo)
	twinCfgs := chat(t, twin, "th", 0, 150)
	for i, c := range cfgs {
		if diff := cmp.Diff(messagesAt(t, twin, twinCfgs[i]), messagesAt(t, db, c)); diff != "" {
			t.Fatalf("checkpoint %d differs from full mode (-full +retained):\n%s", i, diff)
		}
	}
}

func TestRetainRemovesOldCheckpointsAndBranches(t *testing.T) {
	o := DefaultOptions()
	o.Mode, o.SnapshotEvery = channels.ModeDelta, 4
	db := openTest(t, Memory, &o)
	cfgs := chat(t, db, "th", 0, 10)
	// An abandoned branch from the middle.
	fork := must[Config](t)(db.Fork(bg, cfgs[5]))
	branch := mustCommit(t, db, "th", Step{Parent: fork.CheckpointID, Tasks: []TaskWrites{say("agent", ai("b1", "branch"))}})
	head := mustCommit(t, db, "th", Step{Parent: cfgs[len(cfgs)-1].CheckpointID, Tasks: []TaskWrites{say("user", human("last", "x"))}})
	wantHead := messagesAt(t, db, head)
	before, _ := db.Info(bg)

	dry, err := db.Retain(bg, admin.RetainOptions{ThreadID: "th", KeepLatest: 3, DropBranches: true, DryRun: true})
	if err != nil || !dry.DryRun || dry.CheckpointsRemoved == 0 {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	after, _ := db.Info(bg)
	if diff := cmp.Diff(before.Rows, after.Rows); diff != "" {
		t.Fatalf("a dry run changed the file:\n%s", diff)
	}
	rep, err := db.Retain(bg, admin.RetainOptions{ThreadID: "th", KeepLatest: 3, DropBranches: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.CheckpointsKept != 3 || rep.CheckpointsRemoved != dry.CheckpointsRemoved {
		t.Fatalf("report %+v (dry run said %+v)", rep, dry)
	}
	if diff := cmp.Diff(wantHead, messagesAt(t, db, head)); diff != "" {
		t.Fatalf("head changed (-before +after):\n%s", diff)
	}
	if _, err := db.State(bg, branch); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the dropped branch still reads: %v", err)
	}
	// The oldest survivor became a root that holds its own state.
	var roots int
	for tup, err := range db.List(bg, ListOptions{ThreadID: "th"}) {
		if err != nil {
			t.Fatal(err)
		}
		if tup.ParentConfig == nil {
			roots++
			if _, ok := tup.Checkpoint.ChannelValues[MessagesChannel]; !ok {
				t.Fatalf("new root %s has no snapshot", tup.Config.CheckpointID)
			}
		}
	}
	if roots != 1 {
		t.Fatalf("%d roots", roots)
	}
	// The thread goes on.
	next := mustCommit(t, db, "th", Step{Tasks: []TaskWrites{say("agent", codec.Message{ID: "more", Type: codec.AI, Content: "y"})}})
	if got := messagesAt(t, db, next); len(got) != len(wantHead)+1 {
		t.Fatalf("after retention the thread has %d messages, want %d", len(got), len(wantHead)+1)
	}
	if _, err := db.Retain(bg, admin.RetainOptions{KeepLatest: -1}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("negative KeepLatest: %v", err)
	}
}
