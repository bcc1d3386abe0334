package langgraph

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
	"github.com/google/go-cmp/cmp"
)

// The oracle of the Python fixtures: every checkpoint of an imported file
// compared with what LangGraph Python itself read back from the saver
// (expected-py-*.json, written by the fixture generator). Values the import
// kept as the source's bytes are decoded here into that file's JSON mapping
// (FORMATS.md, "Expected-state JSON"), a port of check_formats.py's.

// expectedFile is expected-py-<saver>.json.
type expectedFile struct {
	Checkpoints int                                        `json:"checkpoints"`
	Threads     map[string]map[string][]expectedCheckpoint `json:"threads"`
}

type expectedCheckpoint struct {
	CheckpointID string         `json:"checkpoint_id"`
	Parent       *string        `json:"parent_checkpoint_id"`
	Metadata     map[string]any `json:"metadata"`
	Pending      [][3]any       `json:"pending_writes"`
	// Raw is the checkpoint as the saver's get_tuple returned it.
	Raw struct {
		ChannelValues map[string]any `json:"channel_values"`
	} `json:"checkpoint"`
	State struct {
		Values    map[string]any `json:"values"`
		NotInFile []string       `json:"values_not_in_file"`
	} `json:"state"`
}

func loadExpected(t *testing.T, path string) expectedFile {
	t.Helper()
	out := readJSONNumbers[expectedFile](t, path)
	for _, nss := range out.Threads {
		for _, cps := range nss {
			for i := range cps {
				cps[i].Metadata = jsonMap(t, cps[i].Metadata)
				cps[i].State.Values = jsonMap(t, cps[i].State.Values)
				cps[i].Raw.ChannelValues = jsonMap(t, cps[i].Raw.ChannelValues)
			}
		}
	}
	return out
}

func isInternal(ch string) bool {
	return strings.HasPrefix(ch, "__") || strings.HasPrefix(ch, "branch:to:")
}

// checkExpected compares every checkpoint of db with the expected file:
// parent, metadata, pending writes (task and channel, in order) and the state
// values LangGraph showed.
func checkExpected(t *testing.T, db *engine.DB, exp expectedFile) {
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
	for thread, nss := range exp.Threads {
		for ns, cps := range nss {
			for _, e := range cps {
				n++
				where := fmt.Sprintf("%s/%s/%s", thread, ns, e.CheckpointID)
				tup, err := db.GetTuple(ctx, engine.Config{ThreadID: thread, CheckpointNS: ns, CheckpointID: e.CheckpointID})
				if err != nil {
					fail("%s: %v", where, err)
					continue
				}
				compareTuple(fail, where, tup, e.Parent, e.Metadata, e.Pending, delta)
				view, err := db.ReadState(ctx, engine.Config{ThreadID: thread, CheckpointNS: ns, CheckpointID: e.CheckpointID})
				if err != nil {
					fail("%s: %v", where, err)
					continue
				}
				wantV := map[string]any{}
				for k, v := range e.State.Values {
					if !slices.Contains(e.State.NotInFile, k) {
						wantV[k] = v
					}
				}
				gotV := map[string]any{}
				for k, v := range view.Values {
					if !isInternal(k) {
						gotV[k] = v
					}
				}
				for _, k := range slices.Sorted(func(yield func(string) bool) {
					for k := range wantV {
						if !yield(k) {
							return
						}
					}
					for k := range gotV {
						if _, dup := wantV[k]; !dup && !yield(k) {
							return
						}
					}
				}) {
					w, inWant := wantV[k]
					g, inGot := gotV[k]
					if !inWant || !inGot {
						fail("%s: channel %q: expected %v, imported %v", where, k, inWant, inGot)
						continue
					}
					if ms, ok := g.([]codec.Message); ok {
						wm, err := expectedMessages(w)
						if err != nil {
							fail("%s: channel %q: expected value: %v", where, k, err)
							continue
						}
						if d := cmp.Diff(wm, ms); d != "" {
							fail("%s: channel %q (-want +got):\n%s", where, k, d)
						}
						continue
					}
					gj, err := importedJSON(g)
					if err != nil {
						fail("%s: channel %q: %v", where, k, err)
						continue
					}
					if d := cmp.Diff(normalizeSets(w), normalizeSets(gj)); d != "" {
						fail("%s: channel %q (-want +got):\n%s", where, k, d)
					}
				}
			}
		}
	}
	if n != exp.Checkpoints {
		t.Errorf("the expected file lists %d checkpoints, its header says %d", n, exp.Checkpoints)
	}
	if failures > 0 {
		t.Fatalf("%d differences from LangGraph's reading in %d checkpoints", failures, n)
	}
}

func withoutCounters(md map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range md {
		if k != channels.CountersKey {
			out[k] = v
		}
	}
	return out
}

// expectedMessages maps LangGraph's messages ({"$type": "message", "class",
// "fields": model_dump()}) as codec.Message the way the import maps them.
func expectedMessages(v any) ([]codec.Message, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%T is not a list", v)
	}
	out := []codec.Message{}
	for _, x := range list {
		m, _ := x.(map[string]any)
		class, _ := m["class"].(string)
		name := class[strings.LastIndex(class, ".")+1:]
		fields, _ := m["fields"].(map[string]any)
		if m["$type"] != "message" || messageClasses[name] == "" {
			return nil, fmt.Errorf("not a message: %v", x)
		}
		msg, err := messageFields(name, messageClasses[name], fields, map[string]int{})
		if err != nil {
			return nil, err
		}
		out = append(out, msg)
	}
	return out, nil
}

// importedJSON maps a value as ReadState shows it into the expected JSON:
// engine values as themselves (a map with a "$type" key, or a non-finite
// float, has its own form), blobs of Python serde bytes decoded.
func importedJSON(v any) (any, error) {
	switch x := v.(type) {
	case codec.Blob:
		switch x.Type {
		case "bytes", "bytearray", "msgpack":
			v, _, err := SerdeJSON(x)
			return v, err
		}
		return nil, fmt.Errorf("a blob of type %q", x.Type)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("a non-finite float stored as an engine value")
		}
	}
	if out, ok, err := mapJSON(v, importedJSON); ok {
		return out, err
	}
	return v, nil
}

// jsonMap is codec.JSONNumbers for a decoded map of the expected states.
func jsonMap(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	v, err := codec.JSONNumbers(m)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := v.(map[string]any)
	return out
}

// compareTuple compares what GetTuple read of an imported checkpoint with
// what the source's own LangGraph read: the parent, the metadata (without
// the engine's own snapshot counters in delta mode) and the pending
// writes' tasks and channels (the import's own task left out).
func compareTuple(fail func(string, ...any), where string, tup engine.Tuple, parent *string, metadata map[string]any, pending [][3]any, delta bool) {
	var got *string
	if tup.ParentConfig != nil {
		got = &tup.ParentConfig.CheckpointID
	}
	if d := cmp.Diff(parent, got); d != "" {
		fail("%s: parent (-want +got):\n%s", where, d)
	}
	md, want := map[string]any(tup.Metadata), metadata
	if delta {
		md, want = withoutCounters(md), withoutCounters(want)
	}
	if d := cmp.Diff(want, md); d != "" {
		fail("%s: metadata (-want +got):\n%s", where, d)
	}
	var gotW, wantW [][2]string
	for _, w := range tup.PendingWrites {
		if w.TaskID != importTaskID {
			gotW = append(gotW, [2]string{w.TaskID, w.Channel})
		}
	}
	for _, w := range pending {
		wantW = append(wantW, [2]string{w[0].(string), w[1].(string)})
	}
	if d := cmp.Diff(wantW, gotW); d != "" {
		fail("%s: pending writes (-want +got):\n%s", where, d)
	}
}

// readJSONNumbers decodes the JSON file at path into a T, keeping its
// numbers as json.Number for jsonMap to turn into what the imported values
// hold (integers int64, others float64: "3.0" stays a float).
func readJSONNumbers[T any](t *testing.T, path string) T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}
