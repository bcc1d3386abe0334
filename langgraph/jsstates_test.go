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
)

// The oracle of the LangGraph.js fixture: langgraph-js.states.json, every
// checkpoint as LangGraph.js itself read it back (graph.getState, DeltaChannel
// values rebuilt by LangGraph; checkpointer.getTuple's parent, metadata and
// pending writes), written by generate.mjs beside the file.

var jsStatesFile = filepath.Join("..", "testdata", "langgraph", "langgraph-js.states.json")

type jsStates struct {
	Threads map[string][]jsState `json:"threads"`
}

type jsState struct {
	NS       string         `json:"checkpoint_ns"`
	ID       string         `json:"checkpoint_id"`
	Parent   *string        `json:"parent_checkpoint_id"`
	Metadata map[string]any `json:"metadata"`
	Values   map[string]any `json:"values"`
	Pending  [][3]any       `json:"pending_writes"`
	// ChannelValues are getTuple's.
	ChannelValues map[string]any `json:"channel_values"`
}

func loadJSStates(t *testing.T, path string) jsStates {
	t.Helper()
	out := readJSONNumbers[jsStates](t, path)
	for _, cps := range out.Threads {
		for i := range cps {
			cps[i].Metadata = jsonMap(t, cps[i].Metadata)
			cps[i].Values = jsonMap(t, cps[i].Values)
		}
	}
	return out
}

// expectedJSMessages maps LangGraph.js's messages as the import maps them.
func expectedJSMessages(v any) ([]codec.Message, error) {
	p := newPreparer(nil, nil)
	p.drops = &drops{counts: map[string]int{}, seen: map[[3]string]bool{}}
	return p.messageList(v)
}

// checkJSStates compares every checkpoint of db with LangGraph.js's reading.
// A channel without a version is not in the file: LangGraph.js shows its
// empty value ([]) there, the import shows nothing.
func checkJSStates(t *testing.T, db *engine.DB, exp jsStates) int {
	t.Helper()
	ctx := context.Background()
	delta := db.Options().Mode == channels.ModeDelta
	n, failures := 0, 0
	fail := func(format string, args ...any) {
		failures++
		if failures <= 15 {
			t.Errorf(format, args...)
		}
	}
	for thread, cps := range exp.Threads {
		for _, e := range cps {
			n++
			where := fmt.Sprintf("%s/%s/%s", thread, e.NS, e.ID)
			cfg := engine.Config{ThreadID: thread, CheckpointNS: e.NS, CheckpointID: e.ID}
			tup, err := db.GetTuple(ctx, cfg)
			if err != nil {
				fail("%s: %v", where, err)
				continue
			}
			compareTuple(fail, where, tup, e.Parent, e.Metadata, e.Pending, delta)
			view, err := db.ReadState(ctx, cfg)
			if err != nil {
				fail("%s: %v", where, err)
				continue
			}
			for k := range view.Values {
				if _, ok := e.Values[k]; !ok && !isInternal(k) {
					fail("%s: channel %q imported, not in LangGraph's state", where, k)
				}
			}
			for k, w := range e.Values {
				g, ok := view.Values[k]
				if !ok {
					if l, isList := w.([]any); !isList || len(l) > 0 {
						fail("%s: channel %q: LangGraph shows %v, the import nothing", where, k, w)
					}
					continue
				}
				if ms, isMsgs := g.([]codec.Message); isMsgs {
					wm, err := expectedJSMessages(w)
					if err != nil {
						fail("%s: channel %q: expected value: %v", where, k, err)
						continue
					}
					if d := cmp.Diff(wm, ms); d != "" {
						fail("%s: channel %q (-want +got):\n%s", where, k, d)
					}
					continue
				}
				if d := cmp.Diff(w, g); d != "" {
					fail("%s: channel %q (-want +got):\n%s", where, k, d)
				}
			}
		}
	}
	if failures > 0 {
		t.Fatalf("%d differences from LangGraph.js's reading in %d checkpoints", failures, n)
	}
	return n
}

func TestImportLangGraphJSStates(t *testing.T) {
	ctx := context.Background()
	src := copyFile(t, jsFixture)
	exp := loadJSStates(t, jsStatesFile)
	for _, mode := range []channels.Mode{channels.ModeFull, channels.ModeDelta} {
		t.Run(string(mode), func(t *testing.T) {
			db := openDst(t, mode, 3)
			rep, err := Import(ctx, db, src, Options{Into: IntoMessages})
			if err != nil {
				t.Fatal(err)
			}
			if rep.DeltaChannels["messages"] != 1 {
				t.Fatalf("the fixture's thread delta has a DeltaChannel: %+v", rep)
			}
			if vr, err := db.Verify(ctx, admin.VerifyOptions{}); err != nil || !vr.OK {
				t.Fatalf("verify: %v %v", err, vr.Problems)
			}
			if n := checkJSStates(t, db, exp); n != rep.Checkpoints {
				t.Fatalf("LangGraph.js read %d checkpoints, the import wrote %d", n, rep.Checkpoints)
			}
		})
	}
}
