// The msgpack side of the JSON parser: the mapping's tagged objects turned
// into the values they stand for, the second pass that gives every
// container its smallest header, and appending msgpack values.

package codec

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
)

// tagged turns {"$tag": value}, written at out[at:] with the value at
// out[valueAt:], into the msgpack value the tag stands for. slack is
// p.slack before the object.
func (p *jsonParser) tagged(tag string, at, valueAt int, elems []int, slack int) error {
	v := p.out[valueAt:]
	if tag == "$map" {
		// [[k, v], ...] becomes a map: the object's slot holds the map's
		// header, the key and the array's and pairs' headers become 0xc1.
		if len(v) == 0 || v[0] != 0xdd && v[0] != 0x90 {
			return p.errf("$map wants [[key, value], ...]")
		}
		if v[0] == 0x90 { // "$map": [] is an empty map
			p.out, p.slack = append(p.out[:at], 0x80), slack
			return nil
		}
		for i := at + slotLen; i < valueAt+slotLen; i++ {
			p.out[i] = 0xc1 // the key "$map" and the array's header
		}
		p.slack += valueAt - at - slotLen + 1
		for _, e := range elems {
			if p.out[e] != 0xdd || binary.BigEndian.Uint32(p.out[e+1:]) != 2 {
				return p.errf("$map entry is not a [key, value] pair")
			}
			copy(p.out[e:e+slotLen], []byte{0xc1, 0xc1, 0xc1, 0xc1, 0xc1})
			p.slack++
		}
		p.closeSlot(at, 0xdf, len(elems))
		return nil
	}
	// The other tags hold a string, a number or [type, string]: small
	// canonical values with no slots but $ext's array's.
	var (
		s        []byte
		isStr    bool
		f        float64
		isNumber bool
	)
	next, payload, _, err := Head(v, 0)
	if err == nil && isStrCode(v[0]) {
		s, isStr = v[next:next+payload], true
	} else if err == nil {
		if x, ok := numberOf(v); ok {
			f, isNumber = x, true
		}
	}
	var out []byte
	switch tag {
	case "$bin", "$str":
		if !isStr {
			return p.errf("%s wants a base64 string", tag)
		}
		b, err := base64.StdEncoding.AppendDecode(nil, s)
		if err != nil {
			return p.errf("%s: %v", tag, err)
		}
		if tag == "$bin" {
			out = appendBin(nil, b)
		} else {
			out = appendStr(nil, b)
		}
	case "$f32":
		if isStr {
			if f, err = nonFinite(s); err != nil {
				return p.errf("%v", err)
			}
		} else if !isNumber {
			return p.errf("$f32 wants a number")
		}
		out = binary.BigEndian.AppendUint32([]byte{0xca}, math.Float32bits(float32(f)))
	case "$float":
		if !isStr {
			return p.errf(`$float wants "NaN", "+Inf" or "-Inf"`)
		}
		if f, err = nonFinite(s); err != nil {
			return p.errf("%v", err)
		}
		out = appendFloat64(nil, f)
	case "$ext":
		typ, data, ok := extPair(v)
		if !ok {
			return p.errf("$ext wants [type, base64]")
		}
		b, err := base64.StdEncoding.AppendDecode(nil, data)
		if err != nil {
			return p.errf("$ext data: %v", err)
		}
		out = appendExt(nil, typ, b)
	}
	p.out, p.slack = append(p.out[:at], out...), slack
	return nil
}

// numberOf reads a msgpack integer or float as float64.
func numberOf(v []byte) (float64, bool) {
	var u uint64
	c := v[0]
	switch {
	case c <= 0x7f:
		return float64(c), true
	case c >= 0xe0:
		return float64(int8(c)), true
	case c == 0xcb && len(v) == 9:
		return math.Float64frombits(binary.BigEndian.Uint64(v[1:])), true
	case c >= 0xcc && c <= 0xd3:
		for _, x := range v[1:] {
			u = u<<8 | uint64(x)
		}
		if c >= 0xd0 {
			shift := 64 - 8*uint(len(v)-1)
			return float64(int64(u<<shift) >> shift), true
		}
		return float64(u), true
	}
	return 0, false
}

// extPair reads [type, "base64"] as the parser wrote it (a slot header).
func extPair(v []byte) (int8, []byte, bool) {
	if len(v) < slotLen+2 || v[0] != 0xdd || binary.BigEndian.Uint32(v[1:]) != 2 {
		return 0, nil, false
	}
	pos := slotLen
	var typ int64
	switch c := v[pos]; {
	case c <= 0x7f:
		typ = int64(c)
	case c >= 0xe0:
		typ = int64(int8(c))
	case c == 0xd0 && len(v) > pos+1:
		typ = int64(int8(v[pos+1]))
	case c == 0xcc && len(v) > pos+1:
		typ = int64(v[pos+1])
	default:
		return 0, nil, false
	}
	if typ < math.MinInt8 || typ > math.MaxInt8 {
		return 0, nil, false
	}
	next, _, _, err := Head(v, pos)
	if err != nil {
		return 0, nil, false
	}
	if v[pos] == 0xd0 || v[pos] == 0xcc {
		next++
	}
	pos = next
	next, payload, _, err := Head(v, pos)
	if err != nil || !isStrCode(v[pos]) || next+payload != len(v) {
		return 0, nil, false
	}
	return int8(typ), v[next : next+payload], true
}

func nonFinite(s []byte) (float64, error) {
	switch string(s) {
	case "NaN":
		return math.NaN(), nil
	case "+Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	}
	return 0, fmt.Errorf("%q is not NaN, +Inf or -Inf", s)
}

// canonical rewrites p.out[from:] in place with the smallest header of
// every container, dropping 0xc1 filler, and returns p.out. It checks the
// result against p.max.
func (p *jsonParser) canonical(from int) ([]byte, error) {
	b := p.out
	r, w := from, from
	pending := []int{1}
	for len(pending) > 0 {
		if pending[len(pending)-1] == 0 {
			pending = pending[:len(pending)-1]
			continue
		}
		if b[r] == 0xc1 {
			r++
			continue
		}
		pending[len(pending)-1]--
		c := b[r]
		switch c {
		case 0xdd, 0xdf:
			n := int(binary.BigEndian.Uint32(b[r+1:]))
			r += slotLen
			if c == 0xdd {
				w = len(appendHeader(b[:w], 0x90, 0xdc, n))
				pending = append(pending, n)
			} else {
				w = len(appendHeader(b[:w], 0x80, 0xde, n))
				pending = append(pending, 2*n)
			}
			continue
		}
		next, payload, _, err := Head(b[:len(b):len(b)], r)
		if err != nil {
			return nil, fmt.Errorf("codec: internal: JSON transcoder wrote % x at %d", b[r:min(r+8, len(b))], r)
		}
		w += copy(b[w:], b[r:next+payload])
		r = next + payload
	}
	p.out = b[:w]
	if w-from > p.max {
		return nil, fmt.Errorf("%w: %d bytes (at most %d)", ErrTooLarge, w-from, p.max)
	}
	return p.out, nil
}

// checkDepth reports a value nested deeper than max containers.
func checkDepth(body []byte, max int) error {
	_, err := scanDepth(body, max, ErrTooDeep)
	return err
}

// The smallest msgpack form of each value, as Marshal writes it.

func appendHeader(b []byte, fix, wide byte, n int) []byte {
	switch {
	case n < 16:
		return append(b, fix|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, wide), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, wide+1), uint32(n))
}

func appendStr(b, s []byte) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n <= math.MaxUint8:
		b = append(b, 0xd9, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

func appendBin(b, s []byte) []byte {
	switch n := len(s); {
	case n <= math.MaxUint8:
		b = append(b, 0xc4, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, 0xc5), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xc6), uint32(n))
	}
	return append(b, s...)
}

func appendExt(b []byte, typ int8, data []byte) []byte {
	switch n := len(data); n {
	case 1:
		b = append(b, 0xd4)
	case 2:
		b = append(b, 0xd5)
	case 4:
		b = append(b, 0xd6)
	case 8:
		b = append(b, 0xd7)
	case 16:
		b = append(b, 0xd8)
	default:
		switch {
		case n <= math.MaxUint8:
			b = append(b, 0xc7, byte(n))
		case n <= math.MaxUint16:
			b = binary.BigEndian.AppendUint16(append(b, 0xc8), uint16(n))
		default:
			b = binary.BigEndian.AppendUint32(append(b, 0xc9), uint32(n))
		}
	}
	return append(append(b, byte(typ)), data...)
}

func appendFloat64(b []byte, f float64) []byte {
	return binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(f))
}

func appendInt(b []byte, n int64) []byte {
	if n >= 0 {
		return appendUint(b, uint64(n))
	}
	switch {
	case n >= -32:
		return append(b, byte(int8(n)))
	case n >= math.MinInt8:
		return append(b, 0xd0, byte(int8(n)))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(int16(n)))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(int32(n)))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

func appendUint(b []byte, n uint64) []byte {
	switch {
	case n <= math.MaxInt8:
		return append(b, byte(n))
	case n <= math.MaxUint8:
		return append(b, 0xcc, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcf), n)
}
