package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/google/go-cmp/cmp"
)

func human(id, text string) codec.Message {
	return codec.Message{ID: id, Type: codec.Human, Content: text}
}
func ai(id, text string) codec.Message { return codec.Message{ID: id, Type: codec.AI, Content: text} }

func say(task string, ms ...codec.Message) TaskWrites {
	return TaskWrites{TaskID: task, Writes: []ChannelWrite{{Channel: MessagesChannel, Value: ms}}}
}

func mustCommit(t testing.TB, db *DB, thread string, step Step) Config {
	t.Helper()
	cfg, err := db.Commit(bg, thread, step)
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return cfg
}

func messagesAt(t testing.TB, db *DB, cfg Config) []codec.Message {
	t.Helper()
	s, err := db.State(bg, cfg)
	if err != nil {
		t.Fatalf("State %+v: %v", cfg, err)
	}
	ms, _ := s.Values[MessagesChannel].([]codec.Message)
	return ms
}

func TestThreadAPIBasics(t *testing.T) {
	for _, mode := range []channels.Mode{channels.ModeFull, channels.ModeDelta} {
		t.Run(string(mode), func(t *testing.T) {
			o := DefaultOptions()
			o.Mode, o.SnapshotEvery = mode, 3
			db := openTest(t, filepath.Join(t.TempDir(), "t.db"), &o)
			c1 := mustCommit(t, db, "th", Step{Tasks: []TaskWrites{say("user", human("h1", "hi"))}, RunID: "r1"})
			c2 := mustCommit(t, db, "th", Step{Tasks: []TaskWrites{say("agent", ai("a1", "hello"))}, RunID: "r1"})
			// Two tasks finishing out of order apply in task id order.
			c3 := mustCommit(t, db, "th", Step{Tasks: []TaskWrites{say("t-b", ai("b", "B")), say("t-a", ai("a", "A"))}, RunID: "r2"})
			want := []codec.Message{human("h1", "hi"), ai("a1", "hello"), ai("a", "A"), ai("b", "B")}
			if diff := cmp.Diff(want, messagesAt(t, db, Config{ThreadID: "th"})); diff != "" {
				t.Fatalf("head (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want[:1], messagesAt(t, db, c1)); diff != "" {
				t.Fatalf("first checkpoint (-want +got):\n%s", diff)
			}
			// A message without an id gets one before it is stored.
			c4 := mustCommit(t, db, "th", Step{Tasks: []TaskWrites{say("user", codec.Message{Type: codec.Human, Content: "no id"})}})
			got := messagesAt(t, db, c4)
			if len(got) != 5 || got[4].ID == "" {
				t.Fatalf("message without id: %+v", got)
			}
			// Removing an unknown id fails and writes nothing.
			before, _ := db.Info(bg)
			_, err := db.Commit(bg, "th", Step{Tasks: []TaskWrites{say("x", codec.Message{ID: "nope", Type: codec.Remove})}})
			if !errors.Is(err, ErrInvalidArgument) || !errors.Is(err, channels.ErrUnknownID) {
				t.Fatalf("unknown remove: %v", err)
			}
			after, _ := db.Info(bg)
			if diff := cmp.Diff(before.Rows, after.Rows); diff != "" {
				t.Fatalf("a refused commit changed the file:\n%s", diff)
			}
			// Fork from c2 copies its state; continuing it leaves the old branch alone.
			f := must[Config](t)(db.Fork(bg, c2))
			if diff := cmp.Diff(want[:2], messagesAt(t, db, f)); diff != "" {
				t.Fatalf("fork (-want +got):\n%s", diff)
			}
			mustCommit(t, db, "th", Step{Parent: f.CheckpointID, Tasks: []TaskWrites{say("agent", ai("a2", "other answer"))}})
			if diff := cmp.Diff(append(want[:2:2], ai("a2", "other answer")), messagesAt(t, db, Config{ThreadID: "th"})); diff != "" {
				t.Fatalf("forked head (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, messagesAt(t, db, c3)); diff != "" {
				t.Fatalf("old branch changed (-want +got):\n%s", diff)
			}
			// Compaction replaces the list; rollback of r2 restores the state before r2.
			cp := must[Config](t)(db.Compact(bg, Config{ThreadID: "th"}, MessagesChannel, []codec.Message{{ID: "sum", Type: codec.System, Content: "summary"}}))
			if got := messagesAt(t, db, cp); len(got) != 1 || got[0].ID != "sum" {
				t.Fatalf("compacted: %+v", got)
			}
			rb := must[Config](t)(db.Rollback(bg, "th", "r2"))
			if diff := cmp.Diff(want[:2], messagesAt(t, db, rb)); diff != "" {
				t.Fatalf("rollback (-want +got):\n%s", diff)
			}
			if h := must[Tuple](t)(db.GetTuple(bg, Config{ThreadID: "th"})); h.Config != rb {
				t.Fatalf("rollback is not the head: %+v", h.Config)
			}
		})
	}
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// TestSnapshotCadence: in delta mode a message channel is stored at the
// thread's first checkpoint that has it, then every K updates and right
// after an Overwrite; in full mode at every update.
func TestSnapshotCadence(t *testing.T) {
	for _, tc := range []struct {
		mode channels.Mode
		k    int
		want []bool // stored, per commit
	}{
		{channels.ModeFull, 3, []bool{true, true, true, true, true, true, true, true}},
		{channels.ModeDelta, 3, []bool{true, false, false, true, false, true, false, false}},
		{channels.ModeDelta, 1, []bool{true, true, true, true, true, true, true, true}},
	} {
		o := DefaultOptions()
		o.Mode, o.SnapshotEvery = tc.mode, tc.k
		db := openTest(t, Memory, &o)
		var got []bool
		for i := range 8 {
			step := Step{Tasks: []TaskWrites{say("t", human(fmt.Sprintf("m%d", i), "x"))}}
			if i == 5 {
				step.Tasks[0].Writes[0].Value = channels.MessageUpdate{Overwrite: true, Messages: []codec.Message{human("s", "summary")}}
			}
			cfg := mustCommit(t, db, "th", step)
			s, err := db.State(bg, cfg)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, slices.Contains(s.Stored, MessagesChannel))
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s K=%d: stored per commit (-want +got):\n%s", tc.mode, tc.k, diff)
		}
	}
}

// TestStepsCount: metadata "step" counts commits past the values msgpack
// encodes as unsigned integers (128, 256, ...).
func TestStepsCount(t *testing.T) {
	db := openTest(t, Memory, nil)
	var cfg Config
	for i := range 300 {
		cfg = mustCommit(t, db, "th", Step{Tasks: []TaskWrites{say("t", human(fmt.Sprint(i), "x"))}})
	}
	s, err := db.State(bg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := metadataStep(s.Metadata); got != 299 {
		t.Fatalf("step after 300 commits = %d (%T), want 299", got, s.Metadata["step"])
	}
}

// TestColdStateShared reads one checkpoint from many goroutines with
// nothing cached, so that rebuilds are shared (materialize's singleflight):
// every reader gets the state a lone reader gets.
func TestColdStateShared(t *testing.T) {
	o := DefaultOptions()
	o.Mode = channels.ModeDelta
	db, err := Open(bg, testPath(t, filepath.Join(t.TempDir(), "s.db")), &o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 25 {
		m := codec.Message{ID: fmt.Sprintf("m%03d", i), Type: codec.Human, Content: fmt.Sprintf("message %d", i)}
		if _, err := db.Commit(bg, "t", Step{Tasks: []TaskWrites{{TaskID: "x", Writes: []ChannelWrite{{Channel: MessagesChannel, Value: m}}}}}); err != nil {
			t.Fatal(err)
		}
	}
	db.purge("t")
	want, err := db.State(bg, Config{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		db.purge("t")
		got := make([]State, 8)
		var wg sync.WaitGroup
		for i := range got {
			wg.Go(func() {
				s, err := db.State(bg, Config{ThreadID: "t"})
				if err != nil {
					t.Error(err)
				}
				got[i] = s
			})
		}
		wg.Wait()
		for i, s := range got {
			if diff := cmp.Diff(want.Values, s.Values); diff != "" {
				t.Fatalf("round %d reader %d: state differs (-lone +shared):\n%s", round, i, diff)
			}
		}
	}
}
