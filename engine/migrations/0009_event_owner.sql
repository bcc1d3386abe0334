-- Schema version 9: the user an event was written for (DeerFlow's
-- run_events.user_id, docs/deerflow.md "Events"). NULL on an event written
-- without one, and on every event of older files and exports: reads that
-- filter by a user never see those, reads without a filter see all.
ALTER TABLE events ADD COLUMN user_id TEXT;
