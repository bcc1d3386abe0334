package engine

// The runs table's statements (see migrations/ and migrations_pg/): the
// SQLite text the engine runs, each PostgreSQL statement written out for
// it in pgStatements (dialect_pg.go) beside it, and the queries of Verify,
// Import and Stats. The logic that runs them stays in runs*.go, verify.go,
// import_rules.go and stats.go.

const runCols = `run_id, thread_id, assistant_id, user_id, status, model_name, multitask_strategy, metadata, kwargs,
	error, created_at, updated_at, total_input_tokens, total_output_tokens, total_tokens, llm_call_count,
	lead_agent_tokens, subagent_tokens, middleware_tokens, token_usage_by_model, message_count,
	first_human_message, last_ai_message, idempotency_key, owner_id`

const (
	sqlRunGet       = `SELECT ` + runCols + ` FROM runs WHERE run_id=?`
	sqlRunByKey     = `SELECT ` + runCols + ` FROM runs WHERE thread_id=? AND idempotency_key=?`
	sqlRunActive    = `SELECT run_id, status FROM runs WHERE thread_id=? AND status IN ('pending', 'running')`
	sqlRunStatus    = `SELECT status FROM runs WHERE run_id=?`
	sqlRunInterrupt = `UPDATE runs SET status='interrupted', error=?, updated_at=?, lease_until=NULL WHERE run_id=?`
	sqlRunInsert    = `INSERT INTO runs(run_id, thread_id, assistant_id, user_id, status, model_name, multitask_strategy,
		metadata, kwargs, created_at, updated_at, idempotency_key, owner_id, lease_until)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
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
	sqlRunsActive = `SELECT ` + runCols + ` FROM runs
		WHERE status IN ('pending', 'running') AND (NOT ?1 OR status = 'pending') AND created_at <= ?2
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
	sqlRunsVerify = `SELECT run_id, thread_id, status, metadata, kwargs, token_usage_by_model, created_at, updated_at FROM runs WHERE ?1 = '' OR thread_id = ?1 ORDER BY run_id`
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
	sqlRunActivePG = `SELECT run_id, status FROM runs WHERE thread_id = $1 AND status IN ('pending', 'running') FOR UPDATE`
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
		{"last_ai_message", colText}, {"idempotency_key", colTextNull}, {"owner_id", colText}, {"lease_until", colIntNull}}}
