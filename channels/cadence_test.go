package channels

import (
	"errors"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/agentstate/agentstate/codec"
	"github.com/google/go-cmp/cmp"
)

func TestCadenceNext(t *testing.T) {
	type in struct {
		prev                      Counter
		updated, overwrite, first bool
	}
	type out struct {
		snapshot bool
		next     Counter
	}
	k3 := Cadence{K: 3}
	cases := []struct {
		name string
		c    Cadence
		in   in
		want out
	}{
		{"first checkpoint snapshots", k3, in{first: true, updated: true}, out{true, Counter{}}},
		{"first checkpoint snapshots even without update", k3, in{first: true}, out{true, Counter{}}},
		{"first update counts", k3, in{updated: true}, out{false, Counter{1, 1}}},
		{"second update counts", k3, in{prev: Counter{1, 1}, updated: true}, out{false, Counter{2, 2}}},
		{"K-th update snapshots and resets", k3, in{prev: Counter{2, 2}, updated: true}, out{true, Counter{}}},
		{"checkpoint without update only counts supersteps", k3, in{prev: Counter{2, 5}}, out{false, Counter{2, 6}}},
		{"overwrite snapshots at once", k3, in{prev: Counter{1, 1}, updated: true, overwrite: true}, out{true, Counter{}}},
		{"overwrite implies update", k3, in{overwrite: true}, out{true, Counter{}}},
		{"K=1 snapshots every update", Cadence{K: 1}, in{updated: true}, out{true, Counter{}}},
		{"K=1 without update", Cadence{K: 1}, in{}, out{false, Counter{0, 1}}},
		{"default K", Cadence{K: DefaultK}, in{prev: Counter{8, 8}, updated: true}, out{false, Counter{9, 9}}},
		{"default K reached", Cadence{K: DefaultK}, in{prev: Counter{9, 9}, updated: true}, out{true, Counter{}}},
		{"superstep bound", Cadence{K: 100, MaxSupersteps: 4}, in{prev: Counter{0, 3}}, out{true, Counter{}}},
		{"superstep bound off", Cadence{K: 100}, in{prev: Counter{0, 1 << 20}}, out{false, Counter{0, 1<<20 + 1}}},
		{"invalid K snapshots every update", Cadence{}, in{updated: true}, out{true, Counter{}}},
	}
	for _, tc := range cases {
		snap, next := tc.c.Next(tc.in.prev, tc.in.updated, tc.in.overwrite, tc.in.first)
		if diff := cmp.Diff(tc.want, out{snap, next}, cmp.AllowUnexported(out{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestCadenceValidate(t *testing.T) {
	for _, c := range []Cadence{{K: 1}, {K: 10}, {K: 3, MaxSupersteps: 5000}} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	for _, c := range []Cadence{{}, {K: -1}, {K: 3, MaxSupersteps: -1}} {
		if err := c.Validate(); !errors.Is(err, ErrBadCadence) {
			t.Errorf("%+v: %v, want ErrBadCadence", c, err)
		}
	}
}

// Along any chain of checkpoints, no checkpoint is more than K-1 updates
// away from its nearest snapshot, and every Overwrite lands on a snapshot.
func TestCadenceBoundsReplay(t *testing.T) {
	seed := propertySeed(t)
	for c := range 300 {
		r := rand.New(rand.NewPCG(seed, uint64(c)))
		cad := Cadence{K: 1 + r.IntN(12)}
		var counter Counter
		sinceSnapshot := 0
		for step := range 200 {
			updated := r.IntN(3) > 0
			ow := updated && r.IntN(20) == 0
			snap, next := cad.Next(counter, updated, ow, step == 0)
			if updated {
				sinceSnapshot++
			}
			if snap {
				sinceSnapshot = 0
			}
			if ow && !snap {
				t.Fatalf("case %d step %d: overwrite without snapshot", c, step)
			}
			if sinceSnapshot > cad.K-1 || next.Updates != sinceSnapshot {
				t.Fatalf("case %d step %d: %d updates to replay, counter %+v, K %d", c, step, sinceSnapshot, next, cad.K)
			}
			counter = next
		}
	}
}

func TestCountersMetadata(t *testing.T) {
	meta := map[string]any{"source": "loop", "step": int64(3)}
	before := maps.Clone(meta)
	counters := map[string]Counter{"messages": {2, 5}, "notes": {0, 1}, "idle": {}}
	out := SetCounters(meta, counters)
	if diff := cmp.Diff(before, meta); diff != "" {
		t.Fatalf("meta modified:\n%s", diff)
	}
	want := map[string]any{
		"source": "loop", "step": int64(3),
		CountersKey: map[string]any{"messages": []any{int64(2), int64(5)}, "notes": []any{int64(0), int64(1)}},
	}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Fatalf("stored shape (-want +got):\n%s", diff)
	}
	// A codec round trip gives back the same map, and the same counters.
	var decoded map[string]any
	if err := codec.Unmarshal(mustMarshal(t, out), &decoded); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(out, decoded); diff != "" {
		t.Fatalf("round trip (-stored +decoded):\n%s", diff)
	}
	got, err := ReadCounters(decoded)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]Counter{"messages": {2, 5}, "notes": {0, 1}}, got); diff != "" {
		t.Fatalf("read back (-want +got):\n%s", diff)
	}
	// All zero: the key goes away, as LangGraph drops it.
	cleared := SetCounters(out, map[string]Counter{"messages": {}})
	if _, ok := cleared[CountersKey]; ok {
		t.Fatalf("zero counters still stored: %v", cleared)
	}
	if _, ok := out[CountersKey]; !ok {
		t.Fatal("SetCounters modified its input")
	}
	if got := SetCounters(nil, map[string]Counter{"m": {1, 1}}); got == nil || got[CountersKey] == nil {
		t.Fatalf("SetCounters(nil, ...) = %v", got)
	}
}

func TestReadCountersShapes(t *testing.T) {
	good := map[string]struct {
		meta map[string]any
		want map[string]Counter
	}{
		"nil metadata": {nil, map[string]Counter{}},
		"no key":       {map[string]any{"step": int64(1)}, map[string]Counter{}},
		"nil value":    {map[string]any{CountersKey: nil}, map[string]Counter{}},
		"msgpack pair": {map[string]any{CountersKey: map[string]any{"m": []any{int64(3), int64(4)}}}, map[string]Counter{"m": {3, 4}}},
		"json pair":    {map[string]any{CountersKey: map[string]any{"m": []any{3.0, 14.0}}}, map[string]Counter{"m": {3, 14}}},
		"go pair":      {map[string]any{CountersKey: map[string]any{"m": []int64{1, 2}}}, map[string]Counter{"m": {1, 2}}},
		"bare count":   {map[string]any{CountersKey: map[string]any{"m": int64(5)}}, map[string]Counter{"m": {5, 0}}},
		"uint pair":    {map[string]any{CountersKey: map[string]any{"m": []any{uint64(1), 2}}}, map[string]Counter{"m": {1, 2}}},
	}
	for name, tc := range good {
		got, err := ReadCounters(tc.meta)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	bad := map[string]any{
		"not a map":      []any{1, 2},
		"three numbers":  map[string]any{"m": []any{int64(1), int64(2), int64(3)}},
		"negative":       map[string]any{"m": []any{int64(-1), int64(2)}},
		"fraction":       map[string]any{"m": []any{1.5, 2.0}},
		"string":         map[string]any{"m": "3"},
		"string in pair": map[string]any{"m": []any{int64(1), "2"}},
		"huge":           map[string]any{"m": []any{uint64(1) << 40, int64(0)}},
	}
	for name, v := range bad {
		_, err := ReadCounters(map[string]any{CountersKey: v})
		if !errors.Is(err, ErrBadCounters) || !errors.Is(err, codec.ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrBadCounters and codec.ErrCorrupt", name, err)
		}
	}
}
