//go:build js || (wasip1 && hostsqlite)

package bridge

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine"
)

// TestFastEncodeWritesWhatMarshalWrites: every value appendJSON takes comes
// out byte for byte as json.Marshal writes it, and a value it does not know
// is left to json.Marshal.
func TestFastEncodeWritesWhatMarshalWrites(t *testing.T) {
	strs := []string{"", "plain", "q\"b\\s/", "<a href='x'>&amp;</a>", "\x00\x01\b\f\n\r\t\x1f\x7f", "é😀\u2028\u2029\ufffd",
		"bad \xff utf8 \xe2\x82", "\xed\xa0\x80 surrogate bytes", "end\xc3"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = byte(rng.IntN(256))
			if rng.IntN(3) == 0 {
				const special = "<>&\"\\\n\xe2\x80\xa8"
				b[i] = special[rng.IntN(len(special))]
			}
		}
		strs = append(strs, string(b))
	}
	floats := []float64{0, math.Copysign(0, -1), 1, -1.5, 0.1, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 123456789012345678, 1e300, -2.5e-300, math.MaxFloat64, math.SmallestNonzeroFloat64}
	for range 200 {
		if f := math.Float64frombits(rng.Uint64()); !math.IsNaN(f) && !math.IsInf(f, 0) {
			floats = append(floats, f)
		}
	}
	parent := &engine.Config{ThreadID: "t", CheckpointNS: "ns", CheckpointID: "p"}
	upd := []string{"messages", "<x>"}
	var nilUpd []string
	seed := wBlob{T: "json", B: 3}
	vals := []any{
		nil, "s", true, false, 0, -7, int64(math.MinInt64), int32(5), uint64(math.MaxUint64), channels.ModeDelta, struct{}{},
		map[string]any(nil), map[string]any{}, map[string]string(nil), map[string]int{"cursor": 3, "a": -1}, []any(nil), []any{}, []string(nil), []string{},
		engine.Config{}, engine.Config{ThreadID: "t", CheckpointID: "c"}, (*engine.Config)(nil), parent,
		map[string]any{"h": 1, "mode": channels.ModeFull, "every": 0, "autoRetain": true},
		map[string]any{"config": engine.Config{ThreadID: "t", CheckpointNS: "", CheckpointID: "c1"}},
		map[string]any{"tuple": nil},
		map[string]any{"results": []any{map[string]any{"ok": map[string]any{"config": engine.Config{ThreadID: "x"}}}, map[string]any{"ok": struct{}{}},
			map[string]string{"error": "agentstate: <bad> & worse", "code": "NOT_FOUND"}}},
		wTuple{},
		wTuple{Config: engine.Config{ThreadID: "t"}, Checkpoint: wCheckpoint{V: 4, ID: "c", TS: "2026", Values: map[string]wBlob{"b": {"json", 1}, "a": {"bytes", 0}},
			Versions: map[string]string{"z": "1", "a": "2"}, Seen: map[string]map[string]string{"n": {"a": "1"}, "m": nil, "o": {}}, Updated: &upd},
			Metadata: map[string]any{"source": "loop", "step": int64(3), "f": 1.5, "parents": map[string]any{}, "l": []any{int64(1), "a", nil, true, map[string]any{"x": 0.25}}},
			Parent:   parent, Writes: []wWrite{{TaskID: "t1", Channel: "c", Value: wBlob{"json", 2}, TaskPath: "~p", Idx: -1}}},
		wTuple{Checkpoint: wCheckpoint{Updated: &nilUpd}, Metadata: map[string]any{}, Writes: []wWrite{}},
		[]wTuple{{}, {Parent: parent}}, []wTuple(nil),
		map[string]any{"history": map[string]wHistory{"b": {Writes: nil}, "a": {Seed: &seed, Writes: []wWrite{{Idx: 1}}}}, "historyChannels": []string{"a", "b"}},
		map[string]wHistory(nil),
	}
	for _, s := range strs {
		vals = append(vals, s, map[string]any{s: s}, map[string]string{s: "v", "k": s})
	}
	for _, f := range floats {
		vals = append(vals, f, map[string]any{"f": f, "l": []any{f, -f}})
	}
	for _, v := range vals {
		want, wantErr := json.Marshal(v)
		got, ok := appendJSON(nil, v)
		if !ok {
			t.Errorf("appendJSON(%#v) does not know the value", v)
			continue
		}
		if wantErr != nil || string(got) != string(want) {
			t.Errorf("appendJSON(%#v):\n got %s\nwant %s (%v)", v, got, want, wantErr)
		}
	}
	for _, v := range []any{math.NaN(), math.Inf(1), map[string]any{"x": json.Number("1")}, map[string]any{"t": struct{ A int }{1}},
		wTuple{Metadata: map[string]any{"n": math.Inf(-1)}}, []any{1, uint8(2)}} {
		if _, ok := appendJSON(nil, v); ok {
			t.Errorf("appendJSON(%#v) took a value it should leave to json.Marshal", v)
		}
		want, wantErr := json.Marshal(v)
		got, err := Encode(v)
		if string(got) != string(want) || (err == nil) != (wantErr == nil) {
			t.Errorf("Encode(%#v) = %s, %v; json.Marshal: %s, %v", v, got, err, want, wantErr)
		}
	}
}

// TestReadOpenReadsWhatEncodingJSONReads: open's request through the parser
// gives the openRequest encoding/json gave, and an error where it had one.
func TestReadOpenReadsWhatEncodingJSONReads(t *testing.T) {
	for _, text := range []string{
		``, `null`, `{}`,
		`{"path":"/tmp/a b.db","vfs":"node","disk":true,"name":"a b.db","mode":"delta","every":10,"cacheBytes":1048576,"readConns":2,` +
			`"readOnly":true,"busyTimeoutMs":5000,"storeDefaultTtlMs":60000.0,"storeRefreshOnRead":false,"storeSweepIntervalMs":1.5e5,"autoRetain":false,"synchronous":"full"}`, `{"synchronous":1}`,
		`{"image":0}`, `{"image":null,"cacheBytes":null,"busyTimeoutMs":null,"storeRefreshOnRead":null,"autoRetain":null}`,
		`{"cacheBytes":0,"busyTimeoutMs":0,"storeRefreshOnRead":true,"autoRetain":true,"unknown":[1,{"x":2}]}`,
		`{"path":1}`, `{"every":1.5}`, `{"every":"1"}`, `{"image":-1}`, `{"image":1e2}`, `{"cacheBytes":"1"}`, `{"busyTimeoutMs":1.5}`,
		`{"readOnly":1}`, `{"autoRetain":"yes"}`, `{"storeDefaultTtlMs":"1"}`, `{"storeDefaultTtlMs":1e400}`, `{"cacheBytes":9223372036854775808}`,
		`[]`, `"x"`, `{"path":`, `{"path":"a"} trailing`,
	} {
		var want openRequest
		wantErr := decodeJSON([]byte(text), &want)
		m, gotErr := parseRequest([]byte(text))
		var got openRequest
		if gotErr == nil {
			got, gotErr = readOpen(m)
		}
		if (wantErr == nil) != (gotErr == nil) {
			t.Errorf("open %q: error %v, encoding/json's %v", text, gotErr, wantErr)
			continue
		}
		if wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("open %q:\n got %+v\nwant %+v", text, got, want)
		}
	}
}
