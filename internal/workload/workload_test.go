package workload

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTurn(t *testing.T) {
	a, b := Turn(7), Turn(7)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("the workload is not deterministic:\n%s", diff)
	}
	if len(a[0].Text()) != HumanBytes || len(a[1].Text()) != AIBytes || a[0].ID != "human-00007" || a[1].ID != "ai-00007" {
		t.Fatalf("turn 7: %q (%d bytes), %q (%d bytes)", a[0].ID, len(a[0].Text()), a[1].ID, len(a[1].Text()))
	}
	if Turn(8)[1].Text() == a[1].Text() {
		t.Fatal("two turns have the same text")
	}
}
