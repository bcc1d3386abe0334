package codec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vmihailenco/msgpack/v5"
)

func rawMsgpack(t testing.TB, f func(enc *msgpack.Encoder) error) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteByte(FormatV1)
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	if err := f(enc); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// roundTrip checks msgpack -> JSON -> msgpack gives the same bytes and
// returns the JSON.
func roundTrip(t testing.TB, data []byte) string {
	t.Helper()
	var js bytes.Buffer
	if _, err := EnvelopeToJSON(context.Background(), &js, data); err != nil {
		t.Fatalf("% x: %v", data[:min(len(data), 32)], err)
	}
	if !json.Valid(js.Bytes()) {
		t.Fatalf("not JSON: %.200s", js.Bytes())
	}
	back, err := JSONToEnvelope(js.Bytes(), FormatV1, 0, MaxSize)
	if err != nil {
		t.Fatalf("%.200s: %v", js.Bytes(), err)
	}
	if !bytes.Equal(back, data) {
		t.Fatalf("%.200s: msgpack changed:\n% x\n% x", js.Bytes(), data[:min(len(data), 64)], back[:min(len(back), 64)])
	}
	return js.String()
}

// TestMsgpackJSONIsLossless checks the transcoder on values JSON cannot
// say directly: each survives msgpack -> JSON -> msgpack byte for byte.
func TestMsgpackJSONIsLossless(t *testing.T) {
	raw := func(f func(enc *msgpack.Encoder) error) []byte { return rawMsgpack(t, f) }
	values := map[string][]byte{
		"int vs float": raw(func(e *msgpack.Encoder) error {
			return e.Encode([]any{int64(1), 1.0, -1, -200, 300, uint64(math.MaxUint64), -1e300, 0.1, math.MinInt64, -40000, -3000000000})
		}),
		"float32": raw(func(e *msgpack.Encoder) error { return e.EncodeFloat32(1.5) }),
		"f32 odd": raw(func(e *msgpack.Encoder) error {
			return e.Encode([]any{float32(math.NaN()), float32(math.Inf(-1)), float32(3)})
		}),
		"non-finite": raw(func(e *msgpack.Encoder) error { return e.Encode([]any{math.NaN(), math.Inf(1), math.Inf(-1)}) }),
		"bin":        raw(func(e *msgpack.Encoder) error { return e.EncodeBytes([]byte{0, 1, 2, 255}) }),
		"big bin":    raw(func(e *msgpack.Encoder) error { return e.EncodeBytes(bytes.Repeat([]byte{7}, 70000)) }),
		"bad utf8":   raw(func(e *msgpack.Encoder) error { return e.EncodeString("a\xffb") }),
		"ext": raw(func(e *msgpack.Encoder) error {
			return e.Encode(map[string]any{"t": msgpack.RawMessage{0xd6, 0xff, 0, 0, 0, 1}})
		}),
		"ext8": raw(func(e *msgpack.Encoder) error {
			return e.Encode([]any{msgpack.RawMessage{0xc7, 3, 0x05, 1, 2, 3}, msgpack.RawMessage{0xd4, 0x80, 9}, msgpack.RawMessage{0xc7, 0, 0x7f}})
		}),
		"int keys": raw(func(e *msgpack.Encoder) error {
			e.EncodeMapLen(2)
			e.EncodeInt(1)
			e.EncodeString("one")
			e.EncodeString("two")
			return e.EncodeInt(2)
		}),
		"nested $map": raw(func(e *msgpack.Encoder) error {
			e.EncodeMapLen(1)
			e.EncodeString("$map")
			e.EncodeMapLen(1)
			e.EncodeInt(7)
			return e.Encode(map[string]any{"$bin": []any{}})
		}),
		"tag lookalike": raw(func(e *msgpack.Encoder) error { return e.Encode(map[string]any{"$bin": "not base64"}) }),
		"tag first of two": raw(func(e *msgpack.Encoder) error {
			e.EncodeMapLen(2)
			e.EncodeString("$map")
			e.EncodeInt(1)
			e.EncodeString("b")
			return e.EncodeNil()
		}),
		"unsorted map": raw(func(e *msgpack.Encoder) error {
			e.EncodeMapLen(2)
			e.EncodeString("z")
			e.EncodeNil()
			e.EncodeString("a")
			return e.EncodeBool(true)
		}),
		"text": raw(func(e *msgpack.Encoder) error {
			return e.EncodeString("quote \" backslash \\ newline \n tab \t nul \x00 <html> é 😀 \u2028")
		}),
		"long":   raw(func(e *msgpack.Encoder) error { return e.EncodeString(strings.Repeat("x", 70000)) }),
		"empty":  raw(func(e *msgpack.Encoder) error { return e.Encode([]any{map[string]any{}, []any{}, "", nil}) }),
		"wide":   raw(func(e *msgpack.Encoder) error { return e.Encode(wideMap(70000)) }),
		"widely": raw(func(e *msgpack.Encoder) error { return e.Encode(make([]any, 70000)) }),
		"nesting": raw(func(e *msgpack.Encoder) error {
			return e.Encode([]any{[]any{map[string]any{"a": []any{}}}, map[string]any{}})
		}),
	}
	for name, data := range values {
		t.Run(name, func(t *testing.T) { roundTrip(t, data) })
	}
	if got := roundTrip(t, values["int vs float"]); !strings.HasPrefix(got, "[1,1.0,-1,-200,300,18446744073709551615,") {
		t.Errorf("integers and floats: %s", got)
	}
	if got := roundTrip(t, values["int keys"]); got != `{"$map":[[1,"one"],["two",2]]}` {
		t.Errorf("int keys: %s", got)
	}
	// Compressed values come back compressed the same way (zstd, DEFLATE)
	// and decode to the same value.
	for _, effort := range []int{Small, Fast} {
		stored, err := MarshalCompressed(map[string]any{"text": strings.Repeat("abc ", 2000)}, effort)
		if err != nil || stored[0] == FormatV1 {
			t.Fatalf("fixture not compressed: %v", err)
		}
		var js bytes.Buffer
		format, err := EnvelopeToJSON(context.Background(), &js, stored)
		if err != nil || format != stored[0] {
			t.Fatalf("compressed value: envelope %#x, %v", format, err)
		}
		back, err := JSONToEnvelope(js.Bytes(), format, Small, MaxSize)
		if err != nil || back[0] != stored[0] {
			t.Fatalf("re-encoded: %v", err)
		}
		var a, b any
		if err := Unmarshal(stored, &a); err != nil {
			t.Fatal(err)
		}
		if err := Unmarshal(back, &b); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(a, b); diff != "" {
			t.Fatal(diff)
		}
	}
	// Garbage is an error matching ErrCorrupt, not a panic.
	for _, bad := range [][]byte{{}, {0x07}, {0x01, 0xc1}, {0x01, 0xdd, 0xff, 0xff, 0xff, 0xff}, {0x01, 0x91}, {0x02, 0xff}, {0x03, 0x28, 0xb5, 0x2f, 0xfd}, {0x01, 0xc0, 0xc0}} {
		var out bytes.Buffer
		if _, err := EnvelopeToJSON(context.Background(), &out, bad); !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
			t.Errorf("% x: %v", bad, err)
		}
	}
}

func wideMap(n int) map[string]any {
	m := make(map[string]any, n)
	for i := range n {
		m[string(rune('a'+i%26))+strings.Repeat("k", i/26%5)+string(rune('0'+i%10))+string(rune(i))] = int64(i)
	}
	return m
}

func TestJSONToMsgpackRefusesBadInput(t *testing.T) {
	for _, in := range []string{
		``, `{`, `[1,]`, `[1 2]`, `{"a" 1}`, `{"a":}`, `{1:2}`, `"abc`, `"a\qb"`, `"\ud800"`, `"\udc00x"`, "\"a\x01\"",
		"\"\xff\"", `tru`, `nul`, `01`, `-`, `1.`, `1e`, `.5`, `+1`, `1 2`, `99999999999999999999999`, `1e999`,
		`{"$bin":"!!"}`, `{"$bin":1}`, `{"$str":null}`, `{"$f32":"x"}`, `{"$float":1.5}`, `{"$ext":[1]}`,
		`{"$ext":[300,"AA=="]}`, `{"$ext":["1","AA=="]}`, `{"$map":[[1]]}`, `{"$map":[1]}`, `{"$map":{}}`, `{"$map":[[1,2,3]]}`,
		`NaN`, `[Infinity]`,
	} {
		if b, err := JSONToEnvelope([]byte(in), FormatV1, 0, MaxSize); !errors.Is(err, ErrJSON) {
			t.Errorf("%q: % x, %v (want ErrJSON)", in, b, err)
		}
	}
	// Surrogate pairs and the usual escapes are read.
	b, err := JSONToEnvelope([]byte(`"\ud83d\ude00\u00e9\n\/"`), FormatV1, 0, MaxSize)
	var s string
	if err != nil || Unmarshal(b, &s) != nil || s != "😀é\n/" {
		t.Fatalf("escapes: %q, %v", s, err)
	}
	// The bound holds while reading, for strings and containers alike.
	for _, in := range []string{`"` + strings.Repeat("x", 100) + `"`, `[` + strings.Repeat(`[],`, 100) + `1]`} {
		if _, err := JSONToEnvelope([]byte(in), FormatV1, 0, 50); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%.20s over the bound: %v", in, err)
		}
	}
}

// nested returns msgpack for depth containers nested in one another
// (maps or arrays), each with one entry, around a short string.
func nested(t testing.TB, depth int, maps bool) []byte {
	t.Helper()
	var v any = "leaf"
	for range depth {
		if maps {
			v = map[string]any{"k": v}
		} else {
			v = []any{v}
		}
	}
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestMsgpackToJSONIsLinear bounds the work of the transcoder by its input:
// each value is visited once to survey and once to write. The transcoder
// it replaced pre-scanned every map entry with a skip that pre-scanned
// again, so its work doubled with each level of nesting (24 nested maps:
// 23.6 s for a 400-byte value).
func TestMsgpackToJSONIsLinear(t *testing.T) {
	works := map[int]int{}
	for _, depth := range []int{24, 40, 100, 511, 512} {
		for _, maps := range []bool{true, false} {
			body := nested(t, depth, maps)
			var js bytes.Buffer
			work, err := msgpackToJSON(context.Background(), &js, body)
			if err != nil {
				t.Fatalf("depth %d: %v", depth, err)
			}
			values := 2*depth + 1 // keys, maps and the leaf (arrays: fewer)
			if work > 2*values {
				t.Errorf("depth %d (maps %v): %d values visited for %d values", depth, maps, work, values)
			}
			if maps {
				works[depth] = work
			}
			back, err := JSONToEnvelope(js.Bytes(), FormatV1, 0, MaxSize)
			if err != nil || !bytes.Equal(back[1:], body) {
				t.Fatalf("depth %d does not round-trip: %v", depth, err)
			}
		}
	}
	if r := float64(works[512]) / float64(works[40]); r > 512.0/40*1.1 {
		t.Errorf("12.8x the depth cost %.1fx the work", r)
	}
	// One level more is refused by both directions, as by every reader.
	for _, depth := range []int{513, 600} {
		var js bytes.Buffer
		if _, err := msgpackToJSON(context.Background(), &js, nested(t, depth, true)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("depth %d: %v", depth, err)
		}
		in := strings.Repeat(`{"k":`, depth) + `1` + strings.Repeat(`}`, depth)
		if _, err := JSONToEnvelope([]byte(in), FormatV1, 0, MaxSize); !errors.Is(err, ErrTooDeep) {
			t.Errorf("JSON depth %d: %v", depth, err)
		}
	}
	// Ten times the input, at most ten times the work (and no more than
	// twice the values), for wide values too.
	small, large := wideList(t, 10000), wideList(t, 100000)
	var js bytes.Buffer
	w1, err1 := msgpackToJSON(context.Background(), &js, small)
	w2, err2 := msgpackToJSON(context.Background(), &js, large)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if float64(w2)/float64(w1) > 10.5 || w2 > 2*(4*100000+1) {
		t.Errorf("wide values: %d then %d values visited", w1, w2)
	}
}

// wideList is n small maps in a list (4 values each).
func wideList(t testing.TB, n int) []byte {
	l := make([]any, n)
	for i := range l {
		l[i] = map[string]any{"i": i}
	}
	var buf bytes.Buffer
	if err := msgpack.NewEncoder(&buf).Encode(l); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestMsgpackToJSONHonoursContext: a cancelled context stops the
// transcoder inside one value, long before its end.
func TestMsgpackToJSONHonoursContext(t *testing.T) {
	body := wideList(t, 200000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var js bytes.Buffer
	work, err := msgpackToJSON(ctx, &js, body)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if work > 2*jsonCheckEvery {
		t.Fatalf("cancelled transcoding visited %d values", work)
	}
	p := newJSONParser(nil, []byte(`[`+strings.Repeat(`{"i":1},`, 100000)+`1]`), MaxSize)
	p.ctx = ctx
	if _, err := p.one(); !errors.Is(err, context.Canceled) || p.work > 2*jsonCheckEvery {
		t.Fatalf("cancelled parse: %v after %d values", err, p.work)
	}
}

func TestMarshalRefusesWhatReadersRefuse(t *testing.T) {
	for _, depth := range []int{511, 512, 513} {
		for _, maps := range []bool{true, false} {
			var v any = "leaf"
			for range depth {
				if maps {
					v = map[string]any{"k": v}
				} else {
					v = []any{v}
				}
			}
			data, err := Marshal(v)
			if depth > MaxDepth {
				if !errors.Is(err, ErrTooDeep) {
					t.Errorf("depth %d (maps %v): %v", depth, maps, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("depth %d: %v", depth, err)
			}
			var back any
			if err := Unmarshal(data, &back); err != nil {
				t.Fatalf("depth %d does not read back: %v", depth, err)
			}
			roundTrip(t, data)
		}
	}
	// The error says where.
	v := map[string]any{"a": []any{1, map[string]any{"deep": nil}}}
	inner := v["a"].([]any)[1].(map[string]any)
	var d any = 1
	for range 600 {
		d = []any{d}
	}
	inner["deep"] = d
	_, err := Marshal(v)
	if !errors.Is(err, ErrTooDeep) || !strings.Contains(err.Error(), "a[1].deep[0]") {
		t.Fatalf("deep value: %v", err)
	}
	// A cyclic value fails instead of exhausting the stack.
	cyc := map[string]any{}
	cyc["self"] = cyc
	if _, err := Marshal(cyc); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("cyclic value: %v", err)
	}
	list := []any{nil}
	list[0] = list
	if _, err := Marshal(list); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("cyclic list: %v", err)
	}
	// Messages are checked the same way (their own encoder).
	m := Message{ID: "x", Type: AI, Content: "c", AdditionalKwargs: map[string]any{"k": d}}
	if _, err := Marshal([]Message{m}); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("deep message: %v", err)
	}
}

// lazyLine produces a header line, then one line of n bytes (a JSON
// string) without ever holding it, then a short line.
type lazyLine struct {
	head, tail string
	n, done    int64
	stage      int
}

func (l *lazyLine) Read(p []byte) (int, error) {
	switch l.stage {
	case 0:
		l.stage++
		return copy(p, l.head+`"`), nil
	case 1:
		k := int(min(int64(len(p)), l.n-l.done))
		for i := range k {
			p[i] = 'x'
		}
		l.done += int64(k)
		if l.done == l.n {
			l.stage++
		}
		return k, nil
	case 2:
		l.stage++
		return copy(p, "\"\n"+l.tail), nil
	}
	return 0, io.EOF
}

func TestJSONLinesBoundsEachLine(t *testing.T) {
	in := "{\"a\":1}\n\n  \n[1,{\"$bin\":\"AQI=\"}]\r\n\"last\""
	l := NewJSONLines(context.Background(), strings.NewReader(in), 1<<20, 1<<20)
	var got []string
	for {
		b, err := l.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var js bytes.Buffer
		if err := MsgpackToJSON(context.Background(), &js, b); err != nil {
			t.Fatal(err)
		}
		got = append(got, js.String())
	}
	if want := []string{`{"a":1}`, `[1,{"$bin":"AQI="}]`, `"last"`}; !cmp.Equal(got, want) {
		t.Fatalf("lines %q", got)
	}
	if l.Line() != 5 {
		t.Fatalf("line count %d", l.Line())
	}
	for _, bad := range []string{"{\"a\":\n1}", "[1] [2]", "{}\n{"} {
		l := NewJSONLines(context.Background(), strings.NewReader(bad), 1<<20, 1<<20)
		var err error
		for err == nil {
			_, err = l.Next()
		}
		if !errors.Is(err, ErrJSON) || !strings.HasPrefix(err.Error(), "line ") {
			t.Errorf("%q: %v", bad, err)
		}
	}

	// A line of 2 GiB is refused after the bound, reading it in a buffer:
	// memory stays flat whatever the line's length.
	const maxLine = 8 << 20
	src := &lazyLine{head: "{\"table\":\"x\"}\n", n: 2 << 30, tail: "{}\n"}
	l = NewJSONLines(context.Background(), src, maxLine, 1<<30)
	if _, err := l.Next(); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := l.Next()
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrLineTooLong) || !strings.HasPrefix(err.Error(), "line 2:") {
		t.Fatalf("long line: %v", err)
	}
	if src.done > maxLine+1<<20 {
		t.Fatalf("read %d bytes of the long line, bound %d", src.done, maxLine)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8*maxLine { // a 2 GiB line: nowhere near
		t.Fatalf("allocated %d bytes for a line bounded at %d", grew, maxLine)
	}
	// A long value is refused at the value bound, before the line bound.
	src = &lazyLine{head: "", n: 100 << 20, tail: "{}\n"}
	l = NewJSONLines(context.Background(), src, 1<<30, 1<<20)
	runtime.ReadMemStats(&before)
	_, err = l.Next()
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) || errors.Is(err, ErrLineTooLong) {
		t.Fatalf("long value: %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Fatalf("allocated %d bytes for a value bounded at 1 MiB", grew)
	}
	// So is a long list, counted as the value it makes, not as what the
	// parser holds before its second pass.
	lr := &repeatReader{prefix: "[", unit: "1,", n: 1 << 30}
	l = NewJSONLines(context.Background(), lr, 1<<40, 1<<20)
	runtime.ReadMemStats(&before)
	_, err = l.Next()
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) || lr.read > 3<<20 {
		t.Fatalf("long list: %v after %d bytes", err, lr.read)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Fatalf("allocated %d bytes for a value bounded at 1 MiB", grew)
	}
}

// repeatReader produces prefix and then unit n times, lazily.
type repeatReader struct {
	prefix, unit string
	n, read      int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	k := 0
	for k < len(p) {
		if r.prefix != "" {
			c := copy(p[k:], r.prefix)
			r.prefix = r.prefix[c:]
			k += c
			continue
		}
		if r.n == 0 {
			break
		}
		if len(p)-k < len(r.unit) {
			break
		}
		k += copy(p[k:], r.unit)
		r.n--
	}
	r.read += k
	if k == 0 {
		return 0, io.EOF
	}
	return k, nil
}

func FuzzMsgpackJSON(f *testing.F) {
	f.Add([]byte{0x01, 0x93, 0x01, 0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0xa1, 'x'})
	f.Add([]byte{0x01, 0x81, 0xa4, '$', 'b', 'i', 'n', 0xc0})
	f.Add([]byte{0x01, 0x81, 0xa4, '$', 'm', 'a', 'p', 0x81, 0x01, 0x02})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 0 && data[0] != FormatV1 {
			return // compressed values are re-encoded, not byte for byte
		}
		var js bytes.Buffer
		if _, err := EnvelopeToJSON(context.Background(), &js, data); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		back, err := JSONToEnvelope(js.Bytes(), FormatV1, 0, MaxSize)
		if err != nil {
			t.Fatalf("%s: %v", js.Bytes(), err)
		}
		var js2 bytes.Buffer
		if _, err := EnvelopeToJSON(context.Background(), &js2, back); err != nil || js.String() != js2.String() {
			t.Fatalf("second pass: %v\n%s\n%s", err, js.Bytes(), js2.Bytes())
		}
	})
}

// FuzzJSONToMsgpack: any input is a value or an error matching ErrJSON,
// ErrTooDeep or ErrTooLarge; a value written back as JSON reads the same.
func FuzzJSONToMsgpack(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x",null,true]}`, `{"$map":[[1,{"$bin":"AA=="}]]}`, `{"$ext":[-1,"AAAA"]}`, `"\u00e9"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		b, err := JSONToEnvelope(in, FormatV1, 0, 1<<20)
		if err != nil {
			if !errors.Is(err, ErrJSON) && !errors.Is(err, ErrTooDeep) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("%q: untyped error %v", in, err)
			}
			return
		}
		// What Check accepts, Unmarshal reads (maps with other keys and
		// extensions are transcoded, and refused by Check).
		if Check(b[1:]) == nil {
			var v any
			if err := Unmarshal(b, &v); err != nil {
				t.Fatalf("%q: checked, but unreadable % x: %v", in, b, err)
			}
		}
		roundTrip(t, b)
	})
}

// FuzzCheck: whatever Check accepts, Unmarshal reads, and Marshal writes
// again.
func FuzzCheck(f *testing.F) {
	seedCorpus(f)
	f.Add([]byte{FormatV1, 0x81, 0x01, 0x02})
	f.Add([]byte{FormatV1, 0xd6, 0xff, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || data[0] != FormatV1 || Check(data[1:]) != nil {
			return
		}
		var v any
		if err := Unmarshal(data, &v); err != nil {
			t.Fatalf("% x passes Check but does not read: %v", data, err)
		}
		if _, err := Marshal(v); err != nil {
			t.Fatalf("% x reads as %v, which does not write: %v", data, v, err)
		}
	})
}
