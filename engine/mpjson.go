package engine

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentstate/agentstate/codec"
)

// A lossless mapping between the msgpack the engine stores and JSON, used by
// export and import (and by the CLI to show stored values). Plain JSON
// covers most of msgpack; what it cannot say is written as an object with a
// single reserved key:
//
//	{"$bin": "base64"}        msgpack bin (bytes, not text)
//	{"$str": "base64"}        a msgpack str that is not valid UTF-8
//	{"$f32": 1.5}             a float32 ("NaN", "+Inf", "-Inf" if not finite)
//	{"$float": "NaN"}         a float64 that JSON cannot write (NaN, +Inf, -Inf)
//	{"$ext": [type, "base64"]} a msgpack extension (e.g. timestamps, type -1)
//	{"$map": [[k, v], ...]}   a map whose keys are not all strings, or a real
//	                          map whose only key is one of these five
//
// Integers are written without a fraction or exponent; float64 values
// always with one ("1.0"), so that 1 and 1.0 stay different values. Map
// entries keep their stored order. Re-encoding uses the smallest msgpack
// form of each value (what codec.Marshal writes), so a value exported,
// imported and exported again prints the same JSON.

var mpTags = map[string]bool{"$bin": true, "$str": true, "$f32": true, "$float": true, "$ext": true, "$map": true}

// errMPJSON marks values the transcoder cannot read.
var errMPJSON = errors.New("msgpack/json")

// envelopeToJSON decodes one stored value (codec envelope) into JSON and
// returns its envelope byte (which tells whether it was compressed, and how).
func envelopeToJSON(dst *bytes.Buffer, data []byte) (format byte, err error) {
	body, format, err := codec.Body(data)
	if err != nil {
		return 0, err
	}
	r := mpReader{b: body}
	if err := r.value(dst, 0); err != nil {
		return 0, fmt.Errorf("%w: %w", codec.ErrCorrupt, err)
	}
	if r.pos != len(body) {
		return 0, fmt.Errorf("%w: %d trailing bytes", codec.ErrCorrupt, len(body)-r.pos)
	}
	return format, nil
}

// mpReader walks msgpack bytes and writes JSON.
type mpReader struct {
	b   []byte
	pos int
}

const mpMaxDepth = 512

func (r *mpReader) need(n int) error {
	if n < 0 || n > len(r.b)-r.pos {
		return fmt.Errorf("%w: truncated at offset %d", errMPJSON, r.pos)
	}
	return nil
}

func (r *mpReader) uint(size int) (uint64, error) {
	if err := r.need(size); err != nil {
		return 0, err
	}
	var v uint64
	switch size {
	case 1:
		v = uint64(r.b[r.pos])
	case 2:
		v = uint64(binary.BigEndian.Uint16(r.b[r.pos:]))
	case 4:
		v = uint64(binary.BigEndian.Uint32(r.b[r.pos:]))
	case 8:
		v = binary.BigEndian.Uint64(r.b[r.pos:])
	}
	r.pos += size
	return v, nil
}

func (r *mpReader) bytes(n uint64) ([]byte, error) {
	if n > uint64(len(r.b)) {
		return nil, fmt.Errorf("%w: length %d at offset %d exceeds the input", errMPJSON, n, r.pos)
	}
	if err := r.need(int(n)); err != nil {
		return nil, err
	}
	s := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return s, nil
}

// header reads a container or string header: kind is 's' (str), 'b' (bin),
// 'a' (array), 'm' (map), 'e' (ext), or 0 for a scalar that the caller
// reads from code.
func (r *mpReader) value(dst *bytes.Buffer, depth int) error {
	if depth > mpMaxDepth {
		return fmt.Errorf("%w: nesting deeper than %d", errMPJSON, mpMaxDepth)
	}
	if err := r.need(1); err != nil {
		return err
	}
	c := r.b[r.pos]
	r.pos++
	switch {
	case c <= 0x7f:
		dst.WriteString(strconv.Itoa(int(c)))
		return nil
	case c >= 0xe0:
		dst.WriteString(strconv.Itoa(int(int8(c))))
		return nil
	case c >= 0x80 && c <= 0x8f:
		return r.mapBody(dst, uint64(c&0x0f), depth)
	case c >= 0x90 && c <= 0x9f:
		return r.arrayBody(dst, uint64(c&0x0f), depth)
	case c >= 0xa0 && c <= 0xbf:
		s, err := r.bytes(uint64(c & 0x1f))
		if err != nil {
			return err
		}
		writeMPString(dst, s)
		return nil
	}
	switch c {
	case 0xc0:
		dst.WriteString("null")
	case 0xc2:
		dst.WriteString("false")
	case 0xc3:
		dst.WriteString("true")
	case 0xc4, 0xc5, 0xc6:
		n, err := r.uint(1 << (c - 0xc4))
		if err != nil {
			return err
		}
		b, err := r.bytes(n)
		if err != nil {
			return err
		}
		dst.WriteString(`{"$bin":"`)
		dst.WriteString(base64.StdEncoding.EncodeToString(b))
		dst.WriteString(`"}`)
	case 0xc7, 0xc8, 0xc9:
		n, err := r.uint(1 << (c - 0xc7))
		if err != nil {
			return err
		}
		return r.ext(dst, n)
	case 0xca:
		v, err := r.uint(4)
		if err != nil {
			return err
		}
		f := math.Float32frombits(uint32(v))
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
		dst.WriteString(`}`)
	case 0xcb:
		v, err := r.uint(8)
		if err != nil {
			return err
		}
		f := math.Float64frombits(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			writeNonFinite(dst, f)
		} else {
			dst.WriteString(formatFloat(f, 64))
		}
	case 0xcc, 0xcd, 0xce, 0xcf:
		v, err := r.uint(1 << (c - 0xcc))
		if err != nil {
			return err
		}
		dst.WriteString(strconv.FormatUint(v, 10))
	case 0xd0, 0xd1, 0xd2, 0xd3:
		size := 1 << (c - 0xd0)
		v, err := r.uint(size)
		if err != nil {
			return err
		}
		var n int64
		switch size {
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
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		return r.ext(dst, uint64(1)<<(c-0xd4))
	case 0xd9, 0xda, 0xdb:
		n, err := r.uint(1 << (c - 0xd9))
		if err != nil {
			return err
		}
		s, err := r.bytes(n)
		if err != nil {
			return err
		}
		writeMPString(dst, s)
	case 0xdc, 0xdd:
		n, err := r.uint(2 << (c - 0xdc))
		if err != nil {
			return err
		}
		return r.arrayBody(dst, n, depth)
	case 0xde, 0xdf:
		n, err := r.uint(2 << (c - 0xde))
		if err != nil {
			return err
		}
		return r.mapBody(dst, n, depth)
	default:
		return fmt.Errorf("%w: reserved code 0x%02x at offset %d", errMPJSON, c, r.pos-1)
	}
	return nil
}

func (r *mpReader) ext(dst *bytes.Buffer, n uint64) error {
	if err := r.need(1); err != nil {
		return err
	}
	typ := int8(r.b[r.pos])
	r.pos++
	b, err := r.bytes(n)
	if err != nil {
		return err
	}
	fmt.Fprintf(dst, `{"$ext":[%d,"%s"]}`, typ, base64.StdEncoding.EncodeToString(b))
	return nil
}

func (r *mpReader) arrayBody(dst *bytes.Buffer, n uint64, depth int) error {
	if n > uint64(len(r.b)-r.pos) {
		return fmt.Errorf("%w: array of %d items at offset %d exceeds the input", errMPJSON, n, r.pos)
	}
	dst.WriteByte('[')
	for i := uint64(0); i < n; i++ {
		if i > 0 {
			dst.WriteByte(',')
		}
		if err := r.value(dst, depth+1); err != nil {
			return err
		}
	}
	dst.WriteByte(']')
	return nil
}

// mapBody writes a map as a JSON object when every key is a string and the
// map is not mistakable for a tag, and as {"$map": [[k, v], ...]} otherwise.
func (r *mpReader) mapBody(dst *bytes.Buffer, n uint64, depth int) error {
	if n > uint64(len(r.b)-r.pos)/2 {
		return fmt.Errorf("%w: map of %d entries at offset %d exceeds the input", errMPJSON, n, r.pos)
	}
	start := r.pos
	plain := true
	var keys []string
	for i := uint64(0); i < n && plain; i++ {
		k, ok := r.peekString()
		if !ok {
			plain = false
			break
		}
		keys = append(keys, k)
		if err := r.skip(depth + 1); err != nil { // key
			return err
		}
		if err := r.skip(depth + 1); err != nil { // value
			return err
		}
	}
	if plain && n == 1 && mpTags[keys[0]] {
		plain = false
	}
	r.pos = start
	if plain {
		dst.WriteByte('{')
		for i := uint64(0); i < n; i++ {
			if i > 0 {
				dst.WriteByte(',')
			}
			if err := r.value(dst, depth+1); err != nil {
				return err
			}
			dst.WriteByte(':')
			if err := r.value(dst, depth+1); err != nil {
				return err
			}
		}
		dst.WriteByte('}')
		return nil
	}
	dst.WriteString(`{"$map":[`)
	for i := uint64(0); i < n; i++ {
		if i > 0 {
			dst.WriteByte(',')
		}
		dst.WriteByte('[')
		if err := r.value(dst, depth+1); err != nil {
			return err
		}
		dst.WriteByte(',')
		if err := r.value(dst, depth+1); err != nil {
			return err
		}
		dst.WriteByte(']')
	}
	dst.WriteString(`]}`)
	return nil
}

// peekString returns the valid-UTF-8 string at the cursor without moving.
func (r *mpReader) peekString() (string, bool) {
	save := r.pos
	defer func() { r.pos = save }()
	if r.need(1) != nil {
		return "", false
	}
	c := r.b[r.pos]
	r.pos++
	var n uint64
	var err error
	switch {
	case c >= 0xa0 && c <= 0xbf:
		n = uint64(c & 0x1f)
	case c == 0xd9 || c == 0xda || c == 0xdb:
		n, err = r.uint(1 << (c - 0xd9))
	default:
		return "", false
	}
	if err != nil {
		return "", false
	}
	s, err := r.bytes(n)
	if err != nil || !utf8.Valid(s) {
		return "", false
	}
	return string(s), true
}

// skip moves past one value.
func (r *mpReader) skip(depth int) error {
	var discard bytes.Buffer
	return r.value(&discard, depth)
}

func writeMPString(dst *bytes.Buffer, s []byte) {
	if !utf8.Valid(s) {
		dst.WriteString(`{"$str":"`)
		dst.WriteString(base64.StdEncoding.EncodeToString(s))
		dst.WriteString(`"}`)
		return
	}
	writeJSONString(dst, string(s))
}

// writeJSONString writes s as a JSON string without HTML escaping, so text
// reads as it was stored.
func writeJSONString(dst *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	dst.WriteByte('"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst.WriteString(s[start:i])
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
	dst.WriteString(s[start:])
	dst.WriteByte('"')
}

func formatFloat(f float64, bits int) string {
	s := strconv.FormatFloat(f, 'g', -1, bits)
	if !bytes.ContainsAny([]byte(s), ".eE") {
		s += ".0"
	}
	return s
}

func writeNonFinite(dst *bytes.Buffer, f float64) {
	switch {
	case math.IsNaN(f):
		dst.WriteString(`{"$float":"NaN"}`)
	case f > 0:
		dst.WriteString(`{"$float":"+Inf"}`)
	default:
		dst.WriteString(`{"$float":"-Inf"}`)
	}
}

// jsonToEnvelope encodes a JSON value written by envelopeToJSON back into a
// stored value in envelope format (compressed at effort unless it is
// codec.FormatV1). It reads the JSON in one pass (exports of large files
// are mostly this).
func jsonToEnvelope(raw json.RawMessage, format byte, effort int) ([]byte, error) {
	p := jsonMP{in: raw, out: make([]byte, 1, len(raw)+16)}
	p.out[0] = codec.FormatV1
	p.ws()
	if err := p.value(0); err != nil {
		return nil, err
	}
	p.ws()
	if p.pos != len(p.in) {
		return nil, fmt.Errorf("%w: trailing data after a value at offset %d", errMPJSON, p.pos)
	}
	if format != codec.FormatV1 {
		return codec.Compress(p.out, format, effort)
	}
	return p.out, nil
}

// jsonMP is a one-pass JSON to msgpack transcoder. Containers get a
// five-byte header slot that shrinks to the smallest form once their size
// is known.
type jsonMP struct {
	in  []byte
	pos int
	out []byte
}

func (p *jsonMP) errf(format string, args ...any) error {
	return fmt.Errorf("%w: offset %d: %s", errMPJSON, p.pos, fmt.Sprintf(format, args...))
}

func (p *jsonMP) ws() {
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonMP) value(depth int) error {
	if depth > mpMaxDepth {
		return p.errf("nesting deeper than %d", mpMaxDepth)
	}
	if p.pos >= len(p.in) {
		return p.errf("unexpected end of input")
	}
	switch c := p.in[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return err
		}
		var w mpWriter
		w.str(0xa0, 0xd9, s)
		p.out = append(p.out, w.buf.Bytes()...)
		return nil
	case c == 't':
		return p.literal("true", 0xc3)
	case c == 'f':
		return p.literal("false", 0xc2)
	case c == 'n':
		return p.literal("null", 0xc0)
	case c == '-' || c >= '0' && c <= '9':
		start := p.pos
		for p.pos < len(p.in) && strings.IndexByte("+-.eE0123456789", p.in[p.pos]) >= 0 {
			p.pos++
		}
		var w mpWriter
		if err := w.number(string(p.in[start:p.pos])); err != nil {
			return err
		}
		p.out = append(p.out, w.buf.Bytes()...)
		return nil
	default:
		return p.errf("unexpected %q", c)
	}
}

func (p *jsonMP) literal(word string, code byte) error {
	if !bytes.HasPrefix(p.in[p.pos:], []byte(word)) {
		return p.errf("invalid literal")
	}
	p.pos += len(word)
	p.out = append(p.out, code)
	return nil
}

// str reads a JSON string.
func (p *jsonMP) str() (string, error) {
	p.pos++ // opening quote
	start := p.pos
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		if c == '"' {
			s := string(p.in[start:p.pos])
			p.pos++
			return s, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", p.errf("control character in a string")
		}
		p.pos++
	}
	// Escapes: let encoding/json unquote the whole string literal.
	end := p.pos
	for end < len(p.in) {
		if p.in[end] == '\\' {
			end += 2
			continue
		}
		if p.in[end] == '"' {
			break
		}
		end++
	}
	if end >= len(p.in) {
		return "", p.errf("unterminated string")
	}
	var s string
	if err := json.Unmarshal(p.in[start-1:end+1], &s); err != nil {
		return "", p.errf("bad string: %v", err)
	}
	p.pos = end + 1
	return s, nil
}

const slot = 5 // bytes reserved for a container header

// closeContainer writes the smallest header for n items into the slot at
// mark and shifts the items down.
func (p *jsonMP) closeContainer(mark, n int, fix, wide byte) {
	var w mpWriter
	w.header(fix, wide, n)
	h := w.buf.Bytes()
	copy(p.out[mark+len(h):], p.out[mark+slot:])
	p.out = p.out[:len(p.out)-(slot-len(h))]
	copy(p.out[mark:], h)
}

func (p *jsonMP) array(depth int) error {
	p.pos++
	mark := len(p.out)
	p.out = append(p.out, make([]byte, slot)...)
	n := 0
	p.ws()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		p.closeContainer(mark, 0, 0x90, 0xdc)
		return nil
	}
	for {
		p.ws()
		if err := p.value(depth + 1); err != nil {
			return err
		}
		n++
		p.ws()
		if p.pos >= len(p.in) {
			return p.errf("unterminated array")
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			p.closeContainer(mark, n, 0x90, 0xdc)
			return nil
		default:
			return p.errf("want , or ] in an array")
		}
	}
}

func (p *jsonMP) object(depth int) error {
	p.pos++
	mark := len(p.out)
	p.out = append(p.out, make([]byte, slot)...)
	n := 0
	tag, tagStart, tagEnd := "", 0, 0
	p.ws()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		p.closeContainer(mark, 0, 0x80, 0xde)
		return nil
	}
	for {
		p.ws()
		if p.pos >= len(p.in) || p.in[p.pos] != '"' {
			return p.errf("want a key")
		}
		k, err := p.str()
		if err != nil {
			return err
		}
		var w mpWriter
		w.str(0xa0, 0xd9, k)
		p.out = append(p.out, w.buf.Bytes()...)
		p.ws()
		if p.pos >= len(p.in) || p.in[p.pos] != ':' {
			return p.errf("want : after a key")
		}
		p.pos++
		p.ws()
		start := p.pos
		if err := p.value(depth + 1); err != nil {
			return err
		}
		if n == 0 && mpTags[k] {
			tag, tagStart, tagEnd = k, start, p.pos
		}
		n++
		p.ws()
		if p.pos >= len(p.in) {
			return p.errf("unterminated object")
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			if n == 1 && tag != "" {
				// {"$bin": ...} and friends: the value the tag stands for.
				p.out = p.out[:mark]
				var w mpWriter
				if err := w.tagged(tag, p.in[tagStart:tagEnd], depth); err != nil {
					return err
				}
				p.out = append(p.out, w.buf.Bytes()...)
				return nil
			}
			p.closeContainer(mark, n, 0x80, 0xde)
			return nil
		default:
			return p.errf("want , or } in an object")
		}
	}
}

type mpWriter struct{ buf bytes.Buffer }

func (w *mpWriter) value(dec *json.Decoder, depth int) error {
	if depth > mpMaxDepth {
		return fmt.Errorf("%w: nesting deeper than %d", errMPJSON, mpMaxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", errMPJSON, err)
	}
	switch t := tok.(type) {
	case nil:
		w.buf.WriteByte(0xc0)
	case bool:
		if t {
			w.buf.WriteByte(0xc3)
		} else {
			w.buf.WriteByte(0xc2)
		}
	case string:
		w.str(0xa0, 0xd9, t)
	case json.Number:
		return w.number(string(t))
	case json.Delim:
		switch t {
		case '[':
			var items []json.RawMessage
			for dec.More() {
				var m json.RawMessage
				if err := dec.Decode(&m); err != nil {
					return fmt.Errorf("%w: %v", errMPJSON, err)
				}
				items = append(items, m)
			}
			if _, err := dec.Token(); err != nil {
				return fmt.Errorf("%w: %v", errMPJSON, err)
			}
			w.header(0x90, 0xdc, len(items))
			for _, m := range items {
				if err := w.sub(m, depth+1); err != nil {
					return err
				}
			}
		case '{':
			type entry struct {
				k string
				v json.RawMessage
			}
			var entries []entry
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return fmt.Errorf("%w: %v", errMPJSON, err)
				}
				var v json.RawMessage
				if err := dec.Decode(&v); err != nil {
					return fmt.Errorf("%w: %v", errMPJSON, err)
				}
				entries = append(entries, entry{kt.(string), v})
			}
			if _, err := dec.Token(); err != nil {
				return fmt.Errorf("%w: %v", errMPJSON, err)
			}
			if len(entries) == 1 && mpTags[entries[0].k] {
				return w.tagged(entries[0].k, entries[0].v, depth)
			}
			w.header(0x80, 0xde, len(entries))
			for _, e := range entries {
				w.str(0xa0, 0xd9, e.k)
				if err := w.sub(e.v, depth+1); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("%w: unexpected %v", errMPJSON, t)
		}
	default:
		return fmt.Errorf("%w: unexpected token %v", errMPJSON, tok)
	}
	return nil
}

func (w *mpWriter) sub(raw json.RawMessage, depth int) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return w.value(dec, depth)
}

func (w *mpWriter) tagged(tag string, raw json.RawMessage, depth int) error {
	switch tag {
	case "$bin", "$str":
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return fmt.Errorf("%w: %s wants a base64 string", errMPJSON, tag)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", errMPJSON, tag, err)
		}
		if tag == "$bin" {
			w.bin(b)
		} else {
			w.str(0xa0, 0xd9, string(b))
		}
	case "$f32":
		var f float64
		var special string
		if json.Unmarshal(raw, &special) == nil {
			nf, err := nonFinite(special)
			if err != nil {
				return err
			}
			f = nf
		} else if err := json.Unmarshal(raw, &f); err != nil {
			return fmt.Errorf("%w: $f32 wants a number", errMPJSON)
		}
		w.buf.WriteByte(0xca)
		w.buf.Write(binary.BigEndian.AppendUint32(nil, math.Float32bits(float32(f))))
	case "$float":
		var special string
		if err := json.Unmarshal(raw, &special); err != nil {
			return fmt.Errorf("%w: $float wants \"NaN\", \"+Inf\" or \"-Inf\"", errMPJSON)
		}
		f, err := nonFinite(special)
		if err != nil {
			return err
		}
		w.float64(f)
	case "$ext":
		var pair []json.RawMessage
		if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 {
			return fmt.Errorf("%w: $ext wants [type, base64]", errMPJSON)
		}
		var typ int8
		var s string
		if err := json.Unmarshal(pair[0], &typ); err != nil {
			return fmt.Errorf("%w: $ext type: %v", errMPJSON, err)
		}
		if err := json.Unmarshal(pair[1], &s); err != nil {
			return fmt.Errorf("%w: $ext data: %v", errMPJSON, err)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return fmt.Errorf("%w: $ext data: %v", errMPJSON, err)
		}
		w.ext(typ, b)
	case "$map":
		var pairs [][]json.RawMessage
		if err := json.Unmarshal(raw, &pairs); err != nil {
			return fmt.Errorf("%w: $map wants [[key, value], ...]", errMPJSON)
		}
		w.header(0x80, 0xde, len(pairs))
		for _, p := range pairs {
			if len(p) != 2 {
				return fmt.Errorf("%w: $map entry of %d items", errMPJSON, len(p))
			}
			if err := w.sub(p[0], depth+1); err != nil {
				return err
			}
			if err := w.sub(p[1], depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

func nonFinite(s string) (float64, error) {
	switch s {
	case "NaN":
		return math.NaN(), nil
	case "+Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	}
	return 0, fmt.Errorf("%w: %q is not NaN, +Inf or -Inf", errMPJSON, s)
}

func (w *mpWriter) number(s string) error {
	if bytes.ContainsAny([]byte(s), ".eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("%w: number %s: %v", errMPJSON, s, err)
		}
		w.float64(f)
		return nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		w.int(n)
		return nil
	}
	u, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: integer %s out of range", errMPJSON, s)
	}
	w.uint(u)
	return nil
}

func (w *mpWriter) float64(f float64) {
	w.buf.WriteByte(0xcb)
	w.buf.Write(binary.BigEndian.AppendUint64(nil, math.Float64bits(f)))
}

func (w *mpWriter) int(n int64) {
	if n >= 0 {
		w.uint(uint64(n))
		return
	}
	switch {
	case n >= -32:
		w.buf.WriteByte(byte(int8(n)))
	case n >= math.MinInt8:
		w.buf.WriteByte(0xd0)
		w.buf.WriteByte(byte(int8(n)))
	case n >= math.MinInt16:
		w.buf.WriteByte(0xd1)
		w.buf.Write(binary.BigEndian.AppendUint16(nil, uint16(int16(n))))
	case n >= math.MinInt32:
		w.buf.WriteByte(0xd2)
		w.buf.Write(binary.BigEndian.AppendUint32(nil, uint32(int32(n))))
	default:
		w.buf.WriteByte(0xd3)
		w.buf.Write(binary.BigEndian.AppendUint64(nil, uint64(n)))
	}
}

func (w *mpWriter) uint(n uint64) {
	switch {
	case n <= math.MaxInt8:
		w.buf.WriteByte(byte(n))
	case n <= math.MaxUint8:
		w.buf.WriteByte(0xcc)
		w.buf.WriteByte(byte(n))
	case n <= math.MaxUint16:
		w.buf.WriteByte(0xcd)
		w.buf.Write(binary.BigEndian.AppendUint16(nil, uint16(n)))
	case n <= math.MaxUint32:
		w.buf.WriteByte(0xce)
		w.buf.Write(binary.BigEndian.AppendUint32(nil, uint32(n)))
	default:
		w.buf.WriteByte(0xcf)
		w.buf.Write(binary.BigEndian.AppendUint64(nil, n))
	}
}

// header writes an array (fix 0x90, 16-bit 0xdc) or map (0x80, 0xde) header.
func (w *mpWriter) header(fix, wide byte, n int) {
	switch {
	case n < 16:
		w.buf.WriteByte(fix | byte(n))
	case n <= math.MaxUint16:
		w.buf.WriteByte(wide)
		w.buf.Write(binary.BigEndian.AppendUint16(nil, uint16(n)))
	default:
		w.buf.WriteByte(wide + 1)
		w.buf.Write(binary.BigEndian.AppendUint32(nil, uint32(n)))
	}
}

func (w *mpWriter) str(fix, wide byte, s string) {
	n := len(s)
	switch {
	case n < 32:
		w.buf.WriteByte(fix | byte(n))
	case n <= math.MaxUint8:
		w.buf.WriteByte(wide)
		w.buf.WriteByte(byte(n))
	case n <= math.MaxUint16:
		w.buf.WriteByte(wide + 1)
		w.buf.Write(binary.BigEndian.AppendUint16(nil, uint16(n)))
	default:
		w.buf.WriteByte(wide + 2)
		w.buf.Write(binary.BigEndian.AppendUint32(nil, uint32(n)))
	}
	w.buf.WriteString(s)
}

func (w *mpWriter) bin(b []byte) {
	n := len(b)
	switch {
	case n <= math.MaxUint8:
		w.buf.WriteByte(0xc4)
		w.buf.WriteByte(byte(n))
	case n <= math.MaxUint16:
		w.buf.WriteByte(0xc5)
		w.buf.Write(binary.BigEndian.AppendUint16(nil, uint16(n)))
	default:
		w.buf.WriteByte(0xc6)
		w.buf.Write(binary.BigEndian.AppendUint32(nil, uint32(n)))
	}
	w.buf.Write(b)
}

func (w *mpWriter) ext(typ int8, b []byte) {
	n := len(b)
	switch n {
	case 1, 2, 4, 8, 16:
		code := map[int]byte{1: 0xd4, 2: 0xd5, 4: 0xd6, 8: 0xd7, 16: 0xd8}[n]
		w.buf.WriteByte(code)
	default:
		switch {
		case n <= math.MaxUint8:
			w.buf.WriteByte(0xc7)
			w.buf.WriteByte(byte(n))
		case n <= math.MaxUint16:
			w.buf.WriteByte(0xc8)
			w.buf.Write(binary.BigEndian.AppendUint16(nil, uint16(n)))
		default:
			w.buf.WriteByte(0xc9)
			w.buf.Write(binary.BigEndian.AppendUint32(nil, uint32(n)))
		}
	}
	w.buf.WriteByte(byte(typ))
	w.buf.Write(b)
}
