package codec

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/vmihailenco/msgpack/v5"
)

// The measurements behind the choice of the delta format. Every candidate
// runs on the same pairs of versions:
//
//	go test ./codec -run '^$' -bench 'VersionDelta' -benchmem
//
// delta-B is the size of one delta; value-B the size of the version it
// encodes. "run" benchmarks diff (or patch) every version of a whole
// conversation and report bytes and time per version.

// deltaCandidate is one way to encode a version against the previous one.
type deltaCandidate struct {
	name  string
	diff  func(dst, prev, next []byte) []byte
	patch func(dst, prev, delta []byte) ([]byte, error)
	// json and msgpack lists only (the serde-aware split)
	listsOnly bool
}

func deltaCandidates() []deltaCandidate {
	return []deltaCandidate{
		// As the engine would run it: the previous version's checksum
		// kept with it (its DeltaBase), so a write hashes only the new
		// version, and a read only its result.
		{name: "copyinsert", diff: func(dst, prev, next []byte) []byte {
			d, nb, _ := cachedBase(prev).Diff(dst, next)
			remember(nb)
			return d
		}, patch: func(dst, prev, delta []byte) ([]byte, error) {
			v, err := cachedBase(prev).Patch(dst, delta, MaxDeltaValue)
			if err == nil {
				remember(v)
			}
			return v.Bytes(), err
		}},
		// Without it: both versions hashed on every call.
		{name: "copyinsert-nocache", diff: func(dst, prev, next []byte) []byte {
			d, _ := Diff(dst, prev, next)
			return d
		}, patch: func(dst, prev, delta []byte) ([]byte, error) {
			return Patch(dst, prev, delta, MaxDeltaValue)
		}},
		{name: "prefixsuffix", diff: diffPrefixSuffix, patch: func(dst, prev, delta []byte) ([]byte, error) {
			return Patch(dst, prev, delta, MaxDeltaValue)
		}},
		{name: "copyinsert+zstd", diff: func(dst, prev, next []byte) []byte {
			d, _ := Diff(nil, prev, next)
			return benchZstd(zstd.SpeedFastest).EncodeAll(d, dst[:0])
		}, patch: func(dst, prev, delta []byte) ([]byte, error) {
			d, err := benchZstdDec().DecodeAll(delta, nil)
			if err != nil {
				return nil, err
			}
			return Patch(dst, prev, d, MaxDeltaValue)
		}},
		{name: "zstd-dict-fastest", diff: zstdDictDiff(zstd.SpeedFastest), patch: zstdDictPatch},
		{name: "zstd-dict-default", diff: zstdDictDiff(zstd.SpeedDefault), patch: zstdDictPatch},
		{name: "serde-split", diff: splitDiff, patch: splitPatch, listsOnly: true},
	}
}

// bases stands in for the engine's history cache: the DeltaBase of the
// versions a writer or reader just had, by their storage.
var bases = map[baseKey]DeltaBase{}

type baseKey struct {
	at *byte
	n  int
}

func keyOf(v []byte) baseKey {
	if len(v) == 0 {
		return baseKey{}
	}
	return baseKey{&v[0], len(v)}
}

func cachedBase(prev []byte) DeltaBase {
	b, ok := bases[keyOf(prev)]
	if !ok {
		b = NewDeltaBase(prev)
		remember(b)
	}
	return b
}

func remember(b DeltaBase) {
	if len(bases) > 8 {
		clear(bases)
	}
	bases[keyOf(b.data)] = b
}

// diffPrefixSuffix is Diff without the matcher: the common prefix and
// suffix, everything between them inserted.
func diffPrefixSuffix(dst, prev, next []byte) []byte {
	w := deltaWriter{buf: dst[:0]}
	w.header(DeltaHeader{BaseLen: len(prev), Len: len(next), BaseSum: DeltaSum(prev), Sum: DeltaSum(next)})
	p := commonPrefix(prev, next)
	s := commonSuffix(prev[p:], next[p:])
	w.copy(0, p)
	w.insert(next[p : len(next)-s])
	w.copy(len(prev)-s, s)
	return w.buf
}

var (
	benchEncoders = map[zstd.EncoderLevel]*zstd.Encoder{} // without a dictionary
	dictEncoders  = map[zstd.EncoderLevel]*zstd.Encoder{}
	benchDecoder  *zstd.Decoder
	dictIDs       atomic.Uint32
)

func benchZstd(level zstd.EncoderLevel) *zstd.Encoder { return encoderIn(benchEncoders, level) }

func encoderIn(m map[zstd.EncoderLevel]*zstd.Encoder, level zstd.EncoderLevel) *zstd.Encoder {
	if e := m[level]; e != nil {
		return e
	}
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
	must(err)
	m[level] = e
	return e
}

func benchZstdDec() *zstd.Decoder {
	if benchDecoder == nil {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		must(err)
		benchDecoder = d
	}
	return benchDecoder
}

// zstdDictDiff compresses next with prev as a raw dictionary. The encoders
// cache a dictionary's tables by its id, so every version gets a new one;
// the id travels in the frame and, for the reader, before it.
func zstdDictDiff(level zstd.EncoderLevel) func(dst, prev, next []byte) []byte {
	return func(dst, prev, next []byte) []byte {
		id := dictIDs.Add(1)
		e := encoderIn(dictEncoders, level)
		must(e.ResetWithOptions(nil, zstd.WithEncoderDictRaw(id, prev)))
		return e.EncodeAll(next, binary.LittleEndian.AppendUint32(dst[:0], id))
	}
}

func zstdDictPatch(dst, prev, delta []byte) ([]byte, error) {
	id := binary.LittleEndian.Uint32(delta)
	d := benchZstdDec()
	// One dictionary at a time: the decoder copies its map of them on
	// every reset.
	if err := d.ResetWithOptions(nil, zstd.WithDecoderDictDelete(lastDictID), zstd.WithDecoderDictRaw(id, prev)); err != nil {
		return nil, err
	}
	lastDictID = id
	return d.DecodeAll(delta[4:], dst[:0])
}

var lastDictID uint32

// The serde-aware split: a list is cut into its elements (messages), each
// stored once; a version is runs of the previous version's elements and
// new elements. For json that means scanning every byte of the list
// (strings, escapes, depth); for msgpack, one header per element (the
// messages are ext values). The previous version's cut is cached, as a
// writer could keep it.
func listElems(b []byte, out [][2]int) [][2]int {
	out = out[:0]
	if len(b) > 0 && b[0] == '[' {
		depth, start, inStr, esc := 0, 1, false, false
		for i := 1; i < len(b); i++ {
			c := b[i]
			switch {
			case inStr:
				if esc {
					esc = false
				} else if c == '\\' {
					esc = true
				} else if c == '"' {
					inStr = false
				}
			case c == '"':
				inStr = true
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				if depth == 0 {
					if i > start {
						out = append(out, [2]int{start, i})
					}
					return out
				}
				depth--
			case c == ',' && depth == 0:
				out = append(out, [2]int{start, i})
				start = i + 1
			}
		}
		return out
	}
	pos, _, n, err := Head(b, 0)
	if err != nil {
		return out
	}
	for range n {
		size, err := scan(b[pos:])
		if err != nil {
			return out
		}
		out = append(out, [2]int{pos, pos + size})
		pos += size
	}
	return out
}

type splitIndex struct {
	prev  []byte
	elems [][2]int
	byKey map[uint64]int
}

var splitCache splitIndex

func splitIndexOf(prev []byte) *splitIndex {
	if len(splitCache.prev) != len(prev) || !bytes.Equal(splitCache.prev, prev) {
		splitCache = splitIndex{prev: prev, elems: listElems(prev, nil), byKey: map[uint64]int{}}
		for i, e := range splitCache.elems {
			splitCache.byKey[xxh64(prev[e[0]:e[1]])] = i
		}
	}
	return &splitCache
}

var splitScratch [][2]int

func splitDiff(dst, prev, next []byte) []byte {
	ix := splitIndexOf(prev)
	splitScratch = listElems(next, splitScratch)
	out := append(dst[:0], next[0]) // json '[' or the msgpack header's first byte
	runStart, runLen := -1, 0
	flush := func() {
		if runLen > 0 {
			out = binary.AppendUvarint(out, uint64(runStart)<<1|1)
			out = binary.AppendUvarint(out, uint64(runLen))
		}
		runLen = 0
	}
	for _, e := range splitScratch {
		el := next[e[0]:e[1]]
		if i, ok := ix.byKey[xxh64(el)]; ok {
			if runLen > 0 && runStart+runLen == i {
				runLen++
				continue
			}
			flush()
			runStart, runLen = i, 1
			continue
		}
		flush()
		out = binary.AppendUvarint(out, uint64(len(el))<<1)
		out = append(out, el...)
	}
	flush()
	return out
}

func splitPatch(dst, prev, delta []byte) ([]byte, error) {
	ix := splitIndexOf(prev)
	out := dst[:0]
	json := delta[0] == '['
	var elems [][]byte
	for pos := 1; pos < len(delta); {
		tag, n := binary.Uvarint(delta[pos:])
		pos += n
		if tag&1 == 1 {
			count, n := binary.Uvarint(delta[pos:])
			pos += n
			for i := int(tag >> 1); i < int(tag>>1)+int(count); i++ {
				e := ix.elems[i]
				elems = append(elems, prev[e[0]:e[1]])
			}
			continue
		}
		elems = append(elems, delta[pos:pos+int(tag>>1)])
		pos += int(tag >> 1)
	}
	if json {
		out = append(out, '[')
		for i, e := range elems {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, e...)
		}
		return append(out, ']'), nil
	}
	var hdr bytes.Buffer
	must(msgpack.NewEncoder(&hdr).EncodeArrayLen(len(elems)))
	out = append(out, hdr.Bytes()...)
	for _, e := range elems {
		out = append(out, e...)
	}
	return out, nil
}

// deltaPairs are single steps at about 400 messages.
func deltaPairs() []struct {
	name       string
	prev, next []byte
	list       bool
} {
	rng := rand.New(rand.NewPCG(42, 1))
	conv := lcConversation(rng, 420)
	js, mp := encodeAll(conv, lcMsg.json), encodeAll(conv, lcMsg.msgpack)
	edit := func(elems [][]byte, f func([][]byte) [][]byte) [][]byte {
		return f(append([][]byte(nil), elems...))
	}
	replaced := func(s serde) func([][]byte) [][]byte {
		return func(e [][]byte) [][]byte {
			m := conv[200]
			m.content = lcText(rng, 650)
			e[200] = s.elem(m)
			return e
		}
	}
	removed := func(e [][]byte) [][]byte { return append(e[:200:200], e[201:]...) }
	scattered := func(e [][]byte) [][]byte {
		for _, i := range []int{37, 120, 201, 288, 350} {
			m := conv[i]
			m.content = lcText(rng, 100+rng.IntN(700))
			e[i] = jsonSerde.elem(m)
		}
		return e
	}
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	snap := growingEvery(42, 420, 10, snapshotSerde)
	return []struct {
		name       string
		prev, next []byte
		list       bool
	}{
		{"json-append", jsonListOf(js[:400]), jsonListOf(js[:402]), true},
		{"msgpack-append", msgpackListOf(mp[:400]), msgpackListOf(mp[:402]), true},
		{"snapshot-K10", snap[len(snap)-2], snap[len(snap)-1], false},
		{"json-replace-middle", jsonListOf(js[:400]), jsonListOf(edit(js[:400], replaced(jsonSerde))), true},
		{"json-remove-middle+append", jsonListOf(js[:400]), jsonListOf(append(edit(js[:400], removed), js[400])), true},
		{"msgpack-remove-middle+append", msgpackListOf(mp[:400]), msgpackListOf(append(edit(mp[:400], removed), mp[400])), true},
		{"json-5-scattered", jsonListOf(js[:400]), jsonListOf(edit(js[:400], scattered)), true},
		{"counter", []byte("41"), []byte("42"), false},
		{"random-64k", random(64 << 10), random(64 << 10), false},
	}
}

func BenchmarkVersionDelta(b *testing.B) {
	for _, p := range deltaPairs() {
		for _, c := range deltaCandidates() {
			if c.listsOnly && !p.list {
				continue
			}
			d := c.diff(nil, p.prev, p.next)
			back, err := c.patch(nil, p.prev, d)
			if err != nil || !bytes.Equal(back, p.next) {
				b.Fatalf("%s on %s does not round-trip: %v", c.name, p.name, err)
			}
			b.Run(p.name+"/"+c.name+"/diff", func(b *testing.B) {
				b.SetBytes(int64(len(p.next)))
				buf := make([]byte, 0, len(p.next)+64)
				for b.Loop() {
					buf = c.diff(buf, p.prev, p.next)
				}
				b.ReportMetric(float64(len(d)), "delta-B")
				b.ReportMetric(float64(len(p.next)), "value-B")
			})
			b.Run(p.name+"/"+c.name+"/patch", func(b *testing.B) {
				b.SetBytes(int64(len(p.next)))
				buf := make([]byte, 0, len(p.next))
				for b.Loop() {
					buf, _ = c.patch(buf, p.prev, d)
				}
			})
		}
	}
}

// BenchmarkVersionDeltaRun encodes every version of a whole conversation
// against the one before: the bytes a saver stores for the channel, per
// version, and the time.
func BenchmarkVersionDeltaRun(b *testing.B) {
	for _, w := range []struct {
		name string
		vs   [][]byte
		list bool
	}{
		{"json-800", growingList(42, 800, jsonSerde), true},
		{"msgpack-800", growingList(42, 800, msgpackSerde), true},
		{"snapshot-800-K10", growingEvery(42, 800, 10, snapshotSerde), false},
	} {
		var whole int
		for _, v := range w.vs {
			whole += len(v)
		}
		for _, c := range deltaCandidates() {
			if c.listsOnly && !w.list {
				continue
			}
			var deltas [][]byte
			b.Run(w.name+"/"+c.name+"/diff", func(b *testing.B) {
				var total int
				for b.Loop() {
					deltas, total = deltas[:0], 0
					prev := []byte(nil)
					for _, v := range w.vs {
						d := c.diff(nil, prev, v)
						total += min(len(d), len(v))
						deltas = append(deltas, d)
						prev = v
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(w.vs)), "ns/version")
				b.ReportMetric(float64(total)/float64(len(w.vs)), "B/version")
				b.ReportMetric(float64(whole)/float64(total), "x-smaller")
			})
			b.Run(w.name+"/"+c.name+"/patch", func(b *testing.B) {
				// Each version from the one the reader just made, as a
				// reader walking forward does.
				var bufs [2][]byte
				for b.Loop() {
					prev := []byte(nil)
					for i, d := range deltas {
						out, err := c.patch(bufs[i%2], prev, d)
						if err != nil {
							b.Fatal(err)
						}
						bufs[i%2], prev = out, out
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(w.vs)), "ns/version")
			})
		}
	}
}

// BenchmarkPatchChain reads a version 100 deltas past a stored whole one
// (about 400 messages, json): composed, step by step, and against the cost
// of reading the whole one alone (inflating its zstd frames, as the engine
// stores snapshots, and hashing it).
func BenchmarkPatchChain(b *testing.B) {
	vs := growingList(42, 560, jsonSerde)
	from := len(vs) - 101
	base := vs[from]
	var deltas [][]byte
	for i := from + 1; i < len(vs); i++ {
		d, _ := Diff(nil, vs[i-1], vs[i])
		deltas = append(deltas, d)
	}
	want := vs[len(vs)-1]
	b.Logf("base %d bytes, head %d bytes, 100 deltas", len(base), len(want))
	buf := make([]byte, 0, len(want))
	b.Run("composed", func(b *testing.B) {
		for b.Loop() {
			v, err := NewDeltaBase(base).PatchChain(buf, deltas, MaxDeltaValue)
			if err != nil || len(v.Bytes()) != len(want) {
				b.Fatal(err)
			}
		}
	})
	b.Run("step-by-step", func(b *testing.B) {
		bufs := [2][]byte{make([]byte, 0, len(want)), make([]byte, 0, len(want))}
		for b.Loop() {
			v := NewDeltaBase(base)
			for i, d := range deltas {
				var err error
				if v, err = v.Patch(bufs[i%2], d, MaxDeltaValue); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	plain := append([]byte{FormatV1}, base...) // the bytes as a blob's body
	frame, err := Compress(plain, FormatV1Zstd, Small)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("whole-snapshot-inflate", func(b *testing.B) {
		for b.Loop() {
			body, _, err := Body(frame)
			if err != nil {
				b.Fatal(err)
			}
			NewDeltaBase(body)
		}
	})
	b.Run("one-delta", func(b *testing.B) {
		v := NewDeltaBase(vs[len(vs)-2])
		for b.Loop() {
			if _, err := v.Patch(buf, deltas[len(deltas)-1], MaxDeltaValue); err != nil {
				b.Fatal(err)
			}
		}
	})
}
