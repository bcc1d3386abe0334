package channels

import (
	"slices"
	"testing"

	"github.com/agentstate/agentstate/codec"
	"github.com/google/go-cmp/cmp"
)

// A StepFolder gives, after each step, what Fold from the previous step's
// value gives (the same list, or an error of the same kind at the same
// step), for random sequences cut into random steps, and its Value is a
// copy the folder does not change afterwards.
func TestStepFolderMatchesFold(t *testing.T) {
	seed := propertySeed(t)
	ch := Messages{}
	errs := 0
	for c := range propertyCases {
		g := newGen(seed, uint64(c))
		state, writes := g.sequence(12)
		sf, err := ch.Start(state)
		if err != nil {
			t.Fatal(err)
		}
		var cur any = state
		var before []codec.Message // an earlier Value, which later steps must leave alone
		var beforeCopy []codec.Message
		for len(writes) > 0 {
			n := 1 + g.r.IntN(len(writes))
			step := make([]any, n)
			for i, w := range writes[:n] {
				step[i] = w
			}
			writes = writes[n:]
			want, wantErr := Fold(ch, cur, step)
			err := sf.Step(step)
			if !sameError(err, wantErr) {
				t.Fatalf("case %d: Step err = %v, Fold err = %v", c, err, wantErr)
			}
			if wantErr != nil {
				errs++
				break
			}
			got := sf.Value()
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("case %d: (-Fold +StepFolder):\n%s", c, diff)
			}
			if before != nil {
				if diff := cmp.Diff(beforeCopy, before); diff != "" {
					t.Fatalf("case %d: a later step changed an earlier Value:\n%s", c, diff)
				}
			}
			before = got.([]codec.Message)
			beforeCopy = slices.Clone(before)
			cur = want
		}
	}
	if errs == 0 {
		t.Fatal("no sequence failed: the error path is untested")
	}
	if _, err := ch.Start(42); err == nil {
		t.Error("Start(42) accepted a state that is no message list")
	}
}
