-- Schema version 9: the user an event was written for (DeerFlow's
-- run_events.user_id, docs/deerflow.md "Events"). NULL on an event written
-- without one, and on every event of older files and exports: reads that
-- filter by a user never see those, reads without a filter see all.
--
-- The table is rebuilt, as migration 6 built it, so that the event's value
-- stays its last column (migration 6 says why); ADD COLUMN would put
-- user_id after it.
CREATE TABLE IF NOT EXISTS events_v9 (
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
INSERT INTO events_v9(thread_id, seq, run_id, event_type, category, task_id, created_at, metadata, content)
    SELECT thread_id, seq, run_id, event_type, category, task_id, created_at, metadata, content
    FROM events ORDER BY thread_id, seq;
DROP TABLE events;
ALTER TABLE events_v9 RENAME TO events;
CREATE INDEX IF NOT EXISTS events_messages ON events(thread_id, seq) WHERE category = 'message';
CREATE INDEX IF NOT EXISTS events_by_run ON events(thread_id, run_id, seq);
CREATE INDEX IF NOT EXISTS events_by_run_type ON events(thread_id, run_id, event_type);
