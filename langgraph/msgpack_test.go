package langgraph

import (
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLangGraphMsgpackScalars(t *testing.T) {
	for _, tc := range []struct {
		hex  string
		want any
	}{
		{"c0", nil}, {"c2", false}, {"c3", true},
		{"00", int64(0)}, {"7f", int64(127)}, {"ff", int64(-1)}, {"e0", int64(-32)},
		{"cc ff", int64(255)}, {"cd ffff", int64(65535)}, {"ce ffffffff", int64(math.MaxUint32)},
		{"cf 7fffffffffffffff", int64(math.MaxInt64)}, {"cf ffffffffffffffff", uint64(math.MaxUint64)},
		{"d0 80", int64(-128)}, {"d1 8000", int64(-32768)}, {"d2 80000000", int64(math.MinInt32)}, {"d3 8000000000000000", int64(math.MinInt64)},
		{"cb 3ff0000000000000", 1.0}, {"ca 3f800000", 1.0},
		{"a3 616263", "abc"}, {"d9 03 616263", "abc"}, {"da 0003 616263", "abc"}, {"db 00000003 616263", "abc"},
		{"92 01 a1 78", []any{int64(1), "x"}}, {"dc 0001 c0", []any{nil}}, {"dd 00000000", []any{}},
		{"81 a1 6b 01", map[string]any{"k": int64(1)}}, {"de 0000", map[string]any{}},
	} {
		got, err := decodePy(unhex(t, tc.hex))
		if err != nil {
			t.Fatalf("%s: %v", tc.hex, err)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Fatalf("%s (-want +got):\n%s", tc.hex, d)
		}
	}
}

// Values the engine's values cannot hold keep their bytes, and say why.
func TestLangGraphMsgpackRaw(t *testing.T) {
	for _, tc := range []struct{ hex, why string }{
		{"c4 02 0102", "bytes"},
		{"cb 7ff8000000000000", "a non-finite float"},
		{"81 01 a1 78", "a map with a non-string key"},
		{"92 01 c4 00", "bytes"},
		// FORMATS.md's examples: a datetime, a set, an empty DeltaChannel snapshot.
		{"c7 43 03 94 a8 6461746574696d65 a8 6461746574696d65 d9 20 323032362d31312d33305430393a31353a33302e3132333435362b30303a3030 ad 66726f6d69736f666f726d6174", "datetime.datetime"},
		{"c7 13 00 93 a8 6275696c74696e73 a3 736574 92 a1 61 a1 62", "builtins.set"},
		{"d4 07 90", "a DeltaChannel snapshot"},
	} {
		b := unhex(t, tc.hex)
		v, err := decodePy(b)
		if err != nil {
			t.Fatalf("%s: %v", tc.hex, err)
		}
		raw, ok := v.(*pyRaw)
		if !ok || raw.why != tc.why || string(raw.data) != string(b) {
			t.Fatalf("%s: %#v, want a raw value (%s) with its bytes", tc.hex, v, tc.why)
		}
	}
	snap, _ := decodePy(unhex(t, "d4 07 90"))
	if inner, ok := snapshotOf(snap); !ok || cmp.Diff([]any{}, inner) != "" {
		t.Fatalf("snapshot value %v %v", inner, ok)
	}
}

func TestLangGraphMsgpackRefusesBadBytes(t *testing.T) {
	for _, tc := range []struct{ hex, why string }{
		{"", "truncated"},
		{"c1", "starts no msgpack value"},
		{"a5 6162", "truncated"},
		{"dd ffffffff", "truncated"}, // a hostile length: refused before allocating
		{"df ffffffff", "truncated"},
		{"c9 ffffffff 05", "truncated"},
		{"d4 2a 90", "unknown msgpack extension type 42"},
		{"d4 00 90", "not [module, name, argument"},
		{"c7 03 03 93 a1 61", "truncated"},
		{strings.Repeat("91", 600) + "c0", "nested more than"},
	} {
		_, err := decodePy(unhex(t, tc.hex))
		if !errors.Is(err, errMsgpack) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%q: %v, want %q", tc.hex, err, tc.why)
		}
	}
}

// Every proper prefix of a document is refused, never read as something.
func TestLangGraphMsgpackTruncation(t *testing.T) {
	doc := unhex(t, "83 a1 61 92 c7 13 00 93 a8 6275696c74696e73 a3 736574 92 a1 61 a1 62 cb 3ff0000000000000 a1 62 c4 03 010203 a1 63 de 0001 a1 64 dc 0002 cd 0100 d3 8000000000000000")
	if _, err := decodePy(doc); err != nil {
		t.Fatal(err)
	}
	for n := range len(doc) {
		if v, err := decodePy(doc[:n]); err == nil {
			t.Fatalf("a prefix of %d bytes decoded as %v", n, v)
		}
	}
}

func TestLangGraphMsgpackEncode(t *testing.T) {
	set := unhex(t, "c7 13 00 93 a8 6275696c74696e73 a3 736574 92 a1 61 a1 62")
	raw, _ := decodePy(set)
	for _, tc := range []struct {
		in  any
		hex string
	}{
		{int64(5), "05"}, {int64(-5), "fb"}, {int64(200), "cc c8"}, {int64(-200), "d1 ff38"}, {int64(70000), "ce 00011170"},
		{uint64(math.MaxUint64), "cf ffffffffffffffff"}, {1.5, "cb 3ff8000000000000"}, {"ab", "a2 6162"},
		{strings.Repeat("x", 40), "d9 28" + strings.Repeat("78", 40)},
		{[]any{raw, nil, true}, "93" + hex.EncodeToString(set) + "c0 c3"},
		{map[string]any{"b": int64(1), "a": false}, "82 a1 61 c2 a1 62 01"},
	} {
		got, err := encodePy(nil, tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if want := unhex(t, tc.hex); string(got) != string(want) {
			t.Errorf("%v: % x, want % x", tc.in, got, want)
		}
	}
}

// fuzz budget: 20000
func FuzzDecodePy(f *testing.F) {
	for _, s := range []string{"c0", "d4 07 90", "83 a1 61 92 c7 13 00 93 a8 6275696c74696e73 a3 736574 92 a1 61 a1 62 cb 3ff0000000000000 a1 62 c4 03 010203 a1 63 de 0001 a1 64 dc 0002 cd 0100 d3 8000000000000000"} {
		f.Add(unhex(f, s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodePy(b)
		if err != nil {
			if !errors.Is(err, errMsgpack) {
				t.Fatalf("an error that is not errMsgpack: %v", err)
			}
			return
		}
		// What decodes re-encodes to a document that decodes the same.
		again, err := encodePy(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		w, err := decodePy(again)
		if err != nil {
			t.Fatalf("% x re-encoded as % x, which does not decode: %v", b, again, err)
		}
		// reflect.DeepEqual first: cmp.Diff takes time exponential in the
		// nesting of []any (a 30-deep list hung the fuzzer), so it only
		// explains a difference.
		if reflect.DeepEqual(v, w) {
			return
		}
		if d := cmp.Diff(v, w, cmp.Comparer(func(a, b *pyRaw) bool { return string(a.data) == string(b.data) })); d != "" {
			t.Fatalf("% x: re-decoded differently:\n%s", b, d)
		}
	})
}
