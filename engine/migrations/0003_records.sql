-- Schema version 3: the record surfaces (contract §3 and §4): the key/value store,
-- run records, the per-thread event stream and thread metadata.
-- Timestamps are integers: microseconds since the Unix epoch (UTC).

-- Store items. namespace is the tuple's segments joined by "." (segments
-- never hold a dot), so a whole-segment prefix is a range scan.
-- ttl_us is the item's own TTL, kept so reads can refresh expires_at.
CREATE TABLE IF NOT EXISTS store_items (
    namespace  TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    ttl_us     INTEGER,
    expires_at INTEGER
);
CREATE UNIQUE INDEX IF NOT EXISTS store_items_by_key ON store_items(namespace, key);
-- Newest-updated-first search inside one namespace walks this index;
-- across namespaces it sorts from it without reading the rows.
CREATE INDEX IF NOT EXISTS store_items_by_updated ON store_items(namespace, updated_at, expires_at);
CREATE INDEX IF NOT EXISTS store_items_expiring ON store_items(expires_at) WHERE expires_at IS NOT NULL;

-- Run records (DeerFlow RunRow). owner_id names the open handle that
-- created the run; lease_until is renewed by that handle while it lives.
CREATE TABLE IF NOT EXISTS runs (
    run_id               TEXT NOT NULL PRIMARY KEY,
    thread_id            TEXT NOT NULL,
    assistant_id         TEXT NOT NULL DEFAULT '',
    user_id              TEXT NOT NULL DEFAULT '',
    status               TEXT NOT NULL,
    model_name           TEXT NOT NULL DEFAULT '',
    multitask_strategy   TEXT NOT NULL DEFAULT '',
    metadata             BLOB,
    kwargs               BLOB,
    error                TEXT NOT NULL DEFAULT '',
    created_at           INTEGER NOT NULL,
    updated_at           INTEGER NOT NULL,
    total_input_tokens   INTEGER NOT NULL DEFAULT 0,
    total_output_tokens  INTEGER NOT NULL DEFAULT 0,
    total_tokens         INTEGER NOT NULL DEFAULT 0,
    llm_call_count       INTEGER NOT NULL DEFAULT 0,
    lead_agent_tokens    INTEGER NOT NULL DEFAULT 0,
    subagent_tokens      INTEGER NOT NULL DEFAULT 0,
    middleware_tokens    INTEGER NOT NULL DEFAULT 0,
    token_usage_by_model BLOB,
    message_count        INTEGER NOT NULL DEFAULT 0,
    first_human_message  TEXT NOT NULL DEFAULT '',
    last_ai_message      TEXT NOT NULL DEFAULT '',
    idempotency_key      TEXT,
    owner_id             TEXT NOT NULL DEFAULT '',
    lease_until          INTEGER
);
-- At most one active (pending or running) run per thread, enforced here.
CREATE UNIQUE INDEX IF NOT EXISTS runs_one_active ON runs(thread_id) WHERE status IN ('pending', 'running');
CREATE UNIQUE INDEX IF NOT EXISTS runs_by_idempotency_key ON runs(thread_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS runs_by_thread ON runs(thread_id, created_at);
CREATE INDEX IF NOT EXISTS runs_active_by_owner ON runs(owner_id, lease_until) WHERE status IN ('pending', 'running');

-- The last seq handed out per thread, so seq never goes back when the
-- newest events are deleted.
CREATE TABLE IF NOT EXISTS event_seqs (
    thread_id TEXT NOT NULL PRIMARY KEY,
    last_seq  INTEGER NOT NULL
) WITHOUT ROWID;

-- Events (DeerFlow RunEventRow). task_id is copied out of metadata at write
-- time so run events can be filtered by it with an index.
CREATE TABLE IF NOT EXISTS events (
    thread_id  TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    run_id     TEXT NOT NULL DEFAULT '',
    event_type TEXT NOT NULL,
    category   TEXT NOT NULL,
    content    BLOB,
    metadata   BLOB,
    task_id    TEXT,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (thread_id, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS events_messages ON events(thread_id, seq) WHERE category = 'message';
CREATE INDEX IF NOT EXISTS events_by_run ON events(thread_id, run_id, seq);
CREATE INDEX IF NOT EXISTS events_by_run_type ON events(thread_id, run_id, event_type);

-- Thread list metadata (DeerFlow ThreadMetaRow). pinned is copied out of
-- metadata ("pinned": true) so search can order by it.
CREATE TABLE IF NOT EXISTS threads (
    thread_id    TEXT NOT NULL PRIMARY KEY,
    assistant_id TEXT NOT NULL DEFAULT '',
    user_id      TEXT NOT NULL DEFAULT '',
    display_name TEXT NOT NULL DEFAULT '',
    status       TEXT NOT NULL DEFAULT 'idle',
    metadata     BLOB,
    pinned       INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS threads_by_owner ON threads(user_id, pinned, updated_at);
CREATE INDEX IF NOT EXISTS threads_by_updated ON threads(pinned, updated_at);
