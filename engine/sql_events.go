package engine

// The events table's statements and those of its counter, event_seqs (see
// migrations/ and migrations_pg/), used together: the SQLite text the
// engine runs, each PostgreSQL statement written out for it in
// pgStatements (dialect_pg.go) beside it, and the queries of Verify,
// Import, inspection and Stats. The logic stays in events.go, verify.go,
// import_rules.go, inspect.go and stats.go.

const eventCols = `thread_id, seq, run_id, event_type, category, content, metadata, created_at, user_id`

// byUser keeps one user's events (its two arguments: the user twice), or
// every event when the user is "" (Events.ForUser).
const byUser = ` AND (? = '' OR user_id = ?)`

const (
	// The counter row starts from the highest seq present, so a thread
	// whose counter was dropped (DeleteThread) starts again after its rows,
	// and a counter behind its rows (a file written by an import before
	// imports advanced counters) catches up instead of handing out a seq
	// that exists: the VALUES expression is computed anyway.
	sqlEventSeq = `INSERT INTO event_seqs(thread_id, last_seq)
		VALUES (?1, coalesce((SELECT max(seq) FROM events WHERE thread_id=?1), 0) + ?2)
		ON CONFLICT(thread_id) DO UPDATE SET last_seq = max(last_seq + ?2, excluded.last_seq)
		RETURNING last_seq`
	sqlEventInsert = `INSERT INTO events(thread_id, seq, run_id, event_type, category, content, metadata, task_id, created_at, user_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlEventFind = `SELECT ` + eventCols + ` FROM events INDEXED BY events_by_run_type
		WHERE thread_id=? AND run_id=? AND event_type=? ORDER BY seq LIMIT 1`
	sqlMessagesLatest = `SELECT ` + eventCols + ` FROM events INDEXED BY events_messages
		WHERE thread_id=? AND category='message'` + byUser + ` ORDER BY seq DESC LIMIT ?`
	sqlMessagesBefore = `SELECT ` + eventCols + ` FROM events INDEXED BY events_messages
		WHERE thread_id=? AND category='message'` + byUser + ` AND seq < ? ORDER BY seq DESC LIMIT ?`
	sqlMessagesAfter = `SELECT ` + eventCols + ` FROM events INDEXED BY events_messages
		WHERE thread_id=? AND category='message'` + byUser + ` AND seq > ? ORDER BY seq LIMIT ?`
	// One run's messages: the same three pages as the thread's.
	sqlRunMessagesLatest = `SELECT ` + eventCols + ` FROM events INDEXED BY events_by_run
		WHERE thread_id=? AND run_id=? AND category='message'` + byUser + ` ORDER BY seq DESC LIMIT ?`
	sqlRunMessagesBefore = `SELECT ` + eventCols + ` FROM events INDEXED BY events_by_run
		WHERE thread_id=? AND run_id=? AND category='message'` + byUser + ` AND seq < ? ORDER BY seq DESC LIMIT ?`
	sqlRunMessagesAfter = `SELECT ` + eventCols + ` FROM events INDEXED BY events_by_run
		WHERE thread_id=? AND run_id=? AND category='message'` + byUser + ` AND seq > ? ORDER BY seq LIMIT ?`
	// A run's AI replies, newest first, from below a seq (the last visible
	// one is looked for in Go: the caller is in the msgpack metadata).
	sqlRunAIReplies = `SELECT ` + eventCols + ` FROM events INDEXED BY events_by_run
		WHERE thread_id=? AND run_id=? AND category='message' AND event_type IN ('llm.ai.response', 'ai_message')` + byUser + `
		AND seq < ? ORDER BY seq DESC LIMIT ?`
	sqlMessagesCount = `SELECT count(*) FROM events INDEXED BY events_messages WHERE thread_id=? AND category='message'` + byUser
	// ?4 is a JSON array of event types or NULL; ?5 a task id or NULL.
	sqlRunEvents = `SELECT ` + eventCols + ` FROM events INDEXED BY events_by_run
		WHERE thread_id=?1 AND run_id=?2 AND seq > ?3
		AND (?4 IS NULL OR event_type IN (SELECT value FROM json_each(?4)))
		AND (?5 IS NULL OR task_id = ?5) AND (?7 = '' OR user_id = ?7)
		ORDER BY seq LIMIT ?6`
	sqlEventsDeleteThread = `DELETE FROM events WHERE thread_id=?` + byUser
	sqlEventSeqDelete     = `DELETE FROM event_seqs WHERE thread_id=?`
	sqlEventsDeleteRun    = `DELETE FROM events INDEXED BY events_by_run WHERE thread_id=? AND run_id=?` + byUser
)

// sqlEventSeqPastMax makes a thread's event counter at least its highest
// seq, so the next event never reuses one.
const sqlEventSeqPastMax = `INSERT INTO event_seqs(thread_id, last_seq)
	SELECT ?1, max(seq) FROM events WHERE thread_id = ?1
	ON CONFLICT(thread_id) DO UPDATE SET last_seq = max(last_seq, excluded.last_seq)`

// Inspection: a thread's events of every category, from a seq on.
const sqlThreadEvents = `SELECT ` + eventCols + ` FROM events WHERE thread_id = ? AND seq > ? ORDER BY seq LIMIT ?`

const (
	// Verify reads every counter and every event (of one thread, with ?1).
	sqlEventSeqsVerify = `SELECT thread_id, last_seq FROM event_seqs WHERE ?1 = '' OR thread_id = ?1`
	sqlEventsVerify    = `SELECT thread_id, seq, run_id, event_type, category, content, metadata FROM events WHERE ?1 = '' OR thread_id = ?1 ORDER BY thread_id, seq`
	// Stats: the events and their stored size.
	sqlEventsStats = `SELECT count(*), coalesce(sum(octet_length(thread_id) + 8 + octet_length(run_id) + octet_length(event_type) + octet_length(category)
		+ coalesce(octet_length(content), 0) + coalesce(octet_length(metadata), 0) + coalesce(octet_length(task_id), 0) + coalesce(octet_length(user_id), 0) + 8), 0) FROM events`
)

// PostgreSQL: the counter's own column must be named by table in the
// update, and SQLite's two-argument max is GREATEST.
const (
	sqlEventSeqPG = `INSERT INTO event_seqs(thread_id, last_seq)
		VALUES ($1, coalesce((SELECT max(seq) FROM events WHERE thread_id = $1), 0) + $2)
		ON CONFLICT (thread_id) DO UPDATE SET last_seq = GREATEST(event_seqs.last_seq + $2, EXCLUDED.last_seq)
		RETURNING last_seq`
	sqlEventSeqPastMaxPG = `INSERT INTO event_seqs(thread_id, last_seq)
		SELECT $1, max(seq) FROM events WHERE thread_id = $1
		ON CONFLICT (thread_id) DO UPDATE SET last_seq = GREATEST(event_seqs.last_seq, EXCLUDED.last_seq)`
)

// The export's columns (export.go, "The export format"), in the order
// a row line lists them; export.go builds the SELECT and INSERT from them.
var exportEventSeqs = exportTable{name: "event_seqs", threadCol: "thread_id", orderBy: "thread_id",
	cols: []exportCol{{"thread_id", colText}, {"last_seq", colInt}}}

var exportEvents = exportTable{name: "events", threadCol: "thread_id", orderBy: "thread_id, seq",
	cols: []exportCol{{"thread_id", colText}, {"seq", colInt}, {"run_id", colText}, {"event_type", colText},
		{"category", colText}, {"content", colMsgpack}, {"metadata", colMsgpack}, {"task_id", colTextNull}, {"created_at", colInt},
		{"user_id", colTextNull}}}
