package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/records"
	"github.com/google/go-cmp/cmp"
)

// Fuzz targets for the record surfaces' input checks and for the msgpack
// reader that filters use on stored bytes.

func FuzzStoreNamespace(f *testing.F) {
	for _, s := range []string{"users", "x') OR '1'='1", `a"]'); DROP TABLE x; --`, "a.b", "", "*", "ünï", "a/b|c", "\x00", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seg string) {
		ns := []string{"root", seg}
		joined, err := joinNamespace(ns)
		if err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("%q: untyped error %v", seg, err)
			}
			return
		}
		if seg == "" || !utf8.ValidString(seg) || strings.ContainsAny(seg, ".* '\"();[]\\`$\n\r\t") {
			t.Fatalf("accepted hostile segment %q", seg)
		}
		if got := strings.Split(joined, "."); !slices.Equal(got, ns) {
			t.Fatalf("%q does not round-trip: %q", seg, got)
		}
	})
}

func FuzzStoreFilter(f *testing.F) {
	value, _ := codec.Marshal(map[string]any{"a": map[string]any{"b": 3}, "s": "x", "f": 1.5})
	f.Add("a.b", "$gt", int64(2), "x", value)
	f.Add("x') OR '1'='1", "$eq", int64(0), "", value)
	f.Add(`a"]'); DROP TABLE x; --`, "$where", int64(1), "y", []byte{0x01, 0xdf, 0xff, 0xff, 0xff, 0xff})
	f.Add("s", "$lte", int64(-1), "z", []byte{0x01, 0x81, 0xa1, 's', 0xc1})
	f.Fuzz(func(t *testing.T, key, op string, n int64, s string, stored []byte) {
		for _, filter := range []map[string]any{
			{key: map[string]any{op: n}},
			{key: s},
			{key: map[string]any{"inner": map[string]any{op: s}}},
		} {
			for _, compile := range []func(map[string]any) (*recFilter, error){compileStoreFilter, compileMetadataFilter} {
				rf, err := compile(filter)
				if err != nil {
					if !errors.Is(err, ErrInvalidArgument) {
						t.Fatalf("%v: untyped error %v", filter, err)
					}
					continue
				}
				for _, c := range rf.conds {
					for _, seg := range c.path {
						if !validFilterSegment(seg) {
							t.Fatalf("%v: accepted path segment %q", filter, seg)
						}
					}
				}
				rf.match(stored) // must not panic on any bytes
			}
		}
	})
}

// FuzzMsgpackReader checks the filter's byte reader against the codec: it
// never panics, it skips exactly the value the codec decodes, and on
// canonical bytes every lookup finds what walking the decoded map finds.
func FuzzMsgpackReader(f *testing.F) {
	for _, v := range []any{
		map[string]any{"a": 1, "b": map[string]any{"c": []any{1, "x", nil}, "d": 2.5}},
		map[string]any{"big": strings.Repeat("x", 300), "n": -70000, "u": uint64(1 << 63)},
		[]any{1, 2},
	} {
		b, _ := codec.Marshal(v)
		f.Add(b[1:], "b.c")
	}
	f.Add([]byte{0xdf, 0xff, 0xff, 0xff, 0xff}, "a")
	f.Add([]byte{0xc1}, "")
	f.Fuzz(func(t *testing.T, body []byte, dotted string) {
		path := strings.Split(dotted, ".")
		mpLookup(body, path)
		if raw, found, err := mpLookup(body, path); err == nil && found {
			mpRead(raw)
		}
		end, skipErr := mpSkip(body, 0)
		var v any
		if err := codec.Unmarshal(append([]byte{codec.FormatV1}, body...), &v); err != nil {
			return
		}
		if skipErr != nil || end != len(body) {
			t.Fatalf("codec decodes %d bytes, mpSkip says %d (%v)", len(body), end, skipErr)
		}
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		canon, err := codec.Marshal(m)
		if err != nil {
			return
		}
		raw, found, err := mpLookup(canon[1:], path)
		if err != nil {
			t.Fatalf("lookup on canonical bytes: %v", err)
		}
		want, wantFound := lookupPath(m, path)
		if found != wantFound {
			t.Fatalf("path %q: found %v, decoded walk %v", dotted, found, wantFound)
		}
		if found {
			got, err := mpDecode(raw)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("path %q (-walk +lookup):\n%s", dotted, diff)
			}
		}
	})
}

func FuzzEventTraceCut(f *testing.F) {
	f.Add("aaaaaaaaaéz", 10)
	f.Add("😀😀😀", 5)
	f.Add("\xff\xfe", 1)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		if limit <= 0 || limit > 1<<20 {
			return
		}
		got, md, err := cutTrace(s, nil, limit)
		if err != nil {
			t.Fatal(err)
		}
		out := got.(string)
		if len(out) > limit || !strings.HasPrefix(s, out) {
			t.Fatalf("cut %q to %d: %q", s, limit, out)
		}
		if utf8.ValidString(s) && !utf8.ValidString(out) {
			t.Fatalf("cut %q inside a rune: %q", s, out)
		}
		if cut := len(s) > limit; cut != (md[records.MetaContentTruncated] == true) {
			t.Fatalf("cut %v but metadata %v", cut, md)
		}
	})
}

// FuzzModelTokens checks the direct reader of token_usage_by_model against
// the codec: on bytes the codec decodes into the same shape, both agree; on
// anything else the reader returns an error or a result, never a panic.
func FuzzModelTokens(f *testing.F) {
	for _, v := range []any{
		map[string]records.ModelTokens{"gpt-x": {Input: 100, Output: 50, Total: 150}, "mini": {Input: 1, Output: 2, Total: 3}},
		map[string]any{"m": map[string]any{"input": 1, "extra": "skip me", "total": 70000}},
		map[string]any{},
		[]any{1},
	} {
		b, _ := codec.Marshal(v)
		f.Add(b)
	}
	f.Add([]byte{0x01, 0x81, 0xa1, 'm', 0x81, 0xa5, 't', 'o', 't', 'a', 'l', 0xcb})
	f.Fuzz(func(t *testing.T, stored []byte) {
		got := map[string]records.ModelTokens{}
		err := mpModelTokens(stored, got)
		var want map[string]records.ModelTokens
		if codec.Unmarshal(stored, &want) != nil || err != nil {
			return // shapes the codec refuses (or we refuse) prove nothing here
		}
		if want == nil {
			want = map[string]records.ModelTokens{}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("direct reader vs codec (-codec +reader):\n%s", diff)
		}
	})
}
