-- Schema version 10 (as migrations/0010): a run's idempotency key is unique
-- in the database; a key several threads shared stays with its first run.
UPDATE runs SET idempotency_key = NULL
    WHERE idempotency_key IS NOT NULL AND rowid NOT IN
    (SELECT min(rowid) FROM runs WHERE idempotency_key IS NOT NULL GROUP BY idempotency_key);
DROP INDEX IF EXISTS runs_by_idempotency_key;
CREATE UNIQUE INDEX IF NOT EXISTS runs_by_idempotency_key ON runs(idempotency_key) WHERE idempotency_key IS NOT NULL;
