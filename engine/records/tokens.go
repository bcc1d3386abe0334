package records

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
