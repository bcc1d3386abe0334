-- Schema version 7: what DeerFlow's RunStore records of a run beside the
-- engine's own owner and lease (docs/deerflow.md, "Runs"). Every column is
-- NULL on a run that never had it, so the runs of older files and exports
-- read as before.
--   operation_kind       the thread operation the row admits; NULL is a
--                        run ("checkpoint_write" reservations hold the
--                        thread's one active slot but are not runs)
--   stop_reason          why the run stopped, as the caller words it
--   worker_id            the caller's worker that owns the run (DeerFlow's
--                        owner_worker_id), apart from owner_id, the handle
--   worker_lease         until when that worker's lease holds, microseconds
--                        since the epoch; NULL: no lease was ever taken
--   cancel_action        the first cancellation asked for ("interrupt" or
--                        "rollback"); later requests never replace it
--   cancel_requested_at  when it was asked for
ALTER TABLE runs ADD COLUMN operation_kind TEXT;
ALTER TABLE runs ADD COLUMN stop_reason TEXT;
ALTER TABLE runs ADD COLUMN worker_id TEXT;
ALTER TABLE runs ADD COLUMN worker_lease INTEGER;
ALTER TABLE runs ADD COLUMN cancel_action TEXT;
ALTER TABLE runs ADD COLUMN cancel_requested_at INTEGER;
