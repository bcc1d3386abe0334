package engine

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/google/go-cmp/cmp"
)

func rowCounts(t *testing.T, db *DB) map[string]int64 {
	t.Helper()
	in, err := db.Info(bg)
	if err != nil {
		t.Fatal(err)
	}
	return in.Rows
}

func msgWrite(t *testing.T, u channels.MessageUpdate) Write {
	t.Helper()
	data, err := u.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return Write{Channel: MessagesChannel, Value: codec.Blob{Type: codec.TypeMsgpack, Data: data}}
}

func TestBatchCommitsTogether(t *testing.T) {
	db := openTest(t, Memory, nil)
	root := cp("0001", map[string]string{"a": "1"}, map[string]string{"a": `1`})
	child := cp("0002", map[string]string{"a": "2"}, map[string]string{"a": `2`})
	fork := cp("0003", map[string]string{"a": "1"}, nil)
	err := db.Batch(bg, func(b *Batch) error {
		c1, err := b.Put(Config{ThreadID: "t"}, root, Metadata{"step": int64(-1)}, map[string]string{"a": "1"})
		if err != nil {
			return err
		}
		if err := b.PutWrites(c1, []Write{{Channel: "a", Value: jb(`2`)}, {Channel: ChannelInterrupt, Value: jb(`"?"`)}}, "task", "~path"); err != nil {
			return err
		}
		if _, err := b.Put(c1, child, nil, map[string]string{"a": "2"}); err != nil {
			return err
		}
		// Nothing is visible before the batch commits; with one connection
		// for reads and writes (GOOS=js) a read waits for the batch instead.
		rctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
		defer cancel()
		want := ErrNotFound
		if one, ok := db.b.(oneConn); ok && one.oneConn() {
			want = context.DeadlineExceeded
		}
		if _, err := db.GetTuple(rctx, Config{ThreadID: "t"}); !errors.Is(err, want) {
			t.Errorf("a read inside the batch: %v, want %v", err, want)
		}
		_, err = b.Put(c1, fork, nil, nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, db, Config{ThreadID: "t", CheckpointID: "0001"})
	want := []PendingWrite{
		{TaskID: "task", Channel: ChannelInterrupt, Value: jb(`"?"`), TaskPath: "~path", Idx: -3},
		{TaskID: "task", Channel: "a", Value: jb(`2`), TaskPath: "~path", Idx: 0},
	}
	if d := cmp.Diff(want, got.PendingWrites); d != "" {
		t.Fatalf("writes (-want +got):\n%s", d)
	}
	// The first child sealed the writes, the fork none: its history has none.
	for id, n := range map[string]int{"0002": 1, "0003": 0} {
		h, err := db.DeltaChannelHistory(bg, Config{ThreadID: "t", CheckpointID: id}, []string{"a"})
		if err != nil || len(h["a"].Writes) != n {
			t.Fatalf("history of %s: %v %+v, want %d writes", id, err, h, n)
		}
	}
}

func TestBatchRollsBackOnError(t *testing.T) {
	db := openTest(t, Memory, nil)
	mustPut(t, db, Config{ThreadID: "old"}, cp("0001", nil, nil), nil, nil)
	before := rowCounts(t, db)
	boom := errors.New("boom")
	err := db.Batch(bg, func(b *Batch) error {
		if err := b.NewThread("t"); err != nil {
			return err
		}
		if _, err := b.Put(Config{ThreadID: "t"}, cp("0001", map[string]string{"a": "1"}, map[string]string{"a": `1`}), nil, map[string]string{"a": "1"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Batch returned %v", err)
	}
	if d := cmp.Diff(before, rowCounts(t, db)); d != "" {
		t.Fatalf("a failed batch changed the file (-before +after):\n%s", d)
	}

	// A call that fails after writing spoils the batch, even if fn goes on
	// and returns nil.
	var later error
	err = db.Batch(bg, func(b *Batch) error {
		if _, err := b.Put(Config{ThreadID: "t"}, cp("0001", map[string]string{"a": "1"}, map[string]string{"a": `1`}), nil, map[string]string{"a": "1"}); err != nil {
			return err
		}
		// Same version, other bytes: refused after the checkpoint row was written.
		_, err := b.Put(Config{ThreadID: "t", CheckpointID: "0001"}, cp("0002", map[string]string{"a": "1"}, map[string]string{"a": `2`}), nil, map[string]string{"a": "1"})
		if !errors.Is(err, ErrConflict) {
			t.Errorf("conflicting value: %v", err)
		}
		later = b.PutWrites(Config{ThreadID: "t", CheckpointID: "0001"}, []Write{{Channel: "a", Value: jb(`3`)}}, "x", "")
		return nil
	})
	if !errors.Is(err, ErrConflict) || !errors.Is(later, ErrConflict) {
		t.Fatalf("spoiled batch: Batch %v, later call %v", err, later)
	}
	if d := cmp.Diff(before, rowCounts(t, db)); d != "" {
		t.Fatalf("a spoiled batch changed the file (-before +after):\n%s", d)
	}

	// Refusals before any write leave the batch usable.
	err = db.Batch(bg, func(b *Batch) error {
		if err := b.NewThread("old"); !errors.Is(err, ErrConflict) {
			t.Errorf("NewThread of a thread with checkpoints: %v", err)
		}
		if _, err := b.Put(Config{ThreadID: "t"}, Checkpoint{}, nil, nil); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("checkpoint without id: %v", err)
		}
		if err := b.PutWrites(Config{ThreadID: "t"}, nil, "x", ""); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("writes without checkpoint: %v", err)
		}
		_, err := b.Put(Config{ThreadID: "t"}, cp("0001", nil, nil), nil, nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, Config{ThreadID: "t"})
}

func TestBatchContextAndLifetime(t *testing.T) {
	db := openTest(t, Memory, nil)
	ctx, cancel := context.WithCancel(bg)
	var kept *Batch
	err := db.Batch(ctx, func(b *Batch) error {
		kept = b
		if _, err := b.Put(Config{ThreadID: "t"}, cp("0001", nil, nil), nil, nil); err != nil {
			return err
		}
		cancel()
		_, err := b.Put(Config{ThreadID: "t", CheckpointID: "0001"}, cp("0002", nil, nil), nil, nil)
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled batch: %v", err)
	}
	if n := rowCounts(t, db)["checkpoints"]; n != 0 {
		t.Fatalf("a cancelled batch left %d checkpoints", n)
	}
	if err := kept.NewThread("u"); err == nil {
		t.Fatal("a batch accepted a call after it ended")
	}
}

// A thread written with protocol calls and recorded with NewThread reads
// and continues like a thread Commit started, in both modes.
func TestBatchNewThreadIsAThreadAPIThread(t *testing.T) {
	for _, mode := range []channels.Mode{channels.ModeFull, channels.ModeDelta} {
		t.Run(string(mode), func(t *testing.T) {
			o := DefaultOptions()
			o.Mode, o.SnapshotEvery = mode, 2
			db := openTest(t, filepath.Join(t.TempDir(), "b.db"), &o)
			h1 := codec.Message{ID: "h1", Type: codec.Human, Content: "hi"}
			a1 := codec.Message{ID: "a1", Type: codec.AI, Content: "hello"}
			state := func(ms ...codec.Message) map[string]codec.Blob {
				data, err := codec.Marshal(ms)
				if err != nil {
					t.Fatal(err)
				}
				return map[string]codec.Blob{MessagesChannel: {Type: codec.TypeMsgpack, Data: data}}
			}
			err := db.Batch(bg, func(b *Batch) error {
				if err := b.NewThread("t"); err != nil {
					return err
				}
				c0, err := b.Put(Config{ThreadID: "t"}, Checkpoint{V: 4, ID: "0001", ChannelValues: state(h1),
					ChannelVersions: map[string]string{MessagesChannel: "1"}}, Metadata{"step": int64(-1)}, map[string]string{MessagesChannel: "1"})
				if err != nil {
					return err
				}
				if err := b.PutWrites(c0, []Write{msgWrite(t, channels.MessageUpdate{Messages: []codec.Message{a1}})}, "agent", ""); err != nil {
					return err
				}
				// In delta mode the second checkpoint stores no value: it is
				// rebuilt from the write.
				cp2 := Checkpoint{V: 4, ID: "0002", ChannelValues: map[string]codec.Blob{}, ChannelVersions: map[string]string{MessagesChannel: "2"}}
				md := Metadata{"step": int64(0)}
				if mode == channels.ModeFull {
					cp2.ChannelValues = state(h1, a1)
				} else {
					md = Metadata(channels.SetCounters(md, map[string]channels.Counter{MessagesChannel: {Updates: 1, Supersteps: 1}}))
				}
				_, err = b.Put(c0, cp2, md, map[string]string{MessagesChannel: "2"})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			st, err := db.State(bg, Config{ThreadID: "t"})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]codec.Message{h1, a1}, st.Values[MessagesChannel]); d != "" {
				t.Fatalf("state (-want +got):\n%s", d)
			}
			if _, err := db.Commit(bg, "t", Step{Tasks: []TaskWrites{{TaskID: "n", Writes: []ChannelWrite{{Channel: MessagesChannel, Value: codec.Message{ID: "h2", Type: codec.Human, Content: "more"}}}}}}); err != nil {
				t.Fatal(err)
			}
			vr, err := db.Verify(bg, admin.VerifyOptions{})
			if err != nil || !vr.OK {
				t.Fatalf("verify: %v %v", err, vr.Problems)
			}
			if vr.Replayed != 3 {
				t.Fatalf("verify replayed %d checkpoints of the thread, want 3", vr.Replayed)
			}
		})
	}
}

func TestBatchPanicRollsBack(t *testing.T) {
	db := openTest(t, Memory, nil)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic did not go on")
			}
		}()
		db.Batch(bg, func(b *Batch) error {
			if _, err := b.Put(Config{ThreadID: "t"}, cp("0001", nil, nil), nil, nil); err != nil {
				return err
			}
			panic("caller bug")
		})
	}()
	if n := rowCounts(t, db)["checkpoints"]; n != 0 {
		t.Fatalf("a batch that panicked left %d checkpoints", n)
	}
	// The writer connection is usable again.
	mustPut(t, db, Config{ThreadID: "u"}, cp("0001", nil, nil), nil, nil)
}
