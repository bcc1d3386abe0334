-- Schema version 5 (as migrations/0005): channel values stored through the
-- checkpoint protocol may be version deltas; enc says how data holds the
-- value and base names the version a delta applies to (see there).
ALTER TABLE blobs ADD COLUMN IF NOT EXISTS enc BIGINT NOT NULL DEFAULT 0;
ALTER TABLE blobs ADD COLUMN IF NOT EXISTS base TEXT COLLATE "C";
