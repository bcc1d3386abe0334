package engine

// The store_items table's statements (see migrations/ and migrations_pg/):
// the SQLite text the engine runs, each PostgreSQL statement written out
// for it in pgStatements (dialect_pg.go) beside it, and the queries of
// Import, Verify and Stats. The logic stays in store.go, import_rules.go,
// verify.go, backend_pg.go and stats.go.

const (
	storeCols      = `namespace, key, value, created_at, updated_at, ttl_us, expires_at`
	sqlStoreGet    = `SELECT ` + storeCols + ` FROM store_items WHERE namespace=? AND key=? AND (expires_at IS NULL OR expires_at > ?)`
	sqlStoreDelete = `DELETE FROM store_items WHERE namespace=? AND key=?`
	// An item that expired but was not swept yet is replaced as a new one.
	sqlStorePut = `INSERT INTO store_items(namespace, key, value, created_at, updated_at, ttl_us, expires_at)
		VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6)
		ON CONFLICT(namespace, key) DO UPDATE SET value=excluded.value, updated_at=excluded.updated_at,
			ttl_us=excluded.ttl_us, expires_at=excluded.expires_at,
			created_at=CASE WHEN store_items.expires_at <= excluded.updated_at THEN excluded.created_at ELSE store_items.created_at END`
	sqlStoreRefresh = `UPDATE store_items SET expires_at = ?1 + ttl_us
		WHERE namespace=?2 AND key=?3 AND ttl_us IS NOT NULL AND expires_at > ?1
		RETURNING expires_at`
	sqlStoreSweep = `DELETE FROM store_items WHERE expires_at <= ?`

	// Search. ?1 now, ?2 prefix, ?3 prefix+".", ?4 prefix+"/" ("/" follows
	// "." in byte order, so [prefix, prefix+"/") holds the prefix and all its
	// children, and the "=" / ">=" test drops siblings like "a-b" for "a"),
	// ?5 the encoded filter or NULL, ?6 limit, ?7 offset.
	//
	// The inner query picks the page: a namespace without children by
	// walking store_items_by_updated backwards (rows come out newest first
	// and the walk stops at the limit), several namespaces by sorting only
	// (updated_at, rowid) of the matching rows and keeping the top
	// limit+offset. The outer one reads just those rows, unsorted: sorting
	// them would copy their values into SQLite's own memory (see
	// limits.go), so search sorts the page in Go.
	sqlStoreHasChildren = `SELECT EXISTS (SELECT 1 FROM store_items WHERE namespace >= ?1 AND namespace < ?2)`

	storeWhereOne = ` WHERE namespace = ?2 AND (expires_at IS NULL OR expires_at > ?1)`
	storeWhereNS  = ` WHERE namespace >= ?2 AND namespace < ?4 AND (namespace = ?2 OR namespace >= ?3)
		AND (expires_at IS NULL OR expires_at > ?1)`
	storeWhereAll = ` WHERE (expires_at IS NULL OR expires_at > ?1)`
	// Without a filter the inner queries read only the index.
	storeMatch = ` AND agentstate_store_match(value, ?5)`
	storeOrder = ` ORDER BY updated_at DESC, rowid DESC`
	storePage  = storeOrder + ` LIMIT ?6 OFFSET ?7`
	storeOuter = `SELECT ` + storeCols + `, rowid FROM store_items WHERE rowid IN (SELECT rowid FROM store_items`

	sqlStoreSearchOne         = storeOuter + ` INDEXED BY store_items_by_updated` + storeWhereOne + storePage + `)`
	sqlStoreSearchOneFiltered = storeOuter + ` INDEXED BY store_items_by_updated` + storeWhereOne + storeMatch + storePage + `)`
	sqlStoreSearchNS          = storeOuter + storeWhereNS + storePage + `)`
	sqlStoreSearchNSFiltered  = storeOuter + storeWhereNS + storeMatch + storePage + `)`
	sqlStoreSearchAll         = storeOuter + storeWhereAll + storePage + `)`
	sqlStoreSearchAllFiltered = storeOuter + storeWhereAll + storeMatch + storePage + `)`

	sqlStoreNamespacesFrom = `SELECT DISTINCT namespace FROM store_items
		WHERE namespace >= ?2 AND namespace < ?3 AND (expires_at IS NULL OR expires_at > ?1)`
	sqlStoreNamespacesAll = `SELECT DISTINCT namespace FROM store_items WHERE expires_at IS NULL OR expires_at > ?1`
)

const (
	// Import refuses an item the file holds already, and reads back the
	// items it inserted.
	sqlStoreImportExists = `SELECT 1 FROM store_items WHERE namespace = ? AND key = ?`
	sqlStoreImportValue  = `SELECT value FROM store_items WHERE namespace = ? AND key = ?`
	// Verify reads every item.
	sqlStoreVerify = `SELECT namespace, key, value FROM store_items ORDER BY namespace, key`
	// Stats: the items and their stored size.
	sqlStoreStats = `SELECT count(*), coalesce(sum(octet_length(namespace) + octet_length(key) + octet_length(value) + 32), 0) FROM store_items`
)

// PostgreSQL: the upsert (INSERT OR REPLACE) and the import's row insert
// also write value_j, derived from the value's bytes; Verify (on
// PostgreSQL) compares value_j with what the bytes give.
const (
	sqlStorePutPG = `INSERT INTO store_items(namespace, key, value, created_at, updated_at, ttl_us, expires_at, value_j)
		VALUES ($1, $2, $3, $4, $4, $5, $6, $7)
		ON CONFLICT (namespace, key) DO UPDATE SET value = EXCLUDED.value, value_j = EXCLUDED.value_j, updated_at = EXCLUDED.updated_at,
			ttl_us = EXCLUDED.ttl_us, expires_at = EXCLUDED.expires_at,
			created_at = CASE WHEN store_items.expires_at <= EXCLUDED.updated_at THEN EXCLUDED.created_at ELSE store_items.created_at END`
	sqlStoreImportRowPG = `INSERT INTO store_items(namespace, key, value, created_at, updated_at, ttl_us, expires_at, value_j)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`
	sqlStoreVerifyDerivedPG = `SELECT namespace, key, '', value_j, 'value_j', value FROM store_items WHERE $1 = ''`
)

// The export's columns (export.go, "The export format"), in the order
// a row line lists them; export.go builds the SELECT and INSERT from them.
var exportStoreItems = exportTable{name: "store_items", orderBy: "namespace, key",
	cols: []exportCol{{"namespace", colText}, {"key", colText}, {"value", colMsgpack}, {"created_at", colInt},
		{"updated_at", colInt}, {"ttl_us", colIntNull}, {"expires_at", colIntNull}}}
