package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/codec"
	"github.com/google/go-cmp/cmp"
	"github.com/vmihailenco/msgpack/v5"
)

func exportOf(t *testing.T, db *DB, thread string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := db.Export(context.Background(), &buf, ExportOptions{ThreadID: thread}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestExportImportRoundTripIsByteIdentical(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{ModeFull, ModeDelta} {
		t.Run(mode, func(t *testing.T) {
			path, cps := opsFixture(t, mode)
			src := openRW(t, path)
			first := exportOf(t, src, "")
			for _, table := range []string{"thread_modes", "checkpoints", "blobs", "writes", "threads", "runs", "event_seqs", "events", "store_items"} {
				if !bytes.Contains(first, []byte(`{"table":"`+table+`"`)) {
					t.Errorf("export has no %s row", table)
				}
			}
			dst := filepath.Join(t.TempDir(), "copy.db")
			rep, err := ImportFile(ctx, dst, bytes.NewReader(first), nil, ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Mode != mode || rep.Rows["checkpoints"] != int64(len(cps)+1) {
				t.Fatalf("import report %+v", rep)
			}
			copied := openRW(t, dst)
			second := exportOf(t, copied, "")
			if !bytes.Equal(first, second) {
				t.Fatalf("export -> import -> export differs:\n%s", firstDiff(first, second))
			}
			if rep := verifyPath(t, dst); !rep.OK {
				t.Fatalf("imported file: %v", rep.Problems)
			}
			// The copy reads the same state everywhere.
			for _, cfg := range cps {
				a, err1 := src.State(ctx, cfg)
				b, err2 := copied.State(ctx, cfg)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if diff := cmp.Diff(a.Values, b.Values); diff != "" {
					t.Fatalf("state of %s differs after import: %s", cfg.CheckpointID, diff)
				}
			}
			// One thread.
			one := exportOf(t, src, "other")
			if bytes.Contains(one, []byte(`"thread_id":"chat"`)) || bytes.Contains(one, []byte(`"store_items"`)) {
				t.Fatalf("export of thread other holds other rows:\n%s", one)
			}
			if !bytes.Contains(one, []byte(`"thread_id":"other"`)) {
				t.Fatalf("export of thread other misses it:\n%s", one)
			}
		})
	}
}

func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return "line " + string(rune('0'+i%10)) + ":\n" + la[i] + "\n" + lb[i]
		}
	}
	return "lengths differ"
}

func TestImportRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	path, _ := opsFixture(t, ModeDelta)
	dump := exportOf(t, openRW(t, path), "")
	lines := strings.SplitAfter(string(dump), "\n")

	t.Run("truncated", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "t.db")
		cut := strings.Join(lines[:len(lines)/2], "")
		_, err := ImportFile(ctx, dst, strings.NewReader(cut), nil, ImportOptions{})
		if !errors.Is(err, ErrBadExport) || !strings.Contains(err.Error(), "truncated") {
			t.Fatalf("truncated dump: %v", err)
		}
		db := openRW(t, dst)
		if in, _ := db.Info(ctx); in.Rows["checkpoints"] != 0 {
			t.Fatalf("a failed import left %d checkpoints", in.Rows["checkpoints"])
		}
	})
	t.Run("twice", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "t.db")
		if _, err := ImportFile(ctx, dst, bytes.NewReader(dump), nil, ImportOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := ImportFile(ctx, dst, bytes.NewReader(dump), nil, ImportOptions{})
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("second import: %v", err)
		}
	})
	t.Run("mode", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "t.db")
		o := DefaultOptions()
		db, err := Open(ctx, dst, &o) // full mode
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		_, err = ImportFile(ctx, dst, bytes.NewReader(dump), nil, ImportOptions{})
		if !errors.Is(err, ErrModeMismatch) {
			t.Fatalf("delta dump into a full file: %v", err)
		}
	})
	for name, input := range map[string]string{
		"empty":          "",
		"not a header":   `{"table":"checkpoints"}` + "\n",
		"unknown table":  lines[0] + `{"table":"nope"}` + "\n",
		"unknown column": lines[0] + `{"table":"thread_modes","thread_id":"a","mode":"full","every":1,"color":"red"}` + "\n",
		"missing column": lines[0] + `{"table":"thread_modes","thread_id":"a"}` + "\n",
		"bad value":      lines[0] + `{"table":"threads","thread_id":"a","assistant_id":"","user_id":"","display_name":"","status":"idle","metadata":{"$bin":"!!"},"pinned":0,"created_at":1,"updated_at":1}` + "\n",
		"wrong count":    lines[0] + `{"table":"end","rows":3}` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ImportFile(ctx, filepath.Join(t.TempDir(), "t.db"), strings.NewReader(input), nil, ImportOptions{})
			if !errors.Is(err, ErrBadExport) {
				t.Fatalf("got %v, want ErrBadExport", err)
			}
		})
	}
}

// TestMsgpackJSONIsLossless checks the transcoder on values JSON cannot
// say directly: each survives msgpack -> JSON -> msgpack byte for byte.
func TestMsgpackJSONIsLossless(t *testing.T) {
	raw := func(f func(enc *msgpack.Encoder) error) []byte {
		var buf bytes.Buffer
		buf.WriteByte(codec.FormatV1)
		enc := msgpack.NewEncoder(&buf)
		enc.UseCompactInts(true)
		if err := f(enc); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	values := map[string][]byte{
		"int vs float": raw(func(e *msgpack.Encoder) error {
			return e.Encode([]any{int64(1), 1.0, -1, -200, 300, uint64(math.MaxUint64), -1e300, 0.1})
		}),
		"float32":    raw(func(e *msgpack.Encoder) error { return e.EncodeFloat32(1.5) }),
		"non-finite": raw(func(e *msgpack.Encoder) error { return e.Encode([]any{math.NaN(), math.Inf(1), math.Inf(-1)}) }),
		"bin":        raw(func(e *msgpack.Encoder) error { return e.EncodeBytes([]byte{0, 1, 2, 255}) }),
		"bad utf8":   raw(func(e *msgpack.Encoder) error { return e.EncodeString("a\xffb") }),
		"ext": raw(func(e *msgpack.Encoder) error {
			return e.Encode(map[string]any{"t": msgpack.RawMessage{0xd6, 0xff, 0, 0, 0, 1}})
		}),
		"int keys": raw(func(e *msgpack.Encoder) error {
			e.EncodeMapLen(2)
			e.EncodeInt(1)
			e.EncodeString("one")
			e.EncodeString("two")
			return e.EncodeInt(2)
		}),
		"tag lookalike": raw(func(e *msgpack.Encoder) error { return e.Encode(map[string]any{"$bin": "not base64"}) }),
		"unsorted map": raw(func(e *msgpack.Encoder) error {
			e.EncodeMapLen(2)
			e.EncodeString("z")
			e.EncodeNil()
			e.EncodeString("a")
			return e.EncodeBool(true)
		}),
		"text": raw(func(e *msgpack.Encoder) error {
			return e.EncodeString("quote \" backslash \\ newline \n tab \t <html> é 😀")
		}),
		"long": raw(func(e *msgpack.Encoder) error { return e.EncodeString(strings.Repeat("x", 70000)) }),
		"nesting": raw(func(e *msgpack.Encoder) error {
			return e.Encode([]any{[]any{map[string]any{"a": []any{}}}, map[string]any{}})
		}),
	}
	for name, data := range values {
		t.Run(name, func(t *testing.T) {
			var js bytes.Buffer
			if _, err := envelopeToJSON(&js, data); err != nil {
				t.Fatal(err)
			}
			if !json.Valid(js.Bytes()) {
				t.Fatalf("not JSON: %s", js.Bytes())
			}
			back, err := jsonToEnvelope(js.Bytes(), codec.FormatV1, 0)
			if err != nil {
				t.Fatalf("%s: %v", js.Bytes(), err)
			}
			if !bytes.Equal(back, data) {
				t.Fatalf("%s: msgpack changed:\n% x\n% x", js.Bytes(), data, back)
			}
		})
	}
	// Compressed values come back compressed the same way (zstd, DEFLATE)
	// and decode to the same value.
	for _, effort := range []int{codec.Small, codec.Fast} {
		stored, err := codec.MarshalCompressed(map[string]any{"text": strings.Repeat("abc ", 2000)}, effort)
		if err != nil || stored[0] == codec.FormatV1 {
			t.Fatalf("fixture not compressed: %v", err)
		}
		var js bytes.Buffer
		format, err := envelopeToJSON(&js, stored)
		if err != nil || format != stored[0] {
			t.Fatalf("compressed value: envelope %#x, %v", format, err)
		}
		back, err := jsonToEnvelope(js.Bytes(), format, codec.Small)
		if err != nil || back[0] != stored[0] {
			t.Fatalf("re-encoded: %v", err)
		}
		var a, b any
		if err := codec.Unmarshal(stored, &a); err != nil {
			t.Fatal(err)
		}
		if err := codec.Unmarshal(back, &b); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(a, b); diff != "" {
			t.Fatal(diff)
		}
	}
	// Garbage is an error, not a panic.
	for _, bad := range [][]byte{{}, {0x07}, {0x01, 0xc1}, {0x01, 0xdd, 0xff, 0xff, 0xff, 0xff}, {0x01, 0x91}, {0x02, 0xff}, {0x03, 0x28, 0xb5, 0x2f, 0xfd}} {
		var out bytes.Buffer
		if _, err := envelopeToJSON(&out, bad); err == nil {
			t.Errorf("% x decoded", bad)
		}
	}
}

func FuzzMsgpackJSON(f *testing.F) {
	f.Add([]byte{0x01, 0x93, 0x01, 0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0xa1, 'x'})
	f.Add([]byte{0x01, 0x81, 0xa4, '$', 'b', 'i', 'n', 0xc0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 0 && data[0] != codec.FormatV1 {
			return // compressed values are re-encoded, not byte for byte
		}
		var js bytes.Buffer
		if _, err := envelopeToJSON(&js, data); err != nil {
			return
		}
		back, err := jsonToEnvelope(js.Bytes(), codec.FormatV1, 0)
		if err != nil {
			t.Fatalf("%s: %v", js.Bytes(), err)
		}
		var js2 bytes.Buffer
		if _, err := envelopeToJSON(&js2, back); err != nil || js.String() != js2.String() {
			t.Fatalf("second pass: %v\n%s\n%s", err, js.Bytes(), js2.Bytes())
		}
	})
}
