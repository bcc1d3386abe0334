package channels

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/agentstate/agentstate/codec"
	"github.com/google/go-cmp/cmp"
)

const propertyCases = 5000

// The linear fold must agree with the O(L x W) reference on every sequence,
// failing ones included.
func TestApplyMessagesMatchesNaive(t *testing.T) {
	seed := propertySeed(t)
	failures := 0
	for c := range propertyCases {
		g := newGen(seed, uint64(c))
		state, writes := g.sequence(8)
		got, err := ApplyMessages(state, writes)
		want, wantErr := naiveApply(state, writes)
		if wantErr != nil {
			failures++
		}
		if !sameError(err, wantErr) {
			t.Fatalf("case %d: err = %v, reference err = %v\nstate %v\nwrites %v", c, err, wantErr, state, writes)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("case %d: (-reference +fast):\n%s\nstate %v\nwrites %v", c, diff, state, writes)
		}
	}
	// The generator must exercise both paths, or the property says little.
	if failures == 0 || failures == propertyCases {
		t.Fatalf("%d of %d sequences failed: generator is off balance", failures, propertyCases)
	}
}

// fold(fold(s, a), b) == fold(s, a+b) for every split of a sequence of
// writes, into two and into three parts. A sequence fails as a whole exactly
// when one of its parts fails, with the same error.
func TestApplyMessagesBatchingInvariant(t *testing.T) {
	seed := propertySeed(t)
	for c := range propertyCases {
		g := newGen(seed, uint64(c))
		state, writes := g.sequence(10)
		whole, wholeErr := ApplyMessages(state, writes)
		cuts := []int{g.r.IntN(len(writes) + 1), g.r.IntN(len(writes) + 1)}
		slices.Sort(cuts)
		parts := [][]MessageUpdate{writes[:cuts[0]], writes[cuts[0]:cuts[1]], writes[cuts[1]:]}
		if g.r.IntN(2) == 0 {
			parts = [][]MessageUpdate{writes[:cuts[0]], writes[cuts[0]:]}
		}
		cur, err := state, error(nil)
		for _, p := range parts {
			if cur, err = ApplyMessages(cur, p); err != nil {
				break
			}
		}
		if !sameError(err, wholeErr) {
			t.Fatalf("case %d: split %v err = %v, whole err = %v", c, cuts, err, wholeErr)
		}
		if wholeErr == nil {
			if diff := cmp.Diff(whole, cur); diff != "" {
				t.Fatalf("case %d: split %v (-whole +split):\n%s", c, cuts, diff)
			}
		}
	}
}

// The delta fold skips everything before the last Overwrite, yet gives what
// applying every write gives, and it composes like Apply (a history cache
// extends a parent's value by the parent's writes).
func TestFoldMatchesApplyMessages(t *testing.T) {
	seed := propertySeed(t)
	ch := Messages{}
	overwrites := 0
	for c := range propertyCases {
		g := newGen(seed, uint64(c))
		state, writes := g.sequence(10)
		want, err := ApplyMessages(state, writes)
		if err != nil {
			continue
		}
		values := make([]any, len(writes))
		for i, w := range writes {
			values[i] = w
			if w.Overwrite {
				overwrites++
			}
		}
		var seedValue any // a walk that found no seed starts from nothing
		if state != nil {
			seedValue = state
		}
		got, err := Fold(ch, seedValue, values)
		if err != nil {
			t.Fatalf("case %d: Fold: %v (Apply succeeded)", c, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("case %d: (-apply +fold):\n%s", c, diff)
		}
		k := g.r.IntN(len(values) + 1)
		mid, err := Fold(ch, seedValue, values[:k])
		if err != nil {
			t.Fatalf("case %d: Fold of prefix: %v", c, err)
		}
		again, err := Fold(ch, mid, values[k:])
		if err != nil {
			t.Fatalf("case %d: Fold of suffix: %v", c, err)
		}
		if diff := cmp.Diff(want, again); diff != "" {
			t.Fatalf("case %d: incremental fold at %d (-apply +fold):\n%s", c, k, diff)
		}
	}
	if overwrites == 0 {
		t.Fatal("no Overwrite generated: the skip path went untested")
	}
}

// Fold reads nothing before the last Overwrite: a write there that would
// fail is not seen. This pins the documented boundary of "Fold equals Apply".
func TestFoldSkipsBeforeLastOverwrite(t *testing.T) {
	bad := MessageUpdate{Messages: []codec.Message{remove("ghost")}}
	ow := MessageUpdate{Overwrite: true, Messages: []codec.Message{msg("a", "x")}}
	if _, err := ApplyMessages(nil, []MessageUpdate{bad, ow}); !errors.Is(err, ErrUnknownID) {
		t.Fatalf("Apply: %v, want ErrUnknownID", err)
	}
	got, err := Fold(Messages{}, nil, []any{bad, ow})
	if err != nil {
		t.Fatalf("Fold: %v", err)
	}
	if diff := cmp.Diff([]codec.Message{msg("a", "x")}, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// Generic channels: a reducer channel (append to a list) and a last-value
// channel, with Overwrites, obey the same laws.
func TestGenericChannelsFoldAndBatching(t *testing.T) {
	seed := propertySeed(t)
	appendList := Reducer(func(state, update any) (any, error) {
		s, _ := state.([]any)
		return append(slices.Clip(s), update), nil
	})
	for _, tc := range []struct {
		name string
		ch   Channel
	}{{"reducer", appendList}, {"lastvalue", LastValue{}}} {
		t.Run(tc.name, func(t *testing.T) {
			for c := range 1000 {
				r := rand.New(rand.NewPCG(seed, uint64(c)))
				var seedValue any
				if r.IntN(2) == 0 {
					seedValue = []any{int64(-1)}
				}
				writes := make([]any, r.IntN(12))
				for i := range writes {
					if r.IntN(6) == 0 {
						writes[i] = Overwrite{Value: []any{fmt.Sprint("ow", i)}}
					} else {
						writes[i] = int64(i)
					}
				}
				want, err := tc.ch.Apply(seedValue, writes)
				if err != nil {
					t.Fatal(err)
				}
				got, err := Fold(tc.ch, seedValue, writes)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("case %d: (-apply +fold):\n%s", c, diff)
				}
				k := r.IntN(len(writes) + 1)
				mid, _ := tc.ch.Apply(seedValue, writes[:k])
				split, err := tc.ch.Apply(mid, writes[k:])
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, split); diff != "" {
					t.Fatalf("case %d: split at %d (-whole +split):\n%s", c, k, diff)
				}
			}
		})
	}
}

// A step's writes fold to the same state in whatever order the tasks
// finished: OrderStep fixes (task_id, idx) order, so a live commit and a
// replay of the stored rows agree.
func TestOrderStepIndependentOfArrival(t *testing.T) {
	seed := propertySeed(t)
	for c := range 500 {
		g := newGen(seed, uint64(c))
		state := g.list(6, false)
		var step []TaskWrite
		tasks := []string{"b", "a", "é", "a0", "😀", "Z"}
		cur := state
		for _, task := range tasks[:1+g.r.IntN(len(tasks))] {
			for idx := range 1 + g.r.IntN(3) {
				w := g.write(cur)
				w.Overwrite = false
				step = append(step, TaskWrite{TaskID: task, Idx: idx, Value: w})
			}
		}
		values, err := OrderStep(Messages{}, step)
		if err != nil {
			t.Fatal(err)
		}
		want, wantErr := Messages{}.Apply(state, values)
		shuffled := slices.Clone(step)
		g.r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		values2, err := OrderStep(Messages{}, shuffled)
		if err != nil {
			t.Fatal(err)
		}
		got, gotErr := Messages{}.Apply(state, values2)
		if !sameError(wantErr, gotErr) {
			t.Fatalf("case %d: errors differ: %v vs %v", c, wantErr, gotErr)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("case %d: arrival order changed the state (-sorted +shuffled):\n%s", c, diff)
		}
	}
}
