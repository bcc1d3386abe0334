// A thread's token usage summed over its runs.

package engine

import (
	"context"
	"fmt"

	"github.com/agentstate/agentstate/engine/records"
)

// TokenUsage sums the token usage of a thread's ended runs (with
// includeActive, of its pending and running runs too). By model, it reads
// each run's per-model record and falls back to model_name and the run's
// totals for runs without one (older rows).
func (r Runs) TokenUsage(ctx context.Context, threadID string, includeActive bool) (records.TokenUsage, error) {
	if err := checkID("thread id", threadID); err != nil {
		return records.TokenUsage{}, err
	}
	q := sqlTokensEnded
	if includeActive {
		q = sqlTokensAll
	}
	u := records.TokenUsage{ByModel: map[string]records.ModelUsage{}}
	byModel := map[string]records.ModelTokens{}
	err := r.db.read(ctx, func(c *conn) error {
		return c.query(q, []any{threadID}, func(st row) error {
			u.Runs++
			in, out, total := st.Int64(1), st.Int64(2), st.Int64(3)
			u.TotalInputTokens += in
			u.TotalOutputTokens += out
			u.TotalTokens += total
			u.LLMCallCount += st.Int64(4)
			u.ByCaller.LeadAgent += st.Int64(5)
			u.ByCaller.Subagent += st.Int64(6)
			u.ByCaller.Middleware += st.Int64(7)
			clear(byModel)
			if b := st.Blob(8); b != nil {
				if err := mpModelTokens(b, byModel); err != nil {
					return fmt.Errorf("%w: token usage by model of a run of thread %q", ErrCorrupt, threadID)
				}
			}
			if len(byModel) == 0 {
				model := st.Text(0)
				if model == "" {
					model = records.UnknownModel
				}
				byModel[model] = records.ModelTokens{Input: in, Output: out, Total: total}
			}
			for model, t := range byModel {
				m := u.ByModel[model]
				m.Input += t.Input
				m.Output += t.Output
				m.Total += t.Total
				m.Runs++
				u.ByModel[model] = m
			}
			return nil
		})
	})
	if err != nil {
		return records.TokenUsage{}, err
	}
	return u, nil
}
