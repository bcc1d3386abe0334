// A thread's token usage summed over its runs.

package engine

import (
	"context"
	"fmt"
)

// TokenUsage is a thread's token usage summed over its runs.
type TokenUsage struct {
	Runs              int64                 `json:"total_runs"`
	TotalInputTokens  int64                 `json:"total_input_tokens"`
	TotalOutputTokens int64                 `json:"total_output_tokens"`
	TotalTokens       int64                 `json:"total_tokens"`
	LLMCallCount      int64                 `json:"llm_call_count"`
	ByModel           map[string]ModelUsage `json:"by_model"`
	ByCaller          CallerTokens          `json:"by_caller"`
}

// ModelUsage is one model's share of a thread's tokens. Runs counts the
// runs that used the model; a run that used several models counts under
// each.
type ModelUsage struct {
	ModelTokens
	Runs int64 `json:"runs"`
}

// CallerTokens splits tokens by who called the model.
type CallerTokens struct {
	LeadAgent  int64 `json:"lead_agent"`
	Subagent   int64 `json:"subagent"`
	Middleware int64 `json:"middleware"`
}

// UnknownModel is the model name under which TokenUsage counts runs that
// recorded neither per-model usage nor a model name.
const UnknownModel = "unknown"

const (
	tokenCols      = `model_name, total_input_tokens, total_output_tokens, total_tokens, llm_call_count, lead_agent_tokens, subagent_tokens, middleware_tokens, token_usage_by_model`
	sqlTokensEnded = `SELECT ` + tokenCols + ` FROM runs WHERE thread_id=? AND status NOT IN ('pending', 'running')`
	sqlTokensAll   = `SELECT ` + tokenCols + ` FROM runs WHERE thread_id=?`
)

// TokenUsage sums the token usage of a thread's ended runs (with
// includeActive, of its pending and running runs too). By model, it reads
// each run's per-model record and falls back to model_name and the run's
// totals for runs without one (older rows).
func (r Runs) TokenUsage(ctx context.Context, threadID string, includeActive bool) (TokenUsage, error) {
	if err := checkID("thread id", threadID); err != nil {
		return TokenUsage{}, err
	}
	q := sqlTokensEnded
	if includeActive {
		q = sqlTokensAll
	}
	u := TokenUsage{ByModel: map[string]ModelUsage{}}
	byModel := map[string]ModelTokens{}
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
					model = UnknownModel
				}
				byModel[model] = ModelTokens{Input: in, Output: out, Total: total}
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
		return TokenUsage{}, err
	}
	return u, nil
}
