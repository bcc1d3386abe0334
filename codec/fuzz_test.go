package codec

import (
	"errors"
	"testing"
)

func seedCorpus(f *testing.F) {
	for _, v := range []any{sampleMessages(), map[string]any{"a": int64(1)}, Blob{Type: "json", Data: []byte("{}")}, "s", nil} {
		b, err := Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	big := make([]Message, 100)
	for i := range big {
		big[i] = Message{ID: "x", Type: AI, Content: "some repeated text some repeated text"}
	}
	for _, effort := range []int{Fast, Small} { // DEFLATE, zstd
		if b, err := MarshalCompressed(big, effort); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte{})
	f.Add([]byte{FormatV1, 0xdd, 0xff, 0xff, 0xff, 0xff})
}

// Every decoder must return a value or an error matching ErrCorrupt or
// ErrUnsupported, and never panic.
func checkDecodeErr(t *testing.T, err error) {
	if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
		t.Fatalf("untyped decode error: %v", err)
	}
}

func FuzzDecodeMessages(f *testing.F) {
	seedCorpus(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := DecodeMessages(data)
		checkDecodeErr(t, err)
		if err == nil {
			// What decodes must re-encode and decode to the same messages.
			again, err := Marshal(ms)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := DecodeMessages(again); err != nil {
				t.Fatalf("re-decoding a valid value: %v", err)
			}
		}
	})
}

func FuzzDecodeMessage(f *testing.F) {
	seedCorpus(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := DecodeMessage(data)
		checkDecodeErr(t, err)
	})
}

func FuzzUnmarshalAny(f *testing.F) {
	seedCorpus(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		checkDecodeErr(t, Unmarshal(data, &v))
		var m map[string]any
		checkDecodeErr(t, Unmarshal(data, &m))
		var b Blob
		checkDecodeErr(t, Unmarshal(data, &b))
	})
}
