// Package codec turns the values agentstate stores into bytes and back.
//
// Everything the engine itself reads (metadata, records, messages, store
// values) is msgpack inside a one-byte versioned envelope, so the format can
// change later without guessing. Payloads that callers serialise themselves
// (LangGraph.js sends its own bytes) travel as typed blobs: a type tag plus
// bytes, stored unread.
package codec

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// FormatV1 is the envelope byte that precedes every msgpack value written by
// this version of the codec.
const FormatV1 byte = 0x01

// ErrCorrupt reports bytes that do not decode: a missing or unknown envelope,
// truncated msgpack, or a value of the wrong shape.
var ErrCorrupt = errors.New("codec: corrupt value")

// ErrUnsupported reports an envelope written by a newer codec than this one.
var ErrUnsupported = errors.New("codec: unsupported format version")

// refines is the error fmt.Errorf("%w: "+msg, err) makes (the same text,
// unwrapping to err), for the package's error variables: fmt at package
// init was most of the js build's init time of this package, and the only
// use of fmt before an engine's first result.
func refines(err error, msg string) error { return &refined{err.Error() + ": " + msg, err} }

type refined struct {
	msg string
	err error
}

func (e *refined) Error() string { return e.msg }
func (e *refined) Unwrap() error { return e.err }

// Marshal encodes v as msgpack inside the current envelope. Map keys are
// sorted so that equal values always give equal bytes. A value that nests
// deeper than MaxDepth (or is cyclic) is refused with ErrTooDeep, one that
// encodes to more than MaxSize bytes with ErrTooLarge: what Marshal writes,
// Unmarshal reads.
func Marshal(v any) ([]byte, error) { return MarshalMax(v, MaxSize) }

// MarshalMax is Marshal with a bound: a value whose msgpack passes max bytes
// (at most MaxSize) is refused with ErrTooLarge, and its encoding stops
// there instead of running to the end.
func MarshalMax(v any, max int) ([]byte, error) {
	buf := buffers.Get().(*bytes.Buffer)
	defer putBuffer(buf)
	if err := marshalTo(buf, v, max); err != nil {
		return nil, err
	}
	return bytes.Clone(buf.Bytes()), nil
}

// buffers keep their capacity between calls: a snapshot of a long message
// list would otherwise grow a fresh buffer step by step, copying it each time.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func putBuffer(b *bytes.Buffer) {
	if b.Cap() > 64<<20 {
		return // let an outsized buffer go
	}
	b.Reset()
	buffers.Put(b)
}

func marshalTo(buf *bytes.Buffer, v any, max int) error {
	buf.WriteByte(FormatV1)
	g := newGuard(buf, min(max, MaxSize))
	defer g.release()
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(g)
	enc.SetSortMapKeys(true)
	enc.UseCompactInts(true)
	err := enc.Encode(v)
	if g.err != nil {
		// The guard's refusal, not the encoder's report of a failed write.
		err = g.err
	}
	if err == nil {
		err = g.check()
	}
	if err != nil {
		return fmt.Errorf("codec: encode %T: %w", v, err)
	}
	return nil
}

// Unmarshal decodes data written by Marshal into v. Inside maps, maps decode
// as map[string]any, lists as []any, integers as int64 (uint64 only above
// the int64 range) and binary strings as string (store bytes in a Blob to
// keep them as bytes). Garbage, truncated input
// and shape mismatches return an error matching ErrCorrupt; an envelope from a
// newer codec returns ErrUnsupported; a value that inflates past MaxSize or
// would cost more than MaxCost decoded, ErrTooLarge (checked before it is
// decoded). It never panics.
func Unmarshal(data []byte, v any) (err error) {
	body, _, err := Body(data)
	if err != nil {
		return err
	}
	n, cost, err := scanCost(body, MaxDepth, ErrCorrupt)
	if err != nil {
		return err
	}
	if n != len(body) {
		return fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(body)-n)
	}
	if cost > MaxCost {
		return fmt.Errorf("%w: decoding the value would take more than MaxCost (%d bytes): %d values in %d bytes", ErrTooLarge, MaxCost, cost/valueCost, len(body))
	}
	defer func() {
		// The msgpack decoder is defensive, but a corrupt length prefix in a
		// hostile input must never take the process down.
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrCorrupt, r)
		}
	}()
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	rd := bytes.NewReader(body)
	dec.Reset(rd)
	dec.UseLooseInterfaceDecoding(true)
	dec.SetMapDecoder(decodeStringMap)
	// Generic targets go through decodeLoose so integers come out the same
	// at every depth; the library's own map decoding would not use it.
	switch t := v.(type) {
	case *any:
		*t, err = decodeLoose(dec)
	case *map[string]any:
		var m any
		if m, err = decodeLoose(dec); err == nil {
			mm, ok := m.(map[string]any)
			if !ok && m != nil {
				err = fmt.Errorf("%T is not a map", m)
			}
			*t = mm
		}
	default:
		err = dec.Decode(v)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return nil
}

// decodeLoose decodes one value inside a map or list: lists element by
// element (so their maps and integers follow these rules too), unsigned
// integers that fit as int64, everything else as the library's loose
// decoding does.
func decodeLoose(dec *msgpack.Decoder) (any, error) {
	c, err := dec.PeekCode()
	if err != nil {
		return nil, err
	}
	switch {
	case c == msgpcode.Uint8 || c == msgpcode.Uint16 || c == msgpcode.Uint32 || c == msgpcode.Uint64:
		u, err := dec.DecodeUint64()
		if err != nil || u > math.MaxInt64 {
			return u, err
		}
		return int64(u), nil
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		return decodeStringMap(dec)
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		n, err := dec.DecodeArrayLen()
		if err != nil {
			return nil, err
		}
		// scan checked n against the bytes left and the value's cost
		// against MaxCost: the list is allocated once, at its size.
		out := make([]any, 0, n)
		for range n {
			v, err := decodeLoose(dec)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	return dec.DecodeInterfaceLoose()
}

// decodeStringMap makes maps inside interface values decode as
// map[string]any, the shape JSON callers and go-cmp expect.
func decodeStringMap(dec *msgpack.Decoder) (any, error) {
	n, err := dec.DecodeMapLen()
	if err != nil {
		return nil, err
	}
	if n == -1 {
		return nil, nil
	}
	m := make(map[string]any, n)
	for range n {
		k, err := dec.DecodeString()
		if err != nil {
			return nil, err
		}
		v, err := decodeLoose(dec)
		if err != nil {
			return nil, err
		}
		m[k] = v
	}
	return m, nil
}
