package langgraph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/google/go-cmp/cmp"
	"github.com/ncruces/go-sqlite3"
)

// Imports into the protocol's form (the default), checked against what the
// source's own LangGraph read back from it (the expected-states files) and
// against the source's rows, byte for byte.

// sourceCounts counts a SqliteSaver file's checkpoints and the writes that
// belong to one, with SQL of its own.
func sourceCounts(t *testing.T, path string) (cps, writes int) {
	t.Helper()
	c, err := sqlite3.OpenFlags("file:"+path+"?mode=ro&immutable=1", sqlite3.OPEN_READONLY|sqlite3.OPEN_URI)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for q, n := range map[string]*int{
		`SELECT count(*) FROM checkpoints`: &cps,
		`SELECT count(*) FROM writes w WHERE EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id = w.thread_id AND c.checkpoint_ns = w.checkpoint_ns AND c.checkpoint_id = w.checkpoint_id)`: &writes,
	} {
		st, _, err := c.Prepare(q)
		if err != nil {
			t.Fatal(err)
		}
		if st.Step() {
			*n = st.ColumnInt(0)
		}
		st.Close()
	}
	return cps, writes
}

// dirState is a directory's names and the bytes of its files.
func dirState(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

// importProtocolFixture imports a fixture from a read-only directory and
// checks what every protocol import must give: all of it, verified, every
// checkpoint the same bytes, the source untouched and nothing beside it.
func importProtocolFixture(t *testing.T, fixture string, o Options) *engine.DB {
	t.Helper()
	ctx := context.Background()
	src := copyFile(t, fixture)
	dir := filepath.Dir(src)
	before := dirState(t, dir)
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	wantCPs, wantWrites := sourceCounts(t, src)
	db := openDst(t, channels.ModeDelta, 10)
	rep, err := Import(ctx, db, src, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Into != string(IntoProtocol) || rep.Checkpoints != wantCPs || rep.Writes != wantWrites || len(rep.Skipped) != 0 || rep.Renumbered != 0 {
		t.Fatalf("report %+v; the source has %d checkpoints and %d writes", rep, wantCPs, wantWrites)
	}
	vr, err := db.Verify(ctx, admin.VerifyOptions{})
	if err != nil || !vr.OK {
		t.Fatalf("verify: %v %v", err, vr.Problems)
	}
	n, diffs, err := Compare(ctx, db, src, o)
	if err != nil || n != wantCPs || len(diffs) > 0 {
		t.Fatalf("compare: %d of %d, %v, %v", n, wantCPs, err, diffs)
	}
	if after := dirState(t, dir); !cmp.Equal(before, after) {
		t.Fatalf("the source's directory changed: %d files before, %d after", len(before), len(after))
	}
	return db
}

func TestImportProtocolPython(t *testing.T) {
	db := importProtocolFixture(t, filepath.Join(pyDir, "langgraph-py.sqlite"), Options{})
	exp := loadExpected(t, filepath.Join(pyDir, "expected-py-sqlite.json"))
	if checked := checkRawTuples(t, db, exp); checked != exp.Checkpoints {
		t.Fatalf("checked %d of %d", checked, exp.Checkpoints)
	}
}

// eachTuple calls check with the tuple db holds of each expected
// checkpoint of threads (by thread and namespace; id gives its id), named
// thread/ns/id, and returns how many it checked. A checkpoint db cannot
// read fails the test.
func eachTuple[E any](t *testing.T, db *engine.DB, threads map[string]map[string][]E, id func(E) string, check func(where string, e E, tup engine.Tuple)) int {
	t.Helper()
	ctx := context.Background()
	checked := 0
	for thread, nss := range threads {
		for ns, cps := range nss {
			for _, e := range cps {
				checked++
				where := thread + "/" + ns + "/" + id(e)
				tup, err := db.GetTuple(ctx, engine.Config{ThreadID: thread, CheckpointNS: ns, CheckpointID: id(e)})
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				check(where, e, tup)
			}
		}
	}
	return checked
}

// checkRawTuples is checkRawTuple for every checkpoint of exp; it returns
// how many it checked.
func checkRawTuples(t *testing.T, db *engine.DB, exp expectedFile) int {
	t.Helper()
	return eachTuple(t, db, exp.Threads, func(e expectedCheckpoint) string { return e.CheckpointID },
		func(where string, e expectedCheckpoint, tup engine.Tuple) {
			checkRawTuple(t, where, tup, e.Parent, e.Metadata, e.Pending, e.Raw.ChannelValues)
		})
}

func TestImportProtocolJS(t *testing.T) {
	ctx := context.Background()
	db := importProtocolFixture(t, jsFixture, Options{})
	exp := loadJSStates(t, jsStatesFile)
	checked := 0
	for thread, cps := range exp.Threads {
		for _, e := range cps {
			checked++
			tup, err := db.GetTuple(ctx, engine.Config{ThreadID: thread, CheckpointNS: e.NS, CheckpointID: e.ID})
			if err != nil {
				t.Fatalf("%s/%s/%s: %v", thread, e.NS, e.ID, err)
			}
			values := jsonMap(t, e.ChannelValues)
			for ch, v := range values {
				// A channel without a version holds its empty value in
				// LangGraph.js's file and nothing in the engine.
				if _, ok := tup.Checkpoint.ChannelVersions[ch]; !ok && (cmp.Equal(v, []any{}) || cmp.Equal(v, int64(0))) {
					delete(values, ch)
				}
			}
			checkRawTuple(t, thread+"/"+e.NS+"/"+e.ID, undefinedDropped(tup), e.Parent, e.Metadata, e.Pending, values)
		}
	}
	if checked != 63 {
		t.Fatalf("checked %d checkpoints", checked)
	}
}

// checkRawTuple compares a checkpoint as GetTuple returns it, its values
// decoded by SerdeJSON, with the source LangGraph's own get_tuple: parent,
// metadata, pending writes (task, channel, value, in order) and channel
// values.
func checkRawTuple(t *testing.T, where string, tup engine.Tuple, parent *string, md map[string]any, pending [][3]any, values map[string]any) {
	t.Helper()
	gotParent := ""
	if tup.ParentConfig != nil {
		gotParent = tup.ParentConfig.CheckpointID
	}
	if want := ""; parent != nil && *parent != gotParent || parent == nil && gotParent != want {
		t.Errorf("%s: parent %q, want %v", where, gotParent, parent)
	}
	if d := cmp.Diff(md, jsonMap(t, tup.Metadata)); d != "" {
		t.Errorf("%s: metadata (-want +got):\n%s", where, d)
	}
	got := []any{}
	for _, w := range tup.PendingWrites {
		v, ok, err := SerdeJSON(w.Value)
		if !ok || err != nil {
			t.Fatalf("%s: write %s/%s: a %q value: %v", where, w.TaskID, w.Channel, w.Value.Type, err)
		}
		got = append(got, []any{w.TaskID, w.Channel, normalizeSets(v)})
	}
	want := []any{}
	for _, p := range pending {
		want = append(want, []any{p[0], p[1], normalizeSets(jsonAny(t, p[2]))})
	}
	if d := cmp.Diff(jsonAny(t, want), jsonAny(t, got)); d != "" {
		t.Errorf("%s: pending writes (-want +got):\n%s", where, d)
	}
	gotValues := map[string]any{}
	for ch, b := range tup.Checkpoint.ChannelValues {
		v, ok, err := SerdeJSON(b)
		if !ok || err != nil {
			t.Fatalf("%s: channel %s: a %q value: %v", where, ch, b.Type, err)
		}
		gotValues[ch] = normalizeSets(v)
	}
	if d := cmp.Diff(normalizeSets(values), jsonAny(t, gotValues)); d != "" {
		t.Errorf("%s: channel values (-want +got):\n%s", where, d)
	}
}

// jsonAny is a value through JSON and codec.JSONNumbers, so both sides of a
// comparison have the same Go types.
func jsonAny(t *testing.T, v any) any {
	t.Helper()
	m := jsonMap(t, map[string]any{"v": v})
	return m["v"]
}

// TestImportProtocolSourceWAL: a source with a write-ahead log still to
// read (its saver has it open, or did not close it) is read through the
// log, not around it.
func TestImportProtocolSourceWAL(t *testing.T) {
	ctx := context.Background()
	src := copyFile(t, filepath.Join(pyDir, "langgraph-py.sqlite"))
	c, err := sqlite3.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A writer that keeps the file open: its last commit is only in the WAL.
	for _, q := range []string{`PRAGMA journal_mode=WAL`, `PRAGMA wal_autocheckpoint=0`,
		`INSERT INTO checkpoints SELECT 'wal-only', checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints WHERE thread_id = 'chat'`} {
		if err := c.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(src + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("no WAL: %v", err)
	}
	db := openDst(t, channels.ModeDelta, 10)
	if _, err := Import(ctx, db, src, Options{}); err != nil {
		t.Fatal(err)
	}
	a, _ := db.GetTuple(ctx, engine.Config{ThreadID: "chat"})
	b, err := db.GetTuple(ctx, engine.Config{ThreadID: "wal-only"})
	if err != nil || a.Config.CheckpointID != b.Config.CheckpointID || !bytes.Equal(a.Checkpoint.ChannelValues["messages"].Data, b.Checkpoint.ChannelValues["messages"].Data) {
		t.Fatalf("the thread only the WAL holds: %v", err)
	}
}

// undefinedDropped decodes a LangGraph.js tuple's values and writes as
// LangGraph.js revives them and JSON.stringify (which wrote the states
// file) shows them: the serde's {"lc": 2, "type": "undefined"} is undefined,
// which JSON leaves out.
func undefinedDropped(tup engine.Tuple) engine.Tuple {
	fix := func(b codec.Blob) codec.Blob {
		v, err := codec.DecodeJSON(b.Data)
		if b.Type != "json" || err != nil {
			return b
		}
		data, _ := json.Marshal(dropUndefined(v))
		return codec.Blob{Type: "json", Data: data}
	}
	out := tup
	out.Checkpoint.ChannelValues = map[string]codec.Blob{}
	for ch, b := range tup.Checkpoint.ChannelValues {
		out.Checkpoint.ChannelValues[ch] = fix(b)
	}
	out.PendingWrites = slices.Clone(tup.PendingWrites)
	for i := range out.PendingWrites {
		out.PendingWrites[i].Value = fix(out.PendingWrites[i].Value)
	}
	return out
}

func dropUndefined(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = dropUndefined(e)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if m, ok := e.(map[string]any); ok && len(m) == 2 && m["type"] == "undefined" && m["lc"] == int64(2) {
				continue
			}
			out[k] = dropUndefined(e)
		}
		return out
	}
	return v
}

// compatKey is the key generate.sh --compat encrypts
// langgraph-py-encrypted.sqlite with.
const compatKey = "0123456789abcdef0123456789abcdef"

// TestImportProtocolCompat: files of LangGraph 0.2.20 (checkpoint format 1)
// and 0.3.34 (format 3) with pending_sends, of 1.2.24, and of 1.2.24 with
// EncryptedSerializer, each holding a ChatMessage, a FunctionMessage, an
// AIMessage whose content list holds a bare string block and a datetime,
// a Send fan-out and an update_state fork of a checkpoint with a child:
// every checkpoint imports, and reads as that LangGraph read it (sends of
// an old format in __pregel_tasks, where LangGraph moves them on read).
func TestImportProtocolCompat(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, version string
		o             Options
	}{
		{"0.2", "0.2.20", Options{}},
		{"0.3", "0.3.34", Options{}},
		{"compat", "1.2.24", Options{}},
		{"encrypted", "1.2.24", Options{Key: []byte(compatKey)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := importProtocolFixture(t, filepath.Join(pyDir, "langgraph-py-"+c.name+".sqlite"), c.o)
			exp := readJSONNumbers[compatExpected](t, filepath.Join(pyDir, "expected-py-"+c.name+".json"))
			if exp.Versions["langgraph"] != c.version {
				t.Fatalf("the fixture was written by langgraph %s", exp.Versions["langgraph"])
			}
			sends := 0
			checked := eachTuple(t, db, exp.Threads, func(e compatCheckpoint) string { return e.CheckpointID },
				func(where string, e compatCheckpoint, tup engine.Tuple) {
					values := jsonMap(t, e.Checkpoint.ChannelValues)
					if len(e.Checkpoint.PendingSends) > 0 {
						values[tasksChannel] = jsonAny(t, e.Checkpoint.PendingSends)
						sends += len(e.Checkpoint.PendingSends)
					}
					if tup.Checkpoint.V != e.Checkpoint.V {
						t.Errorf("%s: format %d, want %d", e.CheckpointID, tup.Checkpoint.V, e.Checkpoint.V)
					}
					// Before 0.3, metadata "writes" held the step's writes in
					// LangChain's JSON form (lc, constructor), as the file
					// keeps them and as they are imported; LangGraph revived
					// the messages in them on read.
					md := jsonMap(t, e.Metadata)
					if _, ok := md["writes"]; ok && c.version != "1.2.24" {
						if _, ok := tup.Metadata["writes"]; !ok {
							t.Errorf("%s: metadata without its writes", e.CheckpointID)
						}
						delete(md, "writes")
						tup.Metadata = maps.Clone(tup.Metadata)
						delete(tup.Metadata, "writes")
					}
					checkRawTuple(t, where, tup, e.Parent, md, e.Pending, values)
				})
			if checked != exp.Checkpoints || checked < 10 {
				t.Fatalf("checked %d of %d", checked, exp.Checkpoints)
			}
			if c.version != "1.2.24" && sends == 0 {
				t.Fatal("no pending_sends in a file of an old format")
			}
		})
	}
	t.Run("encrypted without the key", func(t *testing.T) {
		db := openDst(t, channels.ModeDelta, 10)
		_, err := Import(ctx, db, copyFile(t, filepath.Join(pyDir, "langgraph-py-encrypted.sqlite")), Options{})
		var ue *UnsupportedError
		if !errors.As(err, &ue) || len(ue.Problems) != 1 || !strings.Contains(ue.Problems[0].Reason, "set "+EncryptionKeyEnv) {
			t.Fatalf("%v", err)
		}
		_, err = Import(ctx, db, copyFile(t, filepath.Join(pyDir, "langgraph-py-encrypted.sqlite")), Options{Key: []byte("fedcba9876543210fedcba9876543210")})
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "does not verify") {
			t.Fatalf("a wrong key: %v", err)
		}
		if _, err := db.GetTuple(ctx, engine.Config{ThreadID: "compat"}); !errors.Is(err, engine.ErrNotFound) {
			t.Fatalf("a refused import wrote: %v", err)
		}
	})
}

type compatExpected struct {
	Versions    map[string]string                        `json:"versions"`
	Checkpoints int                                      `json:"checkpoints"`
	Threads     map[string]map[string][]compatCheckpoint `json:"threads"`
}

type compatCheckpoint struct {
	CheckpointID string         `json:"checkpoint_id"`
	Parent       *string        `json:"parent_checkpoint_id"`
	Metadata     map[string]any `json:"metadata"`
	Pending      [][3]any       `json:"pending_writes"`
	Checkpoint   struct {
		V             int            `json:"v"`
		ChannelValues map[string]any `json:"channel_values"`
		PendingSends  []any          `json:"pending_sends"`
	} `json:"checkpoint"`
}

// TestSplitCheckpointDamaged: every truncation and a flipped byte of real
// checkpoint documents (Python's msgpack, LangGraph.js's JSON, encrypted)
// give an error or a value, never a panic.
func TestSplitCheckpointDamaged(t *testing.T) {
	for _, c := range []struct {
		file string
		key  []byte
	}{
		{filepath.Join(pyDir, "langgraph-py-0.2.sqlite"), nil},
		{filepath.Join(pyDir, "langgraph-py-compat.sqlite"), nil},
		{filepath.Join(pyDir, "langgraph-py-encrypted.sqlite"), []byte(compatKey)},
		{jsFixture, nil},
	} {
		c2, err := sqlite3.OpenFlags("file:"+c.file+"?mode=ro&immutable=1", sqlite3.OPEN_READONLY|sqlite3.OPEN_URI)
		if err != nil {
			t.Fatal(err)
		}
		st, _, err := c2.Prepare(`SELECT type, checkpoint FROM checkpoints ORDER BY length(checkpoint) DESC LIMIT 2`)
		if err != nil {
			t.Fatal(err)
		}
		for st.Step() {
			typ, doc := st.ColumnText(0), st.ColumnBlob(1, nil)
			if _, err := splitCheckpoint(typ, bytes.Clone(doc), c.key, nil); err != nil {
				t.Fatalf("%s: the whole document: %v", c.file, err)
			}
			for n := range len(doc) {
				splitCheckpoint(typ, bytes.Clone(doc[:n]), c.key, nil)
				d := bytes.Clone(doc)
				d[n] ^= 0xff
				splitCheckpoint(typ, d, c.key, map[string]string{})
			}
		}
		st.Close()
		c2.Close()
	}
}

// TestImportProtocolUnreadable: threads whose values no LangGraph serde of
// this build reads (a "pickle" value, a damaged document) are all listed,
// nothing is written, and SkipUnsupported imports the others.
func TestImportProtocolUnreadable(t *testing.T) {
	ctx := context.Background()
	src := copyFile(t, filepath.Join(pyDir, "langgraph-py.sqlite"))
	c, err := sqlite3.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE writes SET type = 'pickle' WHERE rowid = (SELECT min(rowid) FROM writes WHERE thread_id = 'chat')`,
		`UPDATE checkpoints SET checkpoint = substr(checkpoint, 1, 20) WHERE rowid = (SELECT max(rowid) FROM checkpoints WHERE thread_id = 'fork')`,
	} {
		if err := c.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	db := openDst(t, channels.ModeDelta, 10)
	_, err = Import(ctx, db, src, Options{})
	var ue *UnsupportedError
	if !errors.As(err, &ue) || len(ue.Problems) != 2 || ue.Importable != 6 ||
		ue.Problems[0].ThreadID != "chat" || !strings.Contains(ue.Problems[0].Reason, `"pickle"`) || ue.Problems[1].ThreadID != "fork" {
		t.Fatalf("%v", err)
	}
	if ts, _ := db.ListThreads(ctx, admin.ThreadListOptions{}); len(ts) != 0 {
		t.Fatalf("a refused import wrote %d threads", len(ts))
	}
	rep, err := Import(ctx, db, src, Options{SkipUnsupported: true})
	if err != nil || rep.Threads != 6 || len(rep.Skipped) != 2 {
		t.Fatalf("%+v %v", rep, err)
	}
	if n, diffs, err := Compare(ctx, db, src, Options{}); err != nil || len(diffs) > 0 || n == 0 {
		t.Fatalf("compare: %d %v %v", n, err, diffs)
	}
}
