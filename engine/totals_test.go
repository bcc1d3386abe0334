package engine

import (
	"math"
	"testing"

	"github.com/agentstate/agentstate/engine/records"
)

// TestCompleteFillsTotalsFromByModel: totals a caller leaves at zero are the
// sums of the by-model breakdown (saturating, never wrapping negative);
// totals it sets are kept.
func TestCompleteFillsTotalsFromByModel(t *testing.T) {
	db := openTest(t, Memory, nil)
	runs := db.Runs()
	complete := func(thread string, tot records.RunTotals) records.TokenUsage {
		t.Helper()
		c, err := runs.Create(bg, records.NewRun{ThreadID: thread, Status: records.RunRunning})
		if err != nil {
			t.Fatal(err)
		}
		if err := runs.Complete(bg, c.Run.RunID, records.RunSuccess, "", tot); err != nil {
			t.Fatal(err)
		}
		u, err := runs.TokenUsage(bg, thread, false)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	u := complete("a", records.RunTotals{TotalTokens: 15, TokenUsageByModel: map[string]records.ModelTokens{
		"m1": {Input: 10, Output: 2, Total: 12}, "m2": {Input: 2, Output: 1, Total: 3}}})
	if u.TotalInputTokens != 12 || u.TotalOutputTokens != 3 || u.TotalTokens != 15 {
		t.Fatalf("filled totals: %+v", u)
	}
	u = complete("b", records.RunTotals{TotalInputTokens: 7, TokenUsageByModel: map[string]records.ModelTokens{"m1": {Input: 10, Output: 2, Total: 12}}})
	if u.TotalInputTokens != 7 || u.TotalOutputTokens != 2 || u.TotalTokens != 12 {
		t.Fatalf("a set total was replaced: %+v", u)
	}
	u = complete("c", records.RunTotals{TokenUsageByModel: map[string]records.ModelTokens{
		"m1": {Input: math.MaxInt64, Total: math.MaxInt64}, "m2": {Input: 5, Total: 5}}})
	if u.TotalInputTokens != math.MaxInt64 || u.TotalTokens != math.MaxInt64 {
		t.Fatalf("sums near the limit: %+v", u)
	}
}
