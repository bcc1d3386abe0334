package channels

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/codec"
	"github.com/google/go-cmp/cmp"
)

// The engine's view: one interface drives every kind of field.
var _ = []Channel{Messages{}, LastValue{}, Reducer(nil)}

func TestMessagesChannel(t *testing.T) {
	ch := Messages{}
	state := []codec.Message{msg("1", "a")}
	u := write(msg("2", "b"))
	got, err := ch.Apply(state, []any{u, &MessageUpdate{Messages: []codec.Message{msg("1", "A")}}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"1=A", "2=b"}, ids(got.([]codec.Message))); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	empty, err := ch.Apply(nil, nil)
	if err != nil || empty == nil || len(empty.([]codec.Message)) != 0 {
		t.Fatalf("Apply(nil, nil) = %#v, %v; want an empty, non-nil list", empty, err)
	}
	for name, tc := range map[string]struct {
		state   any
		updates []any
	}{
		"state of another type":  {"text", nil},
		"update of another type": {nil, []any{[]codec.Message{msg("1", "a")}}},
		"nil pointer update":     {nil, []any{(*MessageUpdate)(nil)}},
	} {
		if _, err := ch.Apply(tc.state, tc.updates); !errors.Is(err, ErrBadValue) {
			t.Errorf("%s: %v, want ErrBadValue", name, err)
		}
	}
	if !ch.IsOverwrite(overwrite()) || !ch.IsOverwrite(&MessageUpdate{Overwrite: true}) ||
		ch.IsOverwrite(write()) || ch.IsOverwrite((*MessageUpdate)(nil)) || ch.IsOverwrite(Overwrite{}) {
		t.Fatal("IsOverwrite misclassifies")
	}

	// Stored forms read back as the values the channel applies.
	data, err := u.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ch.DecodeUpdate(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(any(u), back); diff != "" {
		t.Fatalf("update round trip:\n%s", diff)
	}
	for _, s := range [][]codec.Message{state, {}} {
		back, err := ch.DecodeState(mustMarshal(t, s))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(any(s), back); diff != "" {
			t.Fatalf("state round trip:\n%s", diff)
		}
	}
	if _, err := ch.DecodeState([]byte{codec.FormatV1, 0x93}); !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("DecodeState of garbage: %v", err)
	}
	if _, err := ch.DecodeUpdate(nil); !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("DecodeUpdate of nothing: %v", err)
	}
}

func TestLastValue(t *testing.T) {
	ch := LastValue{}
	cases := []struct {
		state   any
		updates []any
		want    any
	}{
		{nil, nil, nil},
		{"old", nil, "old"},
		{"old", []any{"a", "b"}, "b"},
		{"old", []any{"a", Overwrite{Value: "c"}}, "c"},
		{nil, []any{map[string]any{"__overwrite__": int64(1)}}, int64(1)},
		{nil, []any{map[string]any{"k": "v"}}, map[string]any{"k": "v"}},
	}
	for i, tc := range cases {
		got, err := ch.Apply(tc.state, tc.updates)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("case %d (-want +got):\n%s", i, diff)
		}
	}
	if !ch.IsOverwrite("anything") {
		t.Fatal("a last-value write must count as an overwrite")
	}
	// Two writes in one step are refused, as LangGraph refuses them.
	_, err := OrderStep(ch, []TaskWrite{{TaskID: "a", Value: 1}, {TaskID: "b", Value: 2}})
	if !errors.Is(err, ErrConcurrentUpdate) {
		t.Fatalf("two last-value writes in a step: %v, want ErrConcurrentUpdate", err)
	}
}

func TestReducer(t *testing.T) {
	sum := Reducer(func(state, update any) (any, error) {
		s, _ := state.(int64)
		u, ok := update.(int64)
		if !ok {
			return nil, fmt.Errorf("not a number: %v", update)
		}
		return s + u, nil
	})
	got, err := sum.Apply(nil, []any{int64(1), int64(2), Overwrite{Value: int64(10)}, int64(5)})
	if err != nil || got != int64(15) {
		t.Fatalf("Apply = %v, %v; want 15", got, err)
	}
	if got, err := sum.Apply(int64(7), nil); err != nil || got != int64(7) {
		t.Fatalf("no updates: %v, %v", got, err)
	}
	if _, err := sum.Apply(nil, []any{int64(1), "x"}); err == nil || !strings.Contains(err.Error(), "update 1") || !strings.Contains(err.Error(), "not a number") {
		t.Fatalf("reducer error: %v", err)
	}
	boom := Reducer(func(state, update any) (any, error) { return state.(int64) + 1, nil })
	if _, err := boom.Apply("not an int", []any{int64(1)}); !errors.Is(err, ErrBadValue) {
		t.Fatalf("panicking reducer: %v, want ErrBadValue", err)
	}
	if _, err := Reducer(nil).Apply(nil, []any{1}); !errors.Is(err, ErrBadValue) {
		t.Fatalf("nil reducer: %v", err)
	}
	if _, err := OrderStep(sum, []TaskWrite{{TaskID: "a", Value: Overwrite{}}, {TaskID: "b", Value: &Overwrite{}}}); !errors.Is(err, ErrConcurrentUpdate) {
		t.Fatalf("two overwrites in a step: %v, want ErrConcurrentUpdate", err)
	}
	if _, err := OrderStep(sum, []TaskWrite{{TaskID: "a", Value: Overwrite{}}, {TaskID: "b", Value: int64(1)}}); err != nil {
		t.Fatalf("one overwrite and one write: %v", err)
	}
}

// An Overwrite survives storage: codec stores LangGraph's map form and the
// decoders give back an Overwrite, so a replayed fold sees what the live one
// saw.
func TestOverwriteRoundTrip(t *testing.T) {
	for _, ch := range []Channel{LastValue{}, Reducer(func(s, u any) (any, error) { return u, nil })} {
		data := mustMarshal(t, Overwrite{Value: []any{"a", int64(1)}})
		var raw map[string]any
		if err := codec.Unmarshal(data, &raw); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]any{"__overwrite__": []any{"a", int64(1)}}, raw); diff != "" {
			t.Fatalf("stored form (-want +got):\n%s", diff)
		}
		got, err := ch.DecodeUpdate(data)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(any(Overwrite{Value: []any{"a", int64(1)}}), got); diff != "" {
			t.Fatalf("decoded (-want +got):\n%s", diff)
		}
		if !ch.IsOverwrite(got) {
			t.Fatal("decoded Overwrite not recognised")
		}
		plain, err := ch.DecodeUpdate(mustMarshal(t, map[string]any{"k": int64(3)}))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(any(map[string]any{"k": int64(3)}), plain); diff != "" {
			t.Fatalf("a plain map must decode as itself:\n%s", diff)
		}
		state, err := ch.DecodeState(mustMarshal(t, map[string]any{"k": "v"}))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(any(map[string]any{"k": "v"}), state); diff != "" {
			t.Fatalf("state:\n%s", diff)
		}
		if _, err := ch.DecodeUpdate([]byte{0x7f}); !errors.Is(err, codec.ErrCorrupt) {
			t.Fatalf("garbage: %v", err)
		}
	}
}

func TestFoldNilChannel(t *testing.T) {
	if _, err := Fold(nil, nil, nil); !errors.Is(err, ErrBadValue) {
		t.Fatalf("Fold(nil): %v", err)
	}
	if _, err := OrderStep(nil, nil); !errors.Is(err, ErrBadValue) {
		t.Fatalf("OrderStep(nil): %v", err)
	}
}

// A seed from a full-mode thread and a snapshot are both plain lists; Fold
// starts from them, and from nothing when the walk found no seed.
func TestFoldSeeds(t *testing.T) {
	writes := []any{write(msg("2", "b")), write(msg("1", "A"))}
	got, err := Fold(Messages{}, []codec.Message{msg("1", "a")}, writes)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"1=A", "2=b"}, ids(got.([]codec.Message))); diff != "" {
		t.Fatalf("seeded (-want +got):\n%s", diff)
	}
	got, err = Fold(Messages{}, nil, writes)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"2=b", "1=A"}, ids(got.([]codec.Message))); diff != "" {
		t.Fatalf("unseeded (-want +got):\n%s", diff)
	}
	got, err = Fold(Messages{}, "a seed of the wrong type", append(writes, overwrite(msg("s", "x"))))
	if err != nil {
		t.Fatalf("a seed before the last Overwrite is never read: %v", err)
	}
	if diff := cmp.Diff([]string{"s=x"}, ids(got.([]codec.Message))); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}
