package engine

// The runs table's statements (see migrations/ and migrations_pg/): the
// SQLite text the engine runs, each PostgreSQL statement written out for
// it in pgStatements (dialect_pg.go) beside it, and the queries of Verify,
// Import and Stats. The logic that runs them stays in runs*.go, verify.go,
// import_rules.go and stats.go.

const runCols = `run_id, thread_id, assistant_id, user_id, status, model_name, multitask_strategy, metadata, kwargs,
	error, created_at, updated_at, total_input_tokens, total_output_tokens, total_tokens, llm_call_count,
	lead_agent_tokens, subagent_tokens, middleware_tokens, token_usage_by_model, message_count,
	first_human_message, last_ai_message, idempotency_key, owner_id,
	operation_kind, worker_id, worker_lease, stop_reason, cancel_action, cancel_requested_at`

const (
	sqlRunGet    = `SELECT ` + runCols + ` FROM runs WHERE run_id=?`
	sqlRunByKey  = `SELECT ` + runCols + ` FROM runs WHERE idempotency_key=?`
	sqlRunActive = `SELECT run_id, status, operation_kind, worker_id, worker_lease FROM runs WHERE thread_id=? AND status IN ('pending', 'running')`
	sqlRunStatus = `SELECT status FROM runs WHERE run_id=?`
	// An interrupted row passes to the interrupting worker (?4; NULL keeps its own).
	sqlRunInterrupt = `UPDATE runs SET status='interrupted', error=?1, updated_at=?2, lease_until=NULL,
		worker_id=coalesce(?4, worker_id) WHERE run_id=?3`
	sqlRunInsert = `INSERT INTO runs(run_id, thread_id, assistant_id, user_id, status, model_name, multitask_strategy,
		metadata, kwargs, created_at, updated_at, idempotency_key, owner_id, lease_until,
		operation_kind, worker_id, worker_lease, error, stop_reason)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	// OpPut over an existing run: every field the caller gives (?1..?16), by run id (?17).
	sqlRunOverwrite = `UPDATE runs SET assistant_id=?1, user_id=?2, status=?3, model_name=?4, multitask_strategy=?5,
		metadata=?6, kwargs=?7, error=?8, stop_reason=?9, idempotency_key=?10, operation_kind=?11,
		worker_id=?12, worker_lease=?13, updated_at=?14, owner_id=?15, lease_until=?16
		WHERE run_id=?17`
	// OpRenew: ?1 lease, ?2 now, ?3 run, ?4 worker.
	sqlRunRenewWorker = `UPDATE runs SET worker_lease=?1, updated_at=?2
		WHERE run_id=?3 AND worker_id=?4 AND status IN ('pending', 'running')`
	sqlRunCancelAction = `SELECT cancel_action FROM runs WHERE run_id=?`
	sqlRunThread       = `SELECT thread_id FROM runs WHERE run_id=?`
	// OpCancel: the first action stays (?1 action, ?2 now, ?3 run).
	sqlRunRequestCancel = `UPDATE runs SET cancel_action=coalesce(cancel_action, ?1),
		cancel_requested_at=coalesce(cancel_requested_at, ?2), updated_at=?2
		WHERE run_id=?3 AND status IN ('pending', 'running')`
	// OpFinalize: ?1 status, ?2 error (NULL keeps it), ?3 stop reason
	// (NULL keeps it), ?4 now, ?5 run; not once a cancellation was asked.
	sqlRunFinalize = `UPDATE runs SET status=?1, error=coalesce(?2, error), stop_reason=coalesce(?3, stop_reason),
		updated_at=?4, lease_until=NULL
		WHERE run_id=?5 AND status IN ('pending', 'running') AND cancel_action IS NULL`
	// OpTakeover: ?1 error, ?2 stop reason (NULL keeps it), ?3 now, ?4
	// run, ?5 the lease cutoff.
	sqlRunTakeover = `UPDATE runs SET status='error', error=?1, stop_reason=coalesce(?2, stop_reason),
		updated_at=?3, lease_until=NULL
		WHERE run_id=?4 AND status IN ('pending', 'running') AND (worker_lease IS NULL OR worker_lease < ?5)`
	// OpStatus: ?1 status, ?2 error and ?3 stop reason (NULL keeps them),
	// ?4 now, ?5 run, ?6 this handle (its lease renewed to ?7); only a run
	// still pending, running or interrupted moves (DeerFlow's guard: an
	// interrupted run may resume or end; success, error and timeout stay).
	sqlRunOpStatus = `UPDATE runs SET status=?1, error=coalesce(?2, error), stop_reason=coalesce(?3, stop_reason),
		updated_at=?4,
		lease_until=CASE WHEN ?1 NOT IN ('pending', 'running') THEN NULL WHEN owner_id=?6 THEN ?7 ELSE lease_until END
		WHERE run_id=?5 AND status IN ('pending', 'running', 'interrupted')`
	// A status change by the owning handle renews its lease; a terminal
	// status ends it.
	sqlRunSetStatus = `UPDATE runs SET status=?1, error=?2, updated_at=?3,
		lease_until=CASE WHEN ?1 NOT IN ('pending', 'running') THEN NULL WHEN owner_id=?4 THEN ?5 ELSE lease_until END
		WHERE run_id=?6`
	sqlRunComplete = `UPDATE runs SET status=?, error=?, updated_at=?, lease_until=NULL,
		total_input_tokens=?, total_output_tokens=?, total_tokens=?, llm_call_count=?,
		lead_agent_tokens=?, subagent_tokens=?, middleware_tokens=?, token_usage_by_model=?,
		message_count=?, first_human_message=?, last_ai_message=?
		WHERE run_id=?`
	sqlRunDelete   = `DELETE FROM runs WHERE run_id=?`
	sqlRunSetModel = `UPDATE runs SET model_name=?, updated_at=? WHERE run_id=?`
	// A running snapshot: NULL keeps the stored value.
	sqlRunProgress = `UPDATE runs SET updated_at=?,
		total_input_tokens=coalesce(?, total_input_tokens), total_output_tokens=coalesce(?, total_output_tokens),
		total_tokens=coalesce(?, total_tokens), llm_call_count=coalesce(?, llm_call_count),
		lead_agent_tokens=coalesce(?, lead_agent_tokens), subagent_tokens=coalesce(?, subagent_tokens),
		middleware_tokens=coalesce(?, middleware_tokens), token_usage_by_model=coalesce(?, token_usage_by_model),
		message_count=coalesce(?, message_count), first_human_message=coalesce(?, first_human_message),
		last_ai_message=coalesce(?, last_ai_message)
		WHERE run_id=?`
	// Active runs of every thread, oldest first: ?1 pending only, ?2
	// created at or before, ?3 limit.
	// ?4 runs only, ?5 with ?6: a worker lease expired before ?6.
	sqlRunsActive = `SELECT ` + runCols + ` FROM runs
		WHERE status IN ('pending', 'running') AND (NOT ?1 OR status = 'pending') AND created_at <= ?2
		AND (NOT ?4 OR operation_kind IS NULL) AND (NOT ?5 OR worker_lease IS NULL OR worker_lease < ?6)
		ORDER BY created_at, rowid LIMIT ?3`
	sqlRunPage = `SELECT ` + runCols + `, created_at, rowid FROM runs
		WHERE thread_id=?1 AND (created_at < ?2 OR (created_at = ?2 AND rowid < ?3))
		ORDER BY created_at DESC, rowid DESC LIMIT ?4`
	// Owners other than ?1 with an active run whose lease lapsed by ?2.
	sqlRunLapsedOwners = `SELECT DISTINCT owner_id FROM runs
		WHERE status IN ('pending', 'running') AND owner_id != ?1
		AND (owner_id = '' OR lease_until IS NULL OR lease_until <= ?2)`
	sqlRunReconcile = `UPDATE runs SET status='error', error=?1, updated_at=?2, lease_until=NULL
		WHERE status IN ('pending', 'running') AND owner_id = ?3
		AND (owner_id = '' OR lease_until IS NULL OR lease_until <= ?2)`
	// A write transaction that held the lock for ?1 microseconds gives
	// that time back to the leases that were valid when it began (?2):
	// their owners could not renew while it held the lock.
	sqlRunExtendLeases = `UPDATE runs SET lease_until = lease_until + ?1
		WHERE status IN ('pending', 'running') AND lease_until >= ?2 AND rowid <= ?3`
	sqlRunOwned = `SELECT count(*) FROM runs WHERE owner_id=? AND status IN ('pending', 'running')`
	sqlRunRenew = `UPDATE runs SET lease_until=? WHERE owner_id=? AND status IN ('pending', 'running')`
)

const (
	tokenCols      = `model_name, total_input_tokens, total_output_tokens, total_tokens, llm_call_count, lead_agent_tokens, subagent_tokens, middleware_tokens, token_usage_by_model`
	sqlTokensEnded = `SELECT ` + tokenCols + ` FROM runs WHERE thread_id=? AND status NOT IN ('pending', 'running')`
	sqlTokensAll   = `SELECT ` + tokenCols + ` FROM runs WHERE thread_id=?`
)

const (
	// Verify reads every run (of one thread, with ?1).
	sqlRunsVerify = `SELECT run_id, thread_id, status, metadata, kwargs, token_usage_by_model, created_at, updated_at, cancel_action FROM runs WHERE ?1 = '' OR thread_id = ?1 ORDER BY run_id`
	// Import asks which thread already holds a run of the dump.
	sqlRunsImportThread = `SELECT thread_id FROM runs WHERE run_id = ?`
	// keepInsertedLeases: the last row before an import inserts.
	sqlRunsMaxRowid = `SELECT coalesce(max(rowid), 0) FROM runs`
	// Stats: the runs and their stored size.
	sqlRunsStats = `SELECT count(*), coalesce(sum(octet_length(run_id) + octet_length(thread_id) + octet_length(assistant_id) + octet_length(user_id)
		+ octet_length(status) + octet_length(model_name) + octet_length(multitask_strategy) + coalesce(octet_length(metadata), 0)
		+ coalesce(octet_length(kwargs), 0) + octet_length(error) + coalesce(octet_length(token_usage_by_model), 0)
		+ octet_length(first_human_message) + octet_length(last_ai_message) + coalesce(octet_length(idempotency_key), 0)
		+ octet_length(owner_id) + 13 * 8), 0) FROM runs`
)

// PostgreSQL: run status changes read the row they change: the row lock
// makes a second writer wait and then see the first one's status, as
// SQLite's single writer would.
const (
	sqlRunStatusPG = `SELECT status FROM runs WHERE run_id = $1 FOR UPDATE`
	sqlRunActivePG = `SELECT run_id, status, operation_kind, worker_id, worker_lease FROM runs WHERE thread_id = $1 AND status IN ('pending', 'running') FOR UPDATE`
)

// The export's columns (export.go, "The export format"), in the order
// a row line lists them; export.go builds the SELECT and INSERT from them.
var exportRuns = exportTable{name: "runs", threadCol: "thread_id", orderBy: "run_id",
	cols: []exportCol{{"run_id", colText}, {"thread_id", colText}, {"assistant_id", colText}, {"user_id", colText},
		{"status", colText}, {"model_name", colText}, {"multitask_strategy", colText}, {"metadata", colMsgpack},
		{"kwargs", colMsgpack}, {"error", colText}, {"created_at", colInt}, {"updated_at", colInt},
		{"total_input_tokens", colInt}, {"total_output_tokens", colInt}, {"total_tokens", colInt}, {"llm_call_count", colInt},
		{"lead_agent_tokens", colInt}, {"subagent_tokens", colInt}, {"middleware_tokens", colInt},
		{"token_usage_by_model", colMsgpack}, {"message_count", colInt}, {"first_human_message", colText},
		{"last_ai_message", colText}, {"idempotency_key", colTextNull}, {"owner_id", colText}, {"lease_until", colIntNull},
		{"operation_kind", colTextNull}, {"stop_reason", colTextNull}, {"worker_id", colTextNull}, {"worker_lease", colIntNull},
		{"cancel_action", colTextNull}, {"cancel_requested_at", colIntNull}}}
