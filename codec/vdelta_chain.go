package codec

import (
	"fmt"
	"slices"
	"sort"
	"sync"
)

// PatchChain returns the version that deltas, applied one after the other,
// turn b into: deltas[0] applies to b, deltas[i] to the result of
// deltas[i-1]. It is Patch in a loop without the intermediate versions: the
// chain is composed into one list of ranges (of b and of the deltas' own
// bytes) and the result copied once, so its cost grows with the number of
// ranges, not with the chain's length times the value's size. The result is
// written over dst's storage (dst[:0]) when it has room; dst must not
// overlap b or the deltas.
//
// It checks every header against the one before (each delta must have been
// made from its predecessor's result: lengths and checksums), every op, the
// limit (on every version of the chain), and the final result's checksum.
// An intermediate version is made and hashed only where the composition
// gets too fragmented (many scattered edits): damage in a delta that does
// not reach the result goes unnoticed here (the result is still right);
// Patch, one delta at a time, checks every version. Memory: the result, two
// versions at most for the fragmented case, and spans bounded by maxSpans.
func (b DeltaBase) PatchChain(dst []byte, deltas [][]byte, limit int) (DeltaBase, error) {
	if len(deltas) == 0 {
		if len(b.data) > limit {
			return DeltaBase{}, fmt.Errorf("%w: version of %d bytes, over the limit of %d", ErrCorrupt, len(b.data), limit)
		}
		return DeltaBase{data: append(dst[:0], b.data...), sum: b.sum, summed: b.summed}, nil
	}
	if len(deltas) == 1 {
		return b.Patch(dst, deltas[0], limit)
	}
	c := chainScratches.Get().(*chainScratch)
	defer c.release()
	// Packed deltas are inflated first: spans point into a delta's ops.
	copied := false
	for i, d := range deltas {
		if len(d) > 0 && d[0] == DeltaV1S2 {
			if !copied {
				c.plain = append(c.plain[:0], deltas...)
				deltas, copied = c.plain, true
			}
			p, err := UnpackDelta(d)
			if err != nil {
				return DeltaBase{}, fmt.Errorf("delta %d of %d: %w", i+1, len(deltas), err)
			}
			deltas[i] = p
		}
	}
	hs := c.headers[:0]
	for i, d := range deltas {
		h, at, err := readDeltaHeader(d)
		if err != nil {
			return DeltaBase{}, fmt.Errorf("delta %d of %d: %w", i+1, len(deltas), err)
		}
		if i == 0 {
			err = b.accepts(h)
		} else if p := hs[i-1]; h.BaseLen != p.Len || h.BaseSum != p.Sum {
			err = fmt.Errorf("%w: delta %d of %d was not made from the result of the one before", ErrDeltaBase, i+1, len(deltas))
		}
		if err == nil {
			err = checkLimit(h, limit)
		}
		if err == nil {
			err = validateOps(d, at, h)
		}
		if err != nil {
			return DeltaBase{}, err
		}
		hs = append(hs, h)
		c.ats = append(c.ats, at)
	}
	c.headers = hs

	base := b.data
	c.cur = c.cur[:0]
	c.curStart = c.curStart[:0]
	if len(base) > 0 {
		c.cur = append(c.cur, span{src: -1, n: len(base)})
		c.curStart = append(c.curStart, 0)
	}
	for i, d := range deltas {
		if c.compose(i, d, c.ats[i], hs[i]) {
			continue
		}
		// Too fragmented to compose: make the version this delta applies
		// to, apply it, and carry on from the result. The version before
		// goes to tmp[0], the one after to tmp[1]: spans point into the
		// base (tmp[1] after the first time) until the first copy is
		// made, and the base is not needed after it.
		before := base
		if i > 0 {
			before = materialize(slices.Grow(c.tmp[0][:0], hs[i].BaseLen)[:hs[i].BaseLen], c.cur, base, deltas)
			c.tmp[0] = before
			if got := DeltaSum(before); got != hs[i].BaseSum {
				return DeltaBase{}, fmt.Errorf("%w: delta %d of %d: result checksum %08x, want %08x", ErrCorrupt, i, len(deltas), got, hs[i].BaseSum)
			}
		}
		after := applyOps(slices.Grow(c.tmp[1][:0], hs[i].Len)[:hs[i].Len], before, d, c.ats[i], hs[i])
		c.tmp[1] = after
		if got := DeltaSum(after); got != hs[i].Sum {
			return DeltaBase{}, fmt.Errorf("%w: delta %d of %d: result checksum %08x, want %08x", ErrCorrupt, i+1, len(deltas), got, hs[i].Sum)
		}
		base = after
		c.cur = append(c.cur[:0], span{src: -1, n: len(after)})
		c.curStart = append(c.curStart[:0], 0)
	}
	last := hs[len(hs)-1]
	out := materialize(slices.Grow(dst[:0], last.Len)[:last.Len], c.cur, base, deltas)
	if got := DeltaSum(out); got != last.Sum {
		return DeltaBase{}, fmt.Errorf("%w: delta chain result checksum %08x, want %08x", ErrCorrupt, got, last.Sum)
	}
	return DeltaBase{data: out, sum: last.Sum, summed: true}, nil
}

// PatchChain is NewDeltaBase(base).PatchChain(dst, deltas, limit), returning
// the bytes.
func PatchChain(dst, base []byte, deltas [][]byte, limit int) ([]byte, error) {
	v, err := NewDeltaBase(base).PatchChain(dst, deltas, limit)
	return v.data, err
}

// span is a range of a version being composed: n bytes at off of the base
// (src -1) or of deltas[src]'s own bytes (an insert).
type span struct {
	src    int
	off, n int
}

// maxSpans is how fragmented a composed version of n bytes may get: past
// about one span per 64 bytes, walking the spans costs more than copying
// the bytes, and a hostile chain could otherwise hold 24 bytes of spans per
// byte of its result.
func maxSpans(n int) int { return max(256, n/64) }

type chainScratch struct {
	headers           []DeltaHeader
	ats               []int
	cur, next         []span
	curStart, nextSta []int // result offset of each span
	tmp               [2][]byte
	plain             [][]byte // the deltas, packed ones inflated
}

var chainScratches = sync.Pool{New: func() any { return new(chainScratch) }}

func (c *chainScratch) release() {
	c.headers, c.ats = c.headers[:0], c.ats[:0]
	clear(c.plain)
	c.plain = c.plain[:0]
	for i := range c.tmp {
		if cap(c.tmp[i]) > 4<<20 {
			c.tmp[i] = nil // let an outsized buffer go
		}
	}
	if cap(c.cur) > 1<<16 || cap(c.next) > 1<<16 {
		c.cur, c.next, c.curStart, c.nextSta = nil, nil, nil, nil
	}
	chainScratches.Put(c)
}

// compose replaces c.cur (the spans of deltas[i]'s base) with the spans of
// its result, or reports that there would be more than maxSpans of them
// and leaves c.cur as it was. The delta was validated.
func (c *chainScratch) compose(i int, d []byte, at int, h DeltaHeader) bool {
	c.next, c.nextSta = c.next[:0], c.nextSta[:0]
	limit := maxSpans(h.Len)
	pos := 0
	add := func(s span) {
		if k := len(c.next) - 1; k >= 0 && c.next[k].src == s.src && c.next[k].off+c.next[k].n == s.off {
			c.next[k].n += s.n
		} else {
			c.next = append(c.next, s)
			c.nextSta = append(c.nextSta, pos)
		}
		pos += s.n
	}
	r := opReader{d: d, pos: at, baseLen: h.BaseLen, left: h.Len}
	k := 0 // span of c.cur holding the last copy's end: copies mostly go forward
	for {
		op, ok, _ := r.next()
		if !ok {
			break
		}
		if len(c.next) > limit {
			return false
		}
		if !op.copy {
			add(span{src: i, off: op.off, n: op.n})
			continue
		}
		off, n := op.off, op.n
		if k >= len(c.cur) || c.curStart[k] > off || c.curStart[k]+c.cur[k].n <= off {
			k = sort.Search(len(c.cur), func(x int) bool { return c.curStart[x]+c.cur[x].n > off })
		}
		for n > 0 && len(c.next) <= limit {
			s := c.cur[k]
			into := off - c.curStart[k]
			take := min(n, s.n-into)
			add(span{src: s.src, off: s.off + into, n: take})
			off += take
			n -= take
			if into+take == s.n {
				k++
			}
		}
	}
	if len(c.next) > limit {
		return false
	}
	c.cur, c.next = c.next, c.cur
	c.curStart, c.nextSta = c.nextSta, c.curStart
	return true
}

func materialize(out []byte, spans []span, base []byte, deltas [][]byte) []byte {
	pos := 0
	for _, s := range spans {
		if s.src < 0 {
			copy(out[pos:pos+s.n], base[s.off:])
		} else {
			copy(out[pos:pos+s.n], deltas[s.src][s.off:])
		}
		pos += s.n
	}
	return out
}
