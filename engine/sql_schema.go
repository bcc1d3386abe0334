package engine

// The schema's own tables (see migrations/ and migrations_pg/):
// schema_history, one row per migration applied, and, on PostgreSQL,
// agentstate_header, which stands for the SQLite file header's
// application id and user version. The logic stays in schema.go,
// backend_pg.go (PostgreSQL's migrations), verify.go and dialect_pg.go
// (which reads the header where SQLite runs a PRAGMA).

const (
	// A migration applied.
	sqlSchemaRecord = "INSERT INTO schema_history(version, name, applied_at) VALUES (?, ?, ?)"
	// An empty database opened from the build's image gets its own time.
	sqlSchemaStamp = "UPDATE schema_history SET applied_at = ?"
	// Verify counts the migrations recorded.
	sqlSchemaVerify = `SELECT count(*) FROM schema_history`
)

// PostgreSQL: the header and the migrations' record.
const (
	sqlHeaderReadPG       = `SELECT application_id, schema_version FROM agentstate_header`
	sqlHeaderSetVersionPG = `UPDATE agentstate_header SET schema_version = $1`
	sqlHeaderInsertPG     = `INSERT INTO agentstate_header(application_id, schema_version) VALUES ($1, $2)`
	sqlSchemaRecordPG     = `INSERT INTO schema_history(version, name, applied_at) VALUES ($1, $2, $3)`
	// PRAGMA application_id and PRAGMA user_version.
	sqlHeaderAppIDPG   = `SELECT application_id FROM agentstate_header`
	sqlHeaderVersionPG = `SELECT schema_version FROM agentstate_header`
)
