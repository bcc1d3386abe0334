package engine

import (
	"context"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
)

func TestStats(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []channels.Mode{channels.ModeFull, channels.ModeDelta} {
		path, _ := opsFixture(t, mode)
		db := openRW(t, path)
		st, err := db.Stats(ctx, 5)
		if err != nil {
			t.Fatal(err)
		}
		by := map[string]admin.SurfaceStats{}
		for _, s := range st.Surfaces {
			by[s.Name] = s
		}
		values := "channel_blobs"
		if mode == channels.ModeDelta {
			values = "snapshots"
		}
		for _, name := range []string{"checkpoints", values, "writes", "store", "runs", "events", "threads"} {
			if by[name].Rows == 0 || by[name].Bytes == 0 {
				t.Errorf("%s: surface %s is empty: %+v", mode, name, by[name])
			}
		}
		if len(st.LargestThreads) != 1 || st.LargestThreads[0].ThreadID != "chat" || st.LargestThreads[0].Mode != mode {
			t.Errorf("%s: largest threads %+v", mode, st.LargestThreads)
		}
		if st.Mode != mode || !st.HistoryCache.Enabled || st.HistoryCache.MaxBytes != DefaultOptions().HistoryCacheBytes {
			t.Errorf("%s: %+v", mode, st)
		}
	}
}

func TestRetainMeasures(t *testing.T) {
	ctx := context.Background()
	path, _ := opsFixture(t, channels.ModeDelta)
	db := openRW(t, path)
	before := exportOf(t, db, "")
	dry, err := db.Retain(ctx, admin.RetainOptions{KeepLatest: 2, DropBranches: true, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if dry.CheckpointsRemoved == 0 || dry.DataBytesFreed <= 0 || !dry.DryRun {
		t.Fatalf("dry run: %+v", dry)
	}
	if after := exportOf(t, db, ""); string(after) != string(before) {
		t.Fatal("a dry run changed the file")
	}
	var calls int
	done, err := db.Retain(ctx, admin.RetainOptions{KeepLatest: 2, DropBranches: true, Progress: func(d, total int) { calls++ }})
	if err != nil {
		t.Fatal(err)
	}
	if done.CheckpointsRemoved != dry.CheckpointsRemoved || done.DataBytesFreed != dry.DataBytesFreed || calls == 0 {
		t.Fatalf("applied %+v, dry run said %+v", done, dry)
	}
	if rep := verifyPath(t, path); !rep.OK {
		t.Fatalf("after retention: %v", rep.Problems)
	}
	if _, err := db.Retain(ctx, admin.RetainOptions{ThreadID: "nope"}); err == nil {
		t.Fatal("retention of a missing thread")
	}
}

func TestInspectViews(t *testing.T) {
	ctx := context.Background()
	path, cps := opsFixture(t, channels.ModeDelta)
	db := openRW(t, path)

	view, err := db.ReadState(ctx, Config{ThreadID: "chat", CheckpointID: cps[3].CheckpointID})
	if err != nil {
		t.Fatal(err)
	}
	st, err := db.State(ctx, cps[3])
	if err != nil {
		t.Fatal(err)
	}
	if len(view.Values[MessagesChannel].([]codec.Message)) != len(st.Values[MessagesChannel].([]codec.Message)) || view.Mode != channels.ModeDelta {
		t.Fatalf("ReadState %+v, State %+v", view, st)
	}

	var log []admin.LogEntry
	for e, err := range db.CheckpointLog(ctx, "chat", admin.LogOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, e)
	}
	if len(log) != len(cps)+1 {
		t.Fatalf("log has %d entries, want %d", len(log), len(cps)+1)
	}
	snapshots, forks := 0, 0
	for _, e := range log {
		if e.Snapshot {
			snapshots++
		}
		if e.Source == "fork" {
			forks++
			if len(e.Changed) != 0 {
				t.Fatalf("a fork changed %v", e.Changed)
			}
		}
	}
	if snapshots == 0 || snapshots == len(log) || forks != 1 {
		t.Fatalf("%d snapshots, %d forks in %d entries", snapshots, forks, len(log))
	}
	n := 0
	for _, err := range db.CheckpointLog(ctx, "chat", admin.LogOptions{Before: log[2].CheckpointID, Limit: 3}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("before+limit gave %d", n)
	}

	all, err := db.ListThreads(ctx, admin.ThreadListOptions{})
	if err != nil || len(all) != 2 || all[0].ThreadID != "chat" || all[0].Record == nil || all[0].Checkpoints != int64(len(cps)+1) || all[0].Runs != 1 || all[0].Events != 3 {
		t.Fatalf("all threads: %v %+v", err, all)
	}
	bob, err := db.ListThreads(ctx, admin.ThreadListOptions{Owner: "bob"})
	if err != nil || len(bob) != 1 || bob[0].ThreadID != "other" {
		t.Fatalf("bob's threads: %v %+v", err, bob)
	}
	demo, err := db.ListThreads(ctx, admin.ThreadListOptions{Metadata: map[string]any{"topic": "demo"}})
	if err != nil || len(demo) != 1 || demo[0].ThreadID != "chat" {
		t.Fatalf("topic=demo: %v %+v", err, demo)
	}
	evs, err := db.ThreadEvents(ctx, "chat", 1, 10)
	if err != nil || len(evs) != 2 || evs[0].Seq != 2 {
		t.Fatalf("events after 1: %v %+v", err, evs)
	}
}
