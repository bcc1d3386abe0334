package channels

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/agentstate/agentstate/codec"
	"github.com/google/go-cmp/cmp"
)

// decodeErrOK is the contract of every decoder: bytes that do not decode
// give codec.ErrCorrupt or codec.ErrUnsupported, nothing else.
func decodeErrOK(t *testing.T, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, codec.ErrCorrupt) && !errors.Is(err, codec.ErrUnsupported) {
		t.Fatalf("untyped decode error: %v", err)
	}
}

// foldErrOK is the contract of the fold: an error is one of the sentinels.
func foldErrOK(t *testing.T, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, ErrUnknownID) && !errors.Is(err, ErrNoID) && !errors.Is(err, ErrBadValue) {
		t.Fatalf("untyped fold error: %v", err)
	}
}

func FuzzDecodeMessageUpdate(f *testing.F) {
	for _, u := range []MessageUpdate{
		write(msg("1", "a"), remove("2"), removeAll()),
		overwrite(msg("s", "x")),
		{},
		{Messages: []codec.Message{{ID: "a", Type: codec.AI, Content: []any{map[string]any{"type": "text", "text": "hi"}},
			ToolCalls: []codec.ToolCall{{ID: "c", Name: "f", Args: map[string]any{"x": int64(1)}}}}}},
	} {
		f.Add(mustMarshal(f, u))
	}
	f.Add(mustMarshal(f, []codec.Message{msg("1", "a")}))
	f.Add([]byte{codec.FormatV1, 0x81, 0xa8, 'm', 'e', 's', 's', 'a', 'g', 'e', 's', 0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := DecodeMessageUpdate(data)
		decodeErrOK(t, err)
		if err != nil {
			return
		}
		// What decodes must encode, and encode stably.
		once, err := u.Encode()
		if err != nil {
			t.Fatalf("re-encoding a decoded update: %v", err)
		}
		again, err := DecodeMessageUpdate(once)
		if err != nil {
			t.Fatalf("decoding a re-encoded update: %v", err)
		}
		twice, err := again.Encode()
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("encoding not stable: %x vs %x (%v)", once, twice, err)
		}
		// A decoded write is always safe to fold.
		_, err = ApplyMessages(nil, []MessageUpdate{u})
		foldErrOK(t, err)
	})
}

func FuzzDecodeChannelValues(f *testing.F) {
	for _, v := range []any{Overwrite{Value: []any{"a"}}, map[string]any{"k": int64(1)}, []codec.Message{msg("1", "a")}, "s", nil} {
		f.Add(mustMarshal(f, v))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, ch := range []Channel{Messages{}, LastValue{}, Reducer(func(s, u any) (any, error) { return u, nil })} {
			u, err := ch.DecodeUpdate(data)
			decodeErrOK(t, err)
			s, err2 := ch.DecodeState(data)
			decodeErrOK(t, err2)
			if err == nil && err2 == nil {
				// Whatever decodes can be folded without a panic.
				_, err := ch.Apply(s, []any{u})
				foldErrOK(t, err)
			}
		}
	})
}

func FuzzReadCounters(f *testing.F) {
	f.Add(mustMarshal(f, SetCounters(nil, map[string]Counter{"messages": {3, 4}})))
	f.Add(mustMarshal(f, map[string]any{CountersKey: map[string]any{"m": 2.0}}))
	f.Add(mustMarshal(f, map[string]any{CountersKey: []any{1}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		var meta map[string]any
		if err := codec.Unmarshal(data, &meta); err != nil {
			decodeErrOK(t, err)
			return
		}
		counters, err := ReadCounters(meta)
		if err != nil {
			if !errors.Is(err, ErrBadCounters) || !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("untyped counters error: %v", err)
			}
			return
		}
		back, err := ReadCounters(SetCounters(meta, counters))
		if err != nil {
			t.Fatal(err)
		}
		maps.DeleteFunc(counters, func(_ string, c Counter) bool { return c == Counter{} })
		if diff := cmp.Diff(counters, back); diff != "" {
			t.Fatalf("round trip (-read +reread):\n%s", diff)
		}
	})
}

// program turns fuzz bytes into a state and writes over six ids, so that
// the fuzzer explores the reducer's rules rather than msgpack syntax. The
// high nibble of a byte picks an operation, the low one an id.
func program(data []byte) ([]codec.Message, []MessageUpdate) {
	if len(data) == 0 {
		return nil, nil
	}
	id := func(b byte) string { return fmt.Sprintf("m%d", b&0x0f%6) }
	n := int(data[0] % 8)
	data = data[1:]
	var state []codec.Message
	for i := 0; i < n && i < len(data); i++ {
		state = append(state, msg(id(data[i]), fmt.Sprint("s", i)))
	}
	data = data[min(n, len(data)):]
	var writes []MessageUpdate
	cur := MessageUpdate{}
	for i, b := range data {
		switch op := b >> 4; {
		case op <= 5 || op >= 13:
			cur.Messages = append(cur.Messages, msg(id(b), fmt.Sprint("w", i)))
		case op <= 8:
			cur.Messages = append(cur.Messages, remove(id(b)))
		case op == 9:
			cur.Messages = append(cur.Messages, removeAll())
		case op == 10:
			writes = append(writes, cur)
			cur = MessageUpdate{}
		case op == 11:
			writes = append(writes, cur)
			cur = MessageUpdate{Overwrite: true}
		case op == 12:
			cur.Messages = append(cur.Messages, codec.Message{Type: codec.AI, Content: "no id"})
		}
	}
	return state, append(writes, cur)
}

func FuzzApplyMessages(f *testing.F) {
	f.Add([]byte{3, 0, 1, 0, 0x01, 0x62, 0x03, 0xa0, 0x71, 0x01, 0x90, 0x04, 0xb0, 0x05})
	f.Add([]byte{2, 1, 2, 0x61, 0x01, 0xa0, 0x61, 0xa0, 0x61})
	f.Add([]byte{0, 0x01, 0x01, 0x02, 0x91, 0x03, 0x73})
	f.Fuzz(func(t *testing.T, data []byte) {
		state, writes := program(data)
		got, err := ApplyMessages(state, writes)
		foldErrOK(t, err)
		want, wantErr := naiveApply(state, writes)
		if !sameError(err, wantErr) {
			t.Fatalf("err = %v, reference err = %v", err, wantErr)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("(-reference +fast):\n%s", diff)
		}
		k := len(data) % (len(writes) + 1)
		mid, err1 := ApplyMessages(state, writes[:k])
		split, err2 := mid, err1
		if err1 == nil {
			split, err2 = ApplyMessages(mid, writes[k:])
		}
		if !sameError(err2, err) {
			t.Fatalf("split at %d: err = %v, whole err = %v", k, err2, err)
		}
		if err == nil {
			if diff := cmp.Diff(got, split); diff != "" {
				t.Fatalf("split at %d (-whole +split):\n%s", k, diff)
			}
			values := make([]any, len(writes))
			for i, w := range writes {
				values[i] = w
			}
			folded, err := Fold(Messages{}, state, values)
			if err != nil {
				t.Fatalf("Fold: %v", err)
			}
			if diff := cmp.Diff(got, folded); diff != "" {
				t.Fatalf("(-apply +fold):\n%s", diff)
			}
		}
	})
}

// The reducer on arbitrary decoded input: a state and a list of writes as
// msgpack, decoded the way the engine decodes them.
func FuzzApplyDecoded(f *testing.F) {
	f.Add(mustMarshal(f, []codec.Message{msg("1", "a"), msg("1", "b")}),
		mustMarshal(f, []MessageUpdate{write(remove("1"), msg("2", "x")), overwrite(msg("3", "y"))}))
	f.Add(mustMarshal(f, nil), mustMarshal(f, []MessageUpdate{write(removeAll(), remove("9"))}))
	f.Fuzz(func(t *testing.T, stateData, writesData []byte) {
		state, err := codec.DecodeMessages(stateData)
		if err != nil {
			decodeErrOK(t, err)
			return
		}
		var writes []MessageUpdate
		if err := codec.Unmarshal(writesData, &writes); err != nil {
			decodeErrOK(t, err)
			return
		}
		got, err := ApplyMessages(state, writes)
		foldErrOK(t, err)
		want, wantErr := naiveApply(state, writes)
		if !sameError(err, wantErr) {
			t.Fatalf("err = %v, reference err = %v", err, wantErr)
		}
		if err == nil && len(got) != len(want) {
			t.Fatalf("%d messages, reference %d", len(got), len(want))
		}
	})
}
