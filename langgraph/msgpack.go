package langgraph

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// LangGraph Python's "msgpack" serde: ormsgpack documents in which
// everything msgpack has no type for is an extension whose data is itself a
// msgpack document (testdata/langgraph/python/FORMATS.md lists the codes).
//
// A value decodes to what the engine's codec holds (nil, bool, int64,
// uint64, float64, string, []any, map[string]any) when it can, and to a
// *pyRaw keeping its exact bytes otherwise: an extension, a bin, a map with a
// non-string key, a non-finite float (JSON, which the CLI and the JS bridge
// print values as, has none), or a list or map holding one of these. A
// value with a *pyRaw is stored as the source's bytes, so nothing of its
// meaning is lost and LangGraph can read it again.

// pyRaw is a Python value the engine's values cannot hold.
type pyRaw struct {
	data []byte // its bytes in the source
	why  string // the first thing in it the engine's values cannot hold
	// items are an array's elements; fields a map's entries when its keys
	// are strings (decoded the same way), for the readers that look inside.
	items  []any
	fields map[string]any
	ext    *pyExt
}

// pyExt is an extension value. Codes 0 to 5 carry [module, name, arg, ...];
// 6 a numpy array; 7 a DeltaChannel snapshot whose payload is the value.
type pyExt struct {
	code         int8
	module, name string
	arg          any   // codes 0-5: the third element; 7: the value itself
	rest         []any // the elements after the third (code 3's method)
}

func (e *pyExt) class() string { return e.module + "." + e.name }

// Extension codes of LangGraph's serde.
const (
	extConstructorSingleArg = 0
	extConstructorPosArgs   = 1
	extConstructorKwArgs    = 2
	extMethodSingleArg      = 3
	extPydanticV1           = 4
	extPydanticV2           = 5
	extNumpyArray           = 6
	extDeltaSnapshot        = 7
)

// errMsgpack marks bytes that are not a msgpack document LangGraph wrote.
var errMsgpack = errors.New("not LangGraph msgpack")

// maxDepth bounds nesting, so hostile bytes cannot exhaust the stack.
const maxDepth = 512

// decodePy decodes one complete msgpack document (LangGraph's unpackb
// ignores bytes after it; so does this).
func decodePy(b []byte) (any, error) {
	return decodePyMemo(b, nil)
}

// extMemo holds the extension values of one thread by their bytes: a
// LangGraph checkpoint repeats every message of the state, so each is
// decoded once, and the values read from it are shared (never changed).
type extMemo map[string]*pyRaw

// decodePyMemo is decodePy with extension values looked up in memo (nil:
// none) first.
func decodePyMemo(b []byte, memo extMemo) (any, error) {
	v, _, err := (&pyReader{b: b, memo: memo}).value(0, 0)
	return v, err
}

type pyReader struct {
	b    []byte
	memo extMemo
	// intern, if not nil, shares the strings read.
	intern map[string]string
}

func (r *pyReader) fail(pos int, format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", errMsgpack, pos, fmt.Sprintf(format, args...))
}

// need checks that n bytes follow pos.
func (r *pyReader) need(pos, n int) error {
	if n < 0 || pos+n > len(r.b) || pos+n < pos {
		return r.fail(pos, "truncated: %d bytes needed, %d left", n, max(len(r.b)-pos, 0))
	}
	return nil
}

func (r *pyReader) uint(pos, size int) (uint64, error) {
	if err := r.need(pos, size); err != nil {
		return 0, err
	}
	switch size {
	case 1:
		return uint64(r.b[pos]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(r.b[pos:])), nil
	case 4:
		return uint64(binary.BigEndian.Uint32(r.b[pos:])), nil
	}
	return binary.BigEndian.Uint64(r.b[pos:]), nil
}

// value decodes the value at pos and returns it with the position after it.
func (r *pyReader) value(pos, depth int) (any, int, error) {
	if depth > maxDepth {
		return nil, 0, r.fail(pos, "nested more than %d deep", maxDepth)
	}
	if err := r.need(pos, 1); err != nil {
		return nil, 0, err
	}
	c := r.b[pos]
	p := pos + 1
	switch {
	case c <= 0x7f:
		return int64(c), p, nil
	case c >= 0xe0:
		return int64(int8(c)), p, nil
	case c >= 0xa0 && c <= 0xbf:
		return r.str(pos, p, int(c&0x1f))
	case c >= 0x90 && c <= 0x9f:
		return r.array(pos, p, int(c&0x0f), depth)
	case c >= 0x80 && c <= 0x8f:
		return r.mapping(pos, p, int(c&0x0f), depth)
	}
	switch c {
	case 0xc0:
		return nil, p, nil
	case 0xc2:
		return false, p, nil
	case 0xc3:
		return true, p, nil
	case 0xcc, 0xcd, 0xce, 0xcf:
		size := 1 << (c - 0xcc)
		u, err := r.uint(p, size)
		if err != nil {
			return nil, 0, err
		}
		if u > math.MaxInt64 {
			return u, p + size, nil
		}
		return int64(u), p + size, nil
	case 0xd0, 0xd1, 0xd2, 0xd3:
		size := 1 << (c - 0xd0)
		u, err := r.uint(p, size)
		if err != nil {
			return nil, 0, err
		}
		var n int64
		switch size {
		case 1:
			n = int64(int8(u))
		case 2:
			n = int64(int16(u))
		case 4:
			n = int64(int32(u))
		default:
			n = int64(u)
		}
		return n, p + size, nil
	case 0xca, 0xcb:
		size := 4 << (c - 0xca)
		u, err := r.uint(p, size)
		if err != nil {
			return nil, 0, err
		}
		f := math.Float64frombits(u)
		if size == 4 {
			f = float64(math.Float32frombits(uint32(u)))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return &pyRaw{data: r.b[pos : p+size], why: "a non-finite float"}, p + size, nil
		}
		return f, p + size, nil
	case 0xd9, 0xda, 0xdb:
		size := 1 << (c - 0xd9)
		n, err := r.uint(p, size)
		if err != nil {
			return nil, 0, err
		}
		return r.str(pos, p+size, int(min(n, math.MaxInt32)))
	case 0xc4, 0xc5, 0xc6:
		size := 1 << (c - 0xc4)
		n, err := r.uint(p, size)
		if err != nil {
			return nil, 0, err
		}
		end := p + size + int(min(n, math.MaxInt32))
		if err := r.need(p+size, end-p-size); err != nil {
			return nil, 0, err
		}
		return &pyRaw{data: r.b[pos:end], why: "bytes"}, end, nil
	case 0xdc, 0xdd:
		size := 2 << (c - 0xdc)
		n, err := r.uint(p, size)
		if err != nil {
			return nil, 0, err
		}
		return r.array(pos, p+size, int(min(n, math.MaxInt32)), depth)
	case 0xde, 0xdf:
		size := 2 << (c - 0xde)
		n, err := r.uint(p, size)
		if err != nil {
			return nil, 0, err
		}
		return r.mapping(pos, p+size, int(min(n, math.MaxInt32)), depth)
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		return r.ext(pos, p, 1<<(c-0xd4), depth)
	case 0xc7, 0xc8, 0xc9:
		size := 1 << (c - 0xc7)
		n, err := r.uint(p, size)
		if err != nil {
			return nil, 0, err
		}
		return r.ext(pos, p+size, int(min(n, math.MaxInt32)), depth)
	}
	return nil, 0, r.fail(pos, "byte 0x%02x starts no msgpack value", c)
}

func (r *pyReader) str(start, p, n int) (any, int, error) {
	if err := r.need(p, n); err != nil {
		return nil, 0, err
	}
	if r.intern != nil {
		if s, ok := r.intern[string(r.b[p:p+n])]; ok {
			return s, p + n, nil
		}
		s := string(r.b[p : p+n])
		if len(r.intern) < 1<<16 {
			r.intern[s] = s
		}
		return s, p + n, nil
	}
	return string(r.b[p : p+n]), p + n, nil
}

func (r *pyReader) array(start, p, n, depth int) (any, int, error) {
	// Each element takes at least one byte: a length beyond what is left
	// is a lie, refused before allocating for it.
	if err := r.need(p, n); err != nil {
		return nil, 0, err
	}
	items := make([]any, n)
	var why string
	for i := range items {
		v, next, err := r.value(p, depth+1)
		if err != nil {
			return nil, 0, err
		}
		if raw, ok := v.(*pyRaw); ok && why == "" {
			why = raw.why
		}
		items[i], p = v, next
	}
	if why != "" {
		return &pyRaw{data: r.b[start:p], why: why, items: items}, p, nil
	}
	return items, p, nil
}

func (r *pyReader) mapping(start, p, n, depth int) (any, int, error) {
	if err := r.need(p, 2*n); err != nil {
		return nil, 0, err
	}
	fields := make(map[string]any, n)
	var why string
	for range n {
		k, next, err := r.value(p, depth+1)
		if err != nil {
			return nil, 0, err
		}
		key, isStr := k.(string)
		if !isStr && why == "" {
			why = "a map with a non-string key"
		}
		v, next, err := r.value(next, depth+1)
		if err != nil {
			return nil, 0, err
		}
		if raw, ok := v.(*pyRaw); ok && why == "" {
			why = raw.why
		}
		if isStr {
			fields[key] = v
		}
		p = next
	}
	if why != "" {
		raw := &pyRaw{data: r.b[start:p], why: why}
		if len(fields) == n {
			raw.fields = fields
		}
		return raw, p, nil
	}
	return fields, p, nil
}

// ext decodes an extension of n data bytes whose type byte is at p.
func (r *pyReader) ext(start, p, n, depth int) (any, int, error) {
	if err := r.need(p, 1+n); err != nil {
		return nil, 0, err
	}
	code := int8(r.b[p])
	data := r.b[p+1 : p+1+n]
	end := p + 1 + n
	if r.memo != nil {
		if x, ok := r.memo[string(r.b[start:end])]; ok {
			return x, end, nil
		}
	}
	inner := &pyReader{b: data, memo: r.memo}
	// LangGraph ignores bytes after the data's document, so do we.
	v, _, err := inner.value(0, depth+1)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: in extension %d at byte %d: %w", errMsgpack, code, start, err)
	}
	e := &pyExt{code: code}
	switch code {
	case extDeltaSnapshot:
		e.arg = v
	case extNumpyArray:
		items := arrayItems(v)
		if len(items) != 4 {
			return nil, 0, r.fail(start, "extension 6 (numpy array) holds %s, not [dtype, shape, order, buffer]", describe(v))
		}
		e.module, e.name = "numpy", "ndarray"
		e.rest = items
	case extConstructorSingleArg, extConstructorPosArgs, extConstructorKwArgs, extMethodSingleArg, extPydanticV1, extPydanticV2:
		items := arrayItems(v)
		mod, ok1 := elem(items, 0).(string)
		name, ok2 := elem(items, 1).(string)
		if len(items) < 3 || !ok1 || !ok2 || (code == extMethodSingleArg && len(items) != 4) {
			return nil, 0, r.fail(start, "extension %d holds %s, not [module, name, argument, ...]", code, describe(v))
		}
		e.module, e.name, e.arg, e.rest = mod, name, items[2], items[3:]
	default:
		return nil, 0, r.fail(start, "unknown msgpack extension type %d (LangGraph's serde writes 0 to 7)", code)
	}
	x := &pyRaw{data: r.b[start:end], why: extWhy(e), ext: e}
	if r.memo != nil && n >= 16 {
		if len(r.memo) >= 1<<16 {
			clear(r.memo)
		}
		r.memo[string(x.data)] = x
	}
	return x, end, nil
}

func extWhy(e *pyExt) string {
	switch e.code {
	case extDeltaSnapshot:
		return "a DeltaChannel snapshot"
	case extNumpyArray:
		return "numpy.ndarray"
	}
	return e.class()
}

func arrayItems(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case *pyRaw:
		return x.items
	}
	return nil
}

func elem(items []any, i int) any {
	if i < len(items) {
		return items[i]
	}
	return nil
}

// describe names a value's kind for error messages, never its content.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case *pyRaw:
		if x.ext != nil {
			return "a " + extWhy(x.ext)
		}
		if x.items != nil {
			return fmt.Sprintf("a list of %d", len(x.items))
		}
		return x.why
	case []any:
		return fmt.Sprintf("a list of %d", len(x))
	case map[string]any:
		return fmt.Sprintf("a map of %d", len(x))
	case string:
		return "a string"
	}
	return fmt.Sprintf("a %T", v)
}

// encodePy writes v as ormsgpack would: a *pyRaw as its source bytes,
// integers in their smallest form, floats as float64, map keys in sorted
// order (a Go map has no other). It is used for values the import builds
// (a DeltaChannel list rebuilt from its writes), whose parts keep their
// bytes.
func encodePy(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case *pyRaw:
		return append(dst, x.data...), nil
	case nil:
		return append(dst, 0xc0), nil
	case bool:
		if x {
			return append(dst, 0xc3), nil
		}
		return append(dst, 0xc2), nil
	case int64:
		return appendInt(dst, x), nil
	case uint64:
		if x <= math.MaxInt64 {
			return appendInt(dst, int64(x)), nil
		}
		return binary.BigEndian.AppendUint64(append(dst, 0xcf), x), nil
	case float64:
		return binary.BigEndian.AppendUint64(append(dst, 0xcb), math.Float64bits(x)), nil
	case string:
		return append(appendHeader(dst, 0xa0, 0xd9, len(x), true), x...), nil
	case []any:
		dst = appendHeader(dst, 0x90, 0xdc, len(x), false)
		for _, e := range x {
			var err error
			if dst, err = encodePy(dst, e); err != nil {
				return nil, err
			}
		}
		return dst, nil
	case map[string]any:
		dst = appendHeader(dst, 0x80, 0xde, len(x), false)
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			dst = append(appendHeader(dst, 0xa0, 0xd9, len(k), true), k...)
			var err error
			if dst, err = encodePy(dst, x[k]); err != nil {
				return nil, err
			}
		}
		return dst, nil
	}
	return nil, fmt.Errorf("%w: cannot encode %T", errMsgpack, v)
}

func appendInt(dst []byte, n int64) []byte {
	switch {
	case n >= 0 && n <= 0x7f:
		return append(dst, byte(n))
	case n < 0 && n >= -32:
		return append(dst, byte(int8(n)))
	case n >= 0 && n <= math.MaxUint8:
		return append(dst, 0xcc, byte(n))
	case n >= 0 && n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, 0xcd), uint16(n))
	case n >= 0 && n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, 0xce), uint32(n))
	case n >= 0:
		return binary.BigEndian.AppendUint64(append(dst, 0xcf), uint64(n))
	case n >= math.MinInt8:
		return append(dst, 0xd0, byte(int8(n)))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(dst, 0xd1), uint16(int16(n)))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(dst, 0xd2), uint32(int32(n)))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xd3), uint64(n))
}

// appendHeader writes a str (str=true), array or map header: fix form
// below 32 (str) or 16 (array, map) items, then 8 (str only), 16, 32 bits.
func appendHeader(dst []byte, fix, first byte, n int, str bool) []byte {
	switch {
	case str && n < 32:
		return append(dst, fix|byte(n))
	case !str && n < 16:
		return append(dst, fix|byte(n))
	case str && n <= math.MaxUint8:
		return append(dst, first, byte(n))
	case str && n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, first+1), uint16(n))
	case str:
		return binary.BigEndian.AppendUint32(append(dst, first+2), uint32(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, first), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(dst, first+1), uint32(n))
}

// mapLen reads the header of the map at pos: its number of entries and the
// position of its first key.
func (r *pyReader) mapLen(pos int) (n, next int, err error) {
	if err := r.need(pos, 1); err != nil {
		return 0, 0, err
	}
	c := r.b[pos]
	switch {
	case c >= 0x80 && c <= 0x8f:
		n, next = int(c&0x0f), pos+1
	case c == 0xde || c == 0xdf:
		size := 2 << (c - 0xde)
		u, err := r.uint(pos+1, size)
		if err != nil {
			return 0, 0, err
		}
		n, next = int(min(u, 1<<31)), pos+1+size
	default:
		return 0, 0, r.fail(pos, "a map was expected, found byte 0x%02x", c)
	}
	if err := r.need(next, 2*n); err != nil {
		return 0, 0, err
	}
	return n, next, nil
}
