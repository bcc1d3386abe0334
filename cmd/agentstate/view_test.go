package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/langgraph"
)

// viewFixture is what testdata/langgraph/view/generate_*.{py,mjs} wrote:
// every checkpoint of every thread as LangGraph's own get_state returned
// it (the head with no checkpoint id, the others by id), messages in the
// neutral form of docs/cli.md.
type viewFixture struct {
	Language  string            `json:"language"`
	LangGraph string            `json:"langgraph"`
	Reducers  map[string]string `json:"reducers"`
	Threads   map[string][]struct {
		CheckpointID *string        `json:"checkpoint_id"`
		Values       map[string]any `json:"values"`
	} `json:"threads"`
}

// TestStateAsLangGraph: on files that LangGraph Python (two versions) and
// LangGraph.js wrote through agentstate's savers, `agentstate state` shows
// every checkpoint's values as LangGraph's get_state does: DeltaChannels
// rebuilt, the head's finished tasks' writes applied, messages in one form.
// viewCopy copies a view fixture into the test's directory and upgrades the
// copy to this build's schema: the fixtures were written by the build of
// their day, and read-only commands do not upgrade a file.
func viewCopy(t *testing.T, fixture string) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "view.db")
	src, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, src, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"upgrade", db}, &out, &errs); code != 0 {
		t.Fatalf("upgrade %s: exit %d: %s", fixture, code, errs.String())
	}
	return db
}

func TestStateAsLangGraph(t *testing.T) {
	fixtures, _ := filepath.Glob("../../testdata/langgraph/view/view-*.json")
	if len(fixtures) < 3 {
		t.Fatalf("want the view fixtures of two LangGraph Python versions and LangGraph.js, found %v", fixtures)
	}
	for _, fx := range fixtures {
		t.Run(filepath.Base(fx), func(t *testing.T) {
			raw, err := os.ReadFile(fx)
			if err != nil {
				t.Fatal(err)
			}
			var f viewFixture
			if err := json.Unmarshal(raw, &f); err != nil {
				t.Fatal(err)
			}
			db := viewCopy(t, strings.TrimSuffix(fx, ".json")+".db")
			var flags []string
			for ch, r := range f.Reducers {
				flags = append(flags, "--reducer", ch+"="+r)
			}
			states := 0
			for thread, list := range f.Threads {
				for _, want := range list {
					args := append([]string{"state", "--json"}, flags...)
					name := thread + "@head"
					if want.CheckpointID != nil {
						args = append(args, "--checkpoint", *want.CheckpointID)
						name = thread + "@" + *want.CheckpointID
					}
					var out, errs bytes.Buffer
					if code := run(context.Background(), append(args, db, thread), &out, &errs); code != 0 {
						t.Errorf("%s: exit %d: %s", name, code, errs.String())
						continue
					}
					var got struct {
						Values map[string]any `json:"values"`
					}
					if err := json.Unmarshal(out.Bytes(), &got); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					compareValues(t, name, got.Values, want.Values)
					states++
				}
			}
			// export --states shows every head as state does, history
			// --values every checkpoint as get_state_history does.
			lines := func(args ...string) []map[string]any {
				var out, errs bytes.Buffer
				if code := run(context.Background(), args, &out, &errs); code != 0 {
					t.Fatalf("%v: exit %d: %s", args, code, errs.String())
				}
				var l []map[string]any
				for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
					var m map[string]any
					if err := json.Unmarshal([]byte(line), &m); err != nil {
						t.Fatal(err)
					}
					l = append(l, m)
				}
				return l
			}
			heads := map[string]map[string]any{}
			for _, l := range lines(append(append([]string{"export", "--states"}, flags...), db)...) {
				heads[l["config"].(map[string]any)["thread_id"].(string)], _ = l["values"].(map[string]any)
			}
			for thread, list := range f.Threads {
				byID := map[string]map[string]any{}
				for _, l := range lines(append(append([]string{"history", "--values"}, flags...), db, thread)...) {
					byID[l["checkpoint_id"].(string)], _ = l["values"].(map[string]any)
				}
				for _, w := range list {
					if w.CheckpointID == nil {
						compareValues(t, thread+"@head (export --states)", heads[thread], w.Values)
						continue
					}
					compareValues(t, thread+"@"+*w.CheckpointID+" (history --values)", byID[*w.CheckpointID], w.Values)
				}
			}
			t.Logf("%s LangGraph %s: %d states equal", f.Language, f.LangGraph, states)
		})
	}
}

// compareValues compares the state keys (LangGraph's internal channels are
// not in get_state's values): each must be equal, except that a channel
// the file holds nothing for may be shown by LangGraph as its reducer's
// empty value (0, [], "").
func compareValues(t *testing.T, name string, got, want map[string]any) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			if isEmptyJSON(w) {
				continue
			}
			t.Errorf("%s: channel %q missing; LangGraph shows %s", name, k, jsonText(w))
			continue
		}
		if !reflect.DeepEqual(normJSON(g), normJSON(w)) {
			t.Errorf("%s: channel %q differs at %s:\n got %s\nwant %s", name, k, firstDiff(normJSON(g), normJSON(w), k), jsonText(g), jsonText(w))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok && !langgraph.Internal(k) {
			t.Errorf("%s: channel %q shown, LangGraph shows none: %s", name, k, jsonText(got[k]))
		}
	}
}

func isEmptyJSON(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case float64:
		return x == 0
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// normJSON round-trips a value through JSON, so that both sides have the
// same Go types.
func normJSON(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

// TestStateReducerNotNamed: a DeltaChannel that is not "messages" needs its
// reducer named; without it, state fails naming the channel and the flag.
func TestStateReducerNotNamed(t *testing.T) {
	fixtures, _ := filepath.Glob("../../testdata/langgraph/view/view-py-*.db")
	if len(fixtures) == 0 {
		t.Fatal("no Python view fixture")
	}
	db := viewCopy(t, fixtures[0])
	r := agentstate(t, nil, "state", db, "delta")
	want(t, r, 1)
	contains(t, r.stderr, `channel "notes" of thread "delta"`, "DeltaChannel", "--reducer notes=messages|concat|last")
	r = agentstate(t, nil, "state", db, "fanout-failed")
	want(t, r, 1)
	contains(t, r.stderr, `channel "results"`, "pending writes of finished tasks", "--reducer results=")
	r = agentstate(t, nil, "state", "--reducer", "notes=sum", db, "delta")
	want(t, r, 2)
	// Named, the head shows the finished tasks' writes and says so.
	r = agentstate(t, nil, "state", "--reducer", "results=concat", db, "fanout-failed")
	want(t, r, 0)
	contains(t, r.stderr, "note: messages, results include the writes that finished tasks saved", "--checkpoint ")
	contains(t, r.stdout, `"worker 3 done"`, `"applied_pending_writes"`)
}

// TestStateAsLangGraphSqliteFixtures: the repository's LangGraph
// SqliteSaver fixtures (Python 1.2.24: DeltaChannels by cadence, by forks,
// by an Overwrite, durability="exit", subgraphs; LangGraph.js 1.7.3),
// imported in the protocol's form, show every checkpoint's values as the
// LangGraph that wrote them read them back (its get_state by checkpoint
// id, which applies no pending writes).
func TestStateAsLangGraphSqliteFixtures(t *testing.T) {
	type cp struct {
		ns, id string
		values map[string]any
		skip   []string
	}
	load := func(t *testing.T, path string) (threads map[string][]cp) {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		threads = map[string][]cp{}
		if strings.HasSuffix(path, "states.json") { // LangGraph.js
			var f struct {
				Threads map[string][]struct {
					NS     string         `json:"checkpoint_ns"`
					ID     string         `json:"checkpoint_id"`
					Values map[string]any `json:"values"`
				} `json:"threads"`
			}
			if err := json.Unmarshal(raw, &f); err != nil {
				t.Fatal(err)
			}
			for th, l := range f.Threads {
				for _, c := range l {
					threads[th] = append(threads[th], cp{c.NS, c.ID, c.Values, nil})
				}
			}
			return threads
		}
		var f struct {
			Threads map[string]map[string][]struct {
				ID    string `json:"checkpoint_id"`
				State struct {
					Values    map[string]any `json:"values"`
					NotInFile []string       `json:"values_not_in_file"`
				} `json:"state"`
			} `json:"threads"`
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatal(err)
		}
		for th, nss := range f.Threads {
			for ns, l := range nss {
				for _, c := range l {
					threads[th] = append(threads[th], cp{ns, c.ID, c.State.Values, c.State.NotInFile})
				}
			}
		}
		return threads
	}
	for _, fx := range []struct{ src, expected string }{
		{"python/langgraph-py.sqlite", "python/expected-py-sqlite.json"},
		{"langgraph-js.sqlite", "langgraph-js.states.json"},
	} {
		t.Run(fx.src, func(t *testing.T) {
			dir := filepath.Join("..", "..", "testdata", "langgraph")
			src := filepath.Join(t.TempDir(), "src.sqlite")
			b, err := os.ReadFile(filepath.Join(dir, fx.src))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(src, b, 0o644); err != nil {
				t.Fatal(err)
			}
			db := filepath.Join(t.TempDir(), "lg.db")
			var out, errs bytes.Buffer
			if code := run(context.Background(), []string{"import-langgraph", src, db}, &out, &errs); code != 0 {
				t.Fatalf("import: %s", errs.String())
			}
			n := 0
			for thread, cps := range load(t, filepath.Join(dir, fx.expected)) {
				for _, c := range cps {
					out.Reset()
					errs.Reset()
					args := []string{"state", "--json", "--reducer", "notes=concat", "--checkpoint", c.id, "--ns", c.ns, db, thread}
					if code := run(context.Background(), args, &out, &errs); code != 0 {
						t.Errorf("%s@%s: exit %d: %s", thread, c.id, code, errs.String())
						continue
					}
					var got struct {
						Values map[string]any `json:"values"`
					}
					if err := json.Unmarshal(out.Bytes(), &got); err != nil {
						t.Fatal(err)
					}
					want := map[string]any{}
					for k, v := range c.values {
						if !slices.Contains(c.skip, k) {
							want[k] = sortSets(expectedNeutral(v))
						}
					}
					for k, v := range got.Values {
						got.Values[k] = sortSets(v)
					}
					compareValues(t, thread+"@"+c.ns+"@"+c.id, got.Values, want)
					n++
				}
			}
			t.Logf("%d checkpoints equal", n)
		})
	}
}

// expectedNeutral maps a message of the fixtures' expected JSON (Python's
// {"$type": "message", "class", "fields"}, LangChain.js's constructor
// JSON) into the neutral form docs/cli.md describes; the test's own
// reading of that page, not the code under test.
func expectedNeutral(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = expectedNeutral(e)
		}
		return out
	case map[string]any:
		if x["$type"] == "message" {
			cls := x["class"].(string)
			f, _ := expectedNeutral(x["fields"]).(map[string]any)
			return neutralOf(cls[strings.LastIndex(cls, ".")+1:], f)
		}
		if x["lc"] == float64(1) && x["type"] == "constructor" {
			ids, _ := x["id"].([]any)
			f, _ := expectedNeutral(x["kwargs"]).(map[string]any)
			return neutralOf(ids[len(ids)-1].(string), f)
		}
		out := map[string]any{}
		for k, e := range x {
			out[k] = expectedNeutral(e)
		}
		return out
	}
	return v
}

func neutralOf(class string, f map[string]any) map[string]any {
	typ := strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(class, "Chunk"), "Message"))
	out := map[string]any{"type": typ, "id": nil, "content": ""}
	if id, _ := f["id"].(string); id != "" {
		out["id"] = id
	}
	if c, ok := f["content"]; ok && c != nil {
		out["content"] = c
	}
	for k, v := range f {
		switch {
		case k == "type" || k == "id" || k == "content" || k == "tool_call_chunks" || k == "chunk_position",
			k == "role" && typ != "chat", k == "status" && v == "success":
			continue
		case k == "tool_calls" || k == "invalid_tool_calls":
			l, _ := v.([]any)
			var calls []any
			for _, c := range l {
				m := map[string]any{}
				for ck, cv := range c.(map[string]any) {
					if ck != "type" || cv != "tool_call" && cv != "invalid_tool_call" {
						m[ck] = cv
					}
				}
				calls = append(calls, m)
			}
			v = calls
		}
		if isEmptyJSON(v) && v != float64(0) || v == false {
			continue
		}
		out[k] = v
	}
	if typ == "remove" {
		out["content"] = ""
	}
	return out
}

// sortSets orders a Python set's items by their JSON text: a set has no
// order, and the expected JSON sorts them.
func sortSets(v any) any {
	v = normJSON(v)
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			for k := range x {
				x[k] = walk(x[k])
			}
			if items, ok := x["items"].([]any); ok && (x["$type"] == "set" || x["$type"] == "frozenset") {
				slices.SortFunc(items, func(a, b any) int { return strings.Compare(jsonText(a), jsonText(b)) })
			}
		}
		return v
	}
	return walk(v)
}

// firstDiff names the first place where a and b differ, and both there.
func firstDiff(a, b any, at string) string {
	switch x := a.(type) {
	case map[string]any:
		if y, ok := b.(map[string]any); ok {
			for k := range x {
				if !reflect.DeepEqual(x[k], y[k]) {
					return firstDiff(x[k], y[k], at+"."+k)
				}
			}
			for k := range y {
				if _, ok := x[k]; !ok {
					return fmt.Sprintf("%s.%s (missing; want %s)", at, k, jsonText(y[k]))
				}
			}
		}
	case []any:
		if y, ok := b.([]any); ok && len(x) == len(y) {
			for i := range x {
				if !reflect.DeepEqual(x[i], y[i]) {
					return firstDiff(x[i], y[i], fmt.Sprintf("%s[%d]", at, i))
				}
			}
		}
	}
	return fmt.Sprintf("%s (got %s, want %s)", at, jsonText(a), jsonText(b))
}
