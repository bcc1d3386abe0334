package admin

import (
	"github.com/agentstate/agentstate/channels"
)

// Info describes the file behind a DB.
type Info struct {
	Path          string `json:"path"`
	SchemaVersion int    `json:"schema_version"`
	ApplicationID int64  `json:"application_id"`
	// Shared: agentstate lives in a file other tools' tables share
	// (engine.Options.SharedFile); SchemaVersion and ApplicationID are
	// those of its agentstate_header table, Rows counts only agentstate's
	// tables (by their agentstate_ names), the sizes are the whole file's.
	Shared        bool             `json:"shared,omitempty"`
	Mode          channels.Mode    `json:"mode"`
	SnapshotEvery int              `json:"snapshot_every"`
	PageSize      int64            `json:"page_size"`
	PageCount     int64            `json:"page_count"`
	FreePages     int64            `json:"free_pages"`
	FileBytes     int64            `json:"file_bytes"`
	WALBytes      int64            `json:"wal_bytes"`
	Rows          map[string]int64 `json:"rows"`
}

// WALStatus is what a WAL checkpoint did.
type WALStatus struct {
	// Truncated: every frame of the log was copied into the file and the
	// log emptied, so the file's size on disk is the database's.
	Truncated bool `json:"wal_truncated"`
	// LogFrames is the number of pages in the log before, CopiedFrames how
	// many of them are now in the file (-1 for both when the log could not
	// be read at all).
	LogFrames    int64 `json:"wal_frames"`
	CopiedFrames int64 `json:"wal_frames_copied"`
}
