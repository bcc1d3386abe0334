package codec

import (
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/codec")

func sampleMessages() []Message {
	return []Message{
		{ID: "h1", Type: Human, Content: "What is the weather in Paris?"},
		{ID: "a1", Type: AI, Content: "", ToolCalls: []ToolCall{{ID: "call_1", Name: "weather", Args: map[string]any{"city": "Paris", "days": int64(2)}}},
			UsageMetadata:    &UsageMetadata{InputTokens: 12, OutputTokens: 7, TotalTokens: 19},
			ResponseMetadata: map[string]any{"model_name": "gpt-x", "finish_reason": "tool_calls"}},
		{ID: "t1", Type: Tool, Content: `{"temp": 21.5}`, ToolCallID: "call_1", Name: "weather"},
		{ID: "a2", Type: AI, Content: []any{
			map[string]any{"type": "text", "text": "Sunny, "},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://example.com/sun.png"}},
			map[string]any{"type": "text", "text": "21.5 degrees."},
		}, AdditionalKwargs: map[string]any{"hide_from_ui": false, "score": 0.5}},
		{ID: "s1", Type: System, Content: "Be brief."},
		{ID: "a1", Type: Remove},
	}
}

func TestMessagesRoundTrip(t *testing.T) {
	in := sampleMessages()
	data, err := Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := DecodeMessages(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Fatalf("round trip (-in +out):\n%s", diff)
	}
	if got := out[3].Text(); got != "Sunny, 21.5 degrees." {
		t.Fatalf("Text() = %q", got)
	}
}

func TestGenericValuesRoundTrip(t *testing.T) {
	in := map[string]any{
		"source": "loop", "step": int64(3), "big": int64(300), "huge": int64(1) << 40, "score": 1.25, "ok": true, "none": nil,
		"list":    []any{int64(200), map[string]any{"n": int64(70000)}},
		"parents": map[string]any{"": "1ef-abc"}, "tags": []any{"a", int64(1), false},
	}
	data, err := Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Fatalf("round trip (-in +out):\n%s", diff)
	}
	again, _ := Marshal(out)
	if !bytes.Equal(data, again) {
		t.Fatal("encoding is not deterministic: re-encoding the decoded map gave other bytes")
	}
}

func TestBlobRoundTrip(t *testing.T) {
	b, err := Encode(map[string]any{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := b.Decode(&out); err != nil || out["k"] != "v" {
		t.Fatalf("Decode = %v, %v", out, err)
	}
	foreign := Blob{Type: "json", Data: []byte(`{"k":"v"}`)}
	if err := foreign.Decode(&out); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("decoding a caller's blob: %v, want ErrCorrupt", err)
	}
	if err := (Blob{}).Validate(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("untyped blob: %v", err)
	}
	if err := (Blob{Type: strings.Repeat("x", MaxTypeLen+1)}).Validate(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("long type tag: %v", err)
	}
}

func TestDecodeRejectsBadInput(t *testing.T) {
	good, _ := Marshal(sampleMessages())
	cases := map[string]struct {
		data []byte
		want error
	}{
		"empty":          {nil, ErrCorrupt},
		"no envelope":    {good[1:], ErrCorrupt},
		"newer envelope": {append([]byte{FormatV1S2 + 1}, good[1:]...), ErrUnsupported},
		"bad s2":         {append([]byte{FormatV1S2}, good[1:]...), ErrCorrupt},
		// An S2 block whose length prefix claims 2^40 bytes.
		"s2 bomb":       {[]byte{FormatV1S2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 0x00}, ErrCorrupt},
		"zero envelope": {append([]byte{0x00}, good[1:]...), ErrCorrupt},
		"bad deflate":   {append([]byte{FormatV1Deflate}, good[1:]...), ErrCorrupt},
		"bad zstd":      {append([]byte{FormatV1Zstd}, good[1:]...), ErrCorrupt},
		// A zstd frame header that declares 2^40 bytes of content.
		"zstd bomb":            {[]byte{FormatV1Zstd, 0x28, 0xb5, 0x2f, 0xfd, 0xe0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00}, ErrCorrupt},
		"truncated":            {good[:len(good)/2], ErrCorrupt},
		"trailing bytes":       {append(append([]byte{}, good...), 0xc0), ErrCorrupt},
		"wrong shape":          {mustMarshal(t, map[string]any{"a": 1}), ErrCorrupt},
		"unknown type":         {mustMarshal(t, []Message{{ID: "x", Type: "robot"}}), ErrCorrupt},
		"tool without call id": {mustMarshal(t, []Message{{ID: "x", Type: Tool, Content: "r"}}), ErrCorrupt},
		"bad content":          {mustMarshal(t, []map[string]any{{"id": "x", "type": "ai", "content": int64(3)}}), ErrCorrupt},
		"bad block":            {mustMarshal(t, []map[string]any{{"id": "x", "type": "ai", "content": []any{"text"}}}), ErrCorrupt},
		"huge length":          {[]byte{FormatV1, 0xdd, 0xff, 0xff, 0xff, 0xff}, ErrCorrupt},
	}
	for name, tc := range cases {
		if _, err := DecodeMessages(tc.data); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGoldenEncodings pins the bytes of the stored format: a change of the
// encoding that would make old files unreadable fails here first.
func TestGoldenEncodings(t *testing.T) {
	values := map[string]any{
		"messages": sampleMessages(),
		"metadata": map[string]any{"source": "loop", "step": int64(-1), "parents": map[string]any{}, "run_id": "r1"},
		"blob":     Blob{Type: "json", Data: []byte(`[1,2]`)},
	}
	for name, v := range values {
		got := mustMarshal(t, v)
		path := filepath.Join("..", "testdata", "codec", name+".hex")
		if *update {
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := os.WriteFile(path, []byte(hex.EncodeToString(got)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (run go test ./codec -update to create it)", name, err)
		}
		if hex.EncodeToString(got) != strings.TrimSpace(string(want)) {
			t.Errorf("%s: encoding changed:\n got %x\nwant %s", name, got, want)
		}
	}
}

func TestCompressedRoundTrip(t *testing.T) {
	var big []Message
	for i := range 200 {
		big = append(big, Message{ID: fmt.Sprintf("m%d", i), Type: AI, Content: strings.Repeat("the quick brown fox ", 10)})
	}
	plain := mustMarshal(t, big)
	for _, effort := range []int{Fast, Small} {
		data, err := MarshalCompressed(big, effort)
		if err != nil {
			t.Fatal(err)
		}
		if data[0] != formats[effort] || len(data) >= len(plain)*3/4 {
			t.Fatalf("effort %d: compressed %d bytes to %d (envelope %#x)", effort, len(plain), len(data), data[0])
		}
		out, err := DecodeMessages(data)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(big, out); diff != "" {
			t.Fatalf("round trip (-in +out):\n%s", diff)
		}
		if data[0] != FormatV1Zstd {
			continue
		}
		// zstd checks its frame: a flipped byte anywhere is an error, never
		// another value.
		for _, at := range []int{1, len(data) / 2, len(data) - 1} {
			bad := bytes.Clone(data)
			bad[at] ^= 0x20
			if _, err := DecodeMessages(bad); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("effort %d: byte %d flipped: %v", effort, at, err)
			}
		}
	}
	// Either format at either effort, as an import restores them.
	for _, format := range []byte{FormatV1Deflate, FormatV1Zstd} {
		for _, effort := range []int{Fast, Small} {
			data, err := Compress(plain, format, effort)
			if err != nil || data[0] != format {
				t.Fatalf("Compress(%#x, %d): %v", format, effort, err)
			}
			if out, err := DecodeMessages(data); err != nil || !cmp.Equal(big, out) {
				t.Fatalf("Compress(%#x, %d) reads back: %v", format, effort, err)
			}
		}
	}
	// Small values stay plain: they gain little.
	small, _ := MarshalCompressed(big[:1], Small)
	if small[0] != FormatV1 {
		t.Fatalf("small value compressed (envelope %#x)", small[0])
	}
	if _, err := MarshalCompressed(big, 7); err == nil {
		t.Fatal("unknown effort accepted")
	}
}

func TestUUIDText(t *testing.T) {
	b := [16]byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10}
	if got, want := UUIDText(b), "01234567-89ab-cdef-fedc-ba9876543210"; got != want {
		t.Fatalf("UUIDText = %q, want %q", got, want)
	}
}
