package records

import "time"

// RunStatus is where a run stands. Pending and running are active; the
// others are terminal.
type RunStatus string

// Run statuses.
const (
	RunPending     RunStatus = "pending"
	RunRunning     RunStatus = "running"
	RunSuccess     RunStatus = "success"
	RunError       RunStatus = "error"
	RunTimeout     RunStatus = "timeout"
	RunInterrupted RunStatus = "interrupted"
)

// Strategy is what creating a run does when its thread already has an
// active one (LangGraph's multitask strategy).
type Strategy string

// Multitask strategies.
const (
	// StrategyReject refuses the new run with an *ActiveRunError (the default).
	StrategyReject Strategy = "reject"
	// StrategyInterrupt marks the active run interrupted and creates the new one.
	StrategyInterrupt Strategy = "interrupt"
	// StrategyRollback does the same as StrategyInterrupt for the record; the
	// caller also restores the pre-run checkpoint (a checkpointer concern).
	StrategyRollback Strategy = "rollback"
)

// OrphanReason is the error recorded on runs that Reconcile finds without a
// live owner.
const OrphanReason = "orphaned: the process that owned this run stopped"

// ModelTokens counts the tokens one model used.
type ModelTokens struct {
	Input  int64 `msgpack:"input" json:"input"`
	Output int64 `msgpack:"output" json:"output"`
	Total  int64 `msgpack:"total" json:"total"`
}

// Run is one run record.
type Run struct {
	RunID             string         `json:"run_id"`
	ThreadID          string         `json:"thread_id"`
	AssistantID       string         `json:"assistant_id"`
	UserID            string         `json:"user_id"`
	Status            RunStatus      `json:"status"`
	ModelName         string         `json:"model_name"`
	MultitaskStrategy Strategy       `json:"multitask_strategy"`
	Metadata          map[string]any `json:"metadata"`
	Kwargs            map[string]any `json:"kwargs"`
	Error             string         `json:"error"`
	CreatedAt         time.Time      `json:"created_at"`
	UpdatedAt         time.Time      `json:"updated_at"`
	IdempotencyKey    string         `json:"idempotency_key,omitempty"`
	// Owner names the open handle that created the run (see Runs.Owner).
	Owner string `json:"owner"`
	RunTotals
}

// RunTotals is a run's token usage and message summary, as Complete writes it.
// Complete fills a zero TotalInputTokens, TotalOutputTokens or TotalTokens
// with the sum over TokenUsageByModel, so that a run's totals never
// contradict its breakdown.
type RunTotals struct {
	TotalInputTokens  int64                  `json:"total_input_tokens"`
	TotalOutputTokens int64                  `json:"total_output_tokens"`
	TotalTokens       int64                  `json:"total_tokens"`
	LLMCallCount      int64                  `json:"llm_call_count"`
	LeadAgentTokens   int64                  `json:"lead_agent_tokens"`
	SubagentTokens    int64                  `json:"subagent_tokens"`
	MiddlewareTokens  int64                  `json:"middleware_tokens"`
	TokenUsageByModel map[string]ModelTokens `json:"token_usage_by_model"`
	MessageCount      int64                  `json:"message_count"`
	// FirstHumanMessage and LastAIMessage are cut to 2000 characters.
	FirstHumanMessage string `json:"first_human_message"`
	LastAIMessage     string `json:"last_ai_message"`
}

// NewRun describes a run to create. ThreadID is required; an empty RunID
// gets a fresh random one; Status is pending (default) or running;
// MultitaskStrategy is StrategyReject (default), StrategyInterrupt or
// StrategyRollback.
type NewRun struct {
	RunID             string         `json:"run_id"`
	ThreadID          string         `json:"thread_id"`
	AssistantID       string         `json:"assistant_id"`
	UserID            string         `json:"user_id"`
	Status            RunStatus      `json:"status"`
	ModelName         string         `json:"model_name"`
	MultitaskStrategy Strategy       `json:"multitask_strategy"`
	Metadata          map[string]any `json:"metadata"`
	Kwargs            map[string]any `json:"kwargs"`
	// IdempotencyKey, when set, makes a second create with the same key on
	// the same thread return the first run instead of creating another.
	IdempotencyKey string `json:"idempotency_key"`
	// CreatedAt, when set, is the run's creation time (a run recorded
	// elsewhere first, as DeerFlow's RunManager does); zero means now.
	CreatedAt time.Time `json:"created_at"`
}

// RunProgress is a running snapshot of a run's totals (Runs.Progress): nil
// fields, and a nil TokenUsageByModel, keep what is stored.
type RunProgress struct {
	TotalInputTokens  *int64                 `json:"total_input_tokens"`
	TotalOutputTokens *int64                 `json:"total_output_tokens"`
	TotalTokens       *int64                 `json:"total_tokens"`
	LLMCallCount      *int64                 `json:"llm_call_count"`
	LeadAgentTokens   *int64                 `json:"lead_agent_tokens"`
	SubagentTokens    *int64                 `json:"subagent_tokens"`
	MiddlewareTokens  *int64                 `json:"middleware_tokens"`
	TokenUsageByModel map[string]ModelTokens `json:"token_usage_by_model"`
	MessageCount      *int64                 `json:"message_count"`
	FirstHumanMessage *string                `json:"first_human_message"`
	LastAIMessage     *string                `json:"last_ai_message"`
}

// ActiveQuery selects active runs across threads (Runs.ListActive).
type ActiveQuery struct {
	// PendingOnly leaves out running runs.
	PendingOnly bool
	// Before, when set, keeps runs created at or before it.
	Before time.Time
	// Limit caps the answer (0: 1000, at most 1000).
	Limit int
}

// Created is the result of Runs.Create.
type Created struct {
	Run Run
	// New is false when the run existed already (same run id, or same
	// idempotency key on the thread) and Run is that run, unchanged.
	New bool
	// Interrupted names the run that this create marked interrupted
	// (strategies interrupt and rollback), if any.
	Interrupted string
}
