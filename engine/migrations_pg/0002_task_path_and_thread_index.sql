-- Schema version 2 (as migrations/0002): the task path of a write, and
-- listing one thread newest first.
ALTER TABLE writes ADD COLUMN IF NOT EXISTS task_path TEXT COLLATE "C" NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS checkpoints_by_thread ON checkpoints(thread_id, checkpoint_id);
