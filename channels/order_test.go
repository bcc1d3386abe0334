package channels

import (
	"errors"
	"slices"
	"testing"

	"github.com/agentstate/agentstate/codec"
	"github.com/google/go-cmp/cmp"
)

func TestOrderStepOrder(t *testing.T) {
	// Arrival order is deliberately scrambled. Expected order: task ids by
	// code point ("Z" < "a" < "a0" < "b" < "é" U+00E9 < "😀" U+1F600; in
	// UTF-16, as JavaScript sorts, "😀" would sort before U+E000..U+FFFF),
	// then idx numerically (2 before 10, which a string sort would swap).
	writes := []TaskWrite{
		{TaskID: "😀", Idx: 0, Value: "smile"},
		{TaskID: "b", Idx: 10, Value: "b10"},
		{TaskID: "a0", Idx: 0, Value: "a0"},
		{TaskID: "é", Idx: 0, Value: "e-acute"},
		{TaskID: "b", Idx: 2, Value: "b2"},
		{TaskID: "\uff21", Idx: 0, Value: "fullwidth A"},
		{TaskID: "Z", Idx: 0, Value: "Z"},
		{TaskID: "a", Idx: 1, Value: "a1"},
		{TaskID: "a", Idx: -1, Value: "a-1"},
	}
	before := slices.Clone(writes)
	got, err := OrderStep(Reducer(func(s, u any) (any, error) { return u, nil }), writes)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"Z", "a-1", "a1", "a0", "b2", "b10", "e-acute", "fullwidth A", "smile"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, writes); diff != "" {
		t.Fatalf("input reordered:\n%s", diff)
	}
}

func TestOrderStepRefusals(t *testing.T) {
	ch := Messages{}
	cases := map[string]struct {
		writes []TaskWrite
		want   error
	}{
		"duplicate (task, idx)": {[]TaskWrite{{TaskID: "a", Idx: 0, Value: write()}, {TaskID: "a", Idx: 0, Value: write()}}, ErrDuplicateWrite},
		"two overwrites": {[]TaskWrite{
			{TaskID: "a", Idx: 0, Value: overwrite()},
			{TaskID: "b", Idx: 0, Value: write()},
			{TaskID: "c", Idx: 0, Value: overwrite()},
		}, ErrConcurrentUpdate},
		"one overwrite": {[]TaskWrite{{TaskID: "a", Value: write()}, {TaskID: "b", Value: overwrite()}}, nil},
		"empty step":    {nil, nil},
	}
	for name, tc := range cases {
		_, err := OrderStep(ch, tc.writes)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
	}
}

// Inside a step writes apply one after another: an Overwrite discards the
// writes ordered before it, later ones apply on top.
func TestOverwriteInsideAStep(t *testing.T) {
	state := []codec.Message{msg("1", "a")}
	step := []TaskWrite{
		{TaskID: "c", Value: write(msg("after", "x"))},
		{TaskID: "a", Value: write(msg("before", "x"))},
		{TaskID: "b", Value: overwrite(msg("s", "summary"))},
	}
	values, err := OrderStep(Messages{}, step)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Messages{}.Apply(state, values)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"s=summary", "after=x"}, ids(got.([]codec.Message))); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	replayed, err := Fold(Messages{}, state, values)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, replayed); diff != "" {
		t.Fatalf("replay differs from live (-live +replay):\n%s", diff)
	}
}
