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

func openSQLite(path string) (*sqliteSource, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnsupportedSource, path, err)
	}
	c, err := sqlite3.OpenFlags(sourceURI(path), sqlite3.OPEN_READONLY|sqlite3.OPEN_URI)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnsupportedSource, path, err)
	}
	s := &sqliteSource{path: path, c: c}
	for _, want := range []struct{ table, cols string }{
		{"checkpoints", "thread_id checkpoint_ns checkpoint_id parent_checkpoint_id type checkpoint metadata"},
		{"writes", "thread_id checkpoint_ns checkpoint_id task_id idx channel type value"},
	} {
		have := map[string]bool{}
		err := s.query(`SELECT name FROM pragma_table_info(?)`, []any{want.table}, func(st *sqlite3.Stmt) error {
			have[st.ColumnText(0)] = true
			return nil
		})
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("%w: %s: %v", ErrUnsupportedSource, path, err)
		}
		for _, col := range strings.Fields(want.cols) {
			if !have[col] {
				c.Close()
				return nil, fmt.Errorf("%w: %s is not a LangGraph SqliteSaver file: table %s has no column %s", ErrUnsupportedSource, path, want.table, col)
			}
		}
		if want.table == "writes" {
			s.hasPath = have["task_path"]
		}
	}
	return s, nil
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
func (s *sqliteSource) close() error  { return s.c.Close() }

func (s *sqliteSource) query(q string, args []any, fn func(st *sqlite3.Stmt) error) error {
	st, _, err := s.c.Prepare(q)
	if err != nil {
		return err
	}
	defer st.Close()
	for i, a := range args {
		if err := st.BindText(i+1, a.(string)); err != nil {
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
	err := s.query(`SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id`, nil, func(st *sqlite3.Stmt) error {
		out = append(out, st.ColumnText(0))
		return ctx.Err()
	})
	return out, err
}

func (s *sqliteSource) count(ctx context.Context) (int, error) {
	n := 0
	err := s.query(`SELECT count(*) FROM checkpoints`, nil, func(st *sqlite3.Stmt) error {
		n = st.ColumnInt(0)
		return nil
	})
	return n, err
}

func (s *sqliteSource) read(ctx context.Context, thread string) (*rawThread, error) {
	t := &rawThread{id: thread, writes: map[cpKey][]*rawWrite{}}
	memo := extMemo{}
	err := s.query(`SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints
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
	t := &byteThread{id: thread, writes: map[cpKey][]*byteWrite{}}
	intern := map[string]string{}
	err := s.query(`SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints
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
	return s.query(`SELECT checkpoint_ns, checkpoint_id, task_id, `+path+`, idx, channel, type, value FROM writes
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
