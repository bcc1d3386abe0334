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
	RunWorker
	RunTotals
}

// RunWorker is what a caller's own worker pool records of a run beside the
// engine's Owner and lease (DeerFlow's RunStore: docs/deerflow.md): the
// operation the row admits, the worker that owns it and its lease, and the
// first cancellation asked for. Zero values are stored as NULL.
type RunWorker struct {
	// OperationKind is the thread operation the row holds the thread's
	// active slot for: "" is a run; another kind (DeerFlow's
	// "checkpoint_write") is a reservation, not a run.
	OperationKind string `json:"operation_kind,omitempty"`
	// Worker is the caller's worker that owns the run.
	Worker string `json:"worker,omitempty"`
	// WorkerLease is until when Worker's lease holds; nil: never leased.
	WorkerLease *time.Time `json:"worker_lease,omitempty"`
	// StopReason is why the run stopped, in the caller's words.
	StopReason string `json:"stop_reason,omitempty"`
	// CancelAction is the first cancellation requested ("interrupt" or
	// "rollback"); a later request never replaces it.
	CancelAction string `json:"cancel_action,omitempty"`
	// CancelRequestedAt is when CancelAction was requested.
	CancelRequestedAt *time.Time `json:"cancel_requested_at,omitempty"`
}

// RunOpKind names a worker-level change of a run (Runs.Apply).
type RunOpKind string

// Worker-level run changes, each one atomic statement of the database.
const (
	// OpPut writes Run whole: a new run, or every field of an existing one
	// (status included: DeerFlow's put overwrites).
	OpPut RunOpKind = "put"
	// OpRenew moves the lease of an active run owned by Worker to Lease and
	// reports the cancellation requested, if any.
	OpRenew RunOpKind = "renew"
	// OpCancel records Action as the run's cancellation unless one was
	// requested first; only an active run takes one.
	OpCancel RunOpKind = "cancel"
	// OpFinalize ends an active run with Status unless a cancellation was
	// requested, which it then reports.
	OpFinalize RunOpKind = "finalize"
	// OpTakeover ends an active run as an error when its worker lease
	// expired more than GraceSeconds ago, or was never taken.
	OpTakeover RunOpKind = "takeover"
	// OpStatus moves a run that is pending, running or interrupted to
	// Status with Error and StopReason (DeerFlow's update_status); an
	// ended run (success, error, timeout) stays as it is.
	OpStatus RunOpKind = "status"
)

// RunOp is one worker-level change of a run (Runs.Apply).
type RunOp struct {
	Op    RunOpKind `json:"op"`
	RunID string    `json:"run_id"`
	// Run is the record OpPut writes (its RunID is the op's).
	Run NewRun `json:"run"`
	// Worker and Lease: OpRenew's owner and new lease.
	Worker string     `json:"worker"`
	Lease  *time.Time `json:"lease"`
	// Action: OpCancel's "interrupt" or "rollback".
	Action string `json:"action"`
	// Status, Error, StopReason: what OpPut, OpFinalize, OpTakeover and
	// OpStatus record ("" keeps the stored error and stop reason).
	Status     RunStatus `json:"status"`
	Error      string    `json:"error"`
	StopReason string    `json:"stop_reason"`
	// GraceSeconds: how long past its lease OpTakeover waits.
	GraceSeconds int64 `json:"grace_seconds"`
}

// RunOpResult is what Runs.Apply did: Done when the run changed (OpPut
// always), and the run's cancellation action, when one was requested.
type RunOpResult struct {
	Done         bool   `json:"done"`
	CancelAction string `json:"cancel_action,omitempty"`
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
	// IdempotencyKey, when set, makes a second create with the same key
	// return the first run instead of creating another: keys are unique in
	// the database, so the run returned may be another thread's.
	IdempotencyKey string `json:"idempotency_key"`
	// CreatedAt, when set, is the run's creation time (a run recorded
	// elsewhere first, as DeerFlow's RunManager does); zero means now.
	CreatedAt time.Time `json:"created_at"`
	// OperationKind, Worker and WorkerLease are recorded as given. With
	// StrategyInterrupt or StrategyRollback, an active row of another
	// worker whose lease is valid (not expired by WorkerGraceSeconds), or
	// an active reservation (OperationKind not "") whose lease is not
	// expired, is not interrupted: the create fails with an *ActiveRunError.
	// An interrupted row passes to Worker.
	OperationKind      string     `json:"operation_kind"`
	Worker             string     `json:"worker"`
	WorkerLease        *time.Time `json:"worker_lease"`
	WorkerGraceSeconds int64      `json:"worker_grace_seconds"`
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
	// RunsOnly leaves out reservations (an OperationKind other than "").
	RunsOnly bool
	// WorkerLeaseBefore, when set, keeps runs whose worker lease expired
	// before it, or was never taken.
	WorkerLeaseBefore time.Time
}

// Created is the result of Runs.Create.
type Created struct {
	Run Run
	// New is false when the run existed already (same run id, or same
	// idempotency key on any thread) and Run is that run, unchanged.
	New bool
	// Interrupted names the run that this create marked interrupted
	// (strategies interrupt and rollback), if any.
	Interrupted string
}
