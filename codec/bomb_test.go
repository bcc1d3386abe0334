package codec

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/internal/testbomb"
)

// A value that inflates past MaxSize, or would decode to more than MaxCost,
// is refused with ErrTooLarge before it is allocated (issue 25: 128 MiB of
// nils from a 4 KB frame took 6 GB).
func TestDecompressionBombs(t *testing.T) {
	cases := map[string]int{
		"inflates past MaxSize": 2 * MaxSize,         // 128 MiB of nils
		"decodes past MaxCost":  MaxSize - 1<<20,     // 63 MiB: a gigabyte of interfaces
		"just past MaxCost":     MaxCost / valueCost, // the list's own slot tips it
	}
	for name, n := range cases {
		t.Run(name, func(t *testing.T) {
			bomb := testbomb.Envelope(n)
			t.Logf("%d bytes inflating to %d", len(bomb), n+5)
			var err error
			var v any
			a := testbomb.Allocated(func() { err = Unmarshal(bomb, &v) })
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("Unmarshal = %v, want ErrTooLarge", err)
			}
			// The inflated bytes, allocated once at their size (at most
			// MaxSize, counted first), never the decoded list (gigabytes).
			t.Logf("refusing it allocated %d MiB", a>>20)
			if a > MaxSize+MaxSize/2 {
				t.Errorf("refusing it allocated %d MiB", a>>20)
			}
			if _, err := DecodeMessages(bomb); !errors.Is(err, ErrTooLarge) {
				t.Errorf("DecodeMessages = %v, want ErrTooLarge", err)
			}
			body, _, err := Body(bomb)
			if err == nil {
				err = Check(body)
			}
			if !errors.Is(err, ErrTooLarge) {
				t.Errorf("Body+Check = %v, want ErrTooLarge", err)
			}
		})
	}
}

// What Marshal writes, Unmarshal reads: the cost bound is applied while
// encoding too.
func TestMarshalRefusesCostlyValues(t *testing.T) {
	// The largest list of nils Marshal writes reads back.
	most := make([]any, MaxCost/valueCost-2) // the envelope's list counts too
	b, err := Marshal(most)
	if err != nil {
		t.Fatalf("Marshal(%d nils) = %v", len(most), err)
	}
	var back []any
	if err := Unmarshal(b, &back); err != nil || len(back) != len(most) {
		t.Fatalf("Unmarshal = %d, %v", len(back), err)
	}
	if _, err := Marshal(append(most, nil, nil)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Marshal(one more) = %v, want ErrTooLarge", err)
	}
	// A string's bytes count as well as its slot: 7M strings of 4 bytes
	// are 35 MiB encoded and count 7M × 20 = 140 MiB, past MaxCost.
	strs := make([]string, 7<<20)
	for i := range strs {
		strs[i] = "abcd"
	}
	if _, err := Marshal(strs); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "MaxCost") {
		t.Fatalf("Marshal(7M strings) = %v, want ErrTooLarge naming MaxCost", err)
	}
}

// What this codec writes declares its size, so reading it allocates the
// result once and decodes once (no counting pass).
func TestZstdFramesDeclareTheirSize(t *testing.T) {
	var ms []Message
	for i := range 5000 {
		ms = append(ms, Message{ID: strings.Repeat("i", 36), Type: Human, Content: strings.Repeat("word ", i%50)})
	}
	for _, v := range []any{ms, map[string]any{"k": strings.Repeat("v", 1<<20)}} {
		b, err := MarshalCompressed(v, Small)
		if err != nil || b[0] != FormatV1Zstd {
			t.Fatalf("MarshalCompressed: %x, %v", b[:1], err)
		}
		plain, _ := Marshal(v)
		size, known := zstdContentSize(b[1:])
		if !known || size != uint64(len(plain)-1) {
			t.Fatalf("%T: content size %d (known %v), want %d", v, size, known, len(plain)-1)
		}
	}
}
