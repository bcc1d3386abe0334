package codec

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"sync"
)

// FormatV1Deflate is the envelope byte of a value written by
// MarshalCompressed: raw DEFLATE (RFC 1951) of the msgpack bytes.
const FormatV1Deflate byte = 0x02

// CompressMin is the encoded size below which MarshalCompressed does not
// try to compress: small values gain little and cost a flate call.
const CompressMin = 2048

// maxInflated bounds what a compressed value may inflate to, so a hostile
// input of a few bytes cannot claim gigabytes.
const maxInflated = 1 << 30

// Compression efforts for MarshalCompressed.
const (
	// Fast entropy-codes only (DEFLATE's Huffman-only mode): about three
	// times faster than Small, and about two thirds of its gain on text.
	Fast = flate.HuffmanOnly
	// Small also finds repeated strings (DEFLATE's fastest LZ77 level).
	Small = flate.BestSpeed
)

var writers = map[int]*sync.Pool{Fast: newWriterPool(Fast), Small: newWriterPool(Small)}

func newWriterPool(level int) *sync.Pool {
	return &sync.Pool{New: func() any {
		w, _ := flate.NewWriter(nil, level)
		return w
	}}
}

// MarshalCompressed is Marshal for large values such as channel snapshots:
// when the encoding is at least CompressMin bytes and DEFLATE at the given
// effort (Fast or Small) saves at least an eighth of it, the result is the
// compressed form, which Unmarshal reads like any other.
func MarshalCompressed(v any, effort int) ([]byte, error) {
	pool, ok := writers[effort]
	if !ok {
		return nil, fmt.Errorf("codec: unknown compression effort %d", effort)
	}
	pbuf := buffers.Get().(*bytes.Buffer)
	defer putBuffer(pbuf)
	if err := marshalTo(pbuf, v); err != nil {
		return nil, err
	}
	plain := pbuf.Bytes()
	if len(plain) < CompressMin {
		return bytes.Clone(plain), nil
	}
	var buf bytes.Buffer
	buf.Grow(len(plain) / 2)
	buf.WriteByte(FormatV1Deflate)
	w := pool.Get().(*flate.Writer)
	defer pool.Put(w)
	w.Reset(&buf)
	if _, err := w.Write(plain[1:]); err != nil {
		return nil, fmt.Errorf("codec: compress: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("codec: compress: %w", err)
	}
	if buf.Len() > len(plain)-len(plain)/8 {
		return bytes.Clone(plain), nil
	}
	return buf.Bytes(), nil
}

// inflate returns the msgpack bytes inside a FormatV1Deflate envelope.
func inflate(data []byte) ([]byte, error) {
	r := flate.NewReader(bytes.NewReader(data))
	defer r.Close()
	out, err := io.ReadAll(io.LimitReader(r, maxInflated+1))
	if err != nil {
		return nil, fmt.Errorf("%w: inflate: %v", ErrCorrupt, err)
	}
	if len(out) > maxInflated {
		return nil, fmt.Errorf("%w: value inflates past %d bytes", ErrCorrupt, maxInflated)
	}
	return out, nil
}
