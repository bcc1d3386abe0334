-- Schema version 7 (as migrations/0007): DeerFlow's worker, lease and
-- cancellation columns of a run, NULL on a run that never had them.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS operation_kind TEXT COLLATE "C";
ALTER TABLE runs ADD COLUMN IF NOT EXISTS stop_reason TEXT COLLATE "C";
ALTER TABLE runs ADD COLUMN IF NOT EXISTS worker_id TEXT COLLATE "C";
ALTER TABLE runs ADD COLUMN IF NOT EXISTS worker_lease BIGINT;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS cancel_action TEXT COLLATE "C";
ALTER TABLE runs ADD COLUMN IF NOT EXISTS cancel_requested_at BIGINT;
