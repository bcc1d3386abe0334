package engine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/agentstate/agentstate/codec"
	"github.com/vmihailenco/msgpack/v5"
)

// reflectCheckpoint has storedCheckpoint's fields and tags but not its
// methods: the msgpack library encodes and decodes it by reflection, the
// oracle of the hand-written codec.
type reflectCheckpoint storedCheckpoint

func randomCheckpoint(r *rand.Rand) storedCheckpoint {
	strs := func(n int) map[string]string {
		if n < 0 {
			return nil
		}
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("ch%d", r.IntN(50)+i)] = fmt.Sprintf("%032d.%d", r.IntN(1000), r.Uint64())
		}
		return m
	}
	sc := storedCheckpoint{V: r.IntN(6) - 1, TS: fmt.Sprintf("2026-12-04T01:%02d:00Z", r.IntN(60)), HasUpdated: r.IntN(2) == 0}
	sc.ChannelVersions = strs(r.IntN(8) - 1)
	if n := r.IntN(5) - 1; n >= 0 {
		sc.VersionsSeen = map[string]map[string]string{}
		for i := range n {
			sc.VersionsSeen[fmt.Sprintf("node%d", i)] = strs(r.IntN(4) - 1)
		}
	}
	if n := r.IntN(5) - 1; n >= 0 {
		sc.UpdatedChannels = []string{}
		for i := range n {
			sc.UpdatedChannels = append(sc.UpdatedChannels, fmt.Sprintf("ch%d", i))
		}
	}
	if r.IntN(10) == 0 {
		sc.V = r.IntN(1 << 40) // a wide integer
	}
	return sc
}

func envelope(t *testing.T, build func(enc *msgpack.Encoder) error) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteByte(codec.FormatV1)
	enc := msgpack.NewEncoder(&b)
	enc.SetSortMapKeys(true)
	enc.UseCompactInts(true)
	if err := build(enc); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestStoredCheckpointCodecIsReflection holds the hand-written codec of the
// checkpoint payload to what reflection makes of the same struct: the same
// bytes written, and the same value (or an error for both) read from what
// reflection writes, from maps in another order with unknown keys or keys
// missing, from nil, from the array form, from wrong types and from every
// truncation.
func TestStoredCheckpointCodecIsReflection(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	decodeBoth := func(data []byte) {
		t.Helper()
		var got storedCheckpoint
		var want reflectCheckpoint
		gerr := codec.Unmarshal(data, &got)
		werr := codec.Unmarshal(data, &want)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("% x: hand-written codec says %v, reflection %v", data, gerr, werr)
		}
		if gerr == nil && !reflect.DeepEqual(reflectCheckpoint(got), want) {
			t.Fatalf("% x: read %+v, reflection %+v", data, got, want)
		}
	}
	for i := range 500 {
		sc := randomCheckpoint(r)
		got, err := codec.Marshal(sc)
		if err != nil {
			t.Fatal(err)
		}
		want, err := codec.Marshal(reflectCheckpoint(sc))
		if err != nil {
			t.Fatal(err)
		}
		// Reflection writes a map of maps in Go's random order; the codec
		// sorts it. With one key or none the bytes must be the same; with
		// more, the same value, and the same bytes every time.
		if len(sc.VersionsSeen) <= 1 && !bytes.Equal(got, want) {
			at := 0
			for at < min(len(got), len(want)) && got[at] == want[at] {
				at++
			}
			t.Fatalf("case %d: %+v encodes to\n% x, reflection to\n% x\n(from byte %d)", i, sc, got, want, at)
		}
		var back, wantBack reflectCheckpoint
		if err := codec.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if err := codec.Unmarshal(want, &wantBack); err != nil || !reflect.DeepEqual(back, wantBack) {
			t.Fatalf("case %d: reads back as %+v, reflection's bytes as %+v (%v)", i, back, wantBack, err)
		}
		for range 3 {
			if again, err := codec.Marshal(sc); err != nil || !bytes.Equal(again, got) {
				t.Fatalf("case %d: encoded again, other bytes (%v)", i, err)
			}
		}
		decodeBoth(got)
		if i%10 == 0 {
			for n := 1; n < len(got); n++ {
				decodeBoth(got[:n])
			}
		}
		// Keys in another order, an unknown key among them, a key left out.
		fields := []struct {
			k string
			v any
		}{{"uc", sc.UpdatedChannels}, {"zz", []any{1, "x"}}, {"vs", sc.VersionsSeen}, {"ts", sc.TS}, {"cv", sc.ChannelVersions}, {"v", sc.V}, {"hu", sc.HasUpdated}}
		r.Shuffle(len(fields), func(a, b int) { fields[a], fields[b] = fields[b], fields[a] })
		drop := r.IntN(len(fields) + 1)
		decodeBoth(envelope(t, func(enc *msgpack.Encoder) error {
			n := len(fields)
			if drop < len(fields) {
				n--
			}
			if err := enc.EncodeMapLen(n); err != nil {
				return err
			}
			for j, f := range fields {
				if j == drop {
					continue
				}
				if err := enc.EncodeString(f.k); err != nil {
					return err
				}
				if err := enc.Encode(f.v); err != nil {
					return err
				}
			}
			return nil
		}))
		// The array form reflection also reads.
		decodeBoth(envelope(t, func(enc *msgpack.Encoder) error {
			enc.UseArrayEncodedStructs(true)
			return enc.Encode(reflectCheckpoint(sc))
		}))
	}
	for _, v := range []any{nil, []any{}, []any{1, 2}, map[string]any{}, map[string]any{"v": "x"}, map[string]any{"cv": 3}, map[string]any{"ts": 4}, map[string]any{"hu": "y"}, map[string]any{"uc": map[string]any{}}, "str", 5} {
		decodeBoth(envelope(t, func(enc *msgpack.Encoder) error { return enc.Encode(v) }))
	}
}
