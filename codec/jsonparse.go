package codec

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// JSONToEnvelope reads one JSON value of the mapping above (after optional
// whitespace, with nothing but whitespace after it) and returns it as a
// stored value: msgpack in a plain envelope, or compressed in format at
// effort as Compress does. An encoding of more than max bytes is refused
// with ErrTooLarge, one nesting deeper than MaxDepth with ErrTooDeep; bad
// JSON gives an error matching ErrJSON.
func JSONToEnvelope(data []byte, format byte, effort, max int) ([]byte, error) {
	p := newJSONParser(nil, data, max)
	body, err := p.one()
	if err != nil {
		return nil, err
	}
	if err := checkDepth(body[1:], MaxDepth); err != nil {
		return nil, err
	}
	if format != FormatV1 {
		return Compress(body, format, effort)
	}
	return body, nil
}

// JSONLines reads a stream of JSON values, one per line (blank lines are
// skipped), and returns each as msgpack without holding its line in
// memory: a line of any length costs at most the bytes of its value, and a
// line longer than the bound it was made with is refused once that many
// bytes have been read.
type JSONLines struct {
	p       *jsonParser
	line    int64
	maxLine int64
}

// ErrLineTooLong reports a line of a JSONLines stream longer than its
// bound. It matches ErrTooLarge.
var ErrLineTooLong = refines(ErrTooLarge, "line too long")

// NewJSONLines reads lines from r. A line may be at most maxLine bytes, and
// its value's msgpack at most maxValue bytes. ctx, if not nil, is checked
// every few thousand values.
func NewJSONLines(ctx context.Context, r io.Reader, maxLine int64, maxValue int) *JSONLines {
	p := newJSONParser(r, make([]byte, 0, 64<<10), maxValue)
	p.ctx, p.lines = ctx, true
	return &JSONLines{p: p, maxLine: maxLine}
}

// Line is the number of the line Next read last (1 for the first line).
func (l *JSONLines) Line() int64 { return l.line }

// Next returns the msgpack of the next non-blank line's value (with no
// envelope; its containers may nest MaxDepth+1 deep, one more than a stored
// value, so that a line can be an object of stored values). At the end of
// the input it returns io.EOF. Errors say which line; a read error of r is
// returned as it is.
func (l *JSONLines) Next() ([]byte, error) {
	p := l.p
	for {
		l.line++
		p.lineStart, p.maxLine = p.offset(), l.maxLine
		p.ws()
		c, ok := p.peek()
		if !ok {
			if err := p.readErr(); err != nil {
				return nil, l.wrap(err)
			}
			l.line-- // no line there
			return nil, io.EOF
		}
		if c == '\n' {
			p.advance()
			continue
		}
		body, err := p.value1()
		if err == nil {
			err = p.endLine()
		}
		if err == nil {
			err = checkDepth(body, MaxDepth+1)
		}
		if err != nil {
			return nil, l.wrap(err)
		}
		return body, nil
	}
}

func (l *JSONLines) wrap(err error) error {
	if errors.Is(err, ErrJSON) || errors.Is(err, ErrTooLarge) || errors.Is(err, ErrTooDeep) {
		return fmt.Errorf("line %d: %w", l.line, err)
	}
	return err
}

// jsonParser transcodes JSON to msgpack in one pass over its input, which
// is either all in memory (src nil) or read from src through buf.
//
// A container's item count is known only at its end, so each non-empty one
// is written with a 5-byte header (array32 or map32) and the value is made
// canonical (smallest headers) in a second, linear pass over the msgpack:
// no byte is moved more than twice. $map's [k, v] pairs are turned into map
// entries by overwriting their headers with 0xc1 (a code msgpack never
// uses), which the second pass drops.
type jsonParser struct {
	ctx  context.Context
	src  io.Reader
	buf  []byte
	r    int   // next byte of buf
	base int64 // input offset of buf[0]
	err  error // read error of src (io.EOF at the end)

	lines     bool // '\n' ends a line: it is not whitespace inside a value
	lineStart int64
	maxLine   int64

	out []byte
	// slack is how many bytes of out the second pass drops (slots beyond
	// their smallest header, 0xc1 filler): len(out)-slack is the size of
	// the value, which max bounds from the first byte on.
	slack   int
	max     int
	scratch []byte
	work    int
}

// Each msgpack level a JSON value opens costs at most three JSON levels
// ({"$map": [[k, v]]}); a line is one level more.
const maxJSONDepth = 3*MaxDepth + 6

const slotLen = 5

func newJSONParser(src io.Reader, buf []byte, max int) *jsonParser {
	return &jsonParser{src: src, buf: buf, max: max}
}

func (p *jsonParser) offset() int64 { return p.base + int64(p.r) }

// fill makes sure buf holds an unread byte, reading src if needed.
func (p *jsonParser) fill() bool {
	if p.r < len(p.buf) {
		return true
	}
	if p.src == nil || p.err != nil {
		return false
	}
	if p.maxLine > 0 && p.offset()-p.lineStart > p.maxLine {
		p.err = fmt.Errorf("%w (more than %d bytes)", ErrLineTooLong, p.maxLine)
		return false
	}
	p.base += int64(len(p.buf))
	p.buf, p.r = p.buf[:cap(p.buf)], 0
	for {
		n, err := p.src.Read(p.buf)
		p.buf = p.buf[:n]
		if err != nil {
			p.err = err
		}
		if n > 0 || err != nil {
			return n > 0
		}
	}
}

func (p *jsonParser) readErr() error {
	if p.err == io.EOF {
		return nil
	}
	return p.err
}

func (p *jsonParser) peek() (byte, bool) {
	if !p.fill() {
		return 0, false
	}
	return p.buf[p.r], true
}

func (p *jsonParser) advance() { p.r++ }

func (p *jsonParser) errf(format string, args ...any) error {
	if err := p.readErr(); err != nil {
		return err // the line bound, or src's own error
	}
	where := p.offset()
	if p.lines {
		where -= p.lineStart
	}
	return fmt.Errorf("%w: byte %d: %s", ErrJSON, where, fmt.Sprintf(format, args...))
}

func (p *jsonParser) ws() {
	for p.fill() {
		for _, c := range p.buf[p.r:] {
			switch c {
			case ' ', '\t', '\r':
			case '\n':
				if p.lines {
					return
				}
			default:
				return
			}
			p.r++
		}
	}
}

// one reads the only value of an in-memory input, in an envelope.
func (p *jsonParser) one() ([]byte, error) {
	p.out, p.slack = append(make([]byte, 0, len(p.buf)+16), FormatV1), 0
	p.ws()
	if err := p.value(0); err != nil {
		return nil, err
	}
	p.ws()
	if p.fill() {
		return nil, p.errf("data after the value")
	}
	return p.canonical(1)
}

// value1 reads one value into a fresh output.
func (p *jsonParser) value1() ([]byte, error) {
	p.out, p.slack = p.out[:0], 0
	if cap(p.out) > 4<<20 {
		p.out = nil // let a large one go
	}
	if err := p.value(0); err != nil {
		return nil, err
	}
	return p.canonical(0)
}

// endLine reads the rest of a line after its value: spaces, then a newline
// or the end of the input.
func (p *jsonParser) endLine() error {
	p.ws()
	c, ok := p.peek()
	if !ok {
		return p.readErr()
	}
	if c != '\n' {
		return p.errf("data after the value")
	}
	p.advance()
	return nil
}

func (p *jsonParser) tick() error {
	p.work++
	if p.work%jsonCheckEvery == 0 && p.ctx != nil {
		if err := p.ctx.Err(); err != nil {
			return err
		}
	}
	if len(p.out)-p.slack > p.max {
		return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, p.max)
	}
	return nil
}

// value reads one value. elems, if not nil, receives the output offset of
// each element of an array (what $map needs).
func (p *jsonParser) value(depth int) error { return p.valueElems(depth, nil) }

func (p *jsonParser) valueElems(depth int, elems *[]int) error {
	if depth > maxJSONDepth {
		return fmt.Errorf("%w: JSON nested deeper than %d", ErrTooDeep, maxJSONDepth)
	}
	if err := p.tick(); err != nil {
		return err
	}
	c, ok := p.peek()
	if !ok {
		return p.errf("unexpected end of input")
	}
	switch {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth, elems)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return err
		}
		p.out = appendStr(p.out, s)
		return nil
	case c == 't':
		return p.literal("true", 0xc3)
	case c == 'f':
		return p.literal("false", 0xc2)
	case c == 'n':
		return p.literal("null", 0xc0)
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return p.errf("unexpected %q", c)
}

func (p *jsonParser) literal(word string, code byte) error {
	for i := 0; i < len(word); i++ {
		c, ok := p.peek()
		if !ok || c != word[i] {
			return p.errf("invalid literal")
		}
		p.advance()
	}
	p.out = append(p.out, code)
	return nil
}

// number reads a JSON number: an integer (no fraction, no exponent) is
// stored as the smallest msgpack integer, anything else as a float64.
func (p *jsonParser) number() error {
	p.scratch = p.scratch[:0]
	digits := func() int {
		n := 0
		for {
			c, ok := p.peek()
			if !ok || c < '0' || c > '9' {
				return n
			}
			p.scratch = append(p.scratch, c)
			p.advance()
			n++
			if len(p.scratch) > 1100 {
				return -1 // no float64 needs this many digits; refused below
			}
		}
	}
	if c, _ := p.peek(); c == '-' {
		p.scratch = append(p.scratch, c)
		p.advance()
	}
	first, _ := p.peek()
	if n := digits(); n <= 0 || n > 1 && first == '0' {
		return p.errf("malformed number")
	}
	float := false
	if c, ok := p.peek(); ok && c == '.' {
		float = true
		p.scratch = append(p.scratch, c)
		p.advance()
		if digits() <= 0 {
			return p.errf("malformed number")
		}
	}
	if c, ok := p.peek(); ok && (c == 'e' || c == 'E') {
		float = true
		p.scratch = append(p.scratch, c)
		p.advance()
		if c, ok := p.peek(); ok && (c == '+' || c == '-') {
			p.scratch = append(p.scratch, c)
			p.advance()
		}
		if digits() <= 0 {
			return p.errf("malformed number")
		}
	}
	s := string(p.scratch)
	if float {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return p.errf("number %.40s: %v", s, err)
		}
		p.out = appendFloat64(p.out, f)
		return nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		p.out = appendInt(p.out, n)
		return nil
	}
	u, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return p.errf("integer %.40s out of range", s)
	}
	p.out = appendUint(p.out, u)
	return nil
}

// str reads a JSON string into p.scratch and returns it (valid only until
// the next read).
func (p *jsonParser) str() ([]byte, error) {
	p.advance() // opening quote
	p.scratch = p.scratch[:0]
	for {
		if !p.fill() {
			return nil, p.errf("unterminated string")
		}
		// Copy the run of plain bytes in the buffer at once.
		chunk := p.buf[p.r:]
		i := 0
		for i < len(chunk) && chunk[i] != '"' && chunk[i] != '\\' && chunk[i] >= 0x20 {
			i++
		}
		if len(p.scratch)+i > cap(p.scratch) {
			// Double: append grows large slices by a quarter, which for a
			// long string allocates five times its length in all.
			p.scratch = append(make([]byte, 0, 2*cap(p.scratch)+i), p.scratch...)
		}
		p.scratch = append(p.scratch, chunk[:i]...)
		p.r += i
		if len(p.scratch) > p.max {
			return nil, fmt.Errorf("%w: a string of more than %d bytes", ErrTooLarge, p.max)
		}
		if i == len(chunk) {
			continue
		}
		switch c := chunk[i]; {
		case c == '"':
			p.advance()
			if !utf8.Valid(p.scratch) {
				return nil, p.errf("a string that is not UTF-8 (write bytes as {\"$str\": base64})")
			}
			return p.scratch, nil
		case c < 0x20:
			return nil, p.errf("control character in a string")
		}
		p.advance() // backslash
		c, ok := p.peek()
		if !ok {
			return nil, p.errf("unterminated string")
		}
		p.advance()
		switch c {
		case '"', '\\', '/':
			p.scratch = append(p.scratch, c)
		case 'b':
			p.scratch = append(p.scratch, '\b')
		case 'f':
			p.scratch = append(p.scratch, '\f')
		case 'n':
			p.scratch = append(p.scratch, '\n')
		case 'r':
			p.scratch = append(p.scratch, '\r')
		case 't':
			p.scratch = append(p.scratch, '\t')
		case 'u':
			r, err := p.hex4()
			if err != nil {
				return nil, err
			}
			if utf16.IsSurrogate(r) {
				// Only a high half followed by an escaped low half is a
				// character; export never writes either.
				lo := rune(-1)
				if c, _ := p.peek(); c == '\\' {
					p.advance()
					if c, _ := p.peek(); c == 'u' {
						p.advance()
						if lo, err = p.hex4(); err != nil {
							return nil, err
						}
					}
				}
				if r = utf16.DecodeRune(r, lo); r == utf8.RuneError {
					return nil, p.errf("a \\u escape of half a surrogate pair")
				}
			}
			p.scratch = utf8.AppendRune(p.scratch, r)
		default:
			return nil, p.errf("bad escape \\%c", c)
		}
	}
}

func (p *jsonParser) hex4() (rune, error) {
	var r rune
	for range 4 {
		c, ok := p.peek()
		if !ok {
			return 0, p.errf("unterminated \\u escape")
		}
		p.advance()
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, p.errf("bad \\u escape")
		}
		r = r<<4 | rune(d)
	}
	return r, nil
}

// openSlot writes a container header to be filled in by closeSlot.
func (p *jsonParser) openSlot() int {
	at := len(p.out)
	p.out = append(p.out, 0, 0, 0, 0, 0)
	p.slack += slotLen - 1
	return at
}

func (p *jsonParser) closeSlot(at int, code byte, n int) {
	p.out[at] = code
	binary.BigEndian.PutUint32(p.out[at+1:], uint32(n))
}

func (p *jsonParser) array(depth int, elems *[]int) error {
	p.advance()
	p.ws()
	if c, ok := p.peek(); ok && c == ']' {
		p.advance()
		p.out = append(p.out, 0x90)
		return nil
	}
	at := p.openSlot()
	n := 0
	for {
		p.ws()
		if elems != nil {
			*elems = append(*elems, len(p.out))
		}
		if err := p.value(depth + 1); err != nil {
			return err
		}
		n++
		p.ws()
		c, ok := p.peek()
		if !ok {
			return p.errf("unterminated array")
		}
		p.advance()
		switch c {
		case ',':
		case ']':
			p.closeSlot(at, 0xdd, n)
			return nil
		default:
			return p.errf("want , or ] in an array")
		}
	}
}

func (p *jsonParser) object(depth int) error {
	p.advance()
	p.ws()
	if c, ok := p.peek(); ok && c == '}' {
		p.advance()
		p.out = append(p.out, 0x80)
		return nil
	}
	slack := p.slack
	at := p.openSlot()
	n := 0
	tag, valueAt := "", 0
	var elems []int
	for {
		p.ws()
		if c, ok := p.peek(); !ok || c != '"' {
			return p.errf("want a key")
		}
		k, err := p.str()
		if err != nil {
			return err
		}
		if n == 0 && isJSONTag(k) {
			tag = string(k)
		}
		p.out = appendStr(p.out, k)
		p.ws()
		if c, ok := p.peek(); !ok || c != ':' {
			return p.errf("want : after a key")
		}
		p.advance()
		p.ws()
		if n == 0 && tag != "" {
			valueAt = len(p.out)
			var ep *[]int
			if tag == "$map" {
				ep = &elems
			}
			if err := p.valueElems(depth+1, ep); err != nil {
				return err
			}
		} else if err := p.value(depth + 1); err != nil {
			return err
		}
		n++
		p.ws()
		c, ok := p.peek()
		if !ok {
			return p.errf("unterminated object")
		}
		p.advance()
		switch c {
		case ',':
		case '}':
			if n == 1 && tag != "" {
				return p.tagged(tag, at, valueAt, elems, slack)
			}
			p.closeSlot(at, 0xdf, n)
			return nil
		default:
			return p.errf("want , or } in an object")
		}
	}
}
