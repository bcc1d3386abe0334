package admin

import (
	"github.com/agentstate/agentstate/channels"
)

// ExportOptions select what Export writes.
type ExportOptions struct {
	// ThreadID exports one thread: its checkpoints, values, writes, mode,
	// thread record, runs and events (not the store, which belongs to no
	// thread). Empty exports everything.
	ThreadID string
	// Progress, if not nil, is called now and then with the rows written
	// and the total.
	Progress func(done, total int64)
}

// ExportReport counts what Export wrote, per table.
type ExportReport struct {
	Rows  map[string]int64 `json:"rows"`
	Total int64            `json:"total"`
}

// ImportOptions govern Import.
type ImportOptions struct {
	// User, when not empty, is the only user the dump may speak for: every
	// thread record it holds must belong to User, and every run to User
	// or to no user (ErrConflict otherwise). Empty imports any owner's
	// (an administrator restoring a backup).
	User string
	// Progress, if not nil, is called now and then with the lines read.
	Progress func(lines int64)
}

// ImportReport counts what Import wrote, per table.
type ImportReport struct {
	Rows     map[string]int64 `json:"rows"`
	Total    int64            `json:"total"`
	Mode     channels.Mode    `json:"mode"`
	ThreadID string           `json:"thread_id,omitempty"`
}
