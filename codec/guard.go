package codec

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// ErrTooDeep reports a value Marshal refuses because its containers nest
// deeper than MaxDepth (a cyclic value is refused the same way), so that
// nothing is stored that a reader would then refuse.
var ErrTooDeep = errors.New("codec: value nested too deep")

// ErrTooLarge reports a value whose encoding would exceed MaxSize, or the
// bound a caller gave.
var ErrTooLarge = errors.New("codec: value too large")

// MaxSize bounds the encoding of one value: Marshal refuses to write more,
// and no compressed value inflates past it (readers refuse it with
// ErrTooLarge, their decoders stopped at MaxSize, before allocating more).
// It is the engine's largest value (engine.MaxListBytes): nothing larger
// is stored, so nothing larger is read.
const MaxSize = 64 << 20

// ErrUnreadable reports a value Marshal refuses because Unmarshal could not
// read it back: a map key that is not a string, or an extension other than
// a timestamp (what msgpack.RawMessage or a custom encoder can write).
var ErrUnreadable = errors.New("codec: value would not read back")

// Check applies Marshal's rules to msgpack bytes (one value, no envelope):
// containers at most MaxDepth deep, string map keys, no extension but
// timestamps. What it accepts, Unmarshal reads.
func Check(body []byte) error {
	g := newGuard(nil, MaxSize)
	defer g.release()
	if _, err := g.Write(body); err != nil {
		return err
	}
	return g.check()
}

// guard is the writer Marshal encodes into. It follows the msgpack it is
// given as a stream of headers and payloads, and fails the write that
// opens a container deeper than MaxDepth, grows the value past max, or
// writes what Unmarshal would refuse (ErrUnreadable). A failed write stops
// the encoder where it is: a cyclic value fails at depth MaxDepth+1 instead
// of recursing until the stack runs out, and a huge one at max bytes
// instead of after encoding all of it. With a nil buf it only checks.
type guard struct {
	buf   *bytes.Buffer
	n     int // bytes seen
	max   int
	cost  int // what decoding the value counts (MaxCost)
	err   error
	ext   bool // the next payload byte is an extension's type
	hdr   [9]byte
	hn    int // header bytes collected
	hlen  int // length of the header being collected
	skip  int // payload bytes still to pass
	key   *gframe
	stack []gframe // stack[0] is the root, which holds one value
	one   [1]byte  // WriteByte's buffer
}

type gframe struct {
	left, total int
	isMap       bool
	key         []byte // the first bytes of the current key (maps)
	keyStr      bool
}

const guardKeyBytes = 24

var guards = sync.Pool{New: func() any { return new(guard) }}

func newGuard(buf *bytes.Buffer, max int) *guard {
	g := guards.Get().(*guard)
	stack := g.stack[:0]
	if cap(stack) > 1024 {
		stack = nil // let a deep one go
	}
	*g = guard{buf: buf, max: max, stack: append(stack, gframe{left: 1, total: 1})}
	return g
}

func (g *guard) release() {
	g.buf, g.key = nil, nil
	guards.Put(g)
}

func (g *guard) WriteByte(c byte) error {
	g.one[0] = c
	_, err := g.Write(g.one[:])
	return err
}

func (g *guard) Write(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if g.n+len(p) > g.max {
		g.err = fmt.Errorf("%w: encoding passes %d bytes", ErrTooLarge, g.max)
		return 0, g.err
	}
	g.n += len(p)
	if g.buf != nil {
		g.buf.Write(p)
	}
	for i := 0; i < len(p); {
		if g.skip > 0 {
			if g.ext {
				// Unmarshal reads only timestamps (type -1).
				if p[i] != 0xff {
					g.err = fmt.Errorf("%w: a msgpack extension of type %d at %s", ErrUnreadable, int8(p[i]), g.path())
					return 0, g.err
				}
				g.ext = false
			}
			n := min(g.skip, len(p)-i)
			if g.key != nil && len(g.key.key) < guardKeyBytes {
				g.key.key = append(g.key.key, p[i:i+min(n, guardKeyBytes-len(g.key.key))]...)
			}
			g.skip -= n
			i += n
			if g.skip == 0 {
				g.key = nil
			}
			continue
		}
		if g.hn == 0 {
			if err := g.start(p[i]); err != nil {
				g.err = err
				return 0, err
			}
		}
		g.hdr[g.hn] = p[i]
		g.hn++
		i++
		if g.hn == g.hlen {
			if err := g.header(); err != nil {
				g.err = err
				return 0, err
			}
		}
	}
	return len(p), nil
}

// start is called at the first byte of a value.
func (g *guard) start(c byte) error {
	for len(g.stack) > 0 && g.stack[len(g.stack)-1].left == 0 {
		g.stack = g.stack[:len(g.stack)-1]
	}
	if len(g.stack) == 0 {
		return fmt.Errorf("%w: bytes after the value", ErrCorrupt)
	}
	top := &g.stack[len(g.stack)-1]
	top.left--
	g.cost += valueCost
	if g.cost > MaxCost {
		return g.costErr()
	}
	g.key = nil
	if top.isMap && top.left%2 == 1 {
		top.key, top.keyStr = top.key[:0], isStrCode(c)
		if top.keyStr {
			g.key = top
		} else if c != 0xc0 && (c < 0xc4 || c > 0xc6) { // nil and bin read as strings
			return fmt.Errorf("%w: a map key that is not a string (code 0x%02x) at %s", ErrUnreadable, c, g.path())
		}
	}
	if g.hlen = headerLen(c); g.hlen == 0 {
		return fmt.Errorf("%w: reserved code 0xc1", ErrCorrupt)
	}
	if isContainer(c) {
		// len(g.stack) is this container's nesting level (see scan).
		if len(g.stack) > MaxDepth {
			return fmt.Errorf("%w: containers nest deeper than %d at %s", ErrTooDeep, MaxDepth, g.path())
		}
	}
	return nil
}

// header is called once the header of a value is complete.
func (g *guard) header() error {
	c := g.hdr[0]
	payload, items := headerOf(g.hdr[:g.hn])
	g.hn = 0
	if g.cost += costOf(c, payload) - valueCost; g.cost > MaxCost {
		return g.costErr()
	}
	switch {
	case c == 0xc7 || c == 0xc8 || c == 0xc9:
		if payload-1 != 12 {
			return fmt.Errorf("%w: a msgpack extension of %d bytes at %s", ErrUnreadable, payload-1, g.path())
		}
		g.ext = true
	case c >= 0xd4 && c <= 0xd8:
		if c != 0xd6 && c != 0xd7 {
			return fmt.Errorf("%w: a msgpack extension of %d bytes at %s", ErrUnreadable, payload-1, g.path())
		}
		g.ext = true
	}
	if items > 0 {
		g.key = nil
		g.stack = append(g.stack, gframe{left: items, total: items, isMap: isMapCode(c)})
	}
	g.skip = payload
	if payload == 0 {
		g.key = nil
	}
	return nil
}

// costErr refuses a value that would take more memory decoded than
// MaxCost, which readers refuse.
func (g *guard) costErr() error {
	return fmt.Errorf("%w: decoding it would take more than MaxCost (%d bytes: 16 a value, plus its strings) at %s", ErrTooLarge, MaxCost, g.path())
}

// check reports a value that ended early (the encoder stopped without an
// error of its own, which it does not do).
func (g *guard) check() error {
	if g.err != nil {
		return g.err
	}
	if g.hn > 0 || g.skip > 0 {
		return fmt.Errorf("%w: the value ends inside a header or payload", ErrCorrupt)
	}
	for _, f := range g.stack {
		if f.left > 0 {
			return fmt.Errorf("%w: the value ends inside a container", ErrCorrupt)
		}
	}
	return nil
}

// path names the value being written, as map keys and array indexes from
// the top, shortened in the middle when long.
func (g *guard) path() string {
	var parts []string
	for _, f := range g.stack[1:] {
		switch {
		case !f.isMap:
			parts = append(parts, "["+strconv.Itoa(f.total-f.left-1)+"]")
		case f.keyStr && utf8.Valid(f.key):
			parts = append(parts, "."+string(f.key))
		default:
			parts = append(parts, "[?]")
		}
	}
	if len(parts) > 12 {
		parts = append(append(parts[:6:6], fmt.Sprintf("…(%d more)…", len(parts)-12)), parts[len(parts)-6:]...)
	}
	s := strings.TrimPrefix(strings.Join(parts, ""), ".")
	if s == "" {
		return "the top"
	}
	return s
}
