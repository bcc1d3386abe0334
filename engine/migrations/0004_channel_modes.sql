-- Schema version 4: channel modes per thread, and the run that made a write.

-- The mode (full or delta) and snapshot cadence K each thread was written
-- with. The file's own mode and K are rows of meta.
CREATE TABLE IF NOT EXISTS thread_modes (
    thread_id TEXT PRIMARY KEY,
    mode      TEXT NOT NULL,
    every     INTEGER NOT NULL
) WITHOUT ROWID;

-- Writes made by a run of the thread API remember it, so that rolling back a
-- run can tell its own writes from the pending writes that were there before.
ALTER TABLE writes ADD COLUMN run_id TEXT;

-- Nothing looks checkpoints up by parent (walks follow parent ids by primary
-- key); the index only cost space.
DROP INDEX IF EXISTS checkpoints_by_parent;
