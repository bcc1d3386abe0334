package codec

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPackSmall(t *testing.T) {
	// A LangGraph checkpoint row: versions padded with zeros, repeated.
	v := "00000000000000000000000000001199.0.7007778745776891"
	row := map[string]any{"v": int64(4), "ts": "2026-12-01T02:13:31.476Z",
		"cv": map[string]any{"__start__": v, "branch:to:agent": v, "messages": v},
		"vs": map[string]any{"__input__": map[string]any{}, "agent": map[string]any{"branch:to:agent": v}}}
	plain, err := Marshal(row)
	if err != nil {
		t.Fatal(err)
	}
	packed := PackSmall(plain)
	if packed[0] != FormatV1S2 || len(packed) > len(plain)*2/3 {
		t.Fatalf("packed %d bytes into %d (format 0x%02x)", len(plain), len(packed), packed[0])
	}
	var back map[string]any
	if err := Unmarshal(packed, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(row, back); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
	body, format, err := Body(packed)
	if err != nil || format != FormatV1S2 || !bytes.Equal(body, plain[1:]) {
		t.Fatalf("Body: format 0x%02x, %v", format, err)
	}
	// Left as they are: short values, values S2 does not shrink by an
	// eighth, envelopes that are not plain.
	short, _ := Marshal("short")
	rng := rand.New(rand.NewPCG(1, 2))
	noise := make([]byte, 600)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	random, _ := Marshal(noise)
	zstd, err := Compress(append([]byte{FormatV1}, bytes.Repeat(plain[1:], 40)...), FormatV1Zstd, Small)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"short": short, "random": random, "zstd": zstd} {
		if got := PackSmall(b); !bytes.Equal(got, b) {
			t.Errorf("%s: PackSmall changed it", name)
		}
	}
	// Damage: a flipped byte in the block or a truncated block is
	// ErrCorrupt (S2 blocks carry no checksum: a flip inside a literal
	// may decode; the envelope's msgpack then decides).
	for i := 1; i < len(packed); i++ {
		bad := bytes.Clone(packed)
		bad[i] ^= 0x41
		if err := Unmarshal(bad, new(any)); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip at %d: untyped error %v", i, err)
		}
		if err := Unmarshal(packed[:i], new(any)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated at %d: %v", i, err)
		}
	}
}

func TestPackDelta(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	conv := lcConversation(rng, 40)
	var versions [][]byte
	for i := 1; i <= len(conv); i++ {
		versions = append(versions, jsonList(conv[:i]))
	}
	var plain, packed [][]byte
	n := 0 // deltas S2 shrinks
	for i := 1; i < len(versions); i++ {
		d, err := Diff(nil, versions[i-1], versions[i])
		if err != nil {
			t.Fatal(err)
		}
		p := PackDelta(d)
		switch {
		case p[0] == DeltaV1S2 && len(p) <= len(d)-len(d)/8:
			n++
		case !bytes.Equal(p, d):
			t.Fatalf("version %d: delta of %d bytes packed into %d (0x%02x)", i, len(d), len(p), p[0])
		}
		hd, err1 := ReadDeltaHeader(d)
		hp, err2 := ReadDeltaHeader(p)
		if err1 != nil || err2 != nil || hd != hp {
			t.Fatalf("version %d: headers %+v %+v (%v %v)", i, hd, hp, err1, err2)
		}
		u, err := UnpackDelta(p)
		if err != nil || !bytes.Equal(u, d) {
			t.Fatalf("version %d: UnpackDelta: %v", i, err)
		}
		got, err := Patch(nil, versions[i-1], p, MaxDeltaValue)
		if err != nil || !bytes.Equal(got, versions[i]) {
			t.Fatalf("version %d: Patch of the packed delta: %v", i, err)
		}
		plain, packed = append(plain, d), append(packed, p)
	}
	if n < len(packed)/2 {
		t.Fatalf("S2 shrinks %d of %d deltas by an eighth", n, len(packed))
	}
	// A chain of packed and plain deltas; the caller's slice is left as
	// it was.
	mixed := slices.Clone(packed)
	for i := 0; i < len(mixed); i += 3 {
		mixed[i] = plain[i]
	}
	before := slices.Clone(mixed)
	got, err := PatchChain(nil, versions[0], mixed, MaxDeltaValue)
	if err != nil || !bytes.Equal(got, versions[len(versions)-1]) {
		t.Fatalf("PatchChain of a mixed chain: %v", err)
	}
	for i := range mixed {
		if !bytes.Equal(mixed[i], before[i]) {
			t.Fatalf("PatchChain changed delta %d of its argument", i)
		}
	}
	// Left as they are: short deltas, deltas S2 does not shrink, values
	// that are not deltas, packed ones.
	short, _ := Diff(nil, []byte("41"), []byte("42"))
	for name, d := range map[string][]byte{"short": short, "not a delta": versions[3], "packed": packed[0]} {
		if got := PackDelta(d); !bytes.Equal(got, d) {
			t.Errorf("%s: PackDelta changed it", name)
		}
	}
	// Hostile packed deltas: ops that inflate past what the header allows,
	// damaged blocks. Errors match ErrCorrupt, never a panic.
	last := slices.IndexFunc(packed, func(d []byte) bool { return d[0] == DeltaV1S2 })
	p := packed[last]
	_, at, err := readDeltaHeader(p)
	if err != nil {
		t.Fatal(err)
	}
	bomb := append(bytes.Clone(p[:at]), 0x80, 0x80, 0x80, 0x80, 0x08, 0x00)
	if _, err := UnpackDelta(bomb); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bomb: %v", err)
	}
	for i := at; i < len(p); i++ {
		bad := bytes.Clone(p)
		bad[i] ^= 0x41
		if _, err := Patch(nil, versions[last], bad, MaxDeltaValue); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip at %d of %d: %v", i, len(p), err)
		}
		if _, err := Patch(nil, versions[last], p[:i], MaxDeltaValue); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated at %d: %v", i, err)
		}
	}
}
