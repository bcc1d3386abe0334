-- Schema version 6: pending writes and events become rowid tables, every
-- table that holds a caller's large value keeps it in its last column, and
-- a pending write's value may be stored packed (writes.enc).
--
-- Why. A WITHOUT ROWID table is a B-tree of keys: a row longer than about a
-- quarter of a page (1,002 bytes of 4,096) keeps ~500 bytes on its leaf and
-- moves the rest to overflow pages of its own, so every write of a message
-- between 1 and 4 KB took a whole overflow page for a few hundred bytes.
-- Measured on LangGraph.js's chat graph (400 turns, 547 KB of messages):
-- writes held 745 KB of data in 541 pages (2.2 MB, 34% used). A rowid
-- table keeps rows up to 4,061 bytes on the leaf and fills overflow pages
-- whole, and the old primary key becomes an index beside it (same name,
-- same uniqueness, the same statements). Checkpoint rows stay WITHOUT
-- ROWID: they are a few hundred bytes, and a second B-tree of their keys
-- would cost more than it saves.
--
-- Column order. SQLite reads a column by walking the record from its start,
-- through overflow pages when a value before it spills. The value comes
-- last, so queries that read keys, encodings, bases or seal marks (walks,
-- retention, the chain of a version delta) never read it.
--
-- Each table is rebuilt by copying its rows, in key order, into a new table
-- that takes the old name. This runs in the migration's one transaction.
-- Run again on a version 6 file it copies the rows once more and leaves the
-- same tables. The pages the old tables held go to the free list, and the file
-- gives them back at its next incremental vacuum (retain --apply, vacuum).

-- A pending write's enc says how data holds its bytes, as blobs.enc does:
--   0  the bytes as they were given (every write made before version 6)
--   1  a codec envelope (S2) around them, kept when it saved an eighth
-- The column is added to the old table first (a no-op when it is there
-- already), so that the copy below carries it when this runs again.
-- (No semicolon in these comments: a statement SQLite refuses to prepare
-- is cut at the first one to be shown to the ALTER TABLE check.)
ALTER TABLE writes ADD COLUMN enc INTEGER NOT NULL DEFAULT 0;

CREATE TABLE IF NOT EXISTS writes_v6 (
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
INSERT INTO writes_v6(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, task_path, consumed_by, run_id, enc, data)
    SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, task_path, consumed_by, run_id, enc, data
    FROM writes ORDER BY thread_id, checkpoint_ns, checkpoint_id, task_id, idx;
DROP TABLE writes;
ALTER TABLE writes_v6 RENAME TO writes;

CREATE TABLE IF NOT EXISTS events_v6 (
    thread_id  TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    run_id     TEXT NOT NULL DEFAULT '',
    event_type TEXT NOT NULL,
    category   TEXT NOT NULL,
    task_id    TEXT,
    created_at INTEGER NOT NULL,
    metadata   BLOB,
    content    BLOB,
    PRIMARY KEY (thread_id, seq)
);
INSERT INTO events_v6(thread_id, seq, run_id, event_type, category, task_id, created_at, metadata, content)
    SELECT thread_id, seq, run_id, event_type, category, task_id, created_at, metadata, content
    FROM events ORDER BY thread_id, seq;
DROP TABLE events;
ALTER TABLE events_v6 RENAME TO events;
CREATE INDEX IF NOT EXISTS events_messages ON events(thread_id, seq) WHERE category = 'message';
CREATE INDEX IF NOT EXISTS events_by_run ON events(thread_id, run_id, seq);
CREATE INDEX IF NOT EXISTS events_by_run_type ON events(thread_id, run_id, event_type);

-- blobs was a rowid table already; its encoding and base (migration 0005)
-- were added after the value and move before it.
CREATE TABLE IF NOT EXISTS blobs_v6 (
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
INSERT INTO blobs_v6(thread_id, checkpoint_ns, channel, version, checkpoint_id, type, enc, base, data)
    SELECT thread_id, checkpoint_ns, channel, version, checkpoint_id, type, enc, base, data
    FROM blobs ORDER BY thread_id, checkpoint_ns, channel, version;
DROP TABLE blobs;
ALTER TABLE blobs_v6 RENAME TO blobs;
CREATE INDEX IF NOT EXISTS blobs_by_checkpoint ON blobs(thread_id, checkpoint_ns, checkpoint_id);
