package channels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/agentstate/agentstate/codec"
)

// workload is a list of l messages and w writes shaped like an agent's:
// every write appends a message, every 4th also rewrites an existing one,
// every 10th also removes one.
func workload(l, w int) ([]codec.Message, []MessageUpdate) {
	r := rand.New(rand.NewPCG(1, 2))
	state := make([]codec.Message, l)
	live := make([]string, l)
	for i := range state {
		live[i] = fmt.Sprintf("s%d", i)
		state[i] = codec.Message{ID: live[i], Type: codec.Human, Content: "a message of some length"}
	}
	writes := make([]MessageUpdate, w)
	for i := range writes {
		id := fmt.Sprintf("w%d", i)
		ms := []codec.Message{{ID: id, Type: codec.AI, Content: "an answer"}}
		if i%4 == 0 {
			ms = append(ms, codec.Message{ID: live[r.IntN(len(live))], Type: codec.Human, Content: "edited"})
		}
		if i%10 == 0 {
			k := r.IntN(len(live))
			ms = append(ms, codec.Message{ID: live[k], Type: codec.Remove})
			live[k] = live[len(live)-1]
			live = live[:len(live)-1]
		}
		live = append(live, id)
		writes[i] = MessageUpdate{Messages: ms}
	}
	return state, writes
}

// The linear fold against the O(L x W) reference, at the size the issue
// names (1,000 writes into 10,000 messages) and around it.
func BenchmarkApplyMessages(b *testing.B) {
	for _, size := range []struct{ l, w int }{{10_000, 1_000}, {10_000, 100}, {1_000, 1_000}, {100_000, 1_000}} {
		state, writes := workload(size.l, size.w)
		b.Run(fmt.Sprintf("linear/L=%d/W=%d", size.l, size.w), func(b *testing.B) {
			for b.Loop() {
				if _, err := ApplyMessages(state, writes); err != nil {
					b.Fatal(err)
				}
			}
		})
		if size.l*size.w > 10_000_000 {
			continue // the reference takes seconds per fold there
		}
		b.Run(fmt.Sprintf("naive/L=%d/W=%d", size.l, size.w), func(b *testing.B) {
			for b.Loop() {
				if _, err := naiveApply(state, writes); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Batching: one call folding every write against one call per write, which
// is what a reader without batching (or LangGraph's per-write replay) pays.
func BenchmarkBatching(b *testing.B) {
	state, writes := workload(10_000, 1_000)
	b.Run("batched/L=10000/W=1000", func(b *testing.B) {
		for b.Loop() {
			if _, err := ApplyMessages(state, writes); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one-call-per-write/L=10000/W=1000", func(b *testing.B) {
		for b.Loop() {
			cur := state
			for _, w := range writes {
				var err error
				if cur, err = ApplyMessages(cur, []MessageUpdate{w}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// Fold after a late Overwrite (a compaction that kept every message) reads
// only the writes after it; applying every write reads them all.
func BenchmarkFoldAfterOverwrite(b *testing.B) {
	state, writes := workload(10_000, 1_000)
	compacted, err := ApplyMessages(state, writes[:900])
	if err != nil {
		b.Fatal(err)
	}
	var values []any
	for i, w := range writes {
		if i == 900 {
			values = append(values, MessageUpdate{Overwrite: true, Messages: compacted})
		}
		values = append(values, w)
	}
	for _, name := range []string{"fold", "apply-all"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				var err error
				if name == "fold" {
					_, err = Fold(Messages{}, state, values)
				} else {
					_, err = Messages{}.Apply(state, values)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A cheap, deterministic guard against a quadratic fold creeping back: the
// reference copies the list for every write, so its allocations grow with
// the number of writes; the linear fold's must not.
func TestApplyMessagesAllocations(t *testing.T) {
	state, writes := workload(2_000, 500)
	linear := testing.AllocsPerRun(3, func() { ApplyMessages(state, writes) })
	state4, writes4 := workload(2_000, 2_000)
	linear4x := testing.AllocsPerRun(3, func() { ApplyMessages(state4, writes4) })
	if linear > 100 || linear4x > linear+25 {
		t.Fatalf("ApplyMessages allocates %v times for 500 writes and %v for 2,000: grows with the writes", linear, linear4x)
	}
	small, smallWrites := workload(1_000, 100)
	naive := testing.AllocsPerRun(1, func() { naiveApply(small, smallWrites) })
	if naive < float64(len(smallWrites)) {
		t.Fatalf("reference allocated only %v times for %d writes: the guard measures nothing", naive, len(smallWrites))
	}
}
