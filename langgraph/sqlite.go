package langgraph

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
	"github.com/ncruces/go-sqlite3"
)

// SqliteSaver files. LangGraph.js's (@langchain/langgraph-checkpoint-sqlite)
// and LangGraph Python's (langgraph-checkpoint-sqlite) share two tables:
//
//	checkpoints(thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id,
//	            type, checkpoint, metadata)
//	writes(thread_id, checkpoint_ns, checkpoint_id, task_id, [task_path,] idx,
//	       channel, type, value)
//
// A checkpoint row holds the whole Checkpoint dict, channel values inline,
// in its serde ("json" in LangGraph.js, "msgpack" in Python); metadata is
// JSON text in both. Python 3.x adds writes.task_path, by which pending
// writes are ordered; files without it read it as "".
type sqliteSource struct {
	path    string
	c       *sqlite3.Conn
	hasPath bool
}

func openSQLite(ctx context.Context, path string) (_ *sqliteSource, err error) {
	defer recoverSQLite(&err)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnsupportedSource, path, err)
	}
	c, err := sqlite3.OpenFlags(sourceURI(path), sqlite3.OPEN_READONLY|sqlite3.OPEN_URI)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnsupportedSource, path, err)
	}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	s := &sqliteSource{path: path, c: c}
	for _, want := range []struct{ table, cols string }{
		{"checkpoints", "thread_id checkpoint_ns checkpoint_id parent_checkpoint_id type checkpoint metadata"},
		{"writes", "thread_id checkpoint_ns checkpoint_id task_id idx channel type value"},
	} {
		if err := s.checkTable(ctx, want.table); err != nil {
			return nil, err
		}
		have := map[string]bool{}
		computed := ""
		err := s.query(ctx, `SELECT name, hidden FROM pragma_table_xinfo(?)`, []any{want.table}, func(st *sqlite3.Stmt) error {
			have[st.ColumnText(0)] = true
			if st.ColumnInt(1) != 0 && strings.Contains(" "+want.cols+" task_path ", " "+st.ColumnText(0)+" ") && computed == "" {
				computed = st.ColumnText(0)
			}
			return nil
		})
		if err != nil {
			return nil, s.openError(ctx, err)
		}
		for _, col := range strings.Fields(want.cols) {
			if !have[col] {
				return nil, fmt.Errorf("%w: %s is not a LangGraph SqliteSaver file: table %s has no column %s", ErrUnsupportedSource, path, want.table, col)
			}
		}
		if computed != "" {
			// A generated column is an expression evaluated as it is read,
			// never a saver's.
			return nil, fmt.Errorf("%w: %s is not a LangGraph SqliteSaver file: column %s of table %s is computed (a generated column), not stored", ErrUnsupportedSource, path, computed, want.table)
		}
		if want.table == "writes" {
			s.hasPath = have["task_path"]
		}
	}
	if err := s.checkKeys(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// checkTable refuses with ErrUnsupportedSource, naming it, a name where a
// saver's table is expected that is not a table of the file: a view (its
// rows are whatever its query makes, and a recursive one's never end), a
// virtual table (a module's code) or a shadow table. It reads the schema
// only, never the object's rows.
func (s *sqliteSource) checkTable(ctx context.Context, table string) error {
	kind := ""
	err := s.query(ctx, `SELECT type FROM pragma_table_list(?)`, []any{table}, func(st *sqlite3.Stmt) error {
		if kind == "" || kind == "table" {
			kind = st.ColumnText(0)
		}
		return nil
	})
	switch {
	case err != nil:
		return s.openError(ctx, err)
	case kind == "":
		return fmt.Errorf("%w: %s is not a LangGraph SqliteSaver file: it has no table %s", ErrUnsupportedSource, s.path, table)
	case kind != "table":
		return fmt.Errorf("%w: %s is not a LangGraph SqliteSaver file: %q is a %s, not a table, and its rows are not read", ErrUnsupportedSource, s.path, table, kind)
	}
	return nil
}

// openError is a failed read of the schema while opening the source: the
// context's error if it ended, ErrUnsupportedSource otherwise.
func (s *sqliteSource) openError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("%w: %s: %v", ErrUnsupportedSource, s.path, err)
}

// maxSourceKeyBytes bounds the ids, namespace, task, channel and serde
// type of one SqliteSaver row, together.
const maxSourceKeyBytes = 1 << 20

// octets is the size in bytes of column col of a row, 0 for NULL; SQLite
// reads it from the row's header, not from the value.
func octets(cols ...string) string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = "coalesce(octet_length(" + c + "), 0)"
	}
	return strings.Join(out, " + ")
}

// checkKeys refuses, with engine.ErrTooLarge, a source whose ids (thread,
// namespace, checkpoint, task, channel, serde type) pass maxSourceKeyBytes
// in a row: the threads could not even be listed. It reads the rows'
// headers only (the scan of the tables' leaf pages, not their overflow).
func (s *sqliteSource) checkKeys(ctx context.Context) error {
	path := "''"
	if s.hasPath {
		path = "task_path"
	}
	for table, cols := range map[string][]string{
		"checkpoints": {"thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "type"},
		"writes":      {"thread_id", "checkpoint_ns", "checkpoint_id", "task_id", path, "channel", "type"},
	} {
		err := s.query(ctx, `SELECT `+octets(cols...)+` AS n FROM `+table+` WHERE n > ? LIMIT 1`, []any{int64(maxSourceKeyBytes)}, func(st *sqlite3.Stmt) error {
			return fmt.Errorf("%w: a row of table %s has ids, namespace, task, channel and type of %d bytes together, more than %d; the import reads no row so large",
				engine.ErrTooLarge, table, st.ColumnInt64(0), maxSourceKeyBytes)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// checkRows reports, as a *Problem of its thread (tooLarge, naming the
// limit and the size), the first row of thread that holds more than the
// engine stores: a checkpoint document past engine.MaxCallBytes (it holds
// every channel value one Put writes), metadata or a pending write past
// engine.MaxValueBytes. It reads the rows' sizes, not their values: one
// such row could take more than SQLite's WebAssembly heap to read (256 MiB
// a connection; ncruces panics, "sqlite3: out of memory").
func (s *sqliteSource) checkRows(ctx context.Context, thread string) error {
	var p *Problem
	err := s.query(ctx, `SELECT checkpoint_ns, checkpoint_id, `+octets("checkpoint")+` AS doc, `+octets("metadata")+` AS md FROM checkpoints
		WHERE thread_id = ? AND (doc > ? OR md > ?) LIMIT 1`, []any{thread, int64(engine.MaxCallBytes), int64(engine.MaxValueBytes)}, func(st *sqlite3.Stmt) error {
		p = tooLargeCheckpoint(thread, st.ColumnText(0), st.ColumnText(1), st.ColumnInt64(2), st.ColumnInt64(3))
		return nil
	})
	if err == nil && p == nil {
		err = s.query(ctx, `SELECT checkpoint_ns, checkpoint_id, channel, task_id, idx, `+octets("value")+` AS n FROM writes
		WHERE thread_id = ? AND n > ? LIMIT 1`, []any{thread, int64(engine.MaxValueBytes)}, func(st *sqlite3.Stmt) error {
			p = tooLargeWrite(thread, st.ColumnText(0), st.ColumnText(1), st.ColumnText(2), st.ColumnText(3), st.ColumnInt64(4), st.ColumnInt64(5))
			return nil
		})
	}
	if err != nil {
		return err
	}
	if p != nil {
		return p
	}
	return nil
}

// tooLargeCheckpoint is the Problem of a checkpoint whose document (doc
// bytes) passes engine.MaxCallBytes or whose metadata (md bytes)
// engine.MaxValueBytes.
func tooLargeCheckpoint(thread, ns, id string, doc, md int64) *Problem {
	what, n, limit, limitName := "checkpoint document", doc, engine.MaxCallBytes, "MaxCallBytes"
	if n <= int64(limit) {
		what, n, limit, limitName = "metadata", md, engine.MaxValueBytes, "MaxValueBytes"
	}
	return &Problem{ThreadID: thread, CheckpointNS: ns, CheckpointID: id, tooLarge: true,
		Reason: fmt.Sprintf("%v: the %s is %d bytes, more than engine.%s (%d bytes)", engine.ErrTooLarge, what, n, limitName, limit)}
}

// tooLargeWrite is the Problem of a pending write of n bytes, past
// engine.MaxValueBytes.
func tooLargeWrite(thread, ns, id, channel, task string, idx, n int64) *Problem {
	return &Problem{ThreadID: thread, CheckpointNS: ns, CheckpointID: id, Channel: channel, tooLarge: true,
		Reason: fmt.Sprintf("%v: the write of task %q idx %d is %d bytes, more than engine.MaxValueBytes (%d bytes)", engine.ErrTooLarge, task, idx, n, engine.MaxValueBytes)}
}

// recoverSQLite, deferred by every function of the package that calls
// ncruces directly, turns its panics into errors, as the engine's driver
// does: ncruces panics instead of returning an error when SQLite runs out
// of its WebAssembly heap ("sqlite3: out of memory", engine.ErrTooLarge)
// and on its own assertions. Any other panic is not the driver's and goes
// on.
func recoverSQLite(err *error) {
	p := recover()
	if p == nil {
		return
	}
	perr, ok := p.(error)
	if !ok || !strings.HasPrefix(perr.Error(), "sqlite3: ") {
		panic(p)
	}
	if strings.Contains(perr.Error(), "out of memory") {
		*err = fmt.Errorf("%w: %w: a row is larger than SQLite's heap holds (see engine.MaxValueBytes)", engine.ErrTooLarge, perr)
		return
	}
	*err = fmt.Errorf("langgraph: the SQLite driver failed: %w", perr)
}

// sourceURI opens a SqliteSaver file only to read it, creating nothing
// beside it: immutable (no locks, no -wal or -shm) when it has no
// write-ahead log or hot journal to read, which is also what makes a file
// on read-only media readable; read-only through its existing log
// otherwise (a saver that did not close it cleanly, or still has it open).
func sourceURI(path string) string {
	params := url.Values{"mode": {"ro"}}
	pending := false
	for _, side := range []string{"-wal", "-journal"} {
		if fi, err := os.Stat(path + side); err == nil && fi.Size() > 0 {
			pending = true
		}
	}
	if !pending {
		params.Set("immutable", "1")
	}
	u := url.URL{Scheme: "file", OmitHost: true, Path: filepath.ToSlash(path), RawQuery: params.Encode()}
	return u.String()
}

func (s *sqliteSource) name() string  { return s.path }
func (s *sqliteSource) saver() string { return "sqlite" }
func (s *sqliteSource) close() (err error) {
	defer recoverSQLite(&err)
	return s.c.Close()
}

// query runs q with args (strings or int64s), calling fn with each row; a
// panic of the driver is an error (recoverSQLite). It ends when ctx does,
// wherever SQLite is (between rows, or inside one step: a sort, a scan that
// finds nothing), with ctx's error.
func (s *sqliteSource) query(ctx context.Context, q string, args []any, fn func(st *sqlite3.Stmt) error) (err error) {
	defer recoverSQLite(&err)
	old := s.c.SetInterrupt(ctx) // SQLite's progress handler checks it every 1,000 steps
	defer s.c.SetInterrupt(old)
	defer func() {
		if err != nil && ctx.Err() != nil {
			err = ctx.Err()
		}
	}()
	st, _, err := s.c.Prepare(q)
	if err != nil {
		return err
	}
	defer st.Close()
	for i, a := range args {
		switch a := a.(type) {
		case int64:
			err = st.BindInt64(i+1, a)
		default:
			err = st.BindText(i+1, a.(string))
		}
		if err != nil {
			return err
		}
	}
	for st.Step() {
		if err := fn(st); err != nil {
			return err
		}
	}
	return st.Err()
}

func (s *sqliteSource) threads(ctx context.Context) ([]string, error) {
	var out []string
	err := s.query(ctx, `SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id`, nil, func(st *sqlite3.Stmt) error {
		out = append(out, st.ColumnText(0))
		return ctx.Err()
	})
	return out, err
}

func (s *sqliteSource) count(ctx context.Context) (int, error) {
	n := 0
	err := s.query(ctx, `SELECT count(*) FROM checkpoints`, nil, func(st *sqlite3.Stmt) error {
		n = st.ColumnInt(0)
		return nil
	})
	return n, err
}

func (s *sqliteSource) read(ctx context.Context, thread string) (*rawThread, error) {
	if err := s.checkRows(ctx, thread); err != nil {
		return nil, err
	}
	t := &rawThread{id: thread, writes: map[cpKey][]*rawWrite{}}
	memo := extMemo{}
	err := s.query(ctx, `SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints
		WHERE thread_id = ? ORDER BY checkpoint_ns, checkpoint_id`, []any{thread}, func(st *sqlite3.Stmt) error {
		cp := &rawCheckpoint{ns: st.ColumnText(0), id: st.ColumnText(1), parent: st.ColumnText(2)}
		doc, values, err := decodeCheckpoint(st.ColumnText(3), st.ColumnBlob(4, nil), memo)
		if err == nil {
			err = cp.fill(doc, values)
		}
		if err == nil {
			cp.metadata, err = decodeMetadata(st.ColumnBlob(5, nil))
		}
		if err != nil {
			return checkpointProblem(thread, cp, err)
		}
		t.cps = append(t.cps, cp)
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	err = s.eachWrite(ctx, thread, func(r writeRow) error {
		v, err := decodeTyped(r.typ, r.data, memo)
		if err != nil {
			return writeProblem(thread, r, err)
		}
		t.writes[r.k] = append(t.writes[r.k], &rawWrite{task: r.task, path: r.path, idx: r.idx, channel: r.channel, value: v})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (s *sqliteSource) readBytes(ctx context.Context, thread string, key []byte) (*byteThread, error) {
	if err := s.checkRows(ctx, thread); err != nil {
		return nil, err
	}
	t := &byteThread{id: thread, writes: map[cpKey][]*byteWrite{}}
	intern := map[string]string{}
	err := s.query(ctx, `SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints
		WHERE thread_id = ? ORDER BY checkpoint_ns, checkpoint_id`, []any{thread}, func(st *sqlite3.Stmt) error {
		ns, id, parent := st.ColumnText(0), st.ColumnText(1), st.ColumnText(2)
		cp, err := splitCheckpoint(st.ColumnText(3), st.ColumnBlob(4, nil), key, intern)
		if err == nil {
			cp.metadata, err = decodeMetadata(st.ColumnRawBlob(5))
		}
		if err != nil {
			return checkpointProblem(thread, &rawCheckpoint{ns: ns, id: id}, err)
		}
		cp.ns, cp.id, cp.parent = ns, id, parent
		t.cps = append(t.cps, cp)
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	err = s.eachWrite(ctx, thread, func(r writeRow) error {
		b, err := typedBlob(r.typ, r.data, key)
		if err != nil {
			return writeProblem(thread, r, err)
		}
		t.writes[r.k] = append(t.writes[r.k], &byteWrite{task: r.task, path: r.path, idx: r.idx, channel: r.channel, value: b})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// eachWrite calls fn with each row of the thread's writes, in LangGraph's
// order (namespace, checkpoint, task_path, task_id, idx); a file without
// task_path reads it as "". A row's data is its own copy.
func (s *sqliteSource) eachWrite(ctx context.Context, thread string, fn func(writeRow) error) error {
	path := "''"
	if s.hasPath {
		path = "task_path"
	}
	return s.query(ctx, `SELECT checkpoint_ns, checkpoint_id, task_id, `+path+`, idx, channel, type, value FROM writes
		WHERE thread_id = ? ORDER BY checkpoint_ns, checkpoint_id, `+path+`, task_id, idx`, []any{thread}, func(st *sqlite3.Stmt) error {
		err := fn(writeRow{k: cpKey{st.ColumnText(0), st.ColumnText(1)},
			task: st.ColumnText(2), path: st.ColumnText(3), idx: st.ColumnInt(4), channel: st.ColumnText(5),
			typ: st.ColumnText(6), data: st.ColumnBlob(7, nil)})
		if err != nil {
			return err
		}
		return ctx.Err()
	})
}

// decodeMetadata decodes a checkpoint's metadata: JSON text (a map) in
// every saver.
func decodeMetadata(data []byte) (map[string]any, error) {
	if len(data) == 0 {
		return map[string]any{}, nil
	}
	v, err := codec.DecodeJSON(data)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	md, ok := v.(map[string]any)
	if !ok && v != nil {
		return nil, fmt.Errorf("metadata is %s, not a map", describe(v))
	}
	if md == nil {
		md = map[string]any{}
	}
	return md, nil
}

func checkpointProblem(thread string, cp *rawCheckpoint, err error) *Problem {
	p := &Problem{ThreadID: thread, CheckpointNS: cp.ns, CheckpointID: cp.id, Reason: err.Error()}
	var ce *channelError
	if errors.As(err, &ce) {
		p.Channel = ce.channel
	}
	return p
}

func writeProblem(thread string, w writeRow, err error) *Problem {
	return &Problem{ThreadID: thread, CheckpointNS: w.k.ns, CheckpointID: w.k.id, Channel: w.channel,
		Reason: fmt.Sprintf("write of task %q idx %d: %v", w.task, w.idx, err)}
}
