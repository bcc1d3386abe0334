-- Schema version 9 (as migrations/0009): the user an event was written
-- for, NULL on an event written without one.
ALTER TABLE events ADD COLUMN IF NOT EXISTS user_id TEXT COLLATE "C";
