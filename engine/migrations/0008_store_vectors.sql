-- Schema version 8: the store's vectors (semantic search, docs/storage.md).
-- A row is one embedded field of one item: path is the field's JSON path as
-- the index configured it ("$", "a.b", "arr[*].f", with ".0", ".1"... when a
-- path gives several texts), vec its embedding as float32 little-endian,
-- item the rowid of its store_items row. The host embeds; the engine stores
-- and ranks. A put replaces an item's rows, a delete or a TTL sweep removes
-- them with the item, and a search reads them only through a live item.
--
-- id is AUTOINCREMENT so that an id is never used twice: a handle keeps the
-- vectors it has read and knows them current while (max(id), count) is
-- unchanged (store_vectors.go). A rowid table: a 384-dimension vector is
-- 1,536 bytes, which a WITHOUT ROWID row would spill to an overflow page.
CREATE TABLE IF NOT EXISTS store_vectors (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    item      INTEGER,
    namespace TEXT NOT NULL,
    key       TEXT NOT NULL,
    path      TEXT NOT NULL,
    vec       BLOB NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS store_vectors_by_item ON store_vectors(namespace, key, path);

-- An item's vectors go with it: deleted with it (a delete, a nil put, a TTL
-- sweep) and when its value is replaced (the put then inserts the new
-- ones). Triggers, so that a put without vectors costs no statement more:
-- on the hosts' SQLite each statement is a call out of WebAssembly.
CREATE TRIGGER IF NOT EXISTS store_items_drop_vectors AFTER DELETE ON store_items
BEGIN
    DELETE FROM store_vectors WHERE namespace = old.namespace AND key = old.key;
END;
CREATE TRIGGER IF NOT EXISTS store_items_replace_vectors AFTER UPDATE OF value ON store_items
BEGIN
    DELETE FROM store_vectors WHERE namespace = old.namespace AND key = old.key;
END;
