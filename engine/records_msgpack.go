package engine

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/records"
)

// A small reader for stored msgpack values. Filters (store search, thread
// search) look at one or two fields of each candidate value; walking the
// bytes to those fields is several times cheaper than decoding the whole
// map, and the walk refuses bytes that do not hold what they claim instead
// of trusting declared lengths.

var errMsgpack = errors.New("malformed msgpack")

// mpKind classifies a msgpack value for comparison.
type mpKind uint8

const (
	mpNil mpKind = iota
	mpBool
	mpInt   // fits int64
	mpUint  // above math.MaxInt64
	mpFloat // float32 or float64
	mpStr   // str or bin (codec decodes both as string)
	mpOther // array, map, ext
	mpMap
	mpArray
)

// mpScalar is one decoded msgpack value, without allocation for scalars.
type mpScalar struct {
	kind mpKind
	b    bool
	i    int64
	u    uint64
	f    float64
	s    []byte // string bytes, aliasing the input
	raw  []byte // the whole encoded value
}

// mpHead reads the header of the value at b[pos] (see codec.Head).
func mpHead(b []byte, pos int) (next, payload, items int, err error) {
	next, payload, items, err = codec.Head(b, pos)
	if err != nil {
		return 0, 0, 0, errMsgpack
	}
	return next, payload, items, nil
}

// mpSkip returns the position just after the value at b[pos].
func mpSkip(b []byte, pos int) (int, error) {
	for remaining := 1; remaining > 0; remaining-- {
		next, payload, items, err := mpHead(b, pos)
		if err != nil {
			return 0, err
		}
		pos = next + payload
		remaining += items
		if remaining > len(b)-pos+1 {
			return 0, errMsgpack
		}
	}
	return pos, nil
}

// mpLookup finds the value at path inside the map encoded at the start of b
// and returns its bytes. found is false when a step is missing or is not a
// map. Keys that are not strings are skipped; the first matching key wins.
func mpLookup(b []byte, path []string) (val []byte, found bool, err error) {
	pos := 0
	for _, seg := range path {
		next, _, items, err := mpHead(b, pos)
		if err != nil {
			return nil, false, err
		}
		if c := b[pos]; !(c >= 0x80 && c <= 0x8f || c == 0xde || c == 0xdf) {
			return nil, false, nil
		}
		pos = next
		hit := false
		for range items / 2 {
			kn, kp, _, err := mpHead(b, pos)
			if err != nil {
				return nil, false, err
			}
			c := b[pos]
			isStr := c >= 0xa0 && c <= 0xbf || c == 0xd9 || c == 0xda || c == 0xdb
			if isStr && kp == len(seg) && string(b[kn:kn+kp]) == seg {
				pos = kn + kp
				hit = true
				break
			}
			if pos, err = mpSkip(b, pos); err != nil {
				return nil, false, err
			}
			if pos, err = mpSkip(b, pos); err != nil {
				return nil, false, err
			}
		}
		if !hit {
			return nil, false, nil
		}
	}
	end, err := mpSkip(b, pos)
	if err != nil {
		return nil, false, err
	}
	return b[pos:end], true, nil
}

// mpRead decodes the value at the start of raw (which must hold exactly one
// value, as mpLookup returns) into a scalar; containers and ext values keep
// only their kind and bytes.
func mpRead(raw []byte) (mpScalar, error) {
	next, payload, _, err := mpHead(raw, 0)
	if err != nil {
		return mpScalar{}, err
	}
	v := mpScalar{raw: raw}
	c := raw[0]
	p := raw[next : next+payload]
	switch {
	case c <= 0x7f:
		v.kind, v.i = mpInt, int64(c)
	case c >= 0xe0:
		v.kind, v.i = mpInt, int64(int8(c))
	case c == 0xc0:
		v.kind = mpNil
	case c == 0xc2 || c == 0xc3:
		v.kind, v.b = mpBool, c == 0xc3
	case c >= 0xa0 && c <= 0xbf, c == 0xd9, c == 0xda, c == 0xdb, c == 0xc4, c == 0xc5, c == 0xc6:
		v.kind, v.s = mpStr, p
	case c == 0xca:
		v.kind, v.f = mpFloat, float64(math.Float32frombits(binary.BigEndian.Uint32(p)))
	case c == 0xcb:
		v.kind, v.f = mpFloat, math.Float64frombits(binary.BigEndian.Uint64(p))
	case c == 0xcc:
		v.kind, v.i = mpInt, int64(p[0])
	case c == 0xcd:
		v.kind, v.i = mpInt, int64(binary.BigEndian.Uint16(p))
	case c == 0xce:
		v.kind, v.i = mpInt, int64(binary.BigEndian.Uint32(p))
	case c == 0xcf:
		u := binary.BigEndian.Uint64(p)
		if u > math.MaxInt64 {
			v.kind, v.u = mpUint, u
		} else {
			v.kind, v.i = mpInt, int64(u)
		}
	case c == 0xd0:
		v.kind, v.i = mpInt, int64(int8(p[0]))
	case c == 0xd1:
		v.kind, v.i = mpInt, int64(int16(binary.BigEndian.Uint16(p)))
	case c == 0xd2:
		v.kind, v.i = mpInt, int64(int32(binary.BigEndian.Uint32(p)))
	case c == 0xd3:
		v.kind, v.i = mpInt, int64(binary.BigEndian.Uint64(p))
	case c >= 0x80 && c <= 0x8f, c == 0xde, c == 0xdf:
		v.kind = mpMap
	case c >= 0x90 && c <= 0x9f, c == 0xdc, c == 0xdd:
		v.kind = mpArray
	default:
		v.kind = mpOther
	}
	return v, nil
}

// mpDecode decodes one raw value (no envelope) with the codec's rules, for
// the rare comparisons of whole lists and maps.
func mpDecode(raw []byte) (any, error) {
	buf := make([]byte, 0, len(raw)+1)
	buf = append(buf, codec.FormatV1)
	buf = append(buf, raw...)
	var v any
	err := codec.Unmarshal(buf, &v)
	return v, err
}

// mpBody strips the codec envelope from a stored value.
func mpBody(stored []byte) ([]byte, error) {
	if len(stored) < 2 || stored[0] != codec.FormatV1 {
		return nil, errMsgpack
	}
	return stored[1:], nil
}

// mpModelTokens decodes a stored token_usage_by_model value (codec
// envelope + msgpack map of model -> {input, output, total}) into dst. It reads the bytes directly: aggregating a
// thread's runs decodes one such map per run, and the reflective decoder
// was half the cost. Unknown fields are skipped; anything else is an error.
func mpModelTokens(stored []byte, dst map[string]records.ModelTokens) error {
	body, err := mpBody(stored)
	if err != nil {
		return err
	}
	pos, models, err := mpMapAt(body, 0)
	if err != nil {
		return err
	}
	for range models {
		var model string
		var fields int
		if model, pos, err = mpStrAt(body, pos); err != nil {
			return err
		}
		if pos, fields, err = mpMapAt(body, pos); err != nil {
			return err
		}
		var t records.ModelTokens
		for range fields {
			var name string
			if name, pos, err = mpStrAt(body, pos); err != nil {
				return err
			}
			end, err := mpSkip(body, pos)
			if err != nil {
				return err
			}
			var slot *int64
			switch name {
			case "input":
				slot = &t.Input
			case "output":
				slot = &t.Output
			case "total":
				slot = &t.Total
			}
			if slot != nil {
				v, err := mpRead(body[pos:end])
				if err != nil || v.kind != mpInt {
					return errMsgpack
				}
				*slot = v.i
			}
			pos = end
		}
		dst[model] = t // a repeated model overrides, as in the codec
	}
	if pos != len(body) {
		return errMsgpack
	}
	return nil
}

// mpMapAt reads a map header at pos: the position of its first key and its
// number of entries.
func mpMapAt(b []byte, pos int) (next, entries int, err error) {
	next, _, items, err := mpHead(b, pos)
	if err != nil {
		return 0, 0, err
	}
	if c := b[pos]; !(c >= 0x80 && c <= 0x8f || c == 0xde || c == 0xdf) {
		return 0, 0, errMsgpack
	}
	return next, items / 2, nil
}

// mpStrAt reads a string at pos and returns it with the position after it.
func mpStrAt(b []byte, pos int) (string, int, error) {
	next, payload, _, err := mpHead(b, pos)
	if err != nil {
		return "", 0, err
	}
	if c := b[pos]; !(c >= 0xa0 && c <= 0xbf || c == 0xd9 || c == 0xda || c == 0xdb) {
		return "", 0, errMsgpack
	}
	return string(b[next : next+payload]), next + payload, nil
}
