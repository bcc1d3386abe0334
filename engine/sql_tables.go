package engine

// The statements that read several tables of a thread at once, so they
// belong to no one table's file: Import's "is this thread here already",
// inspection's thread list and Stats' largest threads (with the
// PostgreSQL text beside the SQLite). Every other statement is in its
// table's sql_<table>.go.

// sqlThreadAnywhere finds any row of a thread in any table that belongs to
// threads; each lookup is a prefix of a primary key or an index.
const sqlThreadAnywhere = `SELECT 'checkpoints' FROM checkpoints WHERE thread_id = ?1
	UNION ALL SELECT 'writes' FROM writes WHERE thread_id = ?1
	UNION ALL SELECT 'blobs' FROM blobs WHERE thread_id = ?1
	UNION ALL SELECT 'thread_modes' FROM thread_modes WHERE thread_id = ?1
	UNION ALL SELECT 'threads' FROM threads WHERE thread_id = ?1
	UNION ALL SELECT 'runs' FROM runs WHERE thread_id = ?1
	UNION ALL SELECT 'event_seqs' FROM event_seqs WHERE thread_id = ?1
	UNION ALL SELECT 'events' FROM events WHERE thread_id = ?1
	LIMIT 1`

// Inspection: the page of threads ListThreads reads, with what each
// surface holds for them.
const sqlThreadSummaries = `WITH ids(thread_id) AS (
	SELECT thread_id FROM checkpoints UNION SELECT thread_id FROM threads UNION SELECT thread_id FROM runs
	UNION SELECT thread_id FROM events UNION SELECT thread_id FROM thread_modes)
SELECT ids.thread_id, coalesce(m.mode, ''),
	(SELECT count(*) FROM checkpoints c WHERE c.thread_id = ids.thread_id),
	(SELECT max(checkpoint_id) FROM checkpoints c WHERE c.thread_id = ids.thread_id AND c.checkpoint_ns = ''),
	(SELECT count(*) FROM runs r WHERE r.thread_id = ids.thread_id),
	(SELECT count(*) FROM events e WHERE e.thread_id = ids.thread_id)
FROM ids LEFT JOIN thread_modes m ON m.thread_id = ids.thread_id
WHERE ?1 IS NULL OR ids.thread_id IN (SELECT value FROM json_each(?1))
ORDER BY ids.thread_id LIMIT ?2 OFFSET ?3`

// Stats: the threads that hold the most bytes.
const sqlLargestThreads = `SELECT s.thread_id, coalesce(m.mode, ''), sum(s.cps), sum(s.n) FROM (
	SELECT thread_id, 1 AS cps, octet_length(checkpoint) + octet_length(metadata) AS n FROM checkpoints
	UNION ALL SELECT thread_id, 0, coalesce(octet_length(data), 0) FROM blobs
	UNION ALL SELECT thread_id, 0, coalesce(octet_length(data), 0) FROM writes
	UNION ALL SELECT thread_id, 0, coalesce(octet_length(content), 0) + coalesce(octet_length(metadata), 0) FROM events
) s LEFT JOIN thread_modes m ON m.thread_id = s.thread_id
GROUP BY s.thread_id ORDER BY 4 DESC, 1 LIMIT ?`

// PostgreSQL: SQLite takes a bare column of a group; PostgreSQL wants it
// named.
const sqlLargestThreadsPG = `SELECT s.thread_id, coalesce(m.mode, ''), sum(s.cps), sum(s.n) FROM (
	SELECT thread_id, 1 AS cps, octet_length(checkpoint) + octet_length(metadata) AS n FROM checkpoints
	UNION ALL SELECT thread_id, 0, coalesce(octet_length(data), 0) FROM blobs
	UNION ALL SELECT thread_id, 0, coalesce(octet_length(data), 0) FROM writes
	UNION ALL SELECT thread_id, 0, coalesce(octet_length(content), 0) + coalesce(octet_length(metadata), 0) FROM events
) s LEFT JOIN thread_modes m ON m.thread_id = s.thread_id
GROUP BY s.thread_id, m.mode ORDER BY 4 DESC, 1 LIMIT $1`
