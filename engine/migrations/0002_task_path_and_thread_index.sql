-- Schema version 2: pending writes remember the task path of the task that
-- wrote them (LangGraph orders pending writes by task_path, task_id, idx).
ALTER TABLE writes ADD COLUMN task_path TEXT NOT NULL DEFAULT '';

-- Listing one thread newest first, across namespaces.
CREATE INDEX IF NOT EXISTS checkpoints_by_thread ON checkpoints(thread_id, checkpoint_id);
