package codec

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// FormatV1Deflate is the envelope byte of a value written by
// MarshalCompressed at effort Fast: raw DEFLATE (RFC 1951, Huffman-only)
// of the msgpack bytes.
const FormatV1Deflate byte = 0x02

// FormatV1Zstd is the envelope byte of a value written by
// MarshalCompressed at effort Small: one zstd frame (RFC 8878, with its
// checksum) of the msgpack bytes. On message lists it is about 10% smaller
// than DEFLATE at its fastest level, and inflates about five times faster.
const FormatV1Zstd byte = 0x03

// CompressMin is the encoded size below which MarshalCompressed does not
// try to compress: small values gain little and cost a compressor call.
const CompressMin = 2048

// maxInflated bounds what a compressed value may inflate to, so a hostile
// input of a few bytes cannot claim gigabytes: no more than Marshal writes.
const maxInflated = MaxSize

// Compression efforts for MarshalCompressed.
const (
	// Fast entropy-codes only (DEFLATE's Huffman-only mode), the cheapest
	// to write: for values rewritten at every step (full mode).
	Fast = 1
	// Small is zstd (at its default level natively; see smallZstdLevel):
	// smaller, and much faster to read, for values written once in a while
	// and read often (delta snapshots, which a cold read inflates).
	Small = 2
)

// formats are the envelopes MarshalCompressed writes at each effort.
var formats = map[int]byte{Fast: FormatV1Deflate, Small: FormatV1Zstd}

var zstdLevels = map[int]zstd.EncoderLevel{Fast: zstd.SpeedFastest, Small: smallZstdLevel}

var flateLevels = map[int]int{Fast: flate.HuffmanOnly, Small: flate.BestSpeed}

// flateWriters pools DEFLATE writers by effort: a new one allocates about
// a megabyte of tables, more than compressing a snapshot costs.
var flateWriters = map[int]*sync.Pool{Fast: newFlatePool(Fast), Small: newFlatePool(Small)}

func newFlatePool(effort int) *sync.Pool {
	return &sync.Pool{New: func() any {
		w, _ := flate.NewWriter(nil, flateLevels[effort])
		return w
	}}
}

// The zstd encoders and the decoder are made on first use and shared:
// EncodeAll and DecodeAll are safe for concurrent calls, each on its own
// goroutine (none starts goroutines of its own).
var (
	encoders = map[int]func() (*zstd.Encoder, error){Fast: newEncoder(Fast), Small: newEncoder(Small)}
	decoder  = sync.OnceValues(func() (*zstd.Decoder, error) {
		return zstd.NewReader(nil, zstd.WithDecoderConcurrency(runtime.GOMAXPROCS(0)),
			zstd.WithDecoderMaxMemory(maxInflated), zstd.WithDecoderLowmem(true))
	})
)

func newEncoder(effort int) func() (*zstd.Encoder, error) {
	return sync.OnceValues(func() (*zstd.Encoder, error) {
		return zstd.NewWriter(nil, zstd.WithEncoderLevel(zstdLevels[effort]),
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithLowerEncoderMem(true))
	})
}

// MarshalCompressed is Marshal for large values such as channel snapshots:
// when the encoding is at least CompressMin bytes and compressing it at the
// given effort (Fast or Small) saves at least an eighth of it, the result
// is the compressed form, which Unmarshal reads like any other.
//
// A list (a msgpack array) in zstd is cut into frames (see ChunkBytes).
func MarshalCompressed(v any, effort int) ([]byte, error) {
	return marshalCompressed(v, effort, nil, MaxSize)
}

// MarshalCompressedMax is MarshalCompressed refusing, as MarshalMax does, a
// value whose msgpack (before compression) passes max bytes.
func MarshalCompressedMax(v any, effort, max int) ([]byte, error) {
	return marshalCompressed(v, effort, nil, max)
}

func marshalCompressed(v any, effort int, frames *frameCache, max int) ([]byte, error) {
	format, ok := formats[effort]
	if !ok {
		return nil, fmt.Errorf("codec: unknown compression effort %d", effort)
	}
	pbuf := buffers.Get().(*bytes.Buffer)
	defer putBuffer(pbuf)
	if err := marshalTo(pbuf, v, max); err != nil {
		return nil, err
	}
	plain := pbuf.Bytes()
	if len(plain) < CompressMin {
		return bytes.Clone(plain), nil
	}
	out, err := compress(plain, format, effort, frames)
	if err != nil {
		return nil, err
	}
	if len(out) > len(plain)-len(plain)/8 {
		return bytes.Clone(plain), nil
	}
	return out, nil
}

// Compress turns a plain envelope (FormatV1) into the compressed envelope
// format (FormatV1Zstd or FormatV1Deflate) at effort, whatever its size,
// as MarshalCompressed would: an import restores a value in the format it
// was exported from.
func Compress(plain []byte, format byte, effort int) ([]byte, error) {
	return compress(plain, format, effort, nil)
}

func compress(plain []byte, format byte, effort int, frames *frameCache) ([]byte, error) {
	if len(plain) < 2 || plain[0] != FormatV1 {
		return nil, fmt.Errorf("codec: compress: not a plain envelope")
	}
	switch format {
	case FormatV1Zstd:
		newEnc, ok := encoders[effort]
		if !ok {
			return nil, fmt.Errorf("codec: unknown compression effort %d", effort)
		}
		enc, err := newEnc()
		if err != nil {
			return nil, fmt.Errorf("codec: compress: %w", err)
		}
		if isArray(plain[1]) {
			return chunkedZstd(enc, plain[1:], frames)
		}
		dst := make([]byte, 1, len(plain)/2)
		dst[0] = FormatV1Zstd
		return enc.EncodeAll(plain[1:], dst), nil
	case FormatV1Deflate:
		pool, ok := flateWriters[effort]
		if !ok {
			return nil, fmt.Errorf("codec: unknown compression effort %d", effort)
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
		return buf.Bytes(), nil
	}
	return nil, fmt.Errorf("codec: compress: unknown format 0x%02x", format)
}

// inflateErr is the refusal of a value that inflates past MaxSize: too
// large, and corrupt too (no writer of this codec stores one).
func inflateErr() error {
	return fmt.Errorf("%w: %w: the value inflates past MaxSize (%d bytes)", ErrTooLarge, ErrCorrupt, maxInflated)
}

// Body returns the msgpack bytes inside any envelope this build reads,
// inflated if they were compressed, and the envelope byte. A damaged
// compressed value (zstd checks its frame's checksum) matches ErrCorrupt;
// an envelope of a newer codec, ErrUnsupported; one that inflates past
// MaxSize, ErrTooLarge (each decoder stops there: no more is allocated).
func Body(data []byte) (body []byte, format byte, err error) {
	if len(data) == 0 {
		return nil, 0, fmt.Errorf("%w: empty input", ErrCorrupt)
	}
	switch format, body = data[0], data[1:]; format {
	case FormatV1:
		return body, format, nil
	case FormatV1Zstd:
		dec, err := decoder()
		if err != nil {
			return nil, 0, fmt.Errorf("codec: inflate: %w", err)
		}
		if body, err = dec.DecodeAll(body, nil); err != nil {
			if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
				return nil, 0, inflateErr()
			}
			return nil, 0, fmt.Errorf("%w: inflate: %v", ErrCorrupt, err)
		}
		return body, format, nil
	case FormatV1S2:
		if body, err = inflateS2(body, maxInflated); err != nil {
			return nil, 0, err
		}
		return body, format, nil
	case FormatV1Deflate:
		r := flate.NewReader(bytes.NewReader(body))
		defer r.Close()
		out, err := io.ReadAll(io.LimitReader(r, maxInflated+1))
		if err != nil {
			return nil, 0, fmt.Errorf("%w: inflate: %v", ErrCorrupt, err)
		}
		if len(out) > maxInflated {
			return nil, 0, inflateErr()
		}
		return out, format, nil
	}
	if format > FormatV1S2 && format < 0x10 {
		return nil, 0, fmt.Errorf("%w: envelope %d (this build reads up to %d)", ErrUnsupported, format, FormatV1S2)
	}
	return nil, 0, fmt.Errorf("%w: unknown envelope byte 0x%02x", ErrCorrupt, format)
}
