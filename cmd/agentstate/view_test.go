package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
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
			db := filepath.Join(t.TempDir(), "view.db")
			src, err := os.ReadFile(strings.TrimSuffix(fx, ".json") + ".db")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(db, src, 0o644); err != nil {
				t.Fatal(err)
			}
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
			t.Errorf("%s: channel %q:\n got %s\nwant %s", name, k, jsonText(g), jsonText(w))
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
	db := filepath.Join(t.TempDir(), "view.db")
	src, _ := os.ReadFile(fixtures[0])
	if err := os.WriteFile(db, src, 0o644); err != nil {
		t.Fatal(err)
	}
	r := agentstate(t, nil, "state", db, "delta")
	want(t, r, 1)
	contains(t, r.stderr, `channel "notes" of thread "delta"`, "DeltaChannel", "--reducer notes=messages|concat|last")
	r = agentstate(t, nil, "state", db, "fanout-failed")
	want(t, r, 1)
	contains(t, r.stderr, `channel "results"`, "pending writes of finished tasks", "--reducer results=")
	r = agentstate(t, nil, "state", "--reducer", "notes=sum", db, "delta")
	want(t, r, 2)
}
