package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"sync"
)

// Version deltas: one version of an opaque value (a channel value a caller
// serialised itself: LangGraph.js's json serde, LangGraph Python's msgpack
// serde, a Go caller's bytes) written as the copies and inserts that turn
// the previous version of the same value into it.
//
// Format (DeltaV1), all integers little-endian or LEB128 varints:
//
//	byte     DeltaV1 (0xD1); 0xD2 is DeltaV1S2 (s2.go: the same header,
//	         then the ops in an S2 block); 0xD3..0xDF are reserved
//	uvarint  length of the base (the version the delta applies to)
//	uvarint  length of the result
//	uint32   checksum of the base   (low 32 bits of XXH64, seed 0)
//	uint32   checksum of the result (same)
//	ops until the end, each one of
//	  uvarint n<<1        then n bytes: insert them
//	  uvarint n<<1 | 1    then varint d: copy n bytes of the base from
//	                      offset e+d, where e is the base offset just
//	                      after the previous copy (0 before the first)
//
// Every op has n >= 1, the ops add up to the result's length exactly, and
// copies stay inside the base. A delta is at most len(result) +
// MaxDeltaOverhead bytes (Diff falls back to one insert), and both lengths
// are at most MaxDeltaValue.
//
// The checksums make misuse an error instead of a wrong value: a delta
// applied to another base (another branch's version, a stale cache entry)
// fails on the base's length or checksum with ErrDeltaBase; a damaged delta
// fails on its structure or on the result's checksum with ErrCorrupt.
//
// Why copy/insert (BenchmarkVersionDelta and BenchmarkVersionDeltaRun in
// vdelta_bench_test.go; 400 LangChain messages in LangGraph.js's json serde
// are 339 KB): a growing list changes at its end, and in msgpack also in its
// array header, so the common prefix and suffix (compared at memory speed)
// and then the current diagonal (an edit of the same length) carry nearly
// every step; only when both miss does Diff index the part of the base it
// has not matched yet, every 16 bytes, and look up the positions of the
// rest. A step's delta is the new messages plus about 25 bytes, written in
// 35 to 60 us and read in 30 to 50 us (under GOOS=js 120 to 160 us and
// 65 us); over an 800-message conversation the deltas are 254 times (json)
// and 258 times (msgpack) smaller than the versions. zstd with the previous
// version as raw dictionary made deltas 1.2 to 3.5 times smaller but cost 1
// to 7 ms per write, as it indexes the whole dictionary each time; a
// serde-aware split (each message stored once, the list as references) made
// the same bytes as copy/insert, cost about 1 ms per json write (every byte
// scanned for strings and nesting) and knows only lists. zstd over a
// copy/insert delta halves it for 40 to 150 us more per write and per read;
// a caller may add that per stored delta (PatchChain wants them plain).
//
// Using them: the base of a delta is the version the writer had as the
// value's previous one. For a channel that is the parent checkpoint's
// version of the same (thread, namespace, channel); LangGraph's version
// strings ("00000000000000000000000000000002.0.123456") order one branch
// only, and in a fork two versions share a base, so a stored delta names its
// base version, and whether a stored value is whole or a delta is recorded
// beside it, never guessed from its first byte (a whole value may start
// with 0xD1). A writer stores the value whole when the delta is not smaller
// and at intervals along a chain (the engine's rule: engine/valuedelta.go). A reader walks the base links back to
// the nearest whole (or cached) version and applies the deltas forward with
// PatchChain, which composes the chain into one list of ranges and copies
// the result once: 100 deltas past a 345 KB version cost a quarter to a
// half of inflating that version from zstd, where applying them one at a
// time costs 10 to 20 times as much as the inflating. A history cache of the last DeltaBase (bytes and checksum) per
// (thread, namespace, channel) makes the head read after a write a hit, a
// read one version further one Patch, and the next write a Diff that hashes
// only the new version.
//
// Everything here is safe for concurrent use; a DeltaBase is immutable.

// DeltaV1 is the first byte of a delta written by Diff.
const DeltaV1 byte = 0xD1

// MaxDeltaValue bounds the base and the result of a delta. SQLite's own
// limit on a value is lower (1e9 bytes by default).
const MaxDeltaValue = 1 << 30

// MaxDeltaOverhead bounds how much larger than its result a delta can be:
// the header (19 bytes at most) and one insert op's length (5).
const MaxDeltaOverhead = 24

// ErrDeltaBase reports a delta applied to a base it was not made from; it
// matches ErrCorrupt too.
var ErrDeltaBase = refines(ErrCorrupt, "delta applied to another base")

// ErrDeltaTooLarge reports a version over MaxDeltaValue given to Diff: it
// has no delta, and is stored whole.
var ErrDeltaTooLarge = errors.New("codec: version too large for a delta")

// DeltaHeader is what a delta says about its base and its result.
type DeltaHeader struct {
	BaseLen, Len int    // lengths of the base and of the result
	BaseSum, Sum uint32 // their checksums (DeltaSum)
}

// DeltaSum is the checksum deltas record of a version.
func DeltaSum(v []byte) uint32 { return uint32(xxh64(v)) }

// DeltaBase is a version prepared as the base of deltas: its bytes and their
// checksum, computed once. Diff and Patch return the next version as a
// DeltaBase, so a writer or reader that keeps the last one (per thread,
// namespace and channel) never hashes a version twice. The bytes are not
// copied: they must not change while the DeltaBase is in use. The zero
// value is the empty version.
type DeltaBase struct {
	data   []byte
	sum    uint32
	summed bool
}

// NewDeltaBase returns data as a base, hashing it.
func NewDeltaBase(data []byte) DeltaBase {
	return DeltaBase{data: data, sum: DeltaSum(data), summed: true}
}

// Bytes returns the version's bytes.
func (b DeltaBase) Bytes() []byte { return b.data }

// Sum returns DeltaSum(b.Bytes()).
func (b DeltaBase) Sum() uint32 {
	if !b.summed {
		return DeltaSum(b.data)
	}
	return b.sum
}

// Diff returns a delta that turns prev into next, written over dst's
// storage (dst[:0]) when it has room; dst must not overlap prev or next.
// It fails only on a version over MaxDeltaValue (ErrDeltaTooLarge).
func Diff(dst, prev, next []byte) ([]byte, error) {
	if len(prev) > MaxDeltaValue {
		return nil, fmt.Errorf("%w: base of %d bytes (max %d)", ErrDeltaTooLarge, len(prev), MaxDeltaValue)
	}
	d, _, err := NewDeltaBase(prev).Diff(dst, next)
	return d, err
}

// Patch returns the version delta turns base into, written over dst's
// storage when it has room; dst must not overlap base or delta. A result longer than limit is refused before
// anything is allocated. Errors match ErrCorrupt (ErrDeltaBase for the wrong
// base) or ErrUnsupported.
func Patch(dst, base, delta []byte, limit int) ([]byte, error) {
	v, err := NewDeltaBase(base).Patch(dst, delta, limit)
	return v.data, err
}

// Diff returns a delta that turns b into next (written over dst[:0]) and
// next as a DeltaBase for the following version. The delta is at most
// len(next) + MaxDeltaOverhead bytes; a caller stores next whole when the
// delta is not smaller.
func (b DeltaBase) Diff(dst, next []byte) ([]byte, DeltaBase, error) {
	prev := b.data
	if len(prev) > MaxDeltaValue || len(next) > MaxDeltaValue {
		return nil, DeltaBase{}, fmt.Errorf("%w: %d bytes against %d (max %d)", ErrDeltaTooLarge, len(next), len(prev), MaxDeltaValue)
	}
	nb := NewDeltaBase(next)
	m := matcher{prev: prev, next: next, w: deltaWriter{buf: dst[:0]}}
	w := &m.w
	w.header(DeltaHeader{BaseLen: len(prev), Len: len(next), BaseSum: b.Sum(), Sum: nb.sum})
	head := len(w.buf)

	p := commonPrefix(prev, next)
	s := commonSuffix(prev[p:], next[p:])
	w.copy(0, p)
	if p < len(next)-s {
		m.maxEnd = p
		m.run(p, len(next)-s, len(prev)-s)
		m.release()
	}
	w.copy(len(prev)-s, s)

	if whole := head + uvarintLen(uint64(len(next))<<1) + len(next); len(w.buf) > whole {
		// Mostly new bytes: one insert is smaller than many short copies.
		w.buf = w.buf[:head]
		w.insert(next)
	}
	return w.buf, nb, nil
}

// Patch returns the version delta turns b into, written over dst's storage
// (dst[:0]) when it has room (dst must not overlap b or delta), as a
// DeltaBase for the next delta. The delta
// is checked whole (its header against b, every op, the result's length)
// before the result is allocated, so a result longer than limit or a
// hostile delta never costs more than limit bytes; the result's checksum is
// checked last.
func (b DeltaBase) Patch(dst, delta []byte, limit int) (DeltaBase, error) {
	delta, err := UnpackDelta(delta)
	if err != nil {
		return DeltaBase{}, err
	}
	h, at, err := readDeltaHeader(delta)
	if err != nil {
		return DeltaBase{}, err
	}
	if err := b.accepts(h); err != nil {
		return DeltaBase{}, err
	}
	if err := checkLimit(h, limit); err != nil {
		return DeltaBase{}, err
	}
	if err := validateOps(delta, at, h); err != nil {
		return DeltaBase{}, err
	}
	out := applyOps(slices.Grow(dst[:0], h.Len)[:h.Len], b.data, delta, at, h)
	if got := DeltaSum(out); got != h.Sum {
		return DeltaBase{}, fmt.Errorf("%w: delta result checksum %08x, want %08x", ErrCorrupt, got, h.Sum)
	}
	return DeltaBase{data: out, sum: h.Sum, summed: true}, nil
}

// applyOps writes the result of a validated delta into out (h.Len bytes).
func applyOps(out, base, delta []byte, at int, h DeltaHeader) []byte {
	r := opReader{d: delta, pos: at, baseLen: h.BaseLen, left: h.Len}
	pos := 0
	for {
		op, ok, _ := r.next()
		if !ok {
			return out
		}
		if op.copy {
			copy(out[pos:pos+op.n], base[op.off:])
		} else {
			copy(out[pos:pos+op.n], delta[op.off:])
		}
		pos += op.n
	}
}

// ReadDeltaHeader returns what a delta says about its base and result,
// without checking its ops. Errors match ErrCorrupt or ErrUnsupported.
func ReadDeltaHeader(delta []byte) (DeltaHeader, error) {
	h, _, err := readDeltaHeader(delta)
	return h, err
}

func readDeltaHeader(delta []byte) (DeltaHeader, int, error) {
	if len(delta) == 0 {
		return DeltaHeader{}, 0, fmt.Errorf("%w: empty delta", ErrCorrupt)
	}
	switch v := delta[0]; {
	case v == DeltaV1, v == DeltaV1S2:
	case v > DeltaV1S2 && v <= 0xDF:
		return DeltaHeader{}, 0, fmt.Errorf("%w: delta format 0x%02x (this build reads up to 0x%02x)", ErrUnsupported, v, DeltaV1S2)
	default:
		return DeltaHeader{}, 0, fmt.Errorf("%w: not a delta (first byte 0x%02x)", ErrCorrupt, v)
	}
	pos := 1
	var lens [2]int
	for i := range lens {
		v, n := binary.Uvarint(delta[pos:])
		if n <= 0 || v > MaxDeltaValue {
			return DeltaHeader{}, 0, fmt.Errorf("%w: delta header: bad length", ErrCorrupt)
		}
		lens[i] = int(v)
		pos += n
	}
	if len(delta)-pos < 8 {
		return DeltaHeader{}, 0, fmt.Errorf("%w: delta header truncated", ErrCorrupt)
	}
	h := DeltaHeader{BaseLen: lens[0], Len: lens[1],
		BaseSum: binary.LittleEndian.Uint32(delta[pos:]), Sum: binary.LittleEndian.Uint32(delta[pos+4:])}
	return h, pos + 8, nil
}

// accepts reports whether a delta with header h was made from b.
func (b DeltaBase) accepts(h DeltaHeader) error {
	if len(b.data) != h.BaseLen {
		return fmt.Errorf("%w: base of %d bytes, the delta was made from %d", ErrDeltaBase, len(b.data), h.BaseLen)
	}
	if s := b.Sum(); s != h.BaseSum {
		return fmt.Errorf("%w: base checksum %08x, the delta was made from %08x", ErrDeltaBase, s, h.BaseSum)
	}
	return nil
}

func checkLimit(h DeltaHeader, limit int) error {
	if h.Len > limit {
		return fmt.Errorf("%w: delta makes %d bytes, over the limit of %d", ErrCorrupt, h.Len, limit)
	}
	return nil
}

// validateOps walks the ops without copying: n >= 1, inside the result and
// the base, adding up to h.Len.
func validateOps(delta []byte, at int, h DeltaHeader) error {
	r := opReader{d: delta, pos: at, baseLen: h.BaseLen, left: h.Len}
	for {
		_, ok, err := r.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
	}
	if r.left != 0 {
		return fmt.Errorf("%w: delta ops make %d bytes, header says %d", ErrCorrupt, h.Len-r.left, h.Len)
	}
	return nil
}

// deltaOp is one op: n bytes copied from the base at off, or inserted from
// the delta's own bytes at off.
type deltaOp struct {
	copy   bool
	off, n int
}

type opReader struct {
	d       []byte
	pos     int
	expect  int // base offset after the last copy
	baseLen int
	left    int // result bytes not yet produced
}

var errDeltaOp = refines(ErrCorrupt, "malformed delta op")

func (r *opReader) next() (deltaOp, bool, error) {
	if r.pos == len(r.d) {
		return deltaOp{}, false, nil
	}
	tag, k := binary.Uvarint(r.d[r.pos:])
	if k <= 0 {
		return deltaOp{}, false, errDeltaOp
	}
	r.pos += k
	n := tag >> 1
	if n == 0 || n > uint64(r.left) {
		return deltaOp{}, false, fmt.Errorf("%w: op of %d bytes with %d left", ErrCorrupt, n, r.left)
	}
	op := deltaOp{copy: tag&1 == 1, n: int(n)}
	if op.copy {
		d, k := binary.Varint(r.d[r.pos:])
		if k <= 0 {
			return deltaOp{}, false, errDeltaOp
		}
		r.pos += k
		// expect and n are at most MaxDeltaValue, so only d can overflow.
		if d < -int64(r.expect) || d > int64(r.baseLen-r.expect) || op.n > r.baseLen-r.expect-int(d) {
			return deltaOp{}, false, fmt.Errorf("%w: copy outside the %d-byte base", ErrCorrupt, r.baseLen)
		}
		op.off = r.expect + int(d)
		r.expect = op.off + op.n
	} else {
		if op.n > len(r.d)-r.pos {
			return deltaOp{}, false, fmt.Errorf("%w: insert of %d bytes past the delta's end", ErrCorrupt, op.n)
		}
		op.off = r.pos
		r.pos += op.n
	}
	r.left -= op.n
	return op, true, nil
}

type deltaWriter struct {
	buf    []byte
	expect int
}

func (w *deltaWriter) header(h DeltaHeader) {
	w.buf = append(w.buf, DeltaV1)
	w.buf = binary.AppendUvarint(w.buf, uint64(h.BaseLen))
	w.buf = binary.AppendUvarint(w.buf, uint64(h.Len))
	w.buf = binary.LittleEndian.AppendUint32(w.buf, h.BaseSum)
	w.buf = binary.LittleEndian.AppendUint32(w.buf, h.Sum)
}

func (w *deltaWriter) insert(lit []byte) {
	if len(lit) == 0 {
		return
	}
	w.buf = binary.AppendUvarint(w.buf, uint64(len(lit))<<1)
	w.buf = append(w.buf, lit...)
}

func (w *deltaWriter) copy(off, n int) {
	if n == 0 {
		return
	}
	w.buf = binary.AppendUvarint(w.buf, uint64(n)<<1|1)
	w.buf = binary.AppendVarint(w.buf, int64(off-w.expect))
	w.expect = off + n
}

func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// Matching in the middle (what the common prefix and suffix left).
const (
	// deltaMinMatch is the shortest copy worth an op: shorter ones cost
	// about as much as they save and fragment the chains readers compose.
	deltaMinMatch = 16
	// deltaLostRun is the literal run after which the scan stops trusting
	// the current diagonal alone and indexes the base.
	deltaLostRun = 32
	// deltaStride is the spacing of indexed base positions: a match of
	// deltaStride+8 bytes or more always contains one.
	deltaStride = 16
	// A literal run of n bytes advances the scan by 1 + n>>deltaSkipShift
	// bytes, at most deltaMaxSkip (odd, so coprime with deltaStride).
	deltaSkipShift = 7
	deltaMaxSkip   = 31
)

// matcher finds copies for next[start:end] in prev. It tries the current
// diagonal (the offset between base and result of the last copy) at every
// position, which finds the rest of a list after an edit of the same length
// (a message count in an array header, a replaced field), and builds a block
// index of the base only when a literal run gets long while part of the base
// past the furthest copy is still unmatched: after an append the base is
// used up, and the new bytes need no index.
type matcher struct {
	prev, next []byte
	w          deltaWriter
	maxEnd     int // furthest base offset copied so far
	table      *[]uint32
	shift      uint
}

var indexTables = sync.Pool{New: func() any { return new([]uint32) }}

func (m *matcher) release() {
	if m.table != nil {
		indexTables.Put(m.table)
		m.table = nil
	}
}

func (m *matcher) run(lit, end, baseHi int) {
	prev, next := m.prev, m.next
	diag := 0 // prev offset minus next offset of the last copy
	j := lit
	for j+8 <= end {
		x := load64(next, j)
		if bp := j + diag; bp >= 0 && bp+8 <= len(prev) && load64(prev, bp) == x {
			if n, back := m.extend(lit, j, bp, end); n+back >= deltaMinMatch {
				m.w.insert(next[lit : j-back])
				m.w.copy(bp-back, n+back)
				m.maxEnd = max(m.maxEnd, bp+n)
				j += n
				lit = j
				continue
			}
		}
		if m.table == nil && j-lit >= deltaLostRun && baseHi-m.maxEnd >= deltaMinMatch {
			m.index(m.maxEnd, baseHi)
		}
		if m.table != nil {
			if c := int((*m.table)[hash64(x, m.shift)]) - 1; c >= 0 && c != j+diag && load64(prev, c) == x {
				if n, back := m.extend(lit, j, c, end); n+back >= deltaMinMatch {
					m.w.insert(next[lit : j-back])
					m.w.copy(c-back, n+back)
					m.maxEnd = max(m.maxEnd, c+n)
					diag = c - j
					j += n
					lit = j
					continue
				}
			}
		}
		// The longer the literal run, the less likely the next byte starts
		// a match: step faster (new content, unrelated values), but by an
		// odd step at most, so that the positions visited still meet the
		// indexed ones (every deltaStride) inside any longer match. A
		// match found late is extended back to where it starts.
		j += 1 + min((j-lit)>>deltaSkipShift, deltaMaxSkip-1)
	}
	m.w.insert(next[lit:end])
}

// extend measures the match of next[j:] (up to end) and prev[bp:], forward
// and back into the pending literal next[lit:j].
func (m *matcher) extend(lit, j, bp, end int) (n, back int) {
	n = 8 + commonPrefix(m.prev[bp+8:], m.next[j+8:end])
	for back < j-lit && back < bp && m.prev[bp-back-1] == m.next[j-back-1] {
		back++
	}
	return n, back
}

// index maps the 8 bytes at every deltaStride-th offset of prev[lo:hi] to
// the offset; where two collide the earlier one wins, as edits keep order.
func (m *matcher) index(lo, hi int) {
	entries := (hi - lo) / deltaStride
	size := 1 << min(max(bits.Len(uint(entries))+1, 10), 20) // load under a half
	m.shift = uint(64 - bits.Len(uint(size-1)))
	m.table = indexTables.Get().(*[]uint32)
	t := *m.table
	if cap(t) < size {
		t = make([]uint32, size)
	} else {
		t = t[:size]
		clear(t)
	}
	*m.table = t
	for pos := lo + (entries-1)*deltaStride; pos >= lo; pos -= deltaStride {
		if pos+8 <= hi {
			t[hash64(load64(m.prev, pos), m.shift)] = uint32(pos + 1)
		}
	}
}

func hash64(x uint64, shift uint) uint64 { return (x * 0x9E3779B97F4A7C15) >> shift }

func load64(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[i : i+8]) }

// equalChunk is the block commonPrefix and commonSuffix hand to
// bytes.Equal first, where that is vector code (memeq runs at 25 to 45 GB/s
// on amd64, against about 10 for the word loop below); under GOOS=js and
// wasip1 it is a byte loop, and the word loop is twice as fast.
const equalChunk = 256

const vectorEqual = runtime.GOARCH != "wasm"

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	i := 0
	if vectorEqual {
		for len(a) >= equalChunk && bytes.Equal(a[:equalChunk], b[:equalChunk]) {
			a, b = a[equalChunk:], b[equalChunk:]
			i += equalChunk
		}
	}
	for len(a) >= 32 {
		if (binary.LittleEndian.Uint64(a)^binary.LittleEndian.Uint64(b))|
			(binary.LittleEndian.Uint64(a[8:])^binary.LittleEndian.Uint64(b[8:]))|
			(binary.LittleEndian.Uint64(a[16:])^binary.LittleEndian.Uint64(b[16:]))|
			(binary.LittleEndian.Uint64(a[24:])^binary.LittleEndian.Uint64(b[24:])) != 0 {
			break
		}
		a, b = a[32:], b[32:]
		i += 32
	}
	for len(a) >= 8 {
		if x := binary.LittleEndian.Uint64(a) ^ binary.LittleEndian.Uint64(b); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
		a, b = a[8:], b[8:]
		i += 8
	}
	for k := range a {
		if a[k] != b[k] {
			return i + k
		}
	}
	return i + len(a)
}

// commonSuffix returns the length of the longest common suffix of a and b.
func commonSuffix(a, b []byte) int {
	n := min(len(a), len(b))
	a, b = a[len(a)-n:], b[len(b)-n:]
	i := 0
	if vectorEqual {
		for len(a) >= equalChunk && bytes.Equal(a[len(a)-equalChunk:], b[len(b)-equalChunk:]) {
			a, b = a[:len(a)-equalChunk], b[:len(b)-equalChunk]
			i += equalChunk
		}
	}
	for len(a) >= 32 {
		k := len(a) - 32
		if (binary.LittleEndian.Uint64(a[k:])^binary.LittleEndian.Uint64(b[k:]))|
			(binary.LittleEndian.Uint64(a[k+8:])^binary.LittleEndian.Uint64(b[k+8:]))|
			(binary.LittleEndian.Uint64(a[k+16:])^binary.LittleEndian.Uint64(b[k+16:]))|
			(binary.LittleEndian.Uint64(a[k+24:])^binary.LittleEndian.Uint64(b[k+24:])) != 0 {
			break
		}
		a, b = a[:k], b[:k]
		i += 32
	}
	for len(a) >= 8 {
		k := len(a) - 8
		if x := binary.LittleEndian.Uint64(a[k:]) ^ binary.LittleEndian.Uint64(b[k:]); x != 0 {
			return i + bits.LeadingZeros64(x)/8
		}
		a, b = a[:k], b[:k]
		i += 8
	}
	for k := len(a) - 1; k >= 0; k-- {
		if a[k] != b[k] {
			return i + len(a) - 1 - k
		}
	}
	return i + len(a)
}
