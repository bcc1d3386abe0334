package langgraph

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/google/go-cmp/cmp"
	"github.com/ncruces/go-sqlite3"
)

// A LangGraph.js DeltaChannel thread, written here in LangGraph.js's
// SqliteSaver format: the messages channel holds
// {"lc": 2, "type": "delta_snapshot", "value": [...]} at snapshots and
// nothing in between; its value is the last snapshot plus the writes since.
// The states each checkpoint must show are worked out by hand below.

func jsMsg(class, id, content string) string {
	return fmt.Sprintf(`{"lc":1,"type":"constructor","id":["langchain_core","messages",%q],"kwargs":{"id":%q,"content":%q,"additional_kwargs":{},"response_metadata":{}}}`, class, id, content)
}

func writeJSDeltaFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "js-delta.sqlite")
	c, err := sqlite3.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h1, ai1, h2, x := jsMsg("HumanMessage", "h1", "hi"), jsMsg("AIMessage", "ai1", "hello"), jsMsg("HumanMessage", "h2", "again"), jsMsg("SystemMessage", "x", "reset")
	rm := `{"lc":1,"type":"constructor","id":["langchain_core","messages","RemoveMessage"],"kwargs":{"id":"ai1","content":[]}}`
	snap := func(ms ...string) string {
		l := ""
		for i, m := range ms {
			if i > 0 {
				l += ","
			}
			l += m
		}
		return `"messages":{"lc":2,"type":"delta_snapshot","value":[` + l + `]}`
	}
	type cp struct{ id, parent, values, versions, counters string }
	cps := []cp{
		{"c0", "", `"__start__":{"messages":[` + h1 + `]}`, `"__start__":1`, `"messages":[0,1]`},
		{"c1", "c0", ``, `"__start__":2,"messages":2`, `"messages":[1,2]`},
		{"c2", "c1", snap(h1, ai1), `"__start__":2,"messages":3`, ``},
		{"c3", "c2", `"__start__":{"messages":[]}`, `"__start__":4,"messages":3`, `"messages":[0,1]`},
		{"c4", "c3", ``, `"__start__":5,"messages":5`, `"messages":[1,2]`},
		{"c5", "c4", ``, `"__start__":5,"messages":6`, `"messages":[2,3]`},
		{"c6", "c2", ``, `"__start__":2,"messages":3`, `"messages":[0,1]`}, // a fork of c2
	}
	writes := []struct{ cp, task, channel, value string }{
		{"c0", "t0", "messages", `[` + h1 + `]`},
		{"c1", "t1", "messages", `[` + ai1 + `]`},
		{"c3", "t3", "messages", `[` + h2 + `,` + rm + `]`},
		{"c4", "t4", "messages", `{"__overwrite__":[` + x + `]}`},
		{"c5", "t5", "messages", `[` + h2 + `]`}, // pending: c5 has no child
	}
	err = c.Exec(`CREATE TABLE checkpoints (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '', checkpoint_id TEXT NOT NULL,
		parent_checkpoint_id TEXT, type TEXT, checkpoint BLOB, metadata BLOB, PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id));
	CREATE TABLE writes (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '', checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL,
		idx INTEGER NOT NULL, channel TEXT NOT NULL, type TEXT, value BLOB, PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx))`)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range cps {
		doc := fmt.Sprintf(`{"v":4,"id":%q,"ts":"2026-12-01T00:00:0%dZ","channel_values":{%s},"channel_versions":{%s},"versions_seen":{}}`, x.id, i, x.values, x.versions)
		md := fmt.Sprintf(`{"source":"loop","step":%d,"parents":{},"delta_writes_versioned":true`, i-1)
		if x.counters != "" {
			md += `,"counters_since_delta_snapshot":{` + x.counters + `}`
		}
		md += "}"
		st, _, err := c.Prepare(`INSERT INTO checkpoints VALUES ('delta', '', ?, nullif(?, ''), 'json', ?, ?)`)
		if err != nil {
			t.Fatal(err)
		}
		st.BindText(1, x.id)
		st.BindText(2, x.parent)
		st.BindBlob(3, []byte(doc))
		st.BindBlob(4, []byte(md))
		if err := st.Exec(); err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
	for _, w := range writes {
		st, _, err := c.Prepare(`INSERT INTO writes VALUES ('delta', '', ?, ?, 0, ?, 'json', ?)`)
		if err != nil {
			t.Fatal(err)
		}
		st.BindText(1, w.cp)
		st.BindText(2, w.task)
		st.BindText(3, w.channel)
		st.BindBlob(4, []byte(w.value))
		if err := st.Exec(); err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
	return path
}

func TestImportLangGraphJSDeltaChannel(t *testing.T) {
	ctx := context.Background()
	src := writeJSDeltaFile(t)
	// The message ids LangGraph.js shows at each checkpoint; nil: the
	// channel has no version there.
	want := map[string][]string{
		"c0": nil,
		"c1": {"h1"},        // c0's write onto nothing
		"c2": {"h1", "ai1"}, // its snapshot
		"c3": {"h1", "ai1"}, // c2's snapshot, c2 wrote nothing
		"c4": {"h1", "h2"},  // c3's writes: h2 added, ai1 removed
		"c5": {"x"},         // c4's Overwrite
		"c6": {"h1", "ai1"}, // the fork reads c2's snapshot
	}
	for _, mode := range []channels.Mode{channels.ModeFull, channels.ModeDelta} {
		t.Run(string(mode), func(t *testing.T) {
			db := openDst(t, mode, 2)
			rep, err := Import(ctx, db, src, Options{Into: IntoMessages})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Checkpoints != 7 || rep.Writes != 5 || rep.DeltaChannels["messages"] != 1 {
				t.Fatalf("report %+v", rep)
			}
			if vr, err := db.Verify(ctx, admin.VerifyOptions{}); err != nil || !vr.OK {
				t.Fatalf("verify: %v %v", err, vr.Problems)
			}
			for id, ids := range want {
				view, err := db.ReadState(ctx, engine.Config{ThreadID: "delta", CheckpointID: id})
				if err != nil {
					t.Fatal(err)
				}
				ms, has := view.Values[engine.MessagesChannel].([]codec.Message)
				if ids == nil {
					if has {
						t.Errorf("%s: messages %v, want none", id, ms)
					}
					continue
				}
				got := []string{}
				for _, m := range ms {
					got = append(got, m.ID)
				}
				if d := cmp.Diff(ids, got); d != "" {
					t.Errorf("%s (-want +got):\n%s", id, d)
				}
			}
			if n, diffs, err := Compare(ctx, db, src, Options{Into: IntoMessages}); err != nil || n != 7 || len(diffs) > 0 {
				t.Fatalf("compare: %d %v %v", n, err, diffs)
			}
			// The head goes on with the thread API.
			if _, err := db.Commit(ctx, "delta", engine.Step{Parent: "c5", Tasks: []engine.TaskWrites{{TaskID: "n", Writes: []engine.ChannelWrite{{Channel: engine.MessagesChannel, Value: codec.Message{ID: "more", Type: codec.Human, Content: "more"}}}}}}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
