package codec

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// wordyMessages returns n messages of pseudo-English text, about 500 bytes
// each, with stable ids.
func wordyMessages(rng *rand.Rand, from, n int) []Message {
	words := strings.Fields("the agent reads a file then calls a tool and writes an answer about state storage with care for every turn")
	ms := make([]Message, n)
	for i := range ms {
		var b strings.Builder
		for b.Len() < 500 {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		ms[i] = Message{ID: fmt.Sprintf("m%d", from+i), Type: AI, Content: b.String()}
	}
	return ms
}

func TestChunkedListsRoundTripAndShareFrames(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c, err := NewCompressor(Small, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	var list []Message
	for step := range 12 {
		list = append(list, wordyMessages(rng, len(list), 100)...)
		switch step {
		case 7: // a message replaced in place: its chunk and the later ones change
			list[30].Content = "replaced"
		case 9: // a message removed: every later cut moves
			list = append(list[:5:5], list[6:]...)
		}
		got, err := c.Marshal(list)
		if err != nil {
			t.Fatal(err)
		}
		want, err := MarshalCompressed(list, Small)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("step %d: the cached frames gave other bytes than a fresh compression", step)
		}
		if got[0] != FormatV1Zstd {
			t.Fatalf("step %d: envelope %#x", step, got[0])
		}
		back, err := DecodeMessages(got)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(list, back); diff != "" {
			t.Fatalf("step %d: round trip (-in +out):\n%s", step, diff)
		}
		for _, at := range []int{len(got) / 3, len(got) - 1} {
			bad := bytes.Clone(got)
			bad[at] ^= 0x10
			if _, err := DecodeMessages(bad); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("step %d: byte %d flipped: %v", step, at, err)
			}
		}
	}
	if c.frames.hits == 0 {
		t.Fatal("a growing list never reused a frame")
	}
	// An import compresses the plain bytes to the same frames.
	plain, _ := Marshal(list)
	chunked, _ := c.Marshal(list)
	if imported, err := Compress(plain, FormatV1Zstd, Small); err != nil || !bytes.Equal(imported, chunked) {
		t.Fatalf("Compress of the plain list gave other bytes (%v)", err)
	}
	// The frames cost little: within 8% of one frame for the whole list,
	// which reads back the same.
	whole := oneFrame(t, plain)
	if len(chunked) > len(whole)*108/100 {
		t.Fatalf("chunked %d bytes, one frame %d", len(chunked), len(whole))
	}
	if back, err := DecodeMessages(whole); err != nil || !cmp.Equal(list, back) {
		t.Fatalf("one frame: %v", err)
	}
}

// oneFrame is plain compressed as a single zstd frame, as the first zstd
// build wrote every value.
func oneFrame(t testing.TB, plain []byte) []byte {
	enc, err := encoders[Small]()
	if err != nil {
		t.Fatal(err)
	}
	return enc.EncodeAll(plain[1:], []byte{FormatV1Zstd})
}

func TestFrameCacheStaysInBudget(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	c, err := NewCompressor(Small, 3*ChunkBytes)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := c.Marshal(wordyMessages(rng, 0, 1200)); err != nil {
			t.Fatal(err)
		}
		if c.frames.size > c.frames.max || c.frames.size <= 0 {
			t.Fatalf("cache holds %d bytes, budget %d", c.frames.size, c.frames.max)
		}
	}
	none, _ := NewCompressor(Small, 0)
	if _, err := none.Marshal(wordyMessages(rng, 0, 1200)); err != nil || none.frames.lru.Len() != 0 {
		t.Fatalf("a zero budget kept %d frames (%v)", none.frames.lru.Len(), err)
	}
	for _, bad := range []struct {
		effort int
		bytes  int64
	}{{7, 0}, {Small, -1}} {
		if _, err := NewCompressor(bad.effort, bad.bytes); err == nil {
			t.Fatalf("NewCompressor(%d, %d) accepted", bad.effort, bad.bytes)
		}
	}
}

// BenchmarkSnapshot compresses a delta snapshot of a thread that grew by
// ten messages since the last one, with and without remembered frames.
func BenchmarkSnapshot(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{800, 4000} {
		list := wordyMessages(rng, 0, n)
		for _, cached := range []bool{false, true} {
			b.Run(fmt.Sprintf("messages=%d/cached=%v", n, cached), func(b *testing.B) {
				var budget int64
				if cached {
					budget = 64 << 20
				}
				c, _ := NewCompressor(Small, budget)
				c.Marshal(list[:n-10])
				for b.Loop() {
					if _, err := c.Marshal(list); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkSnapshotRead decodes an 800-message snapshot stored as chunked
// frames and, for comparison, as one frame.
func BenchmarkSnapshotRead(b *testing.B) {
	list := wordyMessages(rand.New(rand.NewPCG(7, 8)), 0, 800)
	plain, _ := Marshal(list)
	one := oneFrame(b, plain)
	chunked, _ := MarshalCompressed(list, Small)
	for _, c := range []struct {
		name string
		data []byte
	}{{"frames=one", one}, {"frames=chunked", chunked}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := DecodeMessages(c.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
