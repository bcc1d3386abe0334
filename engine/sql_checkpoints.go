package engine

// The checkpoint tables' statements: checkpoints, their channel values
// (blobs) and their pending writes (writes), one family (see migrations/
// and migrations_pg/): a checkpoint's rows are written, read, walked,
// copied and deleted together, and the history walk joins checkpoints with
// blobs. The SQLite text the engine runs, by the logic that runs it (which
// stays in its file), with the PostgreSQL statements written out for it in
// pgStatements (dialect_pg.go) beside it.

// Writing checkpoints, channel values and pending writes (checkpoint.go).

const (
	sqlCheckpointExists = `SELECT parent_id IS NOT NULL FROM checkpoints WHERE thread_id=? AND checkpoint_ns=? AND checkpoint_id=?`
	// A put's parent (?3: its stored checkpoint, NULL when missing) and
	// whether the checkpoint itself (?4) exists, in one query.
	sqlPutTargets = `SELECT (SELECT checkpoint FROM checkpoints WHERE thread_id=?1 AND checkpoint_ns=?2 AND checkpoint_id=?3),
		EXISTS (SELECT 1 FROM checkpoints WHERE thread_id=?1 AND checkpoint_ns=?2 AND checkpoint_id=?4)`
	sqlInsertCheckpoint = `INSERT OR REPLACE INTO checkpoints(thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, checkpoint, metadata)
		VALUES (?, ?, ?, ?, ?, ?, ?)`
	sqlInsertBlob = `INSERT OR IGNORE INTO blobs(thread_id, checkpoint_ns, channel, version, checkpoint_id, type, data, enc, base)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlBlobData = `SELECT type, data FROM blobs WHERE thread_id=? AND checkpoint_ns=? AND channel=? AND version=?`
	// Sealing: the new child consumes the parent's writes not yet consumed.
	// (Not RETURNING them: SQLite would hold every sealed value in its own
	// memory before the first row; see limits.go.)
	sqlSealWrites = `UPDATE writes SET consumed_by=? WHERE thread_id=? AND checkpoint_ns=? AND checkpoint_id=? AND consumed_by IS NULL`
	sqlSealed     = `SELECT task_id, idx, channel, type, enc, data, task_path FROM writes
		WHERE thread_id=? AND checkpoint_ns=? AND checkpoint_id=? AND consumed_by=?`
)

// PostgreSQL: INSERT OR REPLACE is an upsert; the derived columns
// (versions, metadata_j) go with the bytes, also in the import's row
// insert (export.go builds the SQLite text from the table's columns).
const (
	sqlInsertCheckpointPG = `INSERT INTO checkpoints(thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, checkpoint, metadata, versions, metadata_j)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET parent_id = EXCLUDED.parent_id, run_id = EXCLUDED.run_id,
			checkpoint = EXCLUDED.checkpoint, metadata = EXCLUDED.metadata, versions = EXCLUDED.versions, metadata_j = EXCLUDED.metadata_j`
	sqlCheckpointImportRowPG = `INSERT INTO checkpoints(thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, checkpoint, metadata, versions, metadata_j)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`
)

const sqlBlobOwner = `SELECT checkpoint_id FROM blobs WHERE thread_id=? AND checkpoint_ns=? AND channel=? AND version=?`

const (
	sqlInsertWriteFirst   = `INSERT OR IGNORE INTO writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, enc, data, task_path, run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlInsertWriteReplace = `INSERT OR REPLACE INTO writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, enc, data, task_path, run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
)

// PostgreSQL: SQLite's REPLACE deletes the old row, so consumed_by goes
// back to NULL.
const sqlInsertWriteReplacePG = `INSERT INTO writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, enc, data, task_path, run_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE SET channel = EXCLUDED.channel, type = EXCLUDED.type,
			enc = EXCLUDED.enc, data = EXCLUDED.data, task_path = EXCLUDED.task_path, run_id = EXCLUDED.run_id, consumed_by = NULL`

// Reading checkpoints, their values and writes (checkpoint_read.go).

const (
	sqlGetByID = `SELECT thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint, metadata FROM checkpoints
		WHERE thread_id=? AND checkpoint_ns=? AND checkpoint_id=?`
	sqlGetLatest = `SELECT thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint, metadata FROM checkpoints
		WHERE thread_id=? AND checkpoint_ns=? ORDER BY checkpoint_id DESC LIMIT 1`
)

// Channel values of a page: the (thread, ns, channel, version) keys go in as
// one JSON array, so the page costs one query whatever its size.
const sqlPageValues = `SELECT j.key, b.channel, b.type, b.data, b.enc, b.base, b.checkpoint_id FROM json_each(?) j
	CROSS JOIN blobs b ON b.thread_id = j.value->>0 AND b.checkpoint_ns = j.value->>1 AND b.channel = j.value->>2 AND b.version = j.value->>3`

// Unsorted: SQLite would sort the values too, in its own memory (see
// limits.go); loadPendingWrites sorts each tuple's writes.
const sqlPageWrites = `SELECT j.key, w.task_id, w.channel, w.type, w.enc, w.data, w.task_path, w.idx FROM json_each(?) j
	CROSS JOIN writes w ON w.thread_id = j.value->>0 AND w.checkpoint_ns = j.value->>1 AND w.checkpoint_id = j.value->>2`

// sqlTupleWrites is sqlPageWrites for one checkpoint (GetTuple's case),
// without a JSON argument to make and parse.
const sqlTupleWrites = `SELECT 0, task_id, channel, type, enc, data, task_path, idx FROM writes
	WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?`

// List's query starts from every checkpoint; listQuery adds the
// conditions its options ask for.
const sqlListBase = `SELECT thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint, metadata FROM checkpoints WHERE 1`

// Deleting and copying checkpoints (checkpoint_admin.go).

const (
	sqlDeleteThreadCheckpoints = `DELETE FROM checkpoints WHERE thread_id = ?`
	sqlDeleteThreadBlobs       = `DELETE FROM blobs WHERE thread_id = ?`
	sqlDeleteThreadWrites      = `DELETE FROM writes WHERE thread_id = ?`
)

const sqlThreadRows = `SELECT checkpoint_ns, checkpoint_id, coalesce(parent_id, ''), checkpoint FROM checkpoints WHERE thread_id = ?`

const (
	sqlDeleteCheckpoint = `DELETE FROM checkpoints WHERE thread_id=? AND checkpoint_ns=? AND checkpoint_id=?`
	sqlDeleteCPWrites   = `DELETE FROM writes WHERE thread_id=? AND checkpoint_ns=? AND checkpoint_id=?`
	sqlBlobKeys         = `SELECT checkpoint_ns, channel, version FROM blobs WHERE thread_id=?`
	sqlDeleteBlob       = `DELETE FROM blobs WHERE thread_id=? AND checkpoint_ns=? AND channel=? AND version=?`
	sqlRunThreads       = `SELECT DISTINCT thread_id FROM checkpoints WHERE run_id=?`
	sqlOrphanParent     = `UPDATE checkpoints SET parent_id = NULL WHERE thread_id=? AND checkpoint_ns=? AND checkpoint_id=?`
)

const (
	sqlThreadExists    = `SELECT 1 FROM checkpoints WHERE thread_id=? LIMIT 1`
	sqlCopyCheckpoints = `INSERT INTO checkpoints(thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, checkpoint, metadata)
		SELECT ?2, checkpoint_ns, checkpoint_id, parent_id, run_id, checkpoint, metadata FROM checkpoints WHERE thread_id=?1`
	sqlCopyBlobs = `INSERT INTO blobs(thread_id, checkpoint_ns, channel, version, checkpoint_id, type, data, enc, base)
		SELECT ?2, checkpoint_ns, channel, version, checkpoint_id, type, data, enc, base FROM blobs WHERE thread_id=?1`
	sqlCopyWrites = `INSERT INTO writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, enc, data, consumed_by, task_path, run_id)
		SELECT ?2, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, enc, data, consumed_by, task_path, run_id FROM writes WHERE thread_id=?1`
)

// PostgreSQL: the copy takes the derived columns along.
const sqlCopyCheckpointsPG = `INSERT INTO checkpoints(thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, checkpoint, metadata, versions, metadata_j)
		SELECT $2, checkpoint_ns, checkpoint_id, parent_id, run_id, checkpoint, metadata, versions, metadata_j FROM checkpoints WHERE thread_id = $1`

// The checkpoints of a thread that record a run.
const sqlCheckpointsWithRun = `SELECT checkpoint_ns, checkpoint_id, run_id FROM checkpoints WHERE thread_id=? AND run_id IS NOT NULL`

// The thread handle (thread.go).

const (
	sqlFirstOfRun = `SELECT thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint, metadata FROM checkpoints
		WHERE thread_id = ? AND checkpoint_ns = '' AND run_id = ? ORDER BY checkpoint_id LIMIT 1`
	sqlReattach = `INSERT INTO writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, enc, data, task_path, run_id)
		SELECT thread_id, checkpoint_ns, ?1, task_id, idx, channel, type, enc, data, task_path, run_id FROM writes
		WHERE thread_id = ?2 AND checkpoint_ns = '' AND checkpoint_id = ?3 AND consumed_by = ?4 AND (run_id IS NULL OR run_id != ?5)`
)

// The channels a checkpoint stored values for (unsorted: see thread.go).
const sqlStoredChannels = `SELECT channel FROM blobs WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?`

// The thread handle's commit (thread_commit.go).

// sqlLatestID is the greatest checkpoint id of a namespace (a seek at the
// end of the primary key's prefix).
const sqlLatestID = `SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? ORDER BY checkpoint_id DESC LIMIT 1`

// No ORDER BY: SQLite would sort the rows, values included, in its own
// memory (see limits.go); they are sorted here.
const sqlUnconsumed = `SELECT task_id, idx, channel, enc, data, task_path FROM writes
	WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? AND consumed_by IS NULL`

// The history walk: from a checkpoint up its parents to the one that
// stored a channel's version (history.go).

// The history walk (contract §2.3): from the target's parent up the parent links,
// stopping at the first ancestor that holds a stored value for the channel
// (a blob exists for its version of the channel). Each row is an ancestor
// and its child on the path to the target.
const walkChain = `WITH RECURSIVE chain(id, child, depth, ver, parent) AS (
	SELECT p.checkpoint_id, t.checkpoint_id, 1, agentstate_version(p.checkpoint, :ch), p.parent_id
	FROM checkpoints t JOIN checkpoints p
	  ON p.thread_id = :thread AND p.checkpoint_ns = :ns AND p.checkpoint_id = t.parent_id
	WHERE t.thread_id = :thread AND t.checkpoint_ns = :ns AND t.checkpoint_id = :id
	UNION ALL
	SELECT p.checkpoint_id, chain.id, chain.depth + 1, agentstate_version(p.checkpoint, :ch), p.parent_id
	FROM chain JOIN checkpoints p ON p.thread_id = :thread AND p.checkpoint_ns = :ns AND p.checkpoint_id = chain.parent
	WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE b.thread_id = :thread AND b.checkpoint_ns = :ns AND b.channel = :ch AND b.version = chain.ver)
)
`

// pgWalkChain is walkChain with each step a lookup by primary key.
const pgWalkChain = `WITH RECURSIVE chain(id, child, depth, ver, parent) AS (
	SELECT p.checkpoint_id, t.checkpoint_id, 1, p.versions ->> $1, p.parent_id
	FROM checkpoints t CROSS JOIN LATERAL (SELECT checkpoint_id, versions, parent_id FROM checkpoints p
		WHERE p.thread_id = $2 AND p.checkpoint_ns = $3 AND p.checkpoint_id = t.parent_id OFFSET 0) p
	WHERE t.thread_id = $2 AND t.checkpoint_ns = $3 AND t.checkpoint_id = $4
	UNION ALL
	SELECT p.checkpoint_id, chain.id, chain.depth + 1, p.versions ->> $1, p.parent_id
	FROM chain CROSS JOIN LATERAL (SELECT checkpoint_id, versions, parent_id FROM checkpoints p
		WHERE p.thread_id = $2 AND p.checkpoint_ns = $3 AND p.checkpoint_id = chain.parent OFFSET 0) p
	WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE b.thread_id = $2 AND b.checkpoint_ns = $3 AND b.channel = $1 AND b.version = chain.ver)
)
`

// PostgreSQL's walks: every step is a lookup by primary key, whatever the
// planner's statistics say (OFFSET 0 keeps each lateral lookup from
// being flattened into a join that scans the thread).

// The seed's value is read apart (readValue, as it may be a delta): sorted
// with the chain, it would be copied into SQLite's sorter, and a large one
// would not fit SQLite's memory (see limits.go).
const sqlWalk = walkChain + `SELECT chain.id, chain.child, chain.ver, b.type IS NOT NULL
FROM chain LEFT JOIN blobs b ON b.thread_id = :thread AND b.checkpoint_ns = :ns AND b.channel = :ch AND b.version = chain.ver
ORDER BY chain.depth DESC`

const sqlWalkPG = pgWalkChain + `SELECT chain.id, chain.child, chain.ver, b.type IS NOT NULL
FROM chain LEFT JOIN LATERAL (SELECT type FROM blobs b
	WHERE b.thread_id = $2 AND b.checkpoint_ns = $3 AND b.channel = $1 AND b.version = chain.ver OFFSET 0) b ON true
ORDER BY chain.depth DESC`

// The version of the seed a walk stops at, if it finds one. CROSS JOIN
// keeps the chain the outer loop: the other order walks the chain again for
// each of the channel's stored values, O(thread) per call (sqlBaseSeed too).
const sqlWalkSeed = walkChain + `SELECT b.version
FROM chain CROSS JOIN blobs b ON b.thread_id = :thread AND b.checkpoint_ns = :ns AND b.channel = :ch AND b.version = chain.ver`

const sqlWalkSeedPG = pgWalkChain + `SELECT b.version FROM chain CROSS JOIN LATERAL (SELECT version FROM blobs b
	WHERE b.thread_id = $2 AND b.checkpoint_ns = $3 AND b.channel = $1 AND b.version = chain.ver OFFSET 0) b`

// The writes each on-path child consumed from its parent, for one channel.
// CROSS JOIN keeps json_each as the outer loop: one index search per pair.
// Unsorted, for the reason above: walk sorts them.
const sqlWalkWrites = `SELECT j.key, w.task_id, w.idx, w.type, w.enc, w.data, w.task_path FROM json_each(:pairs) j
	CROSS JOIN writes w ON w.thread_id = :thread AND w.checkpoint_ns = :ns AND w.checkpoint_id = j.value->>0
	  AND w.consumed_by = j.value->>1 AND w.channel = :ch`

// What the target itself holds for the channel (for the cache).
const sqlHolds = `SELECT v.ver, b.type, b.data, b.enc, b.base, b.checkpoint_id FROM (SELECT agentstate_version(checkpoint, :ch) AS ver FROM checkpoints
	WHERE thread_id = :thread AND checkpoint_ns = :ns AND checkpoint_id = :id) v
	LEFT JOIN blobs b ON b.thread_id = :thread AND b.checkpoint_ns = :ns AND b.channel = :ch AND b.version = v.ver`

const sqlHoldsPG = `SELECT v.ver, b.type, b.data, b.enc, b.base, b.checkpoint_id FROM (SELECT versions ->> $1 AS ver FROM checkpoints
	WHERE thread_id = $2 AND checkpoint_ns = $3 AND checkpoint_id = $4) v
	LEFT JOIN LATERAL (SELECT type, data, enc, base, checkpoint_id FROM blobs b
		WHERE b.thread_id = $2 AND b.checkpoint_ns = $3 AND b.channel = $1 AND b.version = v.ver OFFSET 0) b ON true`

// Value deltas: storing (valuedelta.go).

// The version a new value of channel ?1 diffs against, when its parent's
// version holds no stored value: the nearest ancestor's that does (the
// history walk's seed), from checkpoint ?4 (already inserted) up; with the
// row's stamp.
const sqlBaseSeed = walkChain + `SELECT b.version, b.checkpoint_id, length(b.data), substr(b.data, 1, 24)
FROM chain CROSS JOIN blobs b ON b.thread_id = :thread AND b.checkpoint_ns = :ns AND b.channel = :ch AND b.version = chain.ver`

const sqlBaseSeedPG = pgWalkChain + `SELECT b.version, b.checkpoint_id, length(b.data), substr(b.data, 1, 24) FROM chain CROSS JOIN LATERAL (SELECT version, checkpoint_id, data FROM blobs b
	WHERE b.thread_id = $2 AND b.checkpoint_ns = $3 AND b.channel = $1 AND b.version = chain.ver OFFSET 0) b`

// A row's stamp, without reading more than its first bytes.
const sqlStamp = `SELECT checkpoint_id, length(data), substr(data, 1, 24) FROM blobs WHERE thread_id=? AND checkpoint_ns=? AND channel=? AND version=?`

// Value deltas: reading a chain (valuedelta_read.go).

// The rows of a chain, newest first: one range of the channel's versions
// from ?4 down. Where versions sort in the order they were made (LangGraph's
// zero-padded ones, ids that grow with time) and the thread did not branch
// there, a chain is a run of consecutive rows, and reading it is one index
// seek and a step per row. The caller follows the bases and stops reading
// at the whole value, or at the first row that is not the next link.
const sqlChainRange = `SELECT version, enc, base, data FROM blobs
WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND channel = ?3 AND version <= ?4
ORDER BY version DESC`

// The links of a chain from some versions ?4 back to the nearest whole value
// (or to a version of ?5, which the caller has already), with every row's
// bytes: what the range above did not reach. One index search per link to
// follow it and one to read it; UNION ends a walk that loops. CROSS JOIN
// keeps the links as the outer loop (the planner cannot know the CTE holds
// a few rows).
const sqlChainLinks = `WITH RECURSIVE link(version) AS (
	SELECT value FROM json_each(?4)
	UNION
	SELECT b.base FROM link CROSS JOIN blobs b
	  ON b.thread_id = ?1 AND b.checkpoint_ns = ?2 AND b.channel = ?3 AND b.version = link.version
	WHERE b.enc = 2 AND b.base NOT IN (SELECT value FROM json_each(?5))
)
SELECT link.version, b.enc, b.base, b.data FROM link
CROSS JOIN blobs b ON b.thread_id = ?1 AND b.checkpoint_ns = ?2 AND b.channel = ?3 AND b.version = link.version`

const sqlValueRow = `SELECT type, enc, base, checkpoint_id, data FROM blobs WHERE thread_id=? AND checkpoint_ns=? AND channel=? AND version=?`

// Value deltas: thinning (valuedelta_thin.go).

const sqlThreadDeltas = `SELECT checkpoint_ns, channel, version, base FROM blobs WHERE thread_id = ? AND enc = 2`

const sqlRewriteValue = `UPDATE blobs SET enc = ?, base = ?, data = ? WHERE thread_id = ? AND checkpoint_ns = ? AND channel = ? AND version = ?`

// Every checkpoint of a namespace with its parent (thinning, and Retain's
// walk of one namespace).
const sqlNSParents = `SELECT checkpoint_id, coalesce(parent_id, '') FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ?`

const (
	// The stored values of a namespace, without their bytes.
	sqlThinBlobs = `SELECT channel, version, checkpoint_id, enc, base, length(data) FROM blobs WHERE thread_id = ? AND checkpoint_ns = ?`
	// Some checkpoints of a namespace (a JSON array of ids).
	sqlThinCheckpoints = `SELECT checkpoint_id, metadata, checkpoint FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id IN (SELECT value FROM json_each(?))`
)

// Convert (convert.go).

const sqlConvertMetadata = `UPDATE checkpoints SET metadata = ? WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?`

// PostgreSQL: metadata_j follows the converted metadata.
const sqlConvertMetadataPG = `UPDATE checkpoints SET metadata = $1, metadata_j = $5 WHERE thread_id = $2 AND checkpoint_ns = $3 AND checkpoint_id = $4`

const (
	// A thread's checkpoints, parents before children.
	sqlConvertTuples = `SELECT thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint, metadata FROM checkpoints
		WHERE thread_id = ? ORDER BY checkpoint_ns, checkpoint_id`
	// A channel's write a child consumed from its parent.
	sqlConvertSealedWrite = `SELECT enc, data FROM writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? AND consumed_by = ? AND channel = ?`
)

// Retain (retain.go).

const sqlSnapshots = `SELECT b.channel, b.version, b.checkpoint_id, length(b.data), c.metadata FROM blobs b
	LEFT JOIN checkpoints c ON c.thread_id = b.thread_id AND c.checkpoint_ns = b.checkpoint_ns AND c.checkpoint_id = b.checkpoint_id
	WHERE b.thread_id = ? AND b.checkpoint_ns = ?`

const (
	// Every thread with a checkpoint.
	sqlCheckpointThreads = `SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id`
	// The writes of the checkpoints to drop (a JSON array of ids).
	sqlRetainWritesOf = `SELECT count(*) FROM writes WHERE thread_id = ? AND checkpoint_id IN (SELECT value FROM json_each(?))`
	// The writes a dropped checkpoint consumed.
	sqlDeleteSealedBy = `DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = ? AND consumed_by = ?`
)

// Inspection: a thread's log and a checkpoint's values (inspect.go).

const (
	sqlLogPage = `SELECT checkpoint_id, coalesce(parent_id, ''), checkpoint, metadata FROM checkpoints
		WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND (?3 = '' OR checkpoint_id < ?3) ORDER BY checkpoint_id DESC LIMIT ?4`
	sqlLogVersions = `SELECT checkpoint_id, checkpoint FROM checkpoints
		WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id IN (SELECT value FROM json_each(?3))`
	sqlLogStored = `SELECT checkpoint_id, channel FROM blobs
		WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id IN (SELECT value FROM json_each(?3)) ORDER BY checkpoint_id, channel`
	sqlLogWrites = `SELECT checkpoint_id, count(*) FROM writes
		WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id IN (SELECT value FROM json_each(?3)) GROUP BY checkpoint_id`
)

// The channels a checkpoint stored values for, sorted.
const sqlInspectStored = `SELECT channel FROM blobs WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? ORDER BY channel`

// Verify (verify_thread.go): every row of a thread, and a stored value's
// bytes; on PostgreSQL, the derived columns beside the bytes they come
// from (backend_pg.go).
const (
	sqlCheckpointsVerify = `SELECT checkpoint_ns, checkpoint_id, parent_id, checkpoint, metadata FROM checkpoints WHERE thread_id = ?`
	sqlWritesVerify      = `SELECT checkpoint_ns, checkpoint_id, task_id, idx, channel, type, consumed_by, task_path, enc, data FROM writes WHERE thread_id = ?`
	sqlBlobsVerify       = `SELECT checkpoint_ns, channel, version, checkpoint_id, type, enc, base FROM blobs WHERE thread_id = ?`
	sqlBlobsVerifyData   = `SELECT data FROM blobs WHERE thread_id=? AND checkpoint_ns=? AND channel=? AND version=?`

	sqlCheckpointsVerifyVersionsPG = `SELECT thread_id, checkpoint_ns, checkpoint_id, versions, 'versions', checkpoint FROM checkpoints
		WHERE $1 = '' OR thread_id = $1`
	sqlCheckpointsVerifyMetadataPG = `SELECT thread_id, checkpoint_ns, checkpoint_id, metadata_j, 'metadata_j', metadata FROM checkpoints
		WHERE $1 = '' OR thread_id = $1`
)

// Stats (stats.go): each surface's rows and stored size; a thread's
// channel values count as snapshots when its mode is delta.
const (
	sqlCheckpointsStats = `SELECT count(*), coalesce(sum(octet_length(thread_id) + octet_length(checkpoint_ns) + octet_length(checkpoint_id)
		+ coalesce(octet_length(parent_id), 0) + coalesce(octet_length(run_id), 0) + octet_length(checkpoint) + octet_length(metadata)), 0)
		FROM checkpoints`
	sqlBlobsStats = `SELECT count(*), coalesce(sum(octet_length(b.thread_id) + octet_length(b.checkpoint_ns) + octet_length(b.channel)
		+ octet_length(b.version) + octet_length(b.checkpoint_id) + octet_length(b.type) + coalesce(octet_length(b.data), 0)), 0)
		FROM blobs b LEFT JOIN thread_modes m ON m.thread_id = b.thread_id WHERE m.mode IS NOT 'delta'`
	sqlSnapshotsStats = `SELECT count(*), coalesce(sum(octet_length(b.thread_id) + octet_length(b.checkpoint_ns) + octet_length(b.channel)
		+ octet_length(b.version) + octet_length(b.checkpoint_id) + octet_length(b.type) + coalesce(octet_length(b.data), 0)), 0)
		FROM blobs b JOIN thread_modes m ON m.thread_id = b.thread_id WHERE m.mode = 'delta'`
	sqlWritesStats = `SELECT count(*), coalesce(sum(octet_length(thread_id) + octet_length(checkpoint_ns) + octet_length(checkpoint_id)
		+ octet_length(task_id) + 8 + octet_length(channel) + octet_length(type) + coalesce(octet_length(data), 0)
		+ coalesce(octet_length(consumed_by), 0) + octet_length(task_path) + coalesce(octet_length(run_id), 0)), 0)
		FROM writes`
)

// The export's columns (export.go, "The export format"), in the order
// a row line lists them; export.go builds the SELECT and INSERT from them.
var exportCheckpoints = exportTable{name: "checkpoints", threadCol: "thread_id", orderBy: "thread_id, checkpoint_ns, checkpoint_id",
	cols: []exportCol{{"thread_id", colText}, {"checkpoint_ns", colText}, {"checkpoint_id", colText}, {"parent_id", colTextNull},
		{"run_id", colTextNull}, {"checkpoint", colMsgpack}, {"metadata", colMsgpack}}}

var exportBlobs = exportTable{name: "blobs", threadCol: "thread_id", orderBy: "thread_id, checkpoint_ns, channel, version",
	cols: []exportCol{{"thread_id", colText}, {"checkpoint_ns", colText}, {"channel", colText}, {"version", colText},
		{"checkpoint_id", colText}, {"type", colText}, {"enc", colEnc}, {"base", colTextNull}, {"data", colTyped}}}

var exportWrites = exportTable{name: "writes", threadCol: "thread_id", orderBy: "thread_id, checkpoint_ns, checkpoint_id, task_id, idx",
	cols: []exportCol{{"thread_id", colText}, {"checkpoint_ns", colText}, {"checkpoint_id", colText}, {"task_id", colText},
		{"idx", colInt}, {"channel", colText}, {"type", colText}, {"enc", colPack}, {"data", colTyped}, {"consumed_by", colTextNull},
		{"task_path", colText}, {"run_id", colTextNull}}}
