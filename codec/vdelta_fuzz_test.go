package codec

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// FuzzPatch feeds hostile deltas and bases to Patch and PatchChain: a
// result within the limit whose checksum is the one the delta promised, or
// an error matching ErrCorrupt or ErrUnsupported; never a panic or an
// allocation past the limit. It also checks the round trip of Diff on the
// fuzzer's base and next.
func FuzzPatch(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 1))
	conv := lcConversation(rng, 6)
	for i := range conv { // short contents: the fuzzer minimizes what it finds, input by input
		conv[i].content = lcText(rng, 20)
	}
	pairs := [][2][]byte{
		{jsonList(conv[:3]), jsonList(conv[:5])},
		{msgpackList(conv[:3]), msgpackList(conv[:4])},
		{jsonList(conv[:5]), jsonList(append(append([]lcMsg(nil), conv[:1]...), conv[2:5]...))},
		{[]byte("41"), []byte("42")},
		{nil, []byte("new")},
		{[]byte("old"), nil},
	}
	for _, p := range pairs {
		d, err := Diff(nil, p[0], p[1])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p[0], d, p[1])
		if pd := PackDelta(d); pd[0] == DeltaV1S2 {
			f.Add(p[0], pd, p[1])
		}
	}
	// Scattered edits: a chain too fragmented to compose.
	v0 := []byte(lcText(rng, 4096))
	v1, v2 := bytes.Clone(v0), bytes.Clone(v0)
	for range 300 {
		v1[rng.IntN(len(v1))] ^= 0x20
	}
	copy(v2, v1)
	for range 300 {
		v2[rng.IntN(len(v2))] ^= 0x20
	}
	d2, err := Diff(nil, v1, v2)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(v0, d2, v1)
	f.Add([]byte("base"), []byte{DeltaV1, 4, 0xff, 0xff, 0xff, 0xff, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0x09, 0x00}, []byte{})
	f.Add([]byte{}, []byte{DeltaV1 + 1}, []byte{})
	f.Fuzz(func(t *testing.T, base, delta, next []byte) {
		const limit = 1 << 20
		check := func(what string, got []byte, err error) {
			if err != nil {
				if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
					t.Fatalf("%s: untyped error %v", what, err)
				}
				return
			}
			if len(got) > limit {
				t.Fatalf("%s: %d bytes past the limit", what, len(got))
			}
		}
		got, err := Patch(nil, base, delta, limit)
		check("Patch", got, err)
		if err == nil {
			if h, _ := ReadDeltaHeader(delta); h.Sum != DeltaSum(got) || h.Len != len(got) {
				t.Fatalf("Patch returned a result the delta did not describe")
			}
		}
		if len(base) > limit || len(next) > limit {
			return
		}
		d, err := Diff(nil, base, next)
		if err != nil {
			t.Fatal(err)
		}
		if len(d) > len(next)+MaxDeltaOverhead {
			t.Fatalf("delta of %d bytes for %d", len(d), len(next))
		}
		back, err := Patch(nil, base, d, limit)
		if err != nil || !bytes.Equal(back, next) {
			t.Fatalf("Diff then Patch: %v", err)
		}
		if back, err := Patch(nil, base, PackDelta(d), limit); err != nil || !bytes.Equal(back, next) {
			t.Fatalf("Diff, PackDelta then Patch: %v", err)
		}
		// The hostile delta as the second link of a chain.
		got, err = PatchChain(nil, base, [][]byte{d, delta}, limit)
		check("PatchChain", got, err)
		if err == nil {
			if want, err := Patch(nil, next, delta, limit); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("PatchChain and Patch disagree (%v)", err)
			}
		}
	})
}
