-- Schema version 6 (as migrations/0006): a pending write's value may be
-- stored packed, and writes.enc says how data holds it (0 the bytes as
-- given, 1 a codec envelope around them). The rest of SQLite's migration
-- rebuilds tables as rowid tables with the value last, for SQLite's page
-- layout; PostgreSQL's heap tables keep large values out of line (TOAST)
-- whatever their column order, so the tables stay as they are.
ALTER TABLE writes ADD COLUMN IF NOT EXISTS enc BIGINT NOT NULL DEFAULT 0;
