package codec

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// A lossless mapping between the msgpack values the engine stores and JSON,
// used by export and import and by tools that show stored values. Plain
// JSON covers most of msgpack; what it cannot say is written as an object
// with a single reserved key:
//
//	{"$bin": "base64"}         msgpack bin (bytes, not text)
//	{"$str": "base64"}         a msgpack str that is not valid UTF-8
//	{"$f32": 1.5}              a float32 ("NaN", "+Inf", "-Inf" if not finite)
//	{"$float": "NaN"}          a float64 that JSON cannot write (NaN, +Inf, -Inf)
//	{"$ext": [type, "base64"]} a msgpack extension (e.g. timestamps, type -1)
//	{"$map": [[k, v], ...]}    a map whose keys are not all strings, or a real
//	                           map whose only key is one of these six
//
// Integers are written without a fraction or exponent, float64 values
// always with one ("1.0"), so that 1 and 1.0 stay different values. Map
// entries keep their stored order. Going back, every value gets its
// smallest msgpack form (what Marshal writes), so a value written as JSON,
// read back and written again gives the same JSON.
//
// Both directions take time linear in their input and honour a context,
// checked every jsonCheckEvery values.

// ErrJSON reports JSON that is not a value of this mapping: bad syntax, a
// malformed tag, a number out of range.
var ErrJSON = errors.New("codec: invalid JSON value")

// jsonCheckEvery is how many values the transcoders visit between two
// looks at their context.
const jsonCheckEvery = 1 << 12

var jsonTags = []string{"$bin", "$str", "$f32", "$float", "$ext", "$map"}

func isJSONTag(s []byte) bool {
	if len(s) < 4 || s[0] != '$' {
		return false
	}
	for _, t := range jsonTags {
		if string(s) == t {
			return true
		}
	}
	return false
}

// EnvelopeToJSON writes the JSON form of a stored value (any envelope this
// build reads) to dst and returns its envelope byte, which tells whether
// and how it was compressed. Bytes that do not decode give an error
// matching ErrCorrupt; a done ctx stops it with ctx.Err().
func EnvelopeToJSON(ctx context.Context, dst *bytes.Buffer, data []byte) (format byte, err error) {
	body, format, err := Body(data)
	if err != nil {
		return 0, err
	}
	if _, err := msgpackToJSON(ctx, dst, body); err != nil {
		return 0, err
	}
	return format, nil
}

// MsgpackToJSON writes the JSON form of the msgpack value body (exactly one
// value, no envelope) to dst. Errors are those of EnvelopeToJSON.
func MsgpackToJSON(ctx context.Context, dst *bytes.Buffer, body []byte) error {
	_, err := msgpackToJSON(ctx, dst, body)
	return err
}

// msgpackToJSON transcodes in two passes over body: the first checks every
// length and the nesting, and marks the maps that must be written as
// {"$map": ...} (a non-string key, or a lone key that is a tag); the second
// writes JSON. Each value is visited once per pass. It returns the number of
// values visited, the work the tests bound.
func msgpackToJSON(ctx context.Context, dst *bytes.Buffer, body []byte) (work int, err error) {
	t := toJSON{ctx: ctx, b: body}
	n, err := t.survey()
	if err != nil {
		return t.work, err
	}
	if n != len(body) {
		return t.work, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(body)-n)
	}
	if err := t.value(dst, 0); err != nil {
		return t.work, err
	}
	return t.work, nil
}

type toJSON struct {
	ctx  context.Context
	b    []byte
	pos  int
	work int
	// tagged is a bitset over offsets of b: the maps written as $map. It
	// is made only when the first such map is found.
	tagged []uint64
}

func (t *toJSON) tick() error {
	t.work++
	if t.work%jsonCheckEvery == 0 && t.ctx != nil {
		return t.ctx.Err()
	}
	return nil
}

func (t *toJSON) mark(pos int) {
	if t.tagged == nil {
		t.tagged = make([]uint64, len(t.b)/64+1)
	}
	t.tagged[pos/64] |= 1 << (pos % 64)
}

func (t *toJSON) marked(pos int) bool {
	return t.tagged != nil && t.tagged[pos/64]&(1<<(pos%64)) != 0
}

func isContainer(c byte) bool { return c&0xe0 == 0x80 || c >= 0xdc && c <= 0xdf }

func isMapCode(c byte) bool { return c&0xf0 == 0x80 || c == 0xde || c == 0xdf }

func isStrCode(c byte) bool { return c&0xe0 == 0xa0 || c >= 0xd9 && c <= 0xdb }

// survey walks the value at the start of t.b without recursion and returns
// the position after it.
func (t *toJSON) survey() (int, error) {
	type frame struct {
		left  int // items still to read
		mapAt int // offset of the map, -1 for an array
		pairs int
	}
	stack := []frame{{left: 1, mapAt: -1}}
	pos := 0
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		if f.left == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		f.left--
		if err := t.tick(); err != nil {
			return 0, err
		}
		next, payload, items, err := Head(t.b, pos)
		if err != nil {
			return 0, fmt.Errorf("%w (at offset %d)", err, pos)
		}
		c := t.b[pos]
		if f.mapAt >= 0 && f.left%2 == 1 { // a key
			key := t.b[next : next+payload]
			if !isStrCode(c) || !utf8.Valid(key) || f.pairs == 1 && isJSONTag(key) {
				t.mark(f.mapAt)
			}
		}
		if isContainer(c) {
			if len(stack) > MaxDepth {
				return 0, fmt.Errorf("%w: nesting deeper than %d (at offset %d)", ErrCorrupt, MaxDepth, pos)
			}
			if items > 0 {
				fr := frame{left: items, mapAt: -1}
				if isMapCode(c) {
					fr.mapAt, fr.pairs = pos, items/2
				}
				stack = append(stack, fr)
			}
		}
		pos = next + payload
	}
	return pos, nil
}

// value writes the value at t.pos, which survey has checked.
func (t *toJSON) value(dst *bytes.Buffer, depth int) error {
	if err := t.tick(); err != nil {
		return err
	}
	start := t.pos
	next, payload, items, err := Head(t.b, start)
	if err != nil {
		return err // survey saw the same bytes: not reached
	}
	c := t.b[start]
	t.pos = next + payload
	p := t.b[next : next+payload]
	switch {
	case c <= 0x7f:
		dst.WriteString(strconv.Itoa(int(c)))
	case c >= 0xe0:
		dst.WriteString(strconv.Itoa(int(int8(c))))
	case isMapCode(c):
		t.pos = next
		return t.mapBody(dst, start, items/2, depth)
	case isContainer(c):
		t.pos = next
		dst.WriteByte('[')
		for i := range items {
			if i > 0 {
				dst.WriteByte(',')
			}
			if err := t.value(dst, depth+1); err != nil {
				return err
			}
		}
		dst.WriteByte(']')
	case isStrCode(c):
		writeMPString(dst, p)
	case c == 0xc0:
		dst.WriteString("null")
	case c == 0xc2:
		dst.WriteString("false")
	case c == 0xc3:
		dst.WriteString("true")
	case c >= 0xc4 && c <= 0xc6:
		dst.WriteString(`{"$bin":"`)
		writeBase64(dst, p)
		dst.WriteString(`"}`)
	case c >= 0xc7 && c <= 0xc9 || c >= 0xd4 && c <= 0xd8:
		dst.WriteString(`{"$ext":[`)
		dst.WriteString(strconv.Itoa(int(int8(p[0]))))
		dst.WriteString(`,"`)
		writeBase64(dst, p[1:])
		dst.WriteString(`"]}`)
	case c == 0xca:
		f := math.Float32frombits(binary.BigEndian.Uint32(p))
		dst.WriteString(`{"$f32":`)
		switch {
		case math.IsNaN(float64(f)):
			dst.WriteString(`"NaN"`)
		case math.IsInf(float64(f), 1):
			dst.WriteString(`"+Inf"`)
		case math.IsInf(float64(f), -1):
			dst.WriteString(`"-Inf"`)
		default:
			dst.WriteString(formatFloat(float64(f), 32))
		}
		dst.WriteByte('}')
	case c == 0xcb:
		f := math.Float64frombits(binary.BigEndian.Uint64(p))
		switch {
		case math.IsNaN(f):
			dst.WriteString(`{"$float":"NaN"}`)
		case math.IsInf(f, 1):
			dst.WriteString(`{"$float":"+Inf"}`)
		case math.IsInf(f, -1):
			dst.WriteString(`{"$float":"-Inf"}`)
		default:
			dst.WriteString(formatFloat(f, 64))
		}
	case c >= 0xcc && c <= 0xcf:
		var v uint64
		for _, x := range p {
			v = v<<8 | uint64(x)
		}
		dst.WriteString(strconv.FormatUint(v, 10))
	case c >= 0xd0 && c <= 0xd3:
		var v uint64
		for _, x := range p {
			v = v<<8 | uint64(x)
		}
		var n int64
		switch len(p) {
		case 1:
			n = int64(int8(v))
		case 2:
			n = int64(int16(v))
		case 4:
			n = int64(int32(v))
		default:
			n = int64(v)
		}
		dst.WriteString(strconv.FormatInt(n, 10))
	default:
		return fmt.Errorf("%w: reserved code 0x%02x at offset %d", ErrCorrupt, c, start)
	}
	return nil
}

// mapBody writes a map as a JSON object, or as {"$map": [[k, v], ...]} when
// survey marked it.
func (t *toJSON) mapBody(dst *bytes.Buffer, at, n, depth int) error {
	tagged := t.marked(at)
	if tagged {
		dst.WriteString(`{"$map":[`)
	} else {
		dst.WriteByte('{')
	}
	for i := range n {
		if i > 0 {
			dst.WriteByte(',')
		}
		if tagged {
			dst.WriteByte('[')
		}
		if err := t.value(dst, depth+1); err != nil {
			return err
		}
		if tagged {
			dst.WriteByte(',')
		} else {
			dst.WriteByte(':')
		}
		if err := t.value(dst, depth+1); err != nil {
			return err
		}
		if tagged {
			dst.WriteByte(']')
		}
	}
	if tagged {
		dst.WriteString(`]}`)
	} else {
		dst.WriteByte('}')
	}
	return nil
}

func writeBase64(dst *bytes.Buffer, b []byte) {
	dst.Write(base64.StdEncoding.AppendEncode(dst.AvailableBuffer(), b))
}

func writeMPString(dst *bytes.Buffer, s []byte) {
	if !utf8.Valid(s) {
		dst.WriteString(`{"$str":"`)
		writeBase64(dst, s)
		dst.WriteString(`"}`)
		return
	}
	WriteJSONString(dst, s)
}

// WriteJSONString writes s, which must be valid UTF-8, as a JSON string
// without HTML escaping, so that text reads as it was stored.
func WriteJSONString[S ~string | ~[]byte](dst *bytes.Buffer, s S) {
	const hex = "0123456789abcdef"
	dst.WriteByte('"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst.Write(append(dst.AvailableBuffer(), s[start:i]...))
		switch c {
		case '"', '\\':
			dst.WriteByte('\\')
			dst.WriteByte(c)
		case '\n':
			dst.WriteString(`\n`)
		case '\r':
			dst.WriteString(`\r`)
		case '\t':
			dst.WriteString(`\t`)
		default:
			dst.WriteString(`\u00`)
			dst.WriteByte(hex[c>>4])
			dst.WriteByte(hex[c&0xf])
		}
		start = i + 1
	}
	dst.Write(append(dst.AvailableBuffer(), s[start:]...))
	dst.WriteByte('"')
}

func formatFloat(f float64, bits int) string {
	s := strconv.FormatFloat(f, 'g', -1, bits)
	if !bytes.ContainsAny([]byte(s), ".eE") {
		s += ".0"
	}
	return s
}
