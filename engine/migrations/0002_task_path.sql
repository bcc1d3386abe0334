-- Schema version 2: pending writes remember the task path of the task that
-- wrote them (LangGraph orders pending writes by task_path, task_id, idx).
ALTER TABLE writes ADD COLUMN task_path TEXT NOT NULL DEFAULT '';
