package engine

// The threads table's statements (the thread records; see migrations/ and
// migrations_pg/): the SQLite text the engine runs, each PostgreSQL
// statement written out for it in pgStatements (dialect_pg.go) beside it,
// and the queries of inspection, Verify and Stats. The logic stays in
// thread_records.go, inspect.go, verify.go, backend_pg.go and stats.go.

const threadCols = `thread_id, assistant_id, user_id, display_name, status, metadata, created_at, updated_at`

// Owner scoping: ?2 is 1 for AnyOwner, ?3 the user id.
const (
	sqlThreadInsert = `INSERT INTO threads(thread_id, assistant_id, user_id, display_name, status, metadata, pinned, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(thread_id) DO NOTHING`
	sqlThreadGet    = `SELECT ` + threadCols + ` FROM threads WHERE thread_id=?1 AND (?2 OR user_id=?3)`
	sqlThreadName   = `UPDATE threads SET display_name=?4, updated_at=?5 WHERE thread_id=?1 AND (?2 OR user_id=?3)`
	sqlThreadOwner  = `UPDATE threads SET user_id=?4, updated_at=?5 WHERE thread_id=?1 AND (?2 OR user_id=?3)`
	sqlThreadStatus = `UPDATE threads SET status=?4, updated_at=?5 WHERE thread_id=?1 AND (?2 OR user_id=?3)`
	sqlThreadMeta   = `UPDATE threads SET metadata=?4, pinned=?5, updated_at=coalesce(?6, updated_at)
		WHERE thread_id=?1 AND (?2 OR user_id=?3)`
	sqlThreadDelete = `DELETE FROM threads WHERE thread_id=?1 AND (?2 OR user_id=?3)`
	// Search: ?1 status or NULL, ?2 owner, ?3 encoded metadata filter, ?4
	// limit, ?5 offset. The owner variants walk threads_by_owner in order;
	// the filter runs inside SQLite so LIMIT and OFFSET apply in SQL. Every
	// variant names all five parameters, so one argument list binds them.
	threadWhereOwner = ` WHERE user_id=?2 AND (?1 IS NULL OR status=?1)`
	threadWhereAny   = ` WHERE (?1 IS NULL OR status=?1) AND ?2 IS NULL`
	threadMatch      = ` AND agentstate_thread_match(metadata, ?3)`
	threadPage       = ` ORDER BY pinned DESC, updated_at DESC, rowid DESC LIMIT ?4 OFFSET ?5`
	threadSelect     = `SELECT ` + threadCols + ` FROM threads`

	sqlThreadSearchOwner         = threadSelect + threadWhereOwner + ` AND ?3 IS NULL` + threadPage
	sqlThreadSearchOwnerFiltered = threadSelect + threadWhereOwner + threadMatch + threadPage
	sqlThreadSearchAny           = threadSelect + threadWhereAny + ` AND ?3 IS NULL` + threadPage
	sqlThreadSearchAnyFiltered   = threadSelect + threadWhereAny + threadMatch + threadPage
)

// Inspection: the records of a page of threads (a JSON array of ids).
const sqlThreadRecords = `SELECT ` + threadCols + ` FROM threads WHERE thread_id IN (SELECT value FROM json_each(?))`

const (
	// Verify reads every record (of one thread, with ?1).
	sqlThreadsVerify = `SELECT thread_id, status, metadata, pinned FROM threads WHERE ?1 = '' OR thread_id = ?1 ORDER BY thread_id`
	// Stats: the records and their stored size.
	sqlThreadsStats = `SELECT count(*), coalesce(sum(octet_length(thread_id) + octet_length(assistant_id) + octet_length(user_id)
		+ octet_length(display_name) + octet_length(status) + coalesce(octet_length(metadata), 0) + 3 * 8), 0) FROM threads`
)

// PostgreSQL: the insert, the import's row insert and the metadata update
// also write metadata_j, derived from the metadata's bytes; Verify (on
// PostgreSQL) compares metadata_j with what the bytes give.
const (
	sqlThreadInsertPG = `INSERT INTO threads(thread_id, assistant_id, user_id, display_name, status, metadata, pinned, created_at, updated_at, metadata_j)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (thread_id) DO NOTHING`
	sqlThreadImportRowPG = `INSERT INTO threads(thread_id, assistant_id, user_id, display_name, status, metadata, pinned, created_at, updated_at, metadata_j)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`
	sqlThreadMetaPG = `UPDATE threads SET metadata = $4, metadata_j = $7, pinned = $5, updated_at = coalesce($6, updated_at)
		WHERE thread_id = $1 AND ($2 OR user_id = $3)`
	sqlThreadsVerifyDerivedPG = `SELECT thread_id, '', '', metadata_j, 'metadata_j', metadata FROM threads
		WHERE $1 = '' OR thread_id = $1`
)

// The export's columns (export.go, "The export format"), in the order
// a row line lists them; export.go builds the SELECT and INSERT from them.
var exportThreads = exportTable{name: "threads", threadCol: "thread_id", orderBy: "thread_id",
	cols: []exportCol{{"thread_id", colText}, {"assistant_id", colText}, {"user_id", colText}, {"display_name", colText},
		{"status", colText}, {"metadata", colMsgpack}, {"pinned", colInt}, {"created_at", colInt}, {"updated_at", colInt}}}
