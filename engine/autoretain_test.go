package engine

import (
	"bytes"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
)

// putChain stores value i of channel ch as checkpoint i+1 of thread, a
// child of checkpoint i.
func putChain(tb testing.TB, db *DB, thread, ch string, i int, value []byte) Config {
	tb.Helper()
	return putStep(tb, db, thread, ch, i, func(id string) Checkpoint {
		return Checkpoint{V: 4, ID: id, TS: "2026-01-01T00:00:00Z",
			ChannelVersions: map[string]string{ch: id},
			ChannelValues:   map[string]codec.Blob{ch: {Type: "json", Data: value}},
			VersionsSeen:    map[string]map[string]string{},
		}
	})
}

// countThinRuns counts thinValues runs while fn runs.
func countThinRuns(fn func()) int {
	n := 0
	onThinValues = func() { n++ }
	defer func() { onThinValues = nil }()
	fn()
	return n
}

func wholeVersions(rows map[string]storedRow) map[string]bool {
	out := map[string]bool{}
	for v, r := range rows {
		if r.enc != encDelta {
			out[v] = true
		}
	}
	return out
}

// AutoRetain thins a chain after a new whole value when the whole value it
// replaces as the chain's start is long enough to be worth a scan of the
// namespace (thinMin): a growing list's whole values are thinned as puts
// store them, in fewer runs than there are whole values, and every
// checkpoint reads back what was put.
func TestAutoRetainThinsLargeWholeValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	want := map[Config][]byte{}
	var runs int
	withPolicy(256, 3, math.Inf(1), func() {
		db := openTest(t, path, nil) // AutoRetain is on by default
		g := newGrowingList(3, 200, false)
		runs = countThinRuns(func() {
			for i := range 200 {
				v := g.version(i)
				want[putVersion(t, db, "t", i, v)] = bytes.Clone(v)
			}
		})
		db.Close()
	})
	if runs == 0 || runs >= 200/4 {
		t.Fatalf("%d thinning runs in 200 puts with a whole value every 4th", runs)
	}
	db := openRW(t, path)
	auto := wholeVersions(storedRows(t, db, "t", "messages"))
	rep, err := db.Retain(bg, admin.RetainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The runs AutoRetain made left an explicit Retain nothing to thin:
	// each run thins every whole value of the chain that need not stay,
	// the small early ones included.
	if rep.ValuesThinned != 0 || len(auto) > 8 {
		t.Fatalf("%d whole values after the puts; an explicit Retain thinned %d more", len(auto), rep.ValuesThinned)
	}
	valuesReadBack(t, path, "messages", want)
}

// Values a thinning run could not shrink enough to pay for its scan start
// none: a small value whose deltas reach its length within a few steps (as
// LangGraph's __start__ channel does), and a large value that changes all
// at once at every step. Retain, run by hand, still thins the small one,
// and nothing is lost.
func TestAutoRetainSkipsRunsThatCannotPay(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	fixed := make([]byte, 300)
	for j := range fixed {
		fixed[j] = byte('a' + rng.IntN(26))
	}
	for _, tc := range []struct {
		name  string
		value func(i int) []byte
		thins bool // whether an explicit Retain finds values to thin
	}{
		{"small", func(i int) []byte {
			// 380 bytes: 300 the same at every step, 80 new.
			b := bytes.Clone(fixed)
			for range 80 {
				b = append(b, byte('a'+rng.IntN(26)))
			}
			return b
		}, true},
		{"wholesale", func(i int) []byte {
			b := make([]byte, 10<<10)
			for j := range b {
				b[j] = byte('a' + rng.IntN(26))
			}
			return b
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.db")
			db := openTest(t, path, nil)
			want := map[Config][]byte{}
			runs := countThinRuns(func() {
				for i := range 60 {
					v := tc.value(i)
					want[putChain(t, db, "t", "__start__", i, v)] = v
				}
			})
			if runs != 0 {
				t.Fatalf("%d thinning runs", runs)
			}
			before := wholeVersions(storedRows(t, db, "t", "__start__"))
			if len(before) < 10 {
				t.Fatalf("only %d whole values in 60 steps: the case does not make whole values", len(before))
			}
			rep, err := db.Retain(bg, admin.RetainOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if thinned := rep.ValuesThinned > 0; thinned != tc.thins {
				t.Fatalf("an explicit Retain thinned %d of %d whole values", rep.ValuesThinned, len(before))
			}
			db.Close()
			valuesReadBack(t, path, "__start__", want)
		})
	}
}
