package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBenchTurn(t *testing.T) {
	a, b := BenchTurn(7), BenchTurn(7)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("the workload is not deterministic:\n%s", diff)
	}
	if len(a[0].Text()) != BenchHumanBytes || len(a[1].Text()) != BenchAIBytes || a[0].ID != "human-00007" || a[1].ID != "ai-00007" {
		t.Fatalf("turn 7: %q (%d bytes), %q (%d bytes)", a[0].ID, len(a[0].Text()), a[1].ID, len(a[1].Text()))
	}
	if BenchTurn(8)[1].Text() == a[1].Text() {
		t.Fatal("two turns have the same text")
	}
}
