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

// inflateZstd inflates zstd frames into one buffer allocated once, at the
// size they inflate to, known before anything is decoded: the sum of the
// content sizes the frames declare (every frame this codec writes declares
// it), or else what a streaming pass that keeps nothing counts. Frames that
// inflate past max are refused (ErrTooLarge) having allocated nothing of
// their size.
func inflateZstd(src []byte, max int) ([]byte, error) {
	size, known := zstdContentSize(src)
	if !known {
		var err error
		if size, err = countZstd(src, max); err != nil {
			return nil, err
		}
	}
	if size > uint64(max) {
		return nil, inflateErr()
	}
	dec, err := decoder()
	if err != nil {
		return nil, fmt.Errorf("codec: inflate: %w", err)
	}
	out, err := dec.DecodeAll(src, make([]byte, 0, size))
	if err != nil {
		if zstdTooLarge(err) {
			return nil, inflateErr()
		}
		return nil, fmt.Errorf("%w: inflate: %v", ErrCorrupt, err)
	}
	if uint64(len(out)) != size {
		return nil, fmt.Errorf("%w: inflate: %d bytes, the frames declare %d", ErrCorrupt, len(out), size)
	}
	return out, nil
}

func zstdTooLarge(err error) bool {
	return errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded)
}

// zstdContentSize adds up the content sizes that the zstd frames of src
// declare, walking their block headers (nothing is decoded). known is
// false when a frame of compressed blocks declares none, or the walk does
// not end on the last byte (the decoder then finds what is wrong).
func zstdContentSize(src []byte) (size uint64, known bool) {
	for len(src) > 0 {
		var h zstd.Header
		rest, err := h.DecodeAndStrip(src)
		if err != nil {
			return 0, false
		}
		if h.Skippable {
			if uint64(len(rest)) < uint64(h.SkippableSize) {
				return 0, false
			}
			src = rest[h.SkippableSize:]
			continue
		}
		// A frame that declares no size has one if its blocks are raw or
		// RLE (the encoder writes a list's header so): their headers say.
		size += min(h.FrameContentSize, 1<<62) // past any max
		for last := false; !last; {
			if len(rest) < 3 {
				return 0, false
			}
			bh := int(rest[0]) | int(rest[1])<<8 | int(rest[2])<<16
			n := bh >> 3
			switch (bh >> 1) & 3 {
			case 0: // raw
				if !h.HasFCS {
					size += uint64(n)
				}
			case 1: // RLE: one byte, repeated n times
				if !h.HasFCS {
					size += uint64(n)
				}
				n = 1
			case 2: // compressed: only the frame says what it inflates to
				if !h.HasFCS {
					return 0, false
				}
			case 3: // reserved
				return 0, false
			}
			last, rest = bh&1 != 0, rest[3:]
			if len(rest) < n {
				return 0, false
			}
			rest = rest[n:]
		}
		if h.HasCheckSum {
			if len(rest) < 4 {
				return 0, false
			}
			rest = rest[4:]
		}
		src = rest
	}
	return size, true
}

// countZstd is what zstd frames that do not declare their size inflate to,
// counted by a streaming decoder that keeps only its window; past max it
// stops, refusing them (ErrTooLarge).
func countZstd(src []byte, max int) (uint64, error) {
	d, err := zstd.NewReader(bytes.NewReader(src), zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxMemory(uint64(max)))
	if err != nil {
		return 0, fmt.Errorf("%w: inflate: %v", ErrCorrupt, err)
	}
	defer d.Close()
	n, err := io.Copy(io.Discard, io.LimitReader(d, int64(max)+1))
	switch {
	case err != nil && zstdTooLarge(err):
		return 0, inflateErr()
	case err != nil:
		return 0, fmt.Errorf("%w: inflate: %v", ErrCorrupt, err)
	case n > int64(max):
		return 0, inflateErr()
	}
	return uint64(n), nil
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
		if body, err = inflateZstd(body, maxInflated); err != nil {
			return nil, 0, err
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
