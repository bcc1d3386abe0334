-- The schema the migrations of migrations/ leave, object by object in
-- the order they created them, for an empty file to get in one step.
-- Written by TestFreshSchemaIsTheMigrations (AGENTSTATE_UPDATE=1): do not edit.

CREATE TABLE schema_history (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at TEXT NOT NULL
);

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE checkpoints (
    thread_id     TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    parent_id     TEXT,
    run_id        TEXT,
    checkpoint    BLOB NOT NULL,
    metadata      BLOB NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
) WITHOUT ROWID;

CREATE INDEX checkpoints_by_run ON checkpoints(run_id) WHERE run_id IS NOT NULL;

CREATE INDEX checkpoints_by_thread ON checkpoints(thread_id, checkpoint_id);

CREATE TABLE store_items (
    namespace  TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    ttl_us     INTEGER,
    expires_at INTEGER
);

CREATE UNIQUE INDEX store_items_by_key ON store_items(namespace, key);

CREATE INDEX store_items_by_updated ON store_items(namespace, updated_at, expires_at);

CREATE INDEX store_items_expiring ON store_items(expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE runs (
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
, operation_kind TEXT, stop_reason TEXT, worker_id TEXT, worker_lease INTEGER, cancel_action TEXT, cancel_requested_at INTEGER);

CREATE UNIQUE INDEX runs_one_active ON runs(thread_id) WHERE status IN ('pending', 'running');

CREATE INDEX runs_by_thread ON runs(thread_id, created_at);

CREATE INDEX runs_active_by_owner ON runs(owner_id, lease_until) WHERE status IN ('pending', 'running');

CREATE TABLE event_seqs (
    thread_id TEXT NOT NULL PRIMARY KEY,
    last_seq  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE threads (
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

CREATE INDEX threads_by_owner ON threads(user_id, pinned, updated_at);

CREATE INDEX threads_by_updated ON threads(pinned, updated_at);

CREATE TABLE thread_modes (
    thread_id TEXT PRIMARY KEY,
    mode      TEXT NOT NULL,
    every     INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE "writes" (
    thread_id     TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    task_id       TEXT NOT NULL,
    idx           INTEGER NOT NULL,
    channel       TEXT NOT NULL,
    type          TEXT NOT NULL,
    task_path     TEXT NOT NULL DEFAULT '',
    consumed_by   TEXT,
    run_id        TEXT,
    enc           INTEGER NOT NULL DEFAULT 0,
    data          BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);

CREATE TABLE "blobs" (
    thread_id     TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    channel       TEXT NOT NULL,
    version       TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    type          TEXT NOT NULL,
    enc           INTEGER NOT NULL DEFAULT 0,
    base          TEXT,
    data          BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
);

CREATE INDEX blobs_by_checkpoint ON blobs(thread_id, checkpoint_ns, checkpoint_id);

CREATE TABLE store_vectors (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    item      INTEGER,
    namespace TEXT NOT NULL,
    key       TEXT NOT NULL,
    path      TEXT NOT NULL,
    vec       BLOB NOT NULL
);

CREATE UNIQUE INDEX store_vectors_by_item ON store_vectors(namespace, key, path);

CREATE TRIGGER store_items_drop_vectors AFTER DELETE ON store_items
BEGIN
    DELETE FROM store_vectors WHERE namespace = old.namespace AND key = old.key;
END;

CREATE TRIGGER store_items_replace_vectors AFTER UPDATE OF value ON store_items
BEGIN
    DELETE FROM store_vectors WHERE namespace = old.namespace AND key = old.key;
END;

CREATE TABLE "events" (
    thread_id  TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    run_id     TEXT NOT NULL DEFAULT '',
    event_type TEXT NOT NULL,
    category   TEXT NOT NULL,
    task_id    TEXT,
    user_id    TEXT,
    created_at INTEGER NOT NULL,
    metadata   BLOB,
    content    BLOB,
    PRIMARY KEY (thread_id, seq)
);

CREATE INDEX events_messages ON events(thread_id, seq) WHERE category = 'message';

CREATE INDEX events_by_run ON events(thread_id, run_id, seq);

CREATE INDEX events_by_run_type ON events(thread_id, run_id, event_type);

CREATE UNIQUE INDEX runs_by_idempotency_key ON runs(idempotency_key) WHERE idempotency_key IS NOT NULL;
