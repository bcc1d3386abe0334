package codec

import (
	"fmt"

	"github.com/klauspost/compress/s2"
)

// Small values that are read often (a checkpoint's versions, a delta of one
// step's messages) compress by an S2 block (klauspost/compress/s2: Snappy's
// block format, extended) instead of zstd: on the rows of a LangGraph chat
// (400-byte checkpoint rows, 700-byte deltas) S2 saves 36 to 48% where zstd
// saves 47 to 54%, but inflates a row in 0.1 to 0.2 us where zstd takes 4
// (zstd's fixed cost per frame), and a read may inflate a hundred of them.

// FormatV1S2 is the envelope byte of a value written by PackSmall: one S2
// block of the msgpack bytes.
const FormatV1S2 byte = 0x04

// PackMin is the size below which PackSmall and PackDelta leave a value as
// it is: a block's header and tags cost more than so few bytes save.
const PackMin = 128

// PackSmall returns a plain envelope (FormatV1) as an S2 envelope when that
// saves at least an eighth of it, and the plain envelope itself otherwise
// (and for anything that is not a plain envelope). Unmarshal and Body read
// both.
func PackSmall(plain []byte) []byte {
	if len(plain) < PackMin || plain[0] != FormatV1 {
		return plain
	}
	out := append([]byte{FormatV1S2}, s2.Encode(nil, plain[1:])...)
	if len(out) > len(plain)-len(plain)/8 {
		return plain
	}
	return out
}

// inflateS2 decodes an S2 block of at most max bytes; a block that claims
// more is refused before anything is allocated.
func inflateS2(block []byte, max int) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("%w: s2 block: %v", ErrCorrupt, err)
	}
	if n > max {
		return nil, fmt.Errorf("%w: %w: s2 block inflates to %d bytes, more than %d", ErrTooLarge, ErrCorrupt, n, max)
	}
	out, err := s2.Decode(make([]byte, n), block)
	if err != nil {
		return nil, fmt.Errorf("%w: s2 block: %v", ErrCorrupt, err)
	}
	return out, nil
}

// DeltaV1S2 is the first byte of a delta written by PackDelta: DeltaV1's
// header as it is (so ReadDeltaHeader reads it the same), then its ops in
// one S2 block. Patch and PatchChain take either.
const DeltaV1S2 byte = 0xD2

// PackDelta returns a DeltaV1 delta with its ops in an S2 block when that
// saves at least an eighth, and the delta itself otherwise.
func PackDelta(delta []byte) []byte {
	if len(delta) < PackMin || delta[0] != DeltaV1 {
		return delta
	}
	_, at, err := readDeltaHeader(delta)
	if err != nil {
		return delta
	}
	out := append(append([]byte{DeltaV1S2}, delta[1:at]...), s2.Encode(nil, delta[at:])...)
	if len(out) > len(delta)-len(delta)/8 {
		return delta
	}
	return out
}

// UnpackDelta returns a delta in DeltaV1: a DeltaV1S2 one inflated (into a
// new slice), any other as it is. The inflated ops may not be longer than
// a delta of the result its header names can be.
func UnpackDelta(delta []byte) ([]byte, error) {
	if len(delta) == 0 || delta[0] != DeltaV1S2 {
		return delta, nil
	}
	h, at, err := readDeltaHeader(delta)
	if err != nil {
		return nil, err
	}
	n, err := s2.DecodedLen(delta[at:])
	if err != nil {
		return nil, fmt.Errorf("%w: delta ops: %v", ErrCorrupt, err)
	}
	if n > h.Len+MaxDeltaOverhead {
		return nil, fmt.Errorf("%w: delta ops inflate to %d bytes for a result of %d", ErrCorrupt, n, h.Len)
	}
	out := make([]byte, at+n)
	copy(out, delta[:at])
	out[0] = DeltaV1
	if _, err := s2.Decode(out[at:], delta[at:]); err != nil {
		return nil, fmt.Errorf("%w: delta ops: %v", ErrCorrupt, err)
	}
	return out, nil
}
