package channels

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/codec"
	"github.com/google/go-cmp/cmp"
)

func msg(id, content string) codec.Message {
	return codec.Message{ID: id, Type: codec.Human, Content: content}
}

func write(ms ...codec.Message) MessageUpdate { return MessageUpdate{Messages: ms} }

func overwrite(ms ...codec.Message) MessageUpdate {
	return MessageUpdate{Overwrite: true, Messages: ms}
}

func removeAll() codec.Message { return remove(codec.RemoveAll) }

// ids lists "id=content" of each message, the shape the expectations below
// are written in.
func ids(ms []codec.Message) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%s=%v", m.ID, m.Content))
	}
	return out
}

func TestApplyMessagesSemantics(t *testing.T) {
	base := []codec.Message{msg("1", "a"), msg("2", "b"), msg("3", "c")}
	cases := []struct {
		name   string
		state  []codec.Message
		writes []MessageUpdate
		want   []string
		err    error
		errHas string
	}{
		{name: "nothing", want: []string{}},
		{name: "no writes keeps state", state: base, want: []string{"1=a", "2=b", "3=c"}},
		{name: "new ids append in order", state: base,
			writes: []MessageUpdate{write(msg("4", "d"), msg("5", "e"))},
			want:   []string{"1=a", "2=b", "3=c", "4=d", "5=e"}},
		{name: "existing id replaces in place", state: base,
			writes: []MessageUpdate{write(msg("2", "B"))},
			want:   []string{"1=a", "2=B", "3=c"}},
		{name: "duplicate id inside one write: later wins, first position",
			writes: []MessageUpdate{write(msg("x", "1"), msg("y", "2"), msg("x", "3"))},
			want:   []string{"x=3", "y=2"}},
		{name: "seed duplicates: replace hits the latest position",
			state:  []codec.Message{msg("d", "old"), msg("e", "e"), msg("d", "new")},
			writes: []MessageUpdate{write(msg("d", "X"))},
			want:   []string{"d=old", "e=e", "d=X"}},
		{name: "remove deletes every message with the id",
			state:  []codec.Message{msg("d", "old"), msg("e", "e"), msg("d", "new")},
			writes: []MessageUpdate{write(remove("d"))},
			want:   []string{"e=e"}},
		{name: "remove", state: base,
			writes: []MessageUpdate{write(remove("1"), remove("3"))},
			want:   []string{"2=b"}},
		{name: "remove unknown id is an error", state: base,
			writes: []MessageUpdate{write(msg("4", "d")), write(remove("nope"))},
			err:    ErrUnknownID, errHas: `"nope" (write 1, message 0)`},
		{name: "remove then re-add in one write keeps it in place", state: base,
			writes: []MessageUpdate{write(remove("2"), msg("2", "B"))},
			want:   []string{"1=a", "2=B", "3=c"}},
		{name: "re-add then remove in one write removes it", state: base,
			writes: []MessageUpdate{write(msg("2", "B"), remove("2"))},
			want:   []string{"1=a", "3=c"}},
		{name: "remove, re-add, remove in one write removes it", state: base,
			writes: []MessageUpdate{write(remove("2"), msg("2", "B"), remove("2"))},
			want:   []string{"1=a", "3=c"}},
		{name: "removing a message added earlier in the same write", state: base,
			writes: []MessageUpdate{write(msg("4", "d"), remove("4"))},
			want:   []string{"1=a", "2=b", "3=c"}},
		{name: "removing twice in one write is one removal", state: base,
			writes: []MessageUpdate{write(remove("1"), remove("1"))},
			want:   []string{"2=b", "3=c"}},
		{name: "removing twice in two writes is an error", state: base,
			writes: []MessageUpdate{write(remove("1")), write(remove("1"))},
			err:    ErrUnknownID},
		{name: "removed in one write, re-added in the next: appended", state: base,
			writes: []MessageUpdate{write(remove("1")), write(msg("1", "A"))},
			want:   []string{"2=b", "3=c", "1=A"}},
		{name: "remove-all keeps what follows the last marker", state: base,
			writes: []MessageUpdate{write(msg("4", "d"), removeAll(), msg("5", "e"), removeAll(), msg("6", "f"), msg("7", "g"))},
			want:   []string{"6=f", "7=g"}},
		{name: "remove-all alone empties the list", state: base,
			writes: []MessageUpdate{write(removeAll())},
			want:   []string{}},
		{name: "remove-all ignores what precedes it, even a bad remove", state: base,
			writes: []MessageUpdate{write(remove("nope"), removeAll(), msg("1", "A"))},
			want:   []string{"1=A"}},
		{name: "after remove-all the rest is merged: duplicates fold", state: base,
			writes: []MessageUpdate{write(removeAll(), msg("x", "1"), msg("x", "2"))},
			want:   []string{"x=2"}},
		{name: "after remove-all a remove applies to the rest", state: base,
			writes: []MessageUpdate{write(removeAll(), msg("x", "1"), msg("y", "2"), remove("x"))},
			want:   []string{"y=2"}},
		{name: "after remove-all an older id is unknown", state: base,
			writes: []MessageUpdate{write(removeAll(), remove("1"))},
			err:    ErrUnknownID},
		{name: "remove-all then more writes", state: base,
			writes: []MessageUpdate{write(removeAll(), msg("x", "1")), write(msg("y", "2"), msg("x", "X"))},
			want:   []string{"x=X", "y=2"}},
		{name: "overwrite replaces the whole list", state: base,
			writes: []MessageUpdate{write(msg("4", "d")), overwrite(msg("s", "summary")), write(msg("5", "e"))},
			want:   []string{"s=summary", "5=e"}},
		{name: "empty overwrite clears", state: base,
			writes: []MessageUpdate{overwrite()},
			want:   []string{}},
		{name: "overwrite keeps duplicates as given, like a seed", state: base,
			writes: []MessageUpdate{overwrite(msg("d", "1"), msg("d", "2")), write(msg("d", "X"))},
			want:   []string{"d=1", "d=X"}},
		{name: "overwrite refuses remove markers", state: base,
			writes: []MessageUpdate{overwrite(msg("s", "x"), remove("1"))},
			err:    ErrBadValue},
		{name: "overwrite refuses messages without id",
			writes: []MessageUpdate{overwrite(codec.Message{Type: codec.AI})},
			err:    ErrNoID},
		{name: "write without id is an error", state: base,
			writes: []MessageUpdate{write(msg("4", "d"), codec.Message{Type: codec.AI, Content: "x"})},
			err:    ErrNoID, errHas: "write 0, message 1"},
		{name: "seed message without id is kept and untouched",
			state:  []codec.Message{msg("", "anon"), msg("1", "a")},
			writes: []MessageUpdate{write(msg("1", "A"), msg("2", "b"))},
			want:   []string{"=anon", "1=A", "2=b"}},
		{name: "a plain message with the remove-all id is just a message", state: base,
			writes: []MessageUpdate{write(msg(codec.RemoveAll, "odd"))},
			want:   []string{"1=a", "2=b", "3=c", "__remove_all__=odd"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ApplyMessages(tc.state, tc.writes)
			ref, refErr := naiveApply(tc.state, tc.writes)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err = %v, want %v containing %q", err, tc.err, tc.errHas)
				}
				if got != nil {
					t.Fatalf("a failed fold returned a list: %v", got)
				}
				if !errors.Is(refErr, tc.err) {
					t.Fatalf("reference err = %v, want %v", refErr, tc.err)
				}
				return
			}
			if err != nil || refErr != nil {
				t.Fatalf("err = %v, reference err = %v", err, refErr)
			}
			if diff := cmp.Diff(tc.want, ids(got)); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(ids(ref), ids(got)); diff != "" {
				t.Fatalf("differs from the reference (-ref +got):\n%s", diff)
			}
		})
	}
}

// The write, not the message, is the unit of batching: concatenating two
// writes' messages into one write changes the result, in LangGraph as here.
// These cases pin that, so nobody "optimises" storage by merging writes.
func TestMergingWritesIsNotEquivalent(t *testing.T) {
	base := []codec.Message{msg("1", "a"), msg("2", "b")}
	// Remove in one write, re-add in the next: the message moves to the end.
	// In one write the removal is cancelled and the message stays in place.
	two, err := ApplyMessages(base, []MessageUpdate{write(remove("1")), write(msg("1", "A"))})
	if err != nil {
		t.Fatal(err)
	}
	one, err := ApplyMessages(base, []MessageUpdate{write(remove("1"), msg("1", "A"))})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"2=b", "1=A"}, ids(two)); diff != "" {
		t.Fatalf("two writes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"1=A", "2=b"}, ids(one)); diff != "" {
		t.Fatalf("one write (-want +got):\n%s", diff)
	}
	// The same removal in two writes fails; in one write it is a no-op repeat.
	if _, err := ApplyMessages(base, []MessageUpdate{write(remove("1")), write(remove("1"))}); !errors.Is(err, ErrUnknownID) {
		t.Fatalf("two writes: %v, want ErrUnknownID", err)
	}
	if _, err := ApplyMessages(base, []MessageUpdate{write(remove("1"), remove("1"))}); err != nil {
		t.Fatalf("one write: %v", err)
	}
}

// Splitting a write just after a remove-all does not change the result:
// this is what folding the rest of the write (rather than returning it raw,
// as LangGraph does) buys.
func TestRemoveAllSplitsCleanly(t *testing.T) {
	base := []codec.Message{msg("1", "a")}
	rest := []codec.Message{msg("x", "1"), msg("x", "2"), msg("y", "3"), remove("y")}
	one, err := ApplyMessages(base, []MessageUpdate{write(append([]codec.Message{msg("9", "z"), removeAll()}, rest...)...)})
	if err != nil {
		t.Fatal(err)
	}
	split, err := ApplyMessages(base, []MessageUpdate{write(removeAll()), write(rest...)})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ids(one), ids(split)); diff != "" {
		t.Fatalf("(-one write +split):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"x=2"}, ids(one)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestApplyMessagesLeavesInputsAlone(t *testing.T) {
	state := []codec.Message{msg("1", "a"), msg("2", "b"), msg("3", "c")}
	writes := []MessageUpdate{write(msg("2", "B"), remove("1"), msg("4", "d")), write(removeAll(), msg("5", "e"))}
	stateCopy := slices.Clone(state)
	writesCopy := []MessageUpdate{{Messages: slices.Clone(writes[0].Messages)}, {Messages: slices.Clone(writes[1].Messages)}}
	got, err := ApplyMessages(state, writes[:1])
	if err != nil {
		t.Fatal(err)
	}
	got[0].Content = "mutated by the caller"
	_ = append(got, msg("z", "z"))
	if _, err := ApplyMessages(state, writes); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(stateCopy, state); diff != "" {
		t.Fatalf("state modified (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(writesCopy, writes); diff != "" {
		t.Fatalf("writes modified (-before +after):\n%s", diff)
	}
}

func TestWithIDs(t *testing.T) {
	n := 0
	gen := func() string { n++; return fmt.Sprintf("gen-%d", n) }
	in := write(msg("keep", "a"), codec.Message{Type: codec.AI, Content: "b"}, codec.Message{Type: codec.Remove}, codec.Message{Type: codec.Human})
	before := slices.Clone(in.Messages)
	out := in.WithIDs(gen)
	want := []string{"keep", "gen-1", "", "gen-2"}
	var got []string
	for _, m := range out.Messages {
		got = append(got, m.ID)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, in.Messages); diff != "" {
		t.Fatalf("input modified:\n%s", diff)
	}
	// Replays are stable because the ids live in the write: folding the
	// same stored write twice yields the same list.
	stored := write(msg("h", "hi"), codec.Message{Type: codec.AI, Content: "yo"}).WithIDs(gen)
	a, _ := ApplyMessages(nil, []MessageUpdate{stored})
	b, _ := ApplyMessages(nil, []MessageUpdate{stored})
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("replay differs:\n%s", diff)
	}
	// Nothing to assign: the slice is shared, not copied.
	full := write(msg("a", "a"))
	if &full.WithIDs(gen).Messages[0] != &full.Messages[0] {
		t.Fatal("WithIDs copied a write that needed no ids")
	}
	// The default generator is used when none is given.
	if id := write(codec.Message{Type: codec.AI}).WithIDs(nil).Messages[0].ID; id == "" {
		t.Fatal("WithIDs(nil) assigned no id")
	}
}

func TestNewID(t *testing.T) {
	uuid4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if !uuid4.MatchString(id) {
			t.Fatalf("%q is not a version 4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("%q generated twice", id)
		}
		seen[id] = true
	}
}

func TestMessageUpdateEncodeDecode(t *testing.T) {
	for _, u := range []MessageUpdate{
		write(msg("1", "a"), remove("2"), removeAll()),
		overwrite(msg("s", "summary"), codec.Message{ID: "t", Type: codec.Tool, Content: "r", ToolCallID: "c1"}),
		{},
	} {
		data, err := u.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeMessageUpdate(data)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(u, got); diff != "" {
			t.Fatalf("round trip (-in +out):\n%s", diff)
		}
	}
	good, _ := write(msg("1", "a")).Encode()
	bad := map[string]struct {
		data []byte
		want error
	}{
		"empty":               {nil, codec.ErrCorrupt},
		"garbage":             {[]byte{codec.FormatV1, 0xc1}, codec.ErrCorrupt},
		"truncated":           {good[:len(good)-2], codec.ErrCorrupt},
		"newer envelope":      {append([]byte{codec.FormatV1S2 + 1}, good[1:]...), codec.ErrUnsupported},
		"wrong shape":         {mustMarshal(t, "just a string"), codec.ErrCorrupt},
		"missing id":          {mustMarshal(t, write(codec.Message{Type: codec.AI})), ErrNoID},
		"remove in overwrite": {mustMarshal(t, overwrite(remove("x"))), ErrBadValue},
		"unknown type":        {mustMarshal(t, write(codec.Message{ID: "x", Type: "robot"})), codec.ErrCorrupt},
		"bad content":         {mustMarshal(t, map[string]any{"messages": []any{map[string]any{"id": "x", "type": "ai", "content": int64(3)}}}), codec.ErrCorrupt},
	}
	for name, tc := range bad {
		_, err := DecodeMessageUpdate(tc.data)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
		if tc.want != codec.ErrUnsupported && !errors.Is(err, codec.ErrCorrupt) {
			t.Errorf("%s: err = %v does not match codec.ErrCorrupt", name, err)
		}
	}
	if _, err := write(codec.Message{Type: codec.AI}).Encode(); !errors.Is(err, ErrNoID) {
		t.Fatalf("Encode of a write without ids: %v, want ErrNoID", err)
	}
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := codec.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
