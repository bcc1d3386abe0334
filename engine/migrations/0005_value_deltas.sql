-- Schema version 5: channel values stored through the checkpoint protocol
-- may be version deltas against an earlier version of the same thread,
-- namespace and channel.
--
-- enc says how data holds the value; it is recorded, never guessed from the
-- bytes (a caller's value may start with any byte):
--   0  the value's bytes as they were given (every row written before
--      version 5, and the thread API's own values, which carry their
--      compression inside their envelope)
--   1  a codec envelope (zstd) around the value's bytes
--   2  a delta (codec.DeltaV1) turning the value stored under version base
--      (same thread, namespace and channel) into this one
-- base names that version for enc 2 and is NULL otherwise.
ALTER TABLE blobs ADD COLUMN enc INTEGER NOT NULL DEFAULT 0;
ALTER TABLE blobs ADD COLUMN base TEXT;
