package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/codec"
	"github.com/ncruces/go-sqlite3"
)

// langGraphFixture is a file written by the real LangGraph.js SqliteSaver
// (testdata/langgraph/generate.mjs): threads chat (tool loop, an id-less
// message), fork (time travel, updateState forks, removals) and sub (a
// subgraph namespace and an interrupt).
var langGraphFixture = filepath.Join("..", "testdata", "langgraph", "langgraph-js.sqlite")

// copyFixture copies the fixture, so that opening it never touches the
// committed file (SQLite may leave -wal and -shm files beside it).
func copyFixture(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(langGraphFixture)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "lg.sqlite")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestImportLangGraph(t *testing.T) {
	ctx := context.Background()
	src := copyFixture(t)
	for _, mode := range []string{ModeFull, ModeDelta} {
		t.Run(mode, func(t *testing.T) {
			o := DefaultOptions()
			o.Mode, o.SnapshotEvery = mode, 3
			db, err := Open(ctx, filepath.Join(t.TempDir(), "dst.db"), &o)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			rep, err := db.ImportLangGraph(ctx, src, LangGraphOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Threads != 3 || rep.Namespaces != 4 || rep.Checkpoints != 36 || rep.Writes != 50 {
				t.Fatalf("report %+v", rep)
			}
			if rep.Overwrites == 0 || rep.IDsFilled == 0 {
				t.Fatalf("the fixture has an updateState fork and id-less messages: %+v", rep)
			}
			if mode == ModeDelta && rep.Snapshots >= rep.Checkpoints/2 {
				t.Fatalf("delta import stored %d message lists for %d checkpoints", rep.Snapshots, rep.Checkpoints)
			}
			vr, err := db.Verify(ctx, VerifyOptions{})
			if err != nil || !vr.OK {
				t.Fatalf("import does not verify: %v %v", err, vr.Problems)
			}
			if mode == ModeDelta && vr.DeltaReads == 0 {
				t.Fatal("no checkpoint was read through the delta walk")
			}
			checked, diffs, err := db.CompareLangGraph(ctx, src)
			if err != nil || checked != 36 || len(diffs) > 0 {
				t.Fatalf("compare: %d checked, %v, %v", checked, err, diffs)
			}
			// The thread API reads the imported thread and can go on.
			st, err := db.State(ctx, Config{ThreadID: "chat"})
			if err != nil {
				t.Fatal(err)
			}
			ms := st.Values[MessagesChannel].([]codec.Message)
			if len(ms) < 8 || ms[0].ID != "sys" || !slices.ContainsFunc(ms, func(m codec.Message) bool { return m.Type == codec.Tool && m.ToolCallID != "" }) {
				t.Fatalf("chat messages: %+v", ms)
			}
			if _, err := db.Commit(ctx, "chat", Step{Tasks: []TaskWrites{{TaskID: "n", Writes: []ChannelWrite{{Channel: MessagesChannel, Value: codec.Message{Type: codec.Human, Content: "more"}}}}}}); err != nil {
				t.Fatal(err)
			}
			if vr, _ := db.Verify(ctx, VerifyOptions{}); !vr.OK {
				t.Fatalf("after a commit: %v", vr.Problems)
			}
			// The subgraph namespace reads too.
			view, err := db.ReadState(ctx, Config{ThreadID: "sub", CheckpointNS: subNamespace(t, db)})
			if err != nil || len(view.Values[MessagesChannel].([]codec.Message)) == 0 {
				t.Fatalf("subgraph state: %v %+v", err, view)
			}
			// A second import of the same threads is refused.
			if _, err := db.ImportLangGraph(ctx, src, LangGraphOptions{}); !errors.Is(err, ErrConflict) {
				t.Fatalf("second import: %v", err)
			}
		})
	}
}

func subNamespace(t *testing.T, db *DB) string {
	t.Helper()
	for tup, err := range db.List(context.Background(), ListOptions{ThreadID: "sub"}) {
		if err != nil {
			t.Fatal(err)
		}
		if tup.Config.CheckpointNS != "" {
			return tup.Config.CheckpointNS
		}
	}
	t.Fatal("no subgraph namespace")
	return ""
}

func TestImportLangGraphRefusesOtherFiles(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	path, _ := opsFixture(t, ModeFull) // an agentstate file, not a LangGraph one
	if _, err := db.ImportLangGraph(ctx, path, LangGraphOptions{}); !errors.Is(err, ErrUnsupportedSource) || !strings.Contains(err.Error(), path) {
		t.Fatalf("agentstate file as source: %v", err)
	}
	// A Python saver file: same tables, "msgpack" serde.
	py := copyFixture(t)
	tamperSource(t, py, `UPDATE checkpoints SET type = 'msgpack' WHERE rowid = 1`)
	if _, err := db.ImportLangGraph(ctx, py, LangGraphOptions{}); !errors.Is(err, ErrUnsupportedSource) || !strings.Contains(err.Error(), "msgpack") {
		t.Fatalf("msgpack serde: %v", err)
	}
	// Nothing was written.
	if in, _ := db.Info(ctx); in.Rows["checkpoints"] != 0 {
		t.Fatalf("a refused import wrote %d checkpoints", in.Rows["checkpoints"])
	}
}

func tamperSource(t *testing.T, path, q string) {
	t.Helper()
	c, err := openRawRW(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Exec(q); err != nil {
		t.Fatal(err)
	}
}

func TestLangChainMessages(t *testing.T) {
	drops := map[string]int{}
	for _, tc := range []struct {
		in   any
		want codec.Message
	}{
		{"hi", codec.Message{Type: codec.Human, Content: "hi"}},
		{[]any{"assistant", "yes"}, codec.Message{Type: codec.AI, Content: "yes"}},
		{map[string]any{"role": "user", "content": "q", "id": "1"}, codec.Message{ID: "1", Type: codec.Human, Content: "q"}},
		{map[string]any{"lc": int64(1), "type": "constructor", "id": []any{"langchain_core", "messages", "ToolMessage"},
			"kwargs": map[string]any{"id": "t", "content": "21", "tool_call_id": "c", "status": "error", "artifact": map[string]any{"x": int64(1)}}},
			codec.Message{ID: "t", Type: codec.Tool, Content: "21", ToolCallID: "c"}},
		{map[string]any{"lc": int64(1), "type": "constructor", "id": []any{"langchain_core", "messages", "AIMessage"},
			"kwargs": map[string]any{"id": map[string]any{"lc": int64(2), "type": "undefined"}, "content": "", "invalid_tool_calls": []any{},
				"tool_calls": []any{map[string]any{"id": "c", "name": "w", "args": map[string]any{"a": int64(1)}, "type": "tool_call"}}}},
			codec.Message{Type: codec.AI, Content: "", ToolCalls: []codec.ToolCall{{ID: "c", Name: "w", Args: map[string]any{"a": int64(1)}}}}},
	} {
		got, err := lcMessage(tc.in, drops)
		if err != nil {
			t.Fatalf("%v: %v", tc.in, err)
		}
		if got.ID != tc.want.ID || got.Type != tc.want.Type || got.ToolCallID != tc.want.ToolCallID || len(got.ToolCalls) != len(tc.want.ToolCalls) {
			t.Fatalf("%v: got %+v want %+v", tc.in, got, tc.want)
		}
	}
	if drops["ToolMessage.status"] != 1 || drops["ToolMessage.artifact"] != 1 || len(drops) != 2 {
		t.Fatalf("drops %v", drops)
	}
	if _, err := lcMessage(map[string]any{"lc": int64(1), "type": "constructor", "id": []any{"ChatMessage"}, "kwargs": map[string]any{}}, drops); err == nil {
		t.Fatal("ChatMessage accepted")
	}
}

func openRawRW(path string) (*sqlite3.Conn, error) { return sqlite3.Open(path) }
