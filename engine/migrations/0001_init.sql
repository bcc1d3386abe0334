-- Schema version 1: the history of migrations, file-level settings, and the
-- checkpoint tables (checkpoints, channel values, pending writes).

CREATE TABLE IF NOT EXISTS schema_history (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at TEXT NOT NULL
);

-- File-level settings such as the channel mode and K the file was written with.
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

-- One row per checkpoint. "checkpoint" holds the checkpoint without its
-- channel values (msgpack); values live in blobs, once per version. Rows are
-- small and always found by key, so they live in the key's B-tree (WITHOUT
-- ROWID) instead of paying for the key twice.
CREATE TABLE IF NOT EXISTS checkpoints (
    thread_id     TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    parent_id     TEXT,
    run_id        TEXT,
    checkpoint    BLOB NOT NULL,
    metadata      BLOB NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS checkpoints_by_run ON checkpoints(run_id) WHERE run_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS checkpoints_by_parent ON checkpoints(thread_id, checkpoint_ns, parent_id);

-- Channel values, stored once per (thread, namespace, channel, version).
-- checkpoint_id names the checkpoint that stored the value.
CREATE TABLE IF NOT EXISTS blobs (
    thread_id     TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    channel       TEXT NOT NULL,
    version       TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    type          TEXT NOT NULL,
    data          BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
);
CREATE INDEX IF NOT EXISTS blobs_by_checkpoint ON blobs(thread_id, checkpoint_ns, checkpoint_id);

-- Pending writes of the tasks planned from a checkpoint. consumed_by names the
-- child checkpoint that sealed (consumed) the write; NULL while pending.
CREATE TABLE IF NOT EXISTS writes (
    thread_id     TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    task_id       TEXT NOT NULL,
    idx           INTEGER NOT NULL,
    channel       TEXT NOT NULL,
    type          TEXT NOT NULL,
    data          BLOB,
    consumed_by   TEXT,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
) WITHOUT ROWID;
