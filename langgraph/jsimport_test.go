package langgraph

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/engine/admin"
)

// jsFixture is a file written by the real LangGraph.js SqliteSaver
// (testdata/langgraph/generate.mjs): threads chat (tool loop, an id-less
// message), fork (time travel, updateState forks, removals), sub (a
// subgraph namespace and an interrupt) and delta (a DeltaChannel, K=3).
var jsFixture = filepath.Join("..", "testdata", "langgraph", "langgraph-js.sqlite")

func TestImportLangGraphJS(t *testing.T) {
	ctx := context.Background()
	src := copyFile(t, jsFixture)
	for _, mode := range []channels.Mode{channels.ModeFull, channels.ModeDelta} {
		t.Run(string(mode), func(t *testing.T) {
			db := openDst(t, mode, 3)
			rep, err := Import(ctx, db, src, Options{Into: IntoMessages})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Threads != 4 || rep.Namespaces != 5 || rep.Checkpoints != 63 || rep.Writes != 93 || rep.Saver != "sqlite" || rep.Mode != string(mode) {
				t.Fatalf("report %+v", rep)
			}
			if rep.Overwrites == 0 || rep.IDsFilled == 0 {
				t.Fatalf("the fixture has an updateState fork and id-less messages: %+v", rep)
			}
			if mode == channels.ModeDelta && rep.Snapshots >= rep.Checkpoints/2 {
				t.Fatalf("delta import stored %d message lists for %d checkpoints", rep.Snapshots, rep.Checkpoints)
			}
			vr, err := db.Verify(ctx, admin.VerifyOptions{})
			if err != nil || !vr.OK {
				t.Fatalf("import does not verify: %v %v", err, vr.Problems)
			}
			if mode == channels.ModeDelta && vr.DeltaReads == 0 {
				t.Fatal("no checkpoint was read through the delta walk")
			}
			checked, diffs, err := Compare(ctx, db, src, Options{Into: IntoMessages})
			if err != nil || checked != 63 || len(diffs) > 0 {
				t.Fatalf("compare: %d checked, %v, %v", checked, err, diffs)
			}
			// The thread API reads the imported thread and can go on.
			st, err := db.State(ctx, engine.Config{ThreadID: "chat"})
			if err != nil {
				t.Fatal(err)
			}
			ms := st.Values[engine.MessagesChannel].([]codec.Message)
			if len(ms) < 8 || ms[0].ID != "sys" || !slices.ContainsFunc(ms, func(m codec.Message) bool { return m.Type == codec.Tool && m.ToolCallID != "" }) {
				t.Fatalf("chat messages: %+v", ms)
			}
			if _, err := db.Commit(ctx, "chat", engine.Step{Tasks: []engine.TaskWrites{{TaskID: "n", Writes: []engine.ChannelWrite{{Channel: engine.MessagesChannel, Value: codec.Message{Type: codec.Human, Content: "more"}}}}}}); err != nil {
				t.Fatal(err)
			}
			if vr, _ := db.Verify(ctx, admin.VerifyOptions{}); !vr.OK {
				t.Fatalf("after a commit: %v", vr.Problems)
			}
			// The subgraph namespace reads too.
			view, err := db.ReadState(ctx, engine.Config{ThreadID: "sub", CheckpointNS: subNamespace(t, db)})
			if err != nil || len(view.Values[engine.MessagesChannel].([]codec.Message)) == 0 {
				t.Fatalf("subgraph state: %v %+v", err, view)
			}
			// A second import of the same threads is refused, and changes nothing.
			before := fingerprint(t, db)
			if _, err := Import(ctx, db, src, Options{Into: IntoMessages}); !errors.Is(err, engine.ErrConflict) || !strings.Contains(err.Error(), "already exists") {
				t.Fatalf("second import: %v", err)
			}
			if after := fingerprint(t, db); after != before {
				t.Fatal("a refused import changed the destination")
			}
		})
	}
}

func subNamespace(t *testing.T, db *engine.DB) string {
	t.Helper()
	for tup, err := range db.List(context.Background(), engine.ListOptions{ThreadID: "sub"}) {
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
