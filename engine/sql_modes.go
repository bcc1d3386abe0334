package engine

// The channel mode's tables (see migrations/ and migrations_pg/): meta,
// which holds the file's default mode among its keys, and thread_modes,
// each thread's own; with the queries of Convert and Verify. The logic
// stays in modes.go, convert.go and verify.go. (Stats reads thread_modes
// with blobs: that statement is in sql_checkpoints.go.)

const (
	sqlMetaGet      = `SELECT value FROM meta WHERE key = ?`
	sqlMetaSet      = `INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`
	sqlThreadMode   = `SELECT mode, every FROM thread_modes WHERE thread_id = ?`
	sqlSetThreadMod = `INSERT INTO thread_modes(thread_id, mode, every) VALUES (?, ?, ?)
		ON CONFLICT(thread_id) DO UPDATE SET mode = excluded.mode, every = excluded.every`

	// Convert walks every thread with a mode of its own.
	sqlThreadModesConvert = `SELECT thread_id FROM thread_modes ORDER BY thread_id`
	// Verify reads every thread's mode.
	sqlThreadModesVerify = `SELECT thread_id, mode, every FROM thread_modes ORDER BY thread_id`
)

// The export's columns (export.go, "The export format"), in the order
// a row line lists them; export.go builds the SELECT and INSERT from them.
var exportThreadModes = exportTable{name: "thread_modes", threadCol: "thread_id", orderBy: "thread_id",
	cols: []exportCol{{"thread_id", colText}, {"mode", colText}, {"every", colInt}}}
