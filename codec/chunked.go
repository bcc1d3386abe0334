package codec

import (
	"bytes"
	"container/list"
	"fmt"
	"hash/maphash"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// ChunkBytes is the plain size at which a list compressed with zstd (a
// msgpack array, such as a message list) starts a new frame. A list is
// stored as its array header in a frame of its own, then its elements in
// frames of about ChunkBytes, each cut after the element that reaches it.
// The cuts depend only on the elements before them, so a list that only
// grew since its last snapshot shares every full frame with it, and a
// Compressor that remembers frames compresses only the newest one. zstd
// reads concatenated frames as one stream, so readers see one value.
// Smaller frames would cost ratio (each starts with an empty window):
// 128 KiB frames are 4% larger than one frame for the whole list.
const ChunkBytes = 128 << 10

// Compressor is MarshalCompressed at a fixed effort that remembers the zstd
// frames it made for full chunks of lists (up to a byte budget,
// least recently used first out), so that a delta snapshot of a long thread
// costs the compression of its last chunk, not of the whole list. Its
// output is the same bytes as MarshalCompressed's. It is safe for
// concurrent use.
type Compressor struct {
	effort int
	frames *frameCache
}

// NewCompressor returns a Compressor for effort (Fast or Small) keeping up
// to cacheBytes of chunks and their frames; 0 keeps none.
func NewCompressor(effort int, cacheBytes int64) (*Compressor, error) {
	if _, ok := formats[effort]; !ok {
		return nil, fmt.Errorf("codec: unknown compression effort %d", effort)
	}
	if cacheBytes < 0 {
		return nil, fmt.Errorf("codec: negative frame cache size %d", cacheBytes)
	}
	return &Compressor{effort: effort, frames: newFrameCache(cacheBytes)}, nil
}

// Marshal is MarshalCompressed(v, effort).
func (c *Compressor) Marshal(v any) ([]byte, error) {
	return marshalCompressed(v, c.effort, c.frames, MaxSize)
}

// MarshalMax is MarshalCompressedMax(v, effort, max).
func (c *Compressor) MarshalMax(v any, max int) ([]byte, error) {
	return marshalCompressed(v, c.effort, c.frames, max)
}

// isArray reports whether a msgpack value starting with byte b is an array.
func isArray(b byte) bool { return b&0xf0 == 0x90 || b == 0xdc || b == 0xdd }

// chunkedZstd compresses body (a msgpack array) as one frame for the array
// header and one per chunk of elements, after FormatV1Zstd.
func chunkedZstd(enc *zstd.Encoder, body []byte, frames *frameCache) ([]byte, error) {
	first, _, n, err := Head(body, 0)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 1, len(body)/2)
	out[0] = FormatV1Zstd
	out = enc.EncodeAll(body[:first], out)
	start, pos := first, first
	for i := 0; i < n; i++ {
		size, err := scan(body[pos:])
		if err != nil {
			return nil, err
		}
		pos += size
		if pos-start < ChunkBytes && i < n-1 {
			continue
		}
		chunk := body[start:pos]
		full := pos-start >= ChunkBytes
		if frame, ok := frames.get(chunk); full && ok {
			out = append(out, frame...)
		} else {
			at := len(out)
			out = enc.EncodeAll(chunk, out)
			if full {
				frames.put(chunk, out[at:])
			}
		}
		start = pos
	}
	if pos != len(body) {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(body)-pos)
	}
	return out, nil
}

// frameCache maps the plain bytes of a chunk to its zstd frame. Lookups
// hash the chunk and compare it byte for byte, so a hit is never wrong.
type frameCache struct {
	mu      sync.Mutex
	max     int64
	size    int64
	seed    maphash.Seed
	entries map[uint64]*list.Element // of *frameEntry
	lru     list.List                // front: most recently used
	hits    int64
}

type frameEntry struct {
	key          uint64
	plain, frame []byte
}

func newFrameCache(max int64) *frameCache {
	return &frameCache{max: max, seed: maphash.MakeSeed(), entries: map[uint64]*list.Element{}}
}

func (f *frameCache) get(chunk []byte) ([]byte, bool) {
	if f == nil || f.max == 0 {
		return nil, false
	}
	key := maphash.Bytes(f.seed, chunk)
	f.mu.Lock()
	defer f.mu.Unlock()
	el, ok := f.entries[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*frameEntry)
	if !bytes.Equal(e.plain, chunk) {
		return nil, false
	}
	f.lru.MoveToFront(el)
	f.hits++
	return e.frame, true
}

func (f *frameCache) put(chunk, frame []byte) {
	cost := int64(len(chunk) + len(frame))
	if f == nil || cost > f.max {
		return
	}
	key := maphash.Bytes(f.seed, chunk)
	f.mu.Lock()
	defer f.mu.Unlock()
	if el, ok := f.entries[key]; ok {
		f.remove(el)
	}
	e := &frameEntry{key: key, plain: bytes.Clone(chunk), frame: bytes.Clone(frame)}
	f.entries[key] = f.lru.PushFront(e)
	f.size += cost
	for f.size > f.max {
		f.remove(f.lru.Back())
	}
}

func (f *frameCache) remove(el *list.Element) {
	e := f.lru.Remove(el).(*frameEntry)
	delete(f.entries, e.key)
	f.size -= int64(len(e.plain) + len(e.frame))
}
