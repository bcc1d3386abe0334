package codec

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// deltaSeed returns the seed of a randomized test and logs it;
// AGENTSTATE_SEED=N replays a run.
func deltaSeed(t testing.TB) uint64 {
	t.Helper()
	seed := rand.Uint64() >> 1
	if s := os.Getenv("AGENTSTATE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("AGENTSTATE_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with AGENTSTATE_SEED=%d)", seed, seed)
	return seed
}

// sameBytes fails with the first differing offset: a 400 KB diff would
// bury the point.
func sameBytes(t testing.TB, label string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	at := commonPrefix(got, want)
	t.Fatalf("%s: %d bytes, want %d; first difference at offset %d", label, len(got), len(want), at)
}

// The checksum is XXH64; the expected values come from an independent
// implementation (cespare/xxhash, as vendored by klauspost/compress).
func TestXXH64KnownAnswers(t *testing.T) {
	for in, want := range map[string]uint64{
		"":               0xef46db3751d8e999,
		"a":              0xd24ec4f1a98c6e5b,
		"abc":            0x44bc2cf5ad770999,
		"message digest": 0x066ed728fceeb3be,
		"abcdefghijklmnopqrstuvwxyz012345678901234567890123456789": 0x75e6c25e2be8cf24,
	} {
		if got := xxh64([]byte(in)); got != want {
			t.Errorf("xxh64(%q) = %#016x, want %#016x", in, got, want)
		}
	}
}

// checkStep diffs prev to next, patches it back and checks the bytes and
// the size bound; it returns the delta.
func checkStep(t testing.TB, label string, prev DeltaBase, next []byte) ([]byte, DeltaBase) {
	t.Helper()
	d, nb, err := prev.Diff(nil, next)
	if err != nil {
		t.Fatalf("%s: Diff: %v", label, err)
	}
	if len(d) > len(next)+MaxDeltaOverhead {
		t.Fatalf("%s: delta of %d bytes for a %d-byte version", label, len(d), len(next))
	}
	if nb.Sum() != DeltaSum(next) || !bytes.Equal(nb.Bytes(), next) {
		t.Fatalf("%s: Diff returned another version as the next base", label)
	}
	got, err := prev.Patch(nil, d, len(next))
	if err != nil {
		t.Fatalf("%s: Patch: %v", label, err)
	}
	sameBytes(t, label, got.Bytes(), next)
	if got.Sum() != DeltaSum(next) {
		t.Fatalf("%s: Patch returned the wrong checksum", label)
	}
	return d, nb
}

// randomEdit returns a new version of v: the edits a channel value goes
// through, on arbitrary bytes.
func randomEdit(rng *rand.Rand, v []byte) (string, []byte) {
	text := func(n int) []byte { return []byte(lcText(rng, n)) }
	noise := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	some := func(n int) []byte {
		if rng.IntN(3) == 0 {
			return noise(n)
		}
		return text(n)
	}
	at := func() int { return rng.IntN(len(v) + 1) }
	out := bytes.Clone(v)
	switch k := rng.IntN(13); k {
	case 0, 1:
		return "append", append(out, some(1+rng.IntN(2000))...)
	case 2:
		if len(v) == 0 {
			return "empty", out
		}
		i := rng.IntN(len(v))
		copy(out[i:], some(min(1+rng.IntN(40), len(v)-i)))
		return "overwrite", out
	case 3:
		i := at()
		j := i + rng.IntN(len(v)-i+1)
		return "replace", append(append(out[:i:i], some(rng.IntN(300))...), v[j:]...)
	case 4:
		i := at()
		j := i + rng.IntN(min(len(v)-i, 3000)+1)
		return "remove", append(out[:i:i], v[j:]...)
	case 5:
		i := at()
		return "insert", append(append(out[:i:i], some(1+rng.IntN(500))...), v[i:]...)
	case 6:
		return "unrelated", some(rng.IntN(5000))
	case 7:
		return "empty", nil
	case 8:
		return "identical", out
	case 9:
		return "prepend", append(some(1+rng.IntN(100)), v...)
	case 10:
		for range 2 + rng.IntN(8) {
			if len(out) == 0 {
				break
			}
			i := rng.IntN(len(out))
			j := i + rng.IntN(min(len(out)-i, 64)+1)
			out = append(append(out[:i:i], some(rng.IntN(64))...), out[j:]...)
		}
		return "scattered", out
	case 11: // a block copied elsewhere: copies that go backwards
		if len(v) < 2 {
			return "identical", out
		}
		i := rng.IntN(len(v) - 1)
		j := i + 1 + rng.IntN(min(len(v)-i-1, 4000))
		p := at()
		return "duplicate", append(append(out[:p:p], v[i:j]...), v[p:]...)
	default: // the list's header and its end change together
		if len(out) > 3 {
			out[1]++
		}
		return "header+append", append(out, some(1+rng.IntN(1200))...)
	}
}

// TestDeltaProperty: for random edit sequences, every version comes back
// byte for byte from its predecessor and its delta, and chains (a full
// version, then deltas each against the one before) come back whole,
// composed and step by step.
func TestDeltaProperty(t *testing.T) {
	seed := deltaSeed(t)
	for round := range 40 {
		rng := rand.New(rand.NewPCG(seed, uint64(round)))
		var start []byte
		switch round % 3 {
		case 0:
			start = []byte(lcText(rng, rng.IntN(20000)))
		case 1:
			start = jsonList(lcConversation(rng, 1+rng.IntN(30)))
		}
		versions := [][]byte{start}
		var deltas [][]byte
		prev := NewDeltaBase(start)
		for step := range 60 {
			what, next := randomEdit(rng, prev.Bytes())
			d, nb := checkStep(t, fmt.Sprintf("round %d step %d (%s)", round, step, what), prev, next)
			versions = append(versions, next)
			if rng.IntN(2) == 0 {
				d = PackDelta(d) // chains mix packed and plain deltas
			}
			deltas = append(deltas, d)
			prev = nb
		}
		checkChains(t, fmt.Sprintf("round %d", round), rng, versions, deltas)
	}
}

// checkChains rebuilds random versions from random earlier ones through
// the deltas between them.
func checkChains(t *testing.T, label string, rng *rand.Rand, versions, deltas [][]byte) {
	t.Helper()
	var buf []byte
	for range 20 {
		from := rng.IntN(len(versions))
		to := from + rng.IntN(len(versions)-from)
		chain := deltas[from:to]
		got, err := NewDeltaBase(versions[from]).PatchChain(buf, chain, MaxDeltaValue)
		if err != nil {
			t.Fatalf("%s: chain %d..%d: %v", label, from, to, err)
		}
		sameBytes(t, fmt.Sprintf("%s: chain %d..%d", label, from, to), got.Bytes(), versions[to])
		buf = got.Bytes()
		// Step by step, each result the base of the next delta.
		v := NewDeltaBase(versions[from])
		for i, d := range chain {
			if v, err = v.Patch(nil, d, MaxDeltaValue); err != nil {
				t.Fatalf("%s: version %d from %d: %v", label, from+i+1, from, err)
			}
		}
		sameBytes(t, fmt.Sprintf("%s: steps %d..%d", label, from, to), v.Bytes(), versions[to])
	}
}

// TestDeltaWorkloads runs the LangGraph-shaped payloads through the same
// property and checks that the fast paths carry them: a growing list's
// delta is about the size of what it gained, in json and in msgpack.
func TestDeltaWorkloads(t *testing.T) {
	seed := deltaSeed(t)
	n := 200
	if raceEnabled { // every copy and hash is instrumented: 70 times slower
		n = 50
	}
	for _, w := range []workload{
		{"json list", growingList(seed, n, jsonSerde)},
		{"msgpack list", growingList(seed, n, msgpackSerde)},
		{"delta_snapshot every 10", growingEvery(seed, 2*n, 10, snapshotSerde)},
		{"json edits", editedList(seed, n*3/5, jsonSerde)},
		{"msgpack edits", editedList(seed, n*3/5, msgpackSerde)},
		{"unrelated", unrelatedValues(seed, 20)},
	} {
		t.Run(w.name, func(t *testing.T) {
			prev := NewDeltaBase(nil)
			var deltas [][]byte
			for i, next := range w.versions {
				d, nb := checkStep(t, fmt.Sprintf("version %d", i), prev, next)
				if strings.HasSuffix(w.name, "list") && i > 0 {
					if gained := len(next) - len(prev.Bytes()); len(d) > gained+40 {
						t.Fatalf("version %d: delta of %d bytes for %d new bytes", i, len(d), gained)
					}
				}
				deltas = append(deltas, d)
				prev = nb
			}
			// The first delta is against the empty version: the whole value.
			checkChains(t, w.name, rand.New(rand.NewPCG(seed, 9)), append([][]byte{nil}, w.versions...), deltas)
		})
	}
}

func TestDeltaEdgeCases(t *testing.T) {
	big := []byte(lcText(rand.New(rand.NewPCG(1, 1)), 5000))
	for name, c := range map[string]struct {
		prev, next []byte
		maxDelta   int
	}{
		"both empty":     {nil, nil, 19},
		"from empty":     {nil, []byte("x"), 21},
		"to empty":       {big, nil, 19},
		"identical":      {big, big, 24},
		"one byte added": {big, append(bytes.Clone(big), '!'), 30},
		"one byte less":  {big, big[1:], 30},
		"last byte":      {big, append(bytes.Clone(big[:len(big)-1]), '?'), 30},
		"counter":        {[]byte("41"), []byte("42"), 2 + MaxDeltaOverhead},
		"swap halves":    {big, append(bytes.Clone(big[2500:]), big[:2500]...), 40},
	} {
		d, _ := checkStep(t, name, NewDeltaBase(c.prev), c.next)
		if len(d) > c.maxDelta {
			t.Errorf("%s: delta of %d bytes, want at most %d", name, len(d), c.maxDelta)
		}
	}
}

// TestDeltaMisuse: the wrong base, a damaged or truncated delta, a result
// over the limit: an error matching ErrCorrupt (or ErrUnsupported), never a
// wrong value.
func TestDeltaMisuse(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	conv := lcConversation(rng, 24)
	v0 := jsonList(conv[:20])
	v1a := jsonList(conv[:22]) // two forks of v0
	v1b := jsonList(append(append([]lcMsg(nil), conv[:20]...), conv[23]))
	v2 := jsonList(conv[:24])
	d2, err := Diff(nil, v1a, v2)
	if err != nil {
		t.Fatal(err)
	}

	// The sibling fork: another length.
	if _, err := Patch(nil, v1b, d2, 1<<20); !errors.Is(err, ErrDeltaBase) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("delta applied to the sibling fork: %v", err)
	}
	// Same length, one byte different: only the checksum tells.
	other := bytes.Clone(v1a)
	other[len(other)/2] ^= 1
	if _, err := Patch(nil, other, d2, 1<<20); !errors.Is(err, ErrDeltaBase) {
		t.Fatalf("delta applied to a base with a flipped byte: %v", err)
	}
	if _, err := Patch(nil, v0, d2, 1<<20); !errors.Is(err, ErrDeltaBase) {
		t.Fatalf("delta applied to the base's base: %v", err)
	}

	// A flipped bit in every byte of the delta is caught (low, middle and
	// high bits in turn).
	for i := range d2 {
		{
			bit := []byte{0x01, 0x10, 0x80}[i%3]
			bad := bytes.Clone(d2)
			bad[i] ^= bit
			got, err := Patch(nil, v1a, bad, 1<<20)
			if err == nil {
				t.Fatalf("byte %d ^ %#x: no error (result equal: %v)", i, bit, bytes.Equal(got, v2))
			}
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("byte %d ^ %#x: untyped error %v", i, bit, err)
			}
		}
	}
	// Every truncation, and trailing garbage.
	for n := range len(d2) {
		if _, err := Patch(nil, v1a, d2[:n], 1<<20); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("delta cut to %d bytes: %v", n, err)
		}
	}
	if _, err := Patch(nil, v1a, append(bytes.Clone(d2), 0), 1<<20); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("trailing byte: %v", err)
	}
	// The limit.
	if _, err := Patch(nil, v1a, d2, len(v2)-1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("result over the limit: %v", err)
	}
	if got, err := Patch(nil, v1a, d2, len(v2)); err != nil || !bytes.Equal(got, v2) {
		t.Fatalf("result at the limit: %v", err)
	}
	// Later formats are unsupported, other bytes are not deltas.
	newer := bytes.Clone(d2)
	newer[0] = DeltaV1S2 + 1
	if _, err := Patch(nil, v1a, newer, 1<<20); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("newer format: %v", err)
	}
	if _, err := Patch(nil, v1a, v2, 1<<20); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a value instead of a delta: %v", err)
	}
	// Chains: a link that does not follow, the limit on any version.
	d1, _ := Diff(nil, v0, v1a)
	d1b, _ := Diff(nil, v0, v1b)
	if _, err := PatchChain(nil, v0, [][]byte{d1b, d2}, 1<<20); !errors.Is(err, ErrDeltaBase) {
		t.Fatalf("chain through the sibling fork: %v", err)
	}
	if _, err := PatchChain(nil, v0, [][]byte{d1, d2}, len(v1a)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("chain over the limit: %v", err)
	}
	if got, err := PatchChain(nil, v0, [][]byte{d1, d2}, len(v2)); err != nil || !bytes.Equal(got, v2) {
		t.Fatalf("chain: %v", err)
	}
	if _, err := PatchChain(nil, v1a, [][]byte{d1, d2}, 1<<20); !errors.Is(err, ErrDeltaBase) {
		t.Fatalf("chain from the wrong base: %v", err)
	}
}

// A hostile delta claiming a huge result is refused before anything of
// that size is allocated.
func TestPatchDoesNotTrustLengths(t *testing.T) {
	base := []byte("base")
	h := DeltaHeader{BaseLen: len(base), Len: MaxDeltaValue, BaseSum: DeltaSum(base), Sum: 1}
	w := deltaWriter{}
	w.header(h)
	w.copy(0, 4)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Patch(nil, base, w.buf, MaxDeltaValue)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("hostile length: %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("a %d-byte delta made Patch allocate %d bytes", len(w.buf), grew)
	}
}

// TestPatchChainCopiesOutWhenFragmented drives chains past maxSpans (many
// scattered edits per version), at the first delta and at later ones, so
// that PatchChain makes the versions around those deltas instead of
// composing them, and checks the results.
func TestPatchChainCopiesOutWhenFragmented(t *testing.T) {
	for _, c := range []struct {
		edits     []int // per version
		firstFull int   // the first delta composition must refuse
	}{
		{[]int{700, 700, 700, 700}, 0},
		{[]int{60, 700, 60, 700, 60}, 1},
	} {
		rng := rand.New(rand.NewPCG(3, 3))
		v := []byte(lcText(rng, 32<<10))
		versions := [][]byte{v}
		var deltas [][]byte
		for _, edits := range c.edits {
			next := bytes.Clone(v)
			for range edits {
				next[rng.IntN(len(next))] ^= 0x20
			}
			d, err := Diff(nil, v, next)
			if err != nil {
				t.Fatal(err)
			}
			versions, deltas, v = append(versions, next), append(deltas, d), next
		}
		label := fmt.Sprint(c.edits)
		cs := new(chainScratch)
		cs.cur, cs.curStart = []span{{src: -1, n: len(versions[0])}}, []int{0}
		for i, d := range deltas {
			h, at, _ := readDeltaHeader(d)
			if !cs.compose(i, d, at, h) {
				if i != c.firstFull {
					t.Fatalf("%s: composition refused delta %d first, want %d", label, i, c.firstFull)
				}
				break
			}
		}
		for to := 1; to <= len(deltas); to++ {
			got, err := PatchChain(nil, versions[0], deltas[:to], MaxDeltaValue)
			if err != nil {
				t.Fatalf("%s: chain to %d: %v", label, to, err)
			}
			sameBytes(t, fmt.Sprintf("%s: chain to %d", label, to), got, versions[to])
		}
		// A damaged literal in any delta is caught, where a version is
		// made or at the end.
		for i := range deltas {
			bad := append([][]byte(nil), deltas...)
			bad[i] = bytes.Clone(deltas[i])
			bad[i][len(bad[i])-3] ^= 0x01
			if _, err := PatchChain(nil, versions[0], bad, MaxDeltaValue); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s: delta %d damaged: %v", label, i, err)
			}
		}
	}
}

// The write and read paths allocate nothing once their buffers are warm.
func TestDeltaAllocations(t *testing.T) {
	vs := growingList(5, 60, jsonSerde)
	prev, next := NewDeltaBase(vs[len(vs)-2]), vs[len(vs)-1]
	d, _, _ := prev.Diff(nil, next)
	buf := make([]byte, 0, len(next))
	if n := testing.AllocsPerRun(50, func() { d, _, _ = prev.Diff(d, next) }); n != 0 {
		t.Errorf("Diff: %v allocations", n)
	}
	if n := testing.AllocsPerRun(50, func() { prev.Patch(buf, d, len(next)) }); n != 0 {
		t.Errorf("Patch: %v allocations", n)
	}
	var deltas [][]byte
	for i := 1; i < len(vs); i++ {
		d, _ := Diff(nil, vs[i-1], vs[i])
		deltas = append(deltas, d)
	}
	first := NewDeltaBase(vs[0])
	if n := testing.AllocsPerRun(50, func() { first.PatchChain(buf, deltas, len(next)) }); n > 0.5 && !raceEnabled {
		t.Errorf("PatchChain: %v allocations", n)
	}
	// msgpack needs the diagonal, still without the index.
	mp := growingList(5, 60, msgpackSerde)
	prev, next = NewDeltaBase(mp[len(mp)-2]), mp[len(mp)-1]
	if n := testing.AllocsPerRun(50, func() { d, _, _ = prev.Diff(d, next) }); n != 0 {
		t.Errorf("Diff of msgpack: %v allocations", n)
	}
}

// The block and word comparisons against a byte loop, at every alignment
// of the first difference, below and above equalChunk.
func TestCommonPrefixSuffix(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	for i := range 3000 {
		a := []byte(lcText(rng, rng.IntN([]int{100, 3 * equalChunk}[i%2])))
		b := bytes.Clone(a)
		switch rng.IntN(4) {
		case 0:
			if len(b) > 0 {
				b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
			}
		case 1:
			b = b[:rng.IntN(len(b)+1)]
		case 2:
			b = append(b, 'x')
		}
		p := 0
		for p < min(len(a), len(b)) && a[p] == b[p] {
			p++
		}
		s := 0
		for s < min(len(a), len(b)) && a[len(a)-1-s] == b[len(b)-1-s] {
			s++
		}
		if got := commonPrefix(a, b); got != p {
			t.Fatalf("commonPrefix(%q, %q) = %d, want %d", a, b, got, p)
		}
		if got := commonSuffix(a, b); got != s {
			t.Fatalf("commonSuffix(%q, %q) = %d, want %d", a, b, got, s)
		}
	}
}

// A version over MaxDeltaValue has no delta. (The slice is never written,
// so the allocation costs address space, not memory.)
func TestDiffRefusesHugeVersions(t *testing.T) {
	huge := make([]byte, MaxDeltaValue+1)
	if _, err := Diff(nil, nil, huge); !errors.Is(err, ErrDeltaTooLarge) {
		t.Fatalf("next over the maximum: %v", err)
	}
	if _, err := Diff(nil, huge, []byte("x")); !errors.Is(err, ErrDeltaTooLarge) {
		t.Fatalf("prev over the maximum: %v", err)
	}
}

// TestDeltaOnLangGraphPythonBlobs runs the property on values real
// LangGraph Python wrote: every channel blob of the PostgresSaver fixture
// (msgpack serde, one row per channel version), each version diffed
// against the one before it in version order and rebuilt, each channel's
// versions rebuilt as one chain. The chat thread's message list, which
// only grows, must cost about what it gained.
func TestDeltaOnLangGraphPythonBlobs(t *testing.T) {
	dump, err := os.ReadFile(filepath.Join("..", "testdata", "langgraph", "python", "langgraph-py-postgres.sql"))
	if err != nil {
		t.Fatal(err)
	}
	type key struct{ thread, ns, channel string }
	type blob struct {
		version string
		data    []byte
	}
	channels := map[key][]blob{}
	_, rows, ok := strings.Cut(string(dump), "COPY public.checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob) FROM stdin;\n")
	rows, _, ok2 := strings.Cut(rows, "\n\\.\n")
	if !ok || !ok2 {
		t.Fatal("no checkpoint_blobs rows in the dump")
	}
	for _, line := range strings.Split(rows, "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 6 {
			t.Fatalf("row of %d fields: %q", len(f), line)
		}
		if f[5] == `\N` {
			continue
		}
		data, err := hex.DecodeString(strings.TrimPrefix(f[5], `\\x`))
		if err != nil {
			t.Fatalf("blob of %s/%s: %v", f[0], f[2], err)
		}
		k := key{f[0], f[1], f[2]}
		channels[k] = append(channels[k], blob{f[3], data})
	}
	var versions int
	for k, bs := range channels {
		slices.SortFunc(bs, func(a, b blob) int { return strings.Compare(a.version, b.version) })
		prev := NewDeltaBase(nil)
		var deltas [][]byte
		var deltaBytes, grown int
		for i, b := range bs {
			d, nb := checkStep(t, fmt.Sprintf("%v version %s", k, b.version), prev, b.data)
			if i > 0 {
				deltaBytes += len(d)
				grown += max(len(b.data)-len(prev.Bytes()), 0)
			}
			deltas = append(deltas, d)
			prev = nb
			versions++
		}
		got, err := PatchChain(nil, nil, deltas, MaxDeltaValue)
		if err != nil {
			t.Fatalf("%v: chain: %v", k, err)
		}
		sameBytes(t, fmt.Sprintf("%v: chain", k), got, bs[len(bs)-1].data)
		if k == (key{"chat", "", "messages"}) {
			if len(bs) < 10 || deltaBytes > grown+40*(len(bs)-1) {
				t.Fatalf("chat messages: %d versions, deltas of %d bytes for %d bytes gained", len(bs), deltaBytes, grown)
			}
			t.Logf("chat messages: %d versions, %d bytes whole in the end, deltas %d bytes for %d gained", len(bs), len(got), deltaBytes, grown)
		}
	}
	if versions < 50 {
		t.Fatalf("only %d channel versions in the fixture", versions)
	}
}
