package engine

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/engine/records"
	"github.com/google/go-cmp/cmp"
)

// Fuzz targets for the public calls that take caller strings and maps
// (checkpoint ids, thread ids, namespaces, channel names, metadata and its
// filters, the thread API, records) and for the decoders of stored bytes,
// run against a real database. Each asserts: no panic; a refused call
// returns one of the engine's sentinel errors, never an SQLite error (no
// SQL text ever comes from a caller, so none may leak); a refused call
// leaves the file exactly as it was; an accepted one reads back as given.
// The record surfaces' own input checks are fuzzed in records_fuzz_test.go.

// fuzzDB is one database per fuzz process, replaced when it grows.
type fuzzDB struct {
	db      *DB
	calls   int
	backend string // testBackend when db was opened
}

func (f *fuzzDB) get(t testing.TB) *DB {
	if f.db == nil || f.calls > 300 || f.backend != testBackend {
		if f.db != nil {
			f.db.Close()
		}
		o := DefaultOptions()
		o.ReconcileOnOpen = false
		// The handle renews its runs' leases every RunLease/3 in the
		// background; within a fuzz run that write would land between
		// refused's two fingerprints and read as a refused call that
		// changed the file.
		o.RunLease = 24 * time.Hour
		db, err := Open(context.Background(), testPath(nil, Memory), &o)
		if err != nil {
			t.Fatal(err)
		}
		f.db, f.calls, f.backend = db, 0, testBackend
	}
	f.calls++
	return f.db
}

// fingerprint hashes every row of every table: equal fingerprints, equal
// contents.
func fingerprint(t testing.TB, db *DB) string {
	h := sha256.New()
	err := db.read(context.Background(), func(c *conn) error {
		tables, err := testTables(c)
		if err != nil {
			return err
		}
		for _, tb := range tables {
			fmt.Fprintf(h, "[%s]", tb)
			// Table names come from the catalogue.
			var rows []string
			if err := c.query(`SELECT * FROM "`+tb+`"`, nil, func(st row) error {
				var b strings.Builder
				for i := range st.Columns() {
					v, null := st.Blob(i), byte(0)
					if st.Null(i) {
						null = 1
					}
					// Length-prefixed, so that no two rows render alike.
					b.Write(binary.BigEndian.AppendUint64([]byte{null}, uint64(len(v))))
					b.Write(v)
				}
				rows = append(rows, b.String())
				return nil
			}); err != nil {
				return err
			}
			slices.Sort(rows)
			for _, r := range rows {
				h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(r))))
				h.Write([]byte(r))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("fingerprint: %v", err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// fuzzAllowed are the errors a call with hostile input may return.
var fuzzAllowed = []error{ErrInvalidArgument, ErrNotFound, ErrConflict, ErrModeMismatch, ErrReadOnly}

// checkRefusal fails t if err is not one of fuzzAllowed (or more: corrupt,
// or in a newer build's format, when stored bytes are the input) or if
// SQLite's own error leaks.
func checkRefusal(t *testing.T, call string, err error, more ...error) {
	t.Helper()
	if err == nil {
		return
	}
	if sqliteLeak(err) || pgErrorLeaked(err) {
		if !errors.Is(err, ErrCorrupt) || len(more) == 0 {
			t.Fatalf("%s: database error leaked: %v", call, err)
		}
	}
	for _, e := range append(fuzzAllowed, more...) {
		if errors.Is(err, e) {
			return
		}
	}
	t.Fatalf("%s: untyped error: %v", call, err)
}

// refused runs a call that may fail and checks a failure changed nothing.
func refused(t *testing.T, db *DB, call string, fn func() error) bool {
	t.Helper()
	before := fingerprint(t, db)
	err := fn()
	checkRefusal(t, call, err)
	if err != nil {
		if after := fingerprint(t, db); after != before {
			t.Fatalf("%s was refused (%v) but changed the file", call, err)
		}
		return true
	}
	return false
}

var fuzzCheckpointDB fuzzDB

// FuzzCheckpointCalls puts a checkpoint, writes and a filter built from
// hostile strings, and reads them back.
//
// fuzz budget: 1000 (each input runs SQL; .ci/run reads this line)
func FuzzCheckpointCalls(f *testing.F) {
	f.Add("thread-1", "", "0001", "", "messages", "source", "loop", []byte{0x01, 0xa1, 'x'})
	f.Add("t' OR 1=1 --", "node:1|sub", "9999", "0001", "ch\"); DROP TABLE checkpoints; --", "a.b", "x') OR '1'='1", []byte{})
	f.Add("\xff\xfe", "\x00", "\xc3", "", "\u202e", "$where", "\x00", []byte{0xc1})
	f.Add("t", "", "b", "a", "__error__", "step", "-1", []byte("{\"json\": true}"))
	f.Fuzz(func(t *testing.T, thread, ns, id, parent, channel, key, val string, data []byte) {
		db := fuzzCheckpointDB.get(t)
		ctx := context.Background()
		blob := codec.Blob{Type: "json", Data: data}
		cp := Checkpoint{V: 4, ID: id, TS: "2026-01-01T00:00:00Z",
			ChannelVersions: map[string]string{channel: "v1"}, ChannelValues: map[string]codec.Blob{channel: blob},
			VersionsSeen: map[string]map[string]string{key: {channel: "v1"}}}
		md := Metadata{key: val, "nested": map[string]any{key: val}}
		parentCfg := Config{ThreadID: thread, CheckpointNS: ns, CheckpointID: parent}
		cfg := Config{ThreadID: thread, CheckpointNS: ns, CheckpointID: id}
		var put Config
		if !refused(t, db, "Put", func() (err error) {
			put, err = db.Put(ctx, parentCfg, cp, md, map[string]string{channel: "v1"})
			return err
		}) {
			if put != cfg {
				t.Fatalf("Put returned %+v for %+v", put, cfg)
			}
			got, err := db.GetTuple(ctx, cfg)
			if err != nil {
				t.Fatalf("GetTuple of a checkpoint just put: %v", err)
			}
			if diff := cmp.Diff(cp.ChannelValues, got.Checkpoint.ChannelValues); diff != "" {
				t.Fatalf("channel values do not round-trip (-put +got):\n%s", diff)
			}
			if got.Metadata[key] != val {
				t.Fatalf("metadata %q=%q reads back as %v", key, val, got.Metadata[key])
			}
		}
		refused(t, db, "PutWrites", func() error {
			return db.PutWrites(ctx, cfg, []Write{{Channel: channel, Value: blob}, {Channel: ChannelError, Value: blob}}, val, key)
		})
		_, err := db.GetTuple(ctx, cfg)
		checkRefusal(t, "GetTuple", err)
		for _, o := range []ListOptions{
			{ThreadID: thread, Namespace: &ns, Before: id, Filter: map[string]any{key: val}},
			{Filter: map[string]any{key: map[string]any{val: int64(1)}, "nested." + key: val}},
		} {
			for tu, err := range db.List(ctx, o) {
				checkRefusal(t, "List", err)
				if err == nil && o.Filter[key] == val && tu.Metadata[key] != val {
					t.Fatalf("List filter %q=%q returned metadata %v", key, val, tu.Metadata)
				}
			}
		}
		_, err = db.DeltaChannelHistory(ctx, cfg, []string{channel})
		checkRefusal(t, "DeltaChannelHistory", err)
		refused(t, db, "CopyThread", func() error { return db.CopyThread(ctx, thread, val) })
		refused(t, db, "Prune", func() error {
			_, err := db.Prune(ctx, []string{val}, admin.PruneStrategy(key))
			return err
		})
		refused(t, db, "DeleteForRuns", func() error { return db.DeleteForRuns(ctx, []string{val, key}, admin.DeleteRunsOptions{}) })
	})
}

var fuzzThreadDB fuzzDB

// FuzzThreadCalls drives the thread API and the records with hostile
// thread ids, task ids, message ids, channel names and metadata.
//
// fuzz budget: 300 (each input runs about twenty transactions; .ci/run reads this line)
func FuzzThreadCalls(f *testing.F) {
	f.Add("thread-1", "agent", "m1", "hello", "messages", "topic", "x")
	f.Add("t' OR 1=1 --", "", "", "\x00", "nope", "step", "1")
	f.Add("\xff", "a\x00b", "\u202e", "", "messages", "a.b", "x') OR '1'='1")
	f.Fuzz(func(t *testing.T, thread, task, msgID, content, channel, key, val string) {
		db := fuzzThreadDB.get(t)
		ctx := context.Background()
		msg := codec.Message{ID: msgID, Type: codec.AI, Content: content}
		step := Step{RunID: val, Metadata: Metadata{key: val}, Tasks: []TaskWrites{
			{TaskID: task, Writes: []ChannelWrite{{Channel: channel, Value: []codec.Message{msg}}}}}}
		var cfg Config
		if !refused(t, db, "Commit", func() (err error) { cfg, err = db.Commit(ctx, thread, step); return err }) {
			st, err := db.State(ctx, cfg)
			if err != nil {
				t.Fatalf("State of a commit that returned: %v", err)
			}
			ms, _ := st.Values[MessagesChannel].([]codec.Message)
			if len(ms) == 0 || ms[len(ms)-1].Content != content || msgID != "" && ms[len(ms)-1].ID != msgID {
				t.Fatalf("state after committing %+v: %+v", msg, ms)
			}
			if st.Metadata[key] != val {
				t.Fatalf("metadata %q=%q reads back as %v", key, val, st.Metadata[key])
			}
		}
		_, err := db.State(ctx, Config{ThreadID: thread})
		checkRefusal(t, "State", err)
		for _, err := range db.StateHistory(ctx, thread, HistoryOptions{Before: val, Limit: 3}) {
			checkRefusal(t, "StateHistory", err)
		}
		refused(t, db, "UpdateState", func() error {
			_, err := db.UpdateState(ctx, Config{ThreadID: thread, CheckpointID: val}, key, []ChannelWrite{{Channel: channel, Value: msg}})
			return err
		})
		refused(t, db, "Fork", func() error { _, err := db.Fork(ctx, Config{ThreadID: thread, CheckpointID: val}); return err })
		refused(t, db, "Rollback", func() error { _, err := db.Rollback(ctx, thread, val); return err })
		refused(t, db, "Compact", func() error {
			_, err := db.Compact(ctx, Config{ThreadID: thread}, channel, []codec.Message{msg})
			return err
		})
		refused(t, db, "Remove", func() error {
			_, err := db.Commit(ctx, thread, Step{Tasks: []TaskWrites{{TaskID: "rm", Writes: []ChannelWrite{
				{Channel: MessagesChannel, Value: channels.MessageUpdate{Messages: []codec.Message{{ID: msgID + "-absent", Type: codec.Remove}}}}}}}})
			return err
		})
		refused(t, db, "Threads.Create", func() error {
			_, err := db.Threads().Create(ctx, User(task), records.NewThread{ThreadID: thread, DisplayName: content, Metadata: map[string]any{key: val}})
			return err
		})
		_, err = db.Threads().Search(ctx, User(task), records.ThreadQuery{Metadata: map[string]any{key: val}, Status: records.ThreadStatus(content)})
		checkRefusal(t, "Threads.Search", err)
		refused(t, db, "Threads.MergeMetadata", func() error {
			return db.Threads().MergeMetadata(ctx, User(task), thread, map[string]any{key: val}, true)
		})
		refused(t, db, "Events.Put", func() error {
			_, err := db.Events().Put(ctx, records.Event{ThreadID: thread, RunID: val, EventType: key, Category: channel, Content: content, Metadata: map[string]any{key: val}})
			return err
		})
		_, err = db.Events().ListRunEvents(ctx, thread, val, records.RunEventQuery{Types: []string{key}, TaskID: task})
		checkRefusal(t, "Events.ListRunEvents", err)
		refused(t, db, "Runs.Create", func() error {
			_, err := db.Runs().Create(ctx, records.NewRun{ThreadID: thread, RunID: msgID, ModelName: content, Metadata: map[string]any{key: val}, IdempotencyKey: task})
			return err
		})
		refused(t, db, "Runs.SetStatus", func() error { return db.Runs().SetStatus(ctx, msgID, records.RunStatus(key), content) })
		refused(t, db, "Store.Put", func() error {
			return db.Store().Put(ctx, []string{thread, task}, key, map[string]any{key: val})
		})
		_, err = db.Store().Search(ctx, records.SearchOp{Prefix: []string{thread}, Filter: map[string]any{key: val}})
		checkRefusal(t, "Store.Search", err)
		_, err = db.Store().ListNamespaces(ctx, records.ListNamespacesOp{Prefix: []string{thread, "*"}, Suffix: []string{task}})
		checkRefusal(t, "Store.ListNamespaces", err)
	})
}

var fuzzStoredDB fuzzDB

// FuzzStoredBytes writes hostile bytes where the engine stores encoded
// values (a checkpoint's payload and metadata, a channel value, a write, an
// event, a run, a store item), as a damaged or foreign file would hold
// them, and reads them through every call: no panic, and only typed
// errors (ErrCorrupt for what does not decode).
//
// fuzz budget: 300 (each input writes and reads a whole set of records; .ci/run reads this line)
func FuzzStoredBytes(f *testing.F) {
	good, _ := codec.Marshal(map[string]any{"a": int64(1)})
	f.Add(good, good, good, good)
	f.Add([]byte{0x01, 0xdf, 0xff, 0xff, 0xff, 0xff}, []byte{0x02, 0x00}, []byte{0x01, 0xc1}, []byte{})
	f.Add([]byte{0x02, 0xff, 0xff}, []byte{0x01, 0x81, 0xa2, 'c', 'v', 0x81, 0xa8, 'm', 'e', 's', 's', 'a', 'g', 'e', 's', 0xa1, '1'}, []byte{0x01, 0x90}, []byte{0x01, 0x91, 0xc0})
	f.Fuzz(func(t *testing.T, payload, meta, value, write []byte) {
		db := fuzzStoredDB.get(t)
		ctx := context.Background()
		th := fmt.Sprintf("t%d", fuzzStoredDB.calls)
		err := db.write(ctx, func(c *conn) error {
			for _, q := range []struct {
				sql  string
				args []any
			}{
				{`INSERT INTO thread_modes(thread_id, mode, every) VALUES (?, 'full', 10)`, []any{th}},
				{`INSERT INTO checkpoints(thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint, metadata) VALUES (?, '', 'a', NULL, ?, ?)`, []any{th, good, good}},
				{`INSERT INTO checkpoints(thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint, metadata) VALUES (?, '', 'b', 'a', ?, ?)`, []any{th, payload, meta}},
				{`INSERT INTO blobs(thread_id, checkpoint_ns, channel, version, checkpoint_id, type, data) VALUES (?, '', 'messages', '1', 'b', 'msgpack', ?)`, []any{th, value}},
				{`INSERT INTO writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, data, consumed_by) VALUES (?, '', 'a', 'task', 0, 'messages', 'msgpack', ?, 'b')`, []any{th, write}},
				{`INSERT INTO writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, data) VALUES (?, '', 'b', 'task', 0, 'messages', 'msgpack', ?)`, []any{th, write}},
				{`INSERT INTO events(thread_id, seq, event_type, category, content, metadata, created_at) VALUES (?, 1, 'x', 'message', ?, ?, 0)`, []any{th, value, meta}},
				{`INSERT INTO runs(run_id, thread_id, status, created_at, updated_at, metadata, kwargs, token_usage_by_model) VALUES (?, ?, 'success', 0, 0, ?, ?, ?)`, []any{th, th, meta, value, write}},
				{`INSERT INTO threads(thread_id, status, metadata, created_at, updated_at) VALUES (?, 'idle', ?, 0, 0)`, []any{th, meta}},
				{`INSERT INTO store_items(namespace, key, value, created_at, updated_at) VALUES (?, 'k', ?, 0, 0)`, []any{"ns." + th, value}},
			} {
				if err := c.exec(q.sql, q.args...); err != nil {
					return fmt.Errorf("%s: %w", q.sql, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("plant the bytes: %v", err)
		}
		cfg := Config{ThreadID: th, CheckpointID: "b"}
		check := func(call string, err error) { t.Helper(); checkRefusal(t, call, err, ErrCorrupt, ErrFormatTooNew) }
		_, err = db.GetTuple(ctx, cfg)
		check("GetTuple", err)
		for _, err := range db.List(ctx, ListOptions{ThreadID: th, Filter: map[string]any{"a": int64(1)}}) {
			check("List", err)
		}
		_, err = db.State(ctx, cfg)
		check("State", err)
		_, err = db.DeltaChannelHistory(ctx, cfg, []string{MessagesChannel})
		check("DeltaChannelHistory", err)
		_, err = db.Commit(ctx, th, Step{Tasks: []TaskWrites{{TaskID: "x", Writes: []ChannelWrite{{Channel: MessagesChannel, Value: codec.Message{ID: "m", Type: codec.Human, Content: "hi"}}}}}})
		check("Commit", err)
		_, err = relEventsAfter(ctx, db, th, 0)
		check("Events", err)
		_, err = db.Runs().Get(ctx, th)
		check("Runs.Get", err)
		_, err = db.Runs().TokenUsage(ctx, th, true)
		check("Runs.TokenUsage", err)
		_, err = db.Threads().Get(ctx, AnyOwner, th)
		check("Threads.Get", err)
		_, err = db.Store().Search(ctx, records.SearchOp{Prefix: []string{"ns", th}, Filter: map[string]any{"a": int64(1)}})
		check("Store.Search", err)
		_, err = db.Retain(ctx, admin.RetainOptions{ThreadID: th, KeepLatest: 1})
		check("Retain", err)
		if _, err := db.Verify(ctx, admin.VerifyOptions{ThreadID: th}); err != nil {
			t.Fatalf("Verify of planted bytes: %v", err)
		}
	})
}
