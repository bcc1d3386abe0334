-- Schema version 4 (as migrations/0004): channel modes per thread, and the
-- run that made a write.
CREATE TABLE IF NOT EXISTS thread_modes (
    thread_id TEXT COLLATE "C" PRIMARY KEY,
    mode      TEXT COLLATE "C" NOT NULL,
    every     BIGINT NOT NULL
);
ALTER TABLE writes ADD COLUMN IF NOT EXISTS run_id TEXT COLLATE "C";
DROP INDEX IF EXISTS checkpoints_by_parent;
