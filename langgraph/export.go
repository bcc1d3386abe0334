package langgraph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
	"github.com/ncruces/go-sqlite3"
)

// The way back: Export writes the threads of an agentstate file that are in
// the checkpoint protocol's form (an import's, a saver's) into a LangGraph
// SqliteSaver file, which LangGraph's own SqliteSaver opens and resumes.

// Layouts of a SqliteSaver file.
const (
	// LayoutPython is langgraph-checkpoint-sqlite's: each checkpoint one
	// "msgpack" document with its channel values inline, metadata JSON
	// text, writes with task_path. For values of LangGraph Python's serde
	// ("msgpack", "null", "bytes", "bytearray").
	LayoutPython = "python"
	// LayoutJS is @langchain/langgraph-checkpoint-sqlite's: each checkpoint
	// one "json" document, writes without task_path. For values of
	// LangGraph.js's serde ("json", "bytes").
	LayoutJS = "js"
)

// ExportOptions govern Export.
type ExportOptions struct {
	// Layout is LayoutPython, LayoutJS, or "" for the one the values'
	// serde types call for (all "json": JavaScript; otherwise Python).
	Layout string
	// ThreadID exports one thread; "" exports every thread.
	ThreadID string
}

// ExportReport says what Export wrote.
type ExportReport struct {
	Path        string `json:"path"`
	Layout      string `json:"layout"`
	Threads     int    `json:"threads"`
	Checkpoints int    `json:"checkpoints"`
	Writes      int    `json:"writes"`
}

// ErrNotExportable is a thread Export cannot write in a SqliteSaver's
// layout: one of the thread API (its values are the engine's own), or one
// whose values' serde the layout has no place for.
var ErrNotExportable = errors.New("langgraph: cannot be exported to a LangGraph SqliteSaver file")

// errWrite marks a failure to write the new file.
var errWrite = errors.New("langgraph: writing the SqliteSaver file")

// Export writes db's threads into a new SqliteSaver file at dst, in one
// go: dst is written under a temporary name beside it and renamed when
// complete, so a failed export leaves nothing. An existing dst is refused
// (engine.ErrConflict).
func Export(ctx context.Context, db *engine.DB, dst string, o ExportOptions) (ExportReport, error) {
	if o.Layout != "" && o.Layout != LayoutPython && o.Layout != LayoutJS {
		return ExportReport{}, fmt.Errorf("%w: layout %q is not %q or %q", engine.ErrInvalidArgument, o.Layout, LayoutPython, LayoutJS)
	}
	if _, err := os.Lstat(dst); err == nil {
		return ExportReport{}, fmt.Errorf("%w: %s exists; export-langgraph writes a new file", engine.ErrConflict, dst)
	}
	var tuples []engine.Tuple
	for t, err := range db.List(ctx, engine.ListOptions{ThreadID: o.ThreadID}) {
		if err != nil {
			return ExportReport{}, err
		}
		tuples = append(tuples, t)
	}
	if o.ThreadID != "" && len(tuples) == 0 {
		return ExportReport{}, fmt.Errorf("%w: no checkpoint of thread %q", engine.ErrNotFound, o.ThreadID)
	}
	layout, err := exportLayout(tuples, o.Layout)
	if err != nil {
		return ExportReport{}, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".export-*")
	if err != nil {
		return ExportReport{}, err
	}
	tmpPath := tmp.Name()
	tmp.Close()
	removeTmp := func() {
		for _, p := range []string{tmpPath, tmpPath + "-journal", tmpPath + "-wal", tmpPath + "-shm"} {
			os.Remove(p)
		}
	}
	rep, err := writeSaverFile(ctx, tmpPath, layout, tuples)
	if err != nil {
		removeTmp()
		return ExportReport{}, fmt.Errorf("%w: %s: %w", errWrite, dst, err)
	}
	if err := os.Rename(tmpPath, dst); err != nil {
		removeTmp()
		return ExportReport{}, err
	}
	rep.Path = dst
	return rep, nil
}

// exportLayout checks every value's serde against the layout (choosing it
// when not given).
func exportLayout(tuples []engine.Tuple, layout string) (string, error) {
	fits := map[string]map[string]bool{
		LayoutPython: {"msgpack": true, "null": true, "bytes": true, "bytearray": true},
		LayoutJS:     {"json": true, "bytes": true},
	}
	check := func(t engine.Tuple, what string, b codec.Blob) error {
		if b.Type == codec.TypeMsgpack {
			return fmt.Errorf("%w: thread %q is a thread of agentstate's thread API (%s holds the engine's own values); export-langgraph exports threads in the checkpoint protocol's form (an import-langgraph, a saver's)",
				ErrNotExportable, t.Config.ThreadID, what)
		}
		if layout == "" {
			if b.Type == "json" {
				layout = LayoutJS
			} else if b.Type != "bytes" {
				layout = LayoutPython
			}
		}
		if layout != "" && !fits[layout][b.Type] {
			return fmt.Errorf("%w: thread %q checkpoint %q: %s is of serde type %q, which LangGraph's %s SqliteSaver does not read", ErrNotExportable,
				t.Config.ThreadID, t.Config.CheckpointID, what, b.Type, layout)
		}
		return nil
	}
	for _, t := range tuples {
		for _, ch := range slices.Sorted(maps.Keys(t.Checkpoint.ChannelValues)) {
			if err := check(t, fmt.Sprintf("channel %q", ch), t.Checkpoint.ChannelValues[ch]); err != nil {
				return "", err
			}
		}
		for _, w := range t.PendingWrites {
			if err := check(t, fmt.Sprintf("a write to %q", w.Channel), w.Value); err != nil {
				return "", err
			}
		}
	}
	if layout == "" {
		layout = LayoutPython
	}
	return layout, nil
}

func writeSaverFile(ctx context.Context, path, layout string, tuples []engine.Tuple) (_ ExportReport, err error) {
	defer recoverSQLite(&err)
	rep := ExportReport{Layout: layout}
	c, err := sqlite3.OpenFlags(path, sqlite3.OPEN_READWRITE|sqlite3.OPEN_CREATE)
	if err != nil {
		return rep, err
	}
	defer c.Close()
	schema := `CREATE TABLE checkpoints (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    parent_checkpoint_id TEXT,
    type TEXT,
    checkpoint BLOB,
    metadata BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);
CREATE TABLE writes (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    task_id TEXT NOT NULL,` + map[string]string{LayoutPython: `
    task_path TEXT NOT NULL DEFAULT '',`, LayoutJS: ""}[layout] + `
    idx INTEGER NOT NULL,
    channel TEXT NOT NULL,
    type TEXT,
    value BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);`
	if err := c.Exec(schema + "BEGIN;"); err != nil {
		return rep, err
	}
	insCp, _, err := c.Prepare(`INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return rep, err
	}
	defer insCp.Close()
	wq := `INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	if layout == LayoutPython {
		wq = `INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value, task_path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	}
	insW, _, err := c.Prepare(wq)
	if err != nil {
		return rep, err
	}
	defer insW.Close()
	threads := map[string]bool{}
	for _, t := range tuples {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		threads[t.Config.ThreadID] = true
		var typ string
		var doc []byte
		if layout == LayoutPython {
			typ, doc = "msgpack", pyCheckpointDoc(t.Checkpoint)
		} else {
			typ = "json"
			if doc, err = jsCheckpointDoc(t.Checkpoint); err != nil {
				return rep, err
			}
		}
		md, err := metadataJSON(t.Metadata)
		if err != nil {
			return rep, fmt.Errorf("thread %q checkpoint %q: metadata: %w", t.Config.ThreadID, t.Config.CheckpointID, err)
		}
		var parent any
		if t.ParentConfig != nil {
			parent = t.ParentConfig.CheckpointID
		}
		if err := execStmt(insCp, t.Config.ThreadID, t.Config.CheckpointNS, t.Config.CheckpointID, parent, typ, doc, md); err != nil {
			return rep, err
		}
		rep.Checkpoints++
		for _, w := range t.PendingWrites {
			args := []any{t.Config.ThreadID, t.Config.CheckpointNS, t.Config.CheckpointID, w.TaskID, w.Idx, w.Channel, w.Value.Type, w.Value.Data}
			if layout == LayoutPython {
				args = append(args, w.TaskPath)
			}
			if err := execStmt(insW, args...); err != nil {
				return rep, err
			}
			rep.Writes++
		}
	}
	if err := c.Exec(`COMMIT`); err != nil {
		return rep, err
	}
	rep.Threads = len(threads)
	insCp.Close()
	insW.Close()
	// As the savers' setup leaves their files (the log is folded back in
	// when the connection closes).
	if err := c.Exec(`PRAGMA journal_mode=WAL`); err != nil {
		return rep, err
	}
	return rep, c.Close()
}

func execStmt(st *sqlite3.Stmt, args ...any) error {
	for i, a := range args {
		var err error
		switch x := a.(type) {
		case nil:
			err = st.BindNull(i + 1)
		case string:
			err = st.BindText(i+1, x)
		case int:
			err = st.BindInt(i+1, x)
		case []byte:
			err = st.BindBlob(i+1, nonNil(x))
		}
		if err != nil {
			return err
		}
	}
	st.Step()
	err := st.Err()
	if rerr := st.Reset(); err == nil {
		err = rerr
	}
	return err
}

// pyCheckpointDoc is the Checkpoint dict as LangGraph Python's serde packs
// it: the fields in the TypedDict's order, each channel value's bytes
// inline (None as nil, bytes as bin).
//
// A checkpoint of a format before 4 gets its pending_sends back, as the
// LangGraph that wrote it reads them: the import moved them into the TASKS
// channel (as today's LangGraph does on read), so they move out again.
func pyCheckpointDoc(cp engine.Checkpoint) []byte {
	var sends [][]byte
	if cp.V < 4 {
		cp, sends = unmigrateSends(cp, func(b codec.Blob) [][]byte {
			r := &pyReader{b: b.Data}
			n, p, err := r.arrayLen(0)
			if err != nil {
				return nil
			}
			var items [][]byte
			for range n {
				end, err := skipPy(b.Data, p, 1)
				if err != nil {
					return nil
				}
				items, p = append(items, b.Data[p:end]), end
			}
			return items
		})
	}
	str := func(dst []byte, s string) []byte { return append(appendHeader(dst, 0xa0, 0xd9, len(s), true), s...) }
	strMap := func(dst []byte, m map[string]string) []byte {
		dst = appendHeader(dst, 0x80, 0xde, len(m), false)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			dst = str(str(dst, k), m[k])
		}
		return dst
	}
	n := 6
	if cp.UpdatedChannels != nil {
		n++
	}
	if cp.V < 4 {
		n++
	}
	out := appendHeader(nil, 0x80, 0xde, n, false)
	out = appendInt(str(out, "v"), int64(cp.V))
	out = str(str(out, "ts"), cp.TS)
	out = str(str(out, "id"), cp.ID)
	out = appendHeader(str(out, "channel_values"), 0x80, 0xde, len(cp.ChannelValues), false)
	for _, ch := range slices.Sorted(maps.Keys(cp.ChannelValues)) {
		out = str(out, ch)
		b := cp.ChannelValues[ch]
		switch b.Type {
		case "null":
			out = append(out, 0xc0)
		case "bytes", "bytearray":
			out = appendBin(out, b.Data)
		default:
			out = append(out, b.Data...)
		}
	}
	out = strMap(str(out, "channel_versions"), cp.ChannelVersions)
	out = appendHeader(str(out, "versions_seen"), 0x80, 0xde, len(cp.VersionsSeen), false)
	for _, node := range slices.Sorted(maps.Keys(cp.VersionsSeen)) {
		out = strMap(str(out, node), cp.VersionsSeen[node])
	}
	if cp.UpdatedChannels != nil {
		out = appendHeader(str(out, "updated_channels"), 0x90, 0xdc, len(cp.UpdatedChannels), false)
		for _, ch := range cp.UpdatedChannels {
			out = str(out, ch)
		}
	}
	if cp.V < 4 {
		out = appendHeader(str(out, "pending_sends"), 0x90, 0xdc, len(sends), false)
		for _, s := range sends {
			out = append(out, s...)
		}
	}
	return out
}

// unmigrateSends takes a format-3-or-older checkpoint's sends out of the
// TASKS channel (its value and the version the migration gave it).
func unmigrateSends(cp engine.Checkpoint, items func(codec.Blob) [][]byte) (engine.Checkpoint, [][]byte) {
	b, ok := cp.ChannelValues[tasksChannel]
	if !ok {
		return cp, nil
	}
	sends := items(b)
	if sends == nil && len(b.Data) > 1 {
		return cp, nil // not a list: leave it where it is
	}
	cp.ChannelValues = maps.Clone(cp.ChannelValues)
	delete(cp.ChannelValues, tasksChannel)
	cp.ChannelVersions = maps.Clone(cp.ChannelVersions)
	delete(cp.ChannelVersions, tasksChannel)
	return cp, sends
}

func appendBin(dst, b []byte) []byte {
	switch n := len(b); {
	case n <= 0xff:
		dst = append(dst, 0xc4, byte(n))
	case n <= 0xffff:
		dst = append(dst, 0xc5, byte(n>>8), byte(n))
	default:
		dst = append(dst, 0xc6, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return append(dst, b...)
}

// jsCheckpointDoc is the Checkpoint as LangGraph.js's serde writes it:
// JSON, channel values inline, versions numbers where they read as one.
func jsCheckpointDoc(cp engine.Checkpoint) ([]byte, error) {
	var sends *[]json.RawMessage
	if cp.V < 4 {
		var items [][]byte
		cp, items = unmigrateSends(cp, func(b codec.Blob) [][]byte {
			var l []json.RawMessage
			if json.Unmarshal(b.Data, &l) != nil {
				return nil
			}
			out := make([][]byte, len(l))
			for i, x := range l {
				out[i] = x
			}
			return out
		})
		l := []json.RawMessage{}
		for _, x := range items {
			l = append(l, x)
		}
		sends = &l
	}
	version := func(v string) json.RawMessage {
		if f, err := strconv.ParseFloat(v, 64); err == nil && strconv.FormatFloat(f, 'f', -1, 64) == v {
			return json.RawMessage(v)
		}
		b, _ := json.Marshal(v)
		return b
	}
	versions := func(m map[string]string) map[string]json.RawMessage {
		out := make(map[string]json.RawMessage, len(m))
		for k, v := range m {
			out[k] = version(v)
		}
		return out
	}
	values := make(map[string]json.RawMessage, len(cp.ChannelValues))
	for ch, b := range cp.ChannelValues {
		if b.Type != "json" {
			return nil, fmt.Errorf("%w: checkpoint %q channel %q is of serde type %q; a LangGraph.js checkpoint holds JSON", ErrNotExportable, cp.ID, ch, b.Type)
		}
		values[ch] = b.Data
	}
	seen := make(map[string]map[string]json.RawMessage, len(cp.VersionsSeen))
	for node, m := range cp.VersionsSeen {
		seen[node] = versions(m)
	}
	doc := struct {
		V        int                                   `json:"v"`
		ID       string                                `json:"id"`
		TS       string                                `json:"ts"`
		Values   map[string]json.RawMessage            `json:"channel_values"`
		Versions map[string]json.RawMessage            `json:"channel_versions"`
		Seen     map[string]map[string]json.RawMessage `json:"versions_seen"`
		Updated  []string                              `json:"updated_channels,omitempty"`
		Sends    *[]json.RawMessage                    `json:"pending_sends,omitempty"`
	}{cp.V, cp.ID, cp.TS, values, versions(cp.ChannelVersions), seen, cp.UpdatedChannels, sends}
	return marshalNoEscape(doc)
}

func metadataJSON(md engine.Metadata) ([]byte, error) {
	if md == nil {
		md = engine.Metadata{}
	}
	return marshalNoEscape(map[string]any(md))
}

func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
