package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/engine/records"
)

// The rule these tests hold the engine to: every value a public call
// accepts reads back through every reader, and a value no reader could
// read is refused at write with ErrInvalidArgument (ErrTooLarge for size),
// leaving the file as it was. Before, a value nested deeper than the
// readers' bound was stored and then broke its whole thread (Commit, State,
// List), hid every event of its thread, failed every Search of its prefix,
// and made verify call the file corrupt and export refuse it.

// nestMaps returns n maps nested in one another around a leaf string.
func nestMaps(n int) any {
	var v any = "leaf"
	for range n {
		v = map[string]any{"k": v}
	}
	return v
}

// rawNested is the stored form (envelope) of n nested one-item arrays,
// built by hand: Marshal refuses more than codec.MaxDepth.
func rawNested(n int) []byte {
	b := []byte{codec.FormatV1}
	for range n {
		b = append(b, 0x91)
	}
	return append(b, 0xc0)
}

// wideValue is one map of n keys beside a list of n numbers.
func wideValue(n int) any {
	m := make(map[string]any, n)
	l := make([]any, n)
	for i := range n {
		m[fmt.Sprintf("key-%05d", i)] = int64(i)
		l[i] = float64(i) / 3
	}
	return map[string]any{"m": m, "l": l}
}

// valueSurface is a public call that stores a caller's value. wrap is how
// many containers the engine puts around it in the stored value.
type valueSurface struct {
	name  string
	wrap  int
	store func(ctx context.Context, db *DB, id string, v any) error
	// setup, if not nil, makes what store needs (a checkpoint, a thread).
	setup func(ctx context.Context, db *DB, id string) error
}

func valueSurfaces() []valueSurface {
	msg := func(id string, m codec.Message) Step {
		return Step{Tasks: []TaskWrites{{TaskID: "t", Writes: []ChannelWrite{{Channel: MessagesChannel, Value: m}}}}}
	}
	lgPut := func(ctx context.Context, db *DB, id string, md Metadata, value *codec.Blob) error {
		cp := Checkpoint{V: 4, ID: "0001", TS: "2026-01-01T00:00:00Z", ChannelValues: map[string]codec.Blob{},
			ChannelVersions: map[string]string{"ch": "1"}, VersionsSeen: map[string]map[string]string{}}
		nv := map[string]string{"ch": "1"}
		if value != nil {
			cp.ChannelValues["ch"] = *value
		} else {
			cp.ChannelValues["ch"] = codec.Blob{Type: "json", Data: []byte("1")}
		}
		_, err := db.Put(ctx, Config{ThreadID: id}, cp, md, nv)
		return err
	}
	// msgpackBlob is v as a caller's blob of the engine's own type.
	msgpackBlob := func(v any) codec.Blob {
		if raw, ok := v.([]byte); ok {
			return codec.Blob{Type: codec.TypeMsgpack, Data: raw}
		}
		b, err := codec.Marshal(v)
		if err != nil {
			panic(err)
		}
		return codec.Blob{Type: codec.TypeMsgpack, Data: b}
	}
	return []valueSurface{
		{"Commit metadata", 1, func(ctx context.Context, db *DB, id string, v any) error {
			_, err := db.Commit(ctx, id, Step{Metadata: Metadata{"x": v}})
			return err
		}, nil},
		{"Commit message additional_kwargs", 4, func(ctx context.Context, db *DB, id string, v any) error {
			_, err := db.Commit(ctx, id, msg(id, codec.Message{Type: codec.Human, Content: "hi", AdditionalKwargs: map[string]any{"x": v}}))
			return err
		}, nil},
		{"Commit message content block", 5, func(ctx context.Context, db *DB, id string, v any) error {
			_, err := db.Commit(ctx, id, msg(id, codec.Message{Type: codec.AI, Content: []any{map[string]any{"type": "text", "x": v}}}))
			return err
		}, nil},
		{"Commit message tool call args", 6, func(ctx context.Context, db *DB, id string, v any) error {
			_, err := db.Commit(ctx, id, msg(id, codec.Message{Type: codec.AI, Content: "",
				ToolCalls: []codec.ToolCall{{ID: "c", Name: "f", Args: map[string]any{"x": v}}}}))
			return err
		}, nil},
		{"Commit to a LastValue channel", 0, func(ctx context.Context, db *DB, id string, v any) error {
			_, err := db.Commit(ctx, id, Step{Tasks: []TaskWrites{{TaskID: "t", Writes: []ChannelWrite{{Channel: "notes", Value: v}}}}})
			return err
		}, nil},
		{"Put metadata", 1, func(ctx context.Context, db *DB, id string, v any) error {
			return lgPut(ctx, db, id, Metadata{"x": v}, nil)
		}, nil},
		{"Put channel value of the engine's type", 0, func(ctx context.Context, db *DB, id string, v any) error {
			b := msgpackBlob(v)
			return lgPut(ctx, db, id, nil, &b)
		}, nil},
		{"PutWrites value of the engine's type", 0, func(ctx context.Context, db *DB, id string, v any) error {
			return db.PutWrites(ctx, Config{ThreadID: id, CheckpointID: "0001"}, []Write{{Channel: "ch", Value: msgpackBlob(v)}}, "task", "")
		}, func(ctx context.Context, db *DB, id string) error { return lgPut(ctx, db, id, nil, nil) }},
		{"event content", 0, func(ctx context.Context, db *DB, id string, v any) error {
			_, err := db.Events().Put(ctx, records.Event{ThreadID: id, RunID: "r", EventType: "llm.ai.response", Category: records.CategoryMessage, Content: v})
			return err
		}, nil},
		{"event metadata", 1, func(ctx context.Context, db *DB, id string, v any) error {
			_, err := db.Events().Put(ctx, records.Event{ThreadID: id, RunID: "r", EventType: "llm.ai.response", Category: records.CategoryMessage,
				Content: "ok", Metadata: map[string]any{"x": v}})
			return err
		}, nil},
		{"trace event content", 0, func(ctx context.Context, db *DB, id string, v any) error {
			_, err := db.Events().Put(ctx, records.Event{ThreadID: id, RunID: "r", EventType: "tool.call", Category: records.CategoryTrace, Content: v})
			return err
		}, nil},
		{"store value", 1, func(ctx context.Context, db *DB, id string, v any) error {
			return db.Store().Put(ctx, []string{"ns", id}, "k", map[string]any{"x": v})
		}, nil},
		{"thread metadata", 1, func(ctx context.Context, db *DB, id string, v any) error {
			_, err := db.Threads().Create(ctx, User("u"), records.NewThread{ThreadID: id, Metadata: map[string]any{"x": v}})
			return err
		}, nil},
		{"thread metadata merge", 1, func(ctx context.Context, db *DB, id string, v any) error {
			return db.Threads().MergeMetadata(ctx, User("u"), id, map[string]any{"x": v}, true)
		}, func(ctx context.Context, db *DB, id string) error {
			_, err := db.Threads().Create(ctx, User("u"), records.NewThread{ThreadID: id})
			return err
		}},
		{"run metadata", 1, func(ctx context.Context, db *DB, id string, v any) error {
			_, err := db.Runs().Create(ctx, records.NewRun{ThreadID: id, Metadata: map[string]any{"x": v}})
			return err
		}, nil},
		{"run kwargs", 1, func(ctx context.Context, db *DB, id string, v any) error {
			_, err := db.Runs().Create(ctx, records.NewRun{ThreadID: id, Kwargs: map[string]any{"x": v}})
			return err
		}, nil},
	}
}

// readsBack runs every reader over the whole file and fails t on the
// first error: the readers a value must get through.
func readsBack(t *testing.T, db *DB) {
	t.Helper()
	ctx := context.Background()
	fail := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	threads, err := db.ListThreads(ctx, admin.ThreadListOptions{Limit: 1000})
	fail("ListThreads", err)
	for _, th := range threads {
		id := th.ThreadID
		if th.Checkpoints > 0 {
			for tu, err := range db.List(ctx, ListOptions{ThreadID: id}) {
				fail("List "+id, err)
				_, err := db.GetTuple(ctx, tu.Config)
				fail("GetTuple "+id, err)
				_, err = db.ReadState(ctx, tu.Config)
				fail("ReadState "+id, err)
			}
			for e, err := range db.CheckpointLog(ctx, id, admin.LogOptions{}) {
				fail("CheckpointLog "+id, err)
				_ = e
			}
			if strings.HasPrefix(id, "api-") {
				_, err := db.State(ctx, Config{ThreadID: id})
				fail("State "+id, err)
				for _, err := range db.StateHistory(ctx, id, HistoryOptions{}) {
					fail("StateHistory "+id, err)
				}
				_, err = db.DeltaChannelHistory(ctx, Config{ThreadID: id}, []string{MessagesChannel, "notes"})
				fail("DeltaChannelHistory "+id, err)
			}
		}
		_, err := db.Events().ListMessages(ctx, id, records.MessageQuery{Limit: 100})
		fail("ListMessages "+id, err)
		_, err = db.Events().ListRunEvents(ctx, id, "r", records.RunEventQuery{Limit: 100})
		fail("ListRunEvents "+id, err)
		_, err = db.ThreadEvents(ctx, id, 0, 100)
		fail("ThreadEvents "+id, err)
		for _, err := range db.Runs().List(ctx, id) {
			fail("Runs.List "+id, err)
		}
		_, err = db.Runs().TokenUsage(ctx, id, true)
		fail("TokenUsage "+id, err)
	}
	items, err := db.Store().Search(ctx, records.SearchOp{Limit: 1000})
	fail("Store.Search", err)
	for _, it := range items {
		_, err := db.Store().Get(ctx, it.Namespace, it.Key)
		fail("Store.Get", err)
	}
	_, err = db.Store().Search(ctx, records.SearchOp{Prefix: []string{"ns"}, Filter: map[string]any{"x": "leaf"}, Limit: 1000})
	fail("Store.Search filtered", err)
	_, err = db.Threads().Search(ctx, AnyOwner, records.ThreadQuery{Limit: 1000})
	fail("Threads.Search", err)
	_, err = db.Threads().Search(ctx, AnyOwner, records.ThreadQuery{Limit: 1000, Metadata: map[string]any{"x": "leaf"}})
	fail("Threads.Search filtered", err)
	rep, err := db.Verify(ctx, admin.VerifyOptions{})
	fail("Verify", err)
	if !rep.OK {
		t.Fatalf("Verify: %v", rep.Problems)
	}
	var first bytes.Buffer
	_, err = db.Export(ctx, &first, admin.ExportOptions{})
	fail("Export", err)
	dst := testPath(t, filepath.Join(t.TempDir(), "imported.db"))
	o := DefaultOptions()
	o.Schema = db.opts.Schema
	_, err = ImportFile(ctx, dst, bytes.NewReader(first.Bytes()), &o, admin.ImportOptions{})
	fail("Import", err)
	o.Mode = channels.ModeAuto
	copied, err := Open(ctx, dst, &o)
	fail("Open the import", err)
	defer copied.Close()
	var second bytes.Buffer
	_, err = copied.Export(ctx, &second, admin.ExportOptions{})
	fail("Export of the import", err)
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Fatalf("export -> import -> export differs")
	}
}

// bigUnderRace skips a test of sizes under the race detector, which finds
// nothing in these single-goroutine calls and makes them ten times slower:
// the run without -race (CI runs both) covers them.
func bigUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("sizes, not concurrency: run without -race")
	}
	skipShort(t, "writes values of tens of MB")
}

// skipShort leaves a slow test out of the quick loop (go test -short);
// CI runs everything.
func skipShort(t *testing.T, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip(why + "; skipped with -short")
	}
}

// valueModes are the modes the value tests run in: one under the race
// detector (see bigUnderRace).
func valueModes() []channels.Mode {
	if raceEnabled {
		return []channels.Mode{channels.ModeDelta}
	}
	return []channels.Mode{channels.ModeFull, channels.ModeDelta}
}

func valuesDB(t *testing.T, mode channels.Mode) *DB {
	t.Helper()
	o := DefaultOptions()
	o.Mode, o.SnapshotEvery = mode, 3
	o.Schema = Schema{MessagesChannel: channels.Messages{}, "notes": channels.LastValue{}}
	o.RunLease = 24 * time.Hour // no renewal between two fingerprints
	return openTest(t, filepath.Join(t.TempDir(), "values.db"), &o)
}

// TestDeepValuesAreStoredOnlyIfReadable: at codec.MaxDepth (512) levels,
// counting the engine's wrapping, every surface stores and every reader
// reads; one level more is refused by every surface as ErrInvalidArgument,
// with the file unchanged. Wide values pass everywhere too.
func TestDeepValuesAreStoredOnlyIfReadable(t *testing.T) {
	skipShort(t, "writes values up to the size limits")
	ctx := context.Background()
	wideN := 20000
	if raceEnabled {
		wideN = 2000
	}
	for _, mode := range valueModes() {
		t.Run(string(mode), func(t *testing.T) {
			db := valuesDB(t, mode)
			for i, s := range valueSurfaces() {
				for _, depth := range []int{511, 512, 513} {
					id := fmt.Sprintf("api-%02d-%d", i, depth)
					if !strings.HasPrefix(s.name, "Commit") {
						id = fmt.Sprintf("rec-%02d-%d", i, depth)
					}
					var v any = nestMaps(depth - s.wrap)
					if s.wrap == 0 && strings.Contains(s.name, "engine's type") {
						v = rawNested(depth) // a caller's bytes, built past Marshal
					}
					if s.setup != nil {
						if err := s.setup(ctx, db, id); err != nil {
							t.Fatal(err)
						}
					}
					before := ""
					if depth > codec.MaxDepth {
						before = fingerprint(t, db)
					}
					err := s.store(ctx, db, id, v)
					switch {
					case depth <= codec.MaxDepth && err != nil:
						t.Fatalf("%s at depth %d refused: %v", s.name, depth, err)
					case depth > codec.MaxDepth && (!errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrCorrupt)):
						t.Fatalf("%s at depth %d: got %v, want ErrInvalidArgument", s.name, depth, err)
					case depth > codec.MaxDepth:
						if !strings.Contains(err.Error(), "512") {
							t.Errorf("%s: the error does not name the limit: %v", s.name, err)
						}
						if after := fingerprint(t, db); after != before {
							t.Fatalf("%s at depth %d was refused but changed the file", s.name, depth)
						}
					}
				}
				id := fmt.Sprintf("rec-%02d-wide", i)
				if strings.HasPrefix(s.name, "Commit") {
					id = fmt.Sprintf("api-%02d-wide", i)
				}
				var wide any = wideValue(wideN)
				if strings.Contains(s.name, "engine's type") {
					b, _ := codec.Marshal(wide)
					wide = b
				}
				if s.setup != nil {
					if err := s.setup(ctx, db, id); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.store(ctx, db, id, wide); err != nil {
					t.Fatalf("%s of a wide value: %v", s.name, err)
				}
			}
			readsBack(t, db)
			if raceEnabled {
				return
			}
			// A second handle without caches reads everything cold.
			o := db.Options()
			o.HistoryCacheBytes = 0
			cold := openTest(t, db.Path(), &o)
			readsBack(t, cold)
		})
	}
}

// bigString is a string of n bytes that compresses poorly, so stored sizes
// are what they say.
func bigString(n int) string {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = 'a' + byte(x%26)
	}
	return string(b)
}

// TestLargeValuesAreStoredOnlyIfReadable: every surface takes a value
// just within its limit and every reader reads it back; a byte more is
// refused with ErrTooLarge (which is also ErrInvalidArgument), naming the
// limit, with the file unchanged. Before, a 32 MB message made Commit
// panic inside the SQLite driver and a 46 MB delta list made cold reads,
// verify and convert panic.
func TestLargeValuesAreStoredOnlyIfReadable(t *testing.T) {
	skipShort(t, "writes values up to the size limits")
	ctx := context.Background()
	const slack = 4 << 10 // room for the engine's wrapping and the other fields
	within := bigString(MaxValueBytes - slack)
	over := within + bigString(slack+1)
	for _, mode := range valueModes() {
		t.Run(string(mode), func(t *testing.T) {
			small := valuesDB(t, mode)
			for i, s := range valueSurfaces() {
				id := fmt.Sprintf("rec-%02d", i)
				if strings.HasPrefix(s.name, "Commit") {
					id = fmt.Sprintf("api-%02d", i)
				}
				if s.setup != nil {
					if err := s.setup(ctx, small, id); err != nil {
						t.Fatal(err)
					}
				}
				var v any = over
				if strings.Contains(s.name, "engine's type") {
					if strings.HasPrefix(s.name, "Put channel") {
						v = rawString(MaxListBytes + 1)
					} else {
						v = rawString(MaxValueBytes + 1)
					}
				}
				if strings.HasPrefix(s.name, "trace") {
					continue // cut to TraceContentLimit, whatever its size
				}
				before := fingerprint(t, small)
				err := s.store(ctx, small, id, v)
				if !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "Max") {
					t.Fatalf("%s of %d bytes: got %v, want ErrTooLarge naming the limit", s.name, len(over), err)
				}
				if fingerprint(t, small) != before {
					t.Fatalf("%s of %d bytes was refused but changed the file", s.name, len(over))
				}
			}
			readsBack(t, small)

			if mode == channels.ModeDelta || raceEnabled {
				return // a delta list's growth: TestDeltaListGrowsToItsLimit; and see bigUnderRace
			}
			// One surface of each kind at its limit, then every reader:
			// the file holds about 200 MB of values.
			db := valuesDB(t, mode)
			for i, s := range valueSurfaces() {
				switch s.name {
				case "Commit message content block", "Commit to a LastValue channel", "Put channel value of the engine's type",
					"PutWrites value of the engine's type", "event content", "store value", "thread metadata merge", "run kwargs":
				default:
					continue
				}
				id := fmt.Sprintf("rec-%02d", i)
				if strings.HasPrefix(s.name, "Commit") {
					id = fmt.Sprintf("api-%02d", i)
				}
				if s.setup != nil {
					if err := s.setup(ctx, db, id); err != nil {
						t.Fatal(err)
					}
				}
				var v any = within
				if strings.Contains(s.name, "engine's type") {
					if strings.HasPrefix(s.name, "Put channel") {
						v = rawString(MaxListBytes - slack)
					} else {
						v = rawString(MaxValueBytes - slack)
					}
				}
				if err := s.store(ctx, db, id, v); err != nil {
					t.Fatalf("%s of %d bytes: %v", s.name, len(within), err)
				}
			}
			o := db.Options()
			o.HistoryCacheBytes = 0
			readsBack(t, openTest(t, db.Path(), &o))
		})
	}
}

// rawString is the stored form of a msgpack string of n bytes.
func rawString(n int) []byte {
	b := binary.BigEndian.AppendUint32([]byte{codec.FormatV1, 0xdb}, uint32(n))
	return append(b, bigString(n)...)
}

// TestDeltaListGrowsToItsLimit grows one thread's message list, 12 MiB a
// step, until a Commit is refused, in both modes. Full mode stores the list
// at every step, so the step that would pass MaxListBytes is refused. Delta
// mode encodes the list only for a snapshot (every K=3 updates), so the
// refusal comes at the first snapshot past the limit; the steps between are
// read by folding writes onto the last snapshot and stay readable. Either
// way every accepted step reads back cold, verify passes, and Compact lets
// the thread go on.
func TestDeltaListGrowsToItsLimit(t *testing.T) {
	bigUnderRace(t)
	ctx := context.Background()
	const step = 12 << 20
	for _, mode := range []channels.Mode{channels.ModeFull, channels.ModeDelta} {
		t.Run(string(mode), func(t *testing.T) {
			o := DefaultOptions()
			o.Mode, o.SnapshotEvery = mode, 3
			db := openTest(t, filepath.Join(t.TempDir(), "grow.db"), &o)
			text := strings.Repeat("x", step)
			var head Config
			n := 0
			for ; ; n++ {
				cfg, err := db.Commit(ctx, "t", Step{Tasks: []TaskWrites{{TaskID: "a", Writes: []ChannelWrite{{Channel: MessagesChannel,
					Value: codec.Message{Type: codec.Human, Content: text}}}}}})
				if err != nil {
					if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "MaxListBytes") {
						t.Fatalf("step %d: %v", n+1, err)
					}
					break
				}
				head = cfg
				if n > 20 {
					t.Fatal("the list grew past its limit without a refusal")
				}
			}
			// Full mode refuses the first step whose list passes the limit
			// (the 6th, 72 MiB), delta mode the first snapshot after it
			// (steps 1, 4, 7, ...: the 7th).
			refused := MaxListBytes/step + 1
			if mode == channels.ModeDelta {
				refused = (refused+1)/3*3 + 1
			}
			want := refused - 1
			if n != want {
				t.Fatalf("%d steps accepted, want %d", n, want)
			}
			before := fingerprint(t, db)
			again := []ChannelWrite{{Channel: MessagesChannel, Value: codec.Message{Type: codec.Human, Content: text}}}
			if mode == channels.ModeDelta {
				// Past the limit already: any step that snapshots is refused.
				again[0].Value = codec.Message{Type: codec.Human, Content: "small"}
			}
			if _, err := db.Commit(ctx, "t", Step{Tasks: []TaskWrites{{TaskID: "a", Writes: again}}}); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("the step again: %v", err)
			}
			if fingerprint(t, db) != before {
				t.Fatal("a refused step changed the file")
			}
			cold := DefaultOptions()
			cold.Mode, cold.HistoryCacheBytes = channels.ModeAuto, 0
			r := openTest(t, db.Path(), &cold)
			st, err := r.State(ctx, Config{ThreadID: "t"})
			if err != nil || len(st.Values[MessagesChannel].([]codec.Message)) != n {
				t.Fatalf("cold read of the head: %v", err)
			}
			if rep, err := r.Verify(ctx, admin.VerifyOptions{}); err != nil || !rep.OK {
				t.Fatalf("verify: %v %v", err, rep.Problems)
			}
			if mode == channels.ModeDelta {
				// Full mode would store each of the steps since the last
				// snapshot whole: the conversion is refused, and changes
				// nothing.
				if _, err := db.ConvertThread(ctx, "t", channels.ModeFull); !errors.Is(err, ErrTooLarge) {
					t.Fatalf("convert to full: %v", err)
				}
				if fingerprint(t, db) != before {
					t.Fatal("a refused conversion changed the file")
				}
			}
			if _, err := db.Compact(ctx, head, MessagesChannel, []codec.Message{{ID: "s", Type: codec.System, Content: "summary"}}); err != nil {
				t.Fatalf("compact: %v", err)
			}
			if _, err := db.Commit(ctx, "t", Step{Tasks: []TaskWrites{{TaskID: "a", Writes: []ChannelWrite{{Channel: MessagesChannel,
				Value: codec.Message{Type: codec.Human, Content: text}}}}}}); err != nil {
				t.Fatalf("a step after compaction: %v", err)
			}
		})
	}
}

// TestManyLargeWritesAtOneCheckpoint puts more values under one checkpoint
// (or one store page) than SQLite's memory holds copies of (256 MiB per
// connection): every query that reads them must stream them. Before, the
// pending writes of a checkpoint were sorted by SQLite (GetTuple, List, the
// history walk, a Commit's own step) and sealed with RETURNING, and store
// pages sorted with their values, copying every value into its memory, a
// few times over: 48 MiB of writes in one step made Commit panic.
func TestManyLargeWritesAtOneCheckpoint(t *testing.T) {
	bigUnderRace(t)
	ctx := context.Background()
	big := bigString(MaxValueBytes - 4<<10)
	for _, mode := range []channels.Mode{channels.ModeFull, channels.ModeDelta} {
		t.Run(string(mode), func(t *testing.T) {
			db := valuesDB(t, mode)
			// The thread API: three tasks of one step, each a 16 MiB message.
			var tasks []TaskWrites
			for i := range 3 {
				tasks = append(tasks, TaskWrites{TaskID: fmt.Sprint("task-", i), Writes: []ChannelWrite{{Channel: MessagesChannel,
					Value: codec.Message{Type: codec.Human, Content: big}}}})
			}
			cfg, err := db.Commit(ctx, "api-big", Step{Tasks: tasks})
			if err != nil {
				t.Fatalf("a step of 48 MiB of messages: %v", err)
			}
			o := db.Options()
			o.HistoryCacheBytes = 0
			cold := openTest(t, db.Path(), &o)
			st, err := cold.State(ctx, cfg)
			if err != nil || len(st.Values[MessagesChannel].([]codec.Message)) != 3 {
				t.Fatalf("cold state: %v", err)
			}
			if rep, err := cold.Verify(ctx, admin.VerifyOptions{}); err != nil || !rep.OK {
				t.Fatalf("verify: %v %v", err, rep.Problems)
			}
		})
	}
	db := valuesDB(t, channels.ModeFull)
	// LangGraph's protocol: six pending writes of 16 MiB.
	lg := Config{ThreadID: "rec-big"}
	cp := Checkpoint{V: 4, ID: "0001", TS: "2026-01-01T00:00:00Z", ChannelValues: map[string]codec.Blob{},
		ChannelVersions: map[string]string{}, VersionsSeen: map[string]map[string]string{}}
	lg, err := db.Put(ctx, lg, cp, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		w := Write{Channel: "ch", Value: codec.Blob{Type: "json", Data: []byte(big)}}
		if err := db.PutWrites(ctx, lg, []Write{w}, fmt.Sprint("task-", i), ""); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	tu, err := db.GetTuple(ctx, lg)
	if err != nil || len(tu.PendingWrites) != 6 {
		t.Fatalf("GetTuple of 96 MiB of writes: %d, %v", len(tu.PendingWrites), err)
	}
	for i, w := range tu.PendingWrites {
		if w.TaskID != fmt.Sprint("task-", i) || len(w.Value.Data) != len(big) {
			t.Fatalf("write %d reads back as %s with %d bytes", i, w.TaskID, len(w.Value.Data))
		}
	}
	cp.ID = "0002"
	if _, err := db.Put(ctx, lg, cp, nil, nil); err != nil { // seals the six
		t.Fatalf("a child sealing 96 MiB of writes: %v", err)
	}
	// The store: items across namespaces, searched in one page.
	for i := range 4 {
		if err := db.Store().Put(ctx, []string{"big", fmt.Sprint(i)}, "k", map[string]any{"v": big}); err != nil {
			t.Fatal(err)
		}
	}
	items, err := db.Store().Search(ctx, records.SearchOp{Prefix: []string{"big"}, Limit: 10})
	if err != nil || len(items) != 4 {
		t.Fatalf("search of 64 MiB of items: %d, %v", len(items), err)
	}
	for i, it := range items { // newest first
		if it.Namespace[1] != fmt.Sprint(3-i) {
			t.Fatalf("search order: item %d is %v", i, it.Namespace)
		}
	}
}

// TestDriverPanicsBecomeErrors: when SQLite runs out of its memory,
// ncruces panics; the driver recovers, the call returns ErrTooLarge, and
// the handle goes on working. A panic of the engine's own (here in a row
// callback, inside the driver's loop) is not the driver's to hide.
func TestDriverPanicsBecomeErrors(t *testing.T) {
	sqliteOnly(t, "ncruces/go-sqlite3 panics when SQLite's heap runs out")
	ctx := context.Background()
	db := valuesDB(t, channels.ModeFull)
	huge := func(c *conn) error { return c.exec(fmt.Sprintf("SELECT randomblob(%d)", hugeBlobBytes)) }
	for name, call := range map[string]func() error{
		"write": func() error { return db.write(ctx, huge) },
		"read":  func() error { return db.read(ctx, huge) },
		"write in a step": func() error {
			return db.write(ctx, func(c *conn) error {
				if err := c.exec(sqlSetThreadMod, "half", channels.ModeFull, 1); err != nil {
					return err
				}
				return huge(c)
			})
		},
	} {
		err := call()
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "out of memory") {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// The handle still works, and the half-done write left nothing.
	if _, err := db.Commit(ctx, "api-after", Step{Tasks: []TaskWrites{{TaskID: "a", Writes: []ChannelWrite{{Channel: MessagesChannel,
		Value: codec.Message{Type: codec.Human, Content: "still here"}}}}}}); err != nil {
		t.Fatal(err)
	}
	readsBack(t, db)
	err := db.read(ctx, func(c *conn) error {
		n, err := c.queryInt64(`SELECT count(*) FROM thread_modes WHERE thread_id = 'half'`)
		if err == nil && n != 0 {
			return fmt.Errorf("%d rows", n)
		}
		return err
	})
	if err != nil {
		t.Fatalf("the write that panicked left: %v", err)
	}
	defer func() {
		if p := recover(); p != "ours" {
			t.Fatalf("another panic: %v", p)
		}
	}()
	db.read(ctx, func(c *conn) error {
		return c.query(`SELECT 1`, nil, func(row) error { panic("ours") })
	})
	t.Fatal("a panic of the engine's own was hidden")
}

// TestOneCallWritesAtMostMaxCallBytes: SQLite holds the pages of large
// values a transaction writes until it commits, so what one call writes is
// bounded too: a batch past MaxCallBytes is refused before anything is
// written; one within it commits. An import writes a whole dump in one
// transaction and has no such bound: past what SQLite holds it fails with
// ErrTooLarge, changing nothing, and the handle goes on.
func TestOneCallWritesAtMostMaxCallBytes(t *testing.T) {
	bigUnderRace(t)
	ctx := context.Background()
	db := valuesDB(t, channels.ModeFull)
	big := bigString(MaxValueBytes - 4<<10)
	batch := func(ns string, n int) []records.StoreOp {
		var ops []records.StoreOp
		for i := range n {
			ops = append(ops, records.PutOp{Namespace: []string{ns}, Key: fmt.Sprint(i), Value: map[string]any{"v": big}})
		}
		return ops
	}
	before := fingerprint(t, db)
	if _, err := db.Store().Batch(ctx, batch("over", MaxCallBytes/MaxValueBytes+1)...); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "MaxCallBytes") {
		t.Fatalf("a batch past MaxCallBytes: %v", err)
	}
	var evs []records.Event
	for range MaxCallBytes/MaxValueBytes + 1 {
		evs = append(evs, records.Event{ThreadID: "rec-ev", RunID: "r", EventType: "e", Category: records.CategoryMessage, Content: big})
	}
	if _, err := db.Events().PutBatch(ctx, evs); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("an event batch past MaxCallBytes: %v", err)
	}
	if fingerprint(t, db) != before {
		t.Fatal("a refused batch changed the file")
	}
	for _, ns := range []string{"a", "b"} { // two calls, each within the bound
		if _, err := db.Store().Batch(ctx, batch(ns, MaxCallBytes/MaxValueBytes)...); err != nil {
			t.Fatalf("a batch within MaxCallBytes: %v", err)
		}
	}
	var dump bytes.Buffer
	if _, err := db.Export(ctx, &dump, admin.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "copy.db")
	dst := openTest(t, path, nil)
	_, err := dst.Import(ctx, bytes.NewReader(dump.Bytes()), admin.ImportOptions{})
	// The server holds no pages in the client's heap: on PostgreSQL the
	// import, which has no MaxCallBytes, goes through like the host SQLite's.
	if importHoldsAll || onPG() {
		if err != nil {
			t.Fatalf("an import of 256 MiB of large values in one transaction: %v", err)
		}
		if in, err := dst.Info(ctx); err != nil || in.Rows["store_items"] != 2*MaxCallBytes/MaxValueBytes {
			t.Fatalf("the import wrote %d items (%v)", in.Rows["store_items"], err)
		}
	} else {
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("an import of 256 MiB of large values in one transaction: %v", err)
		}
		if in, err := dst.Info(ctx); err != nil || in.Rows["store_items"] != 0 {
			t.Fatalf("the failed import left %d items (%v)", in.Rows["store_items"], err)
		}
	}
	if err := dst.Store().Put(ctx, []string{"after"}, "k", map[string]any{"v": big}); err != nil {
		t.Fatalf("the handle after a failed import: %v", err)
	}
}
