-- Schema version 10: a run's idempotency key is unique in the database, not
-- within its thread (DeerFlow's RunStore: a key names one request, whatever
-- the thread). A key that older versions let several threads share stays
-- with its first run (the lowest rowid); the others lose it (NULL), so a
-- retry with it finds that first run.
UPDATE runs SET idempotency_key = NULL
    WHERE idempotency_key IS NOT NULL AND rowid NOT IN
    (SELECT min(rowid) FROM runs WHERE idempotency_key IS NOT NULL GROUP BY idempotency_key);
DROP INDEX IF EXISTS runs_by_idempotency_key;
CREATE UNIQUE INDEX IF NOT EXISTS runs_by_idempotency_key ON runs(idempotency_key) WHERE idempotency_key IS NOT NULL;
