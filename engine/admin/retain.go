package admin

// RetainOptions select what Retain removes. With the zero value it only
// thins the delta snapshots of every thread, which never removes a
// checkpoint.
type RetainOptions struct {
	// ThreadID limits retention to one thread; empty means every thread.
	ThreadID string
	// KeepLatest, when above 0, keeps only the newest KeepLatest checkpoints
	// of each namespace (and what they need to be rebuilt) and removes the
	// older ones.
	KeepLatest int
	// DropBranches removes every checkpoint that is not an ancestor of the
	// namespace's head (abandoned forks), with the writes only they sealed.
	DropBranches bool
	// DryRun computes and reports what would go without changing the file.
	DryRun bool
	// Progress, if not nil, is called after each thread with the number of
	// threads done and the total.
	Progress func(done, total int)
}

// RetainReport says what a retention run removed and kept.
type RetainReport struct {
	Threads            int `json:"threads"`
	CheckpointsRemoved int `json:"checkpoints_removed"`
	CheckpointsKept    int `json:"checkpoints_kept"`
	SnapshotsRemoved   int `json:"snapshots_removed"`
	SnapshotsKept      int `json:"snapshots_kept"`
	WritesRemoved      int `json:"writes_removed"`
	// Namespaces counts the checkpoint namespaces of the threads retained
	// (KeepLatest applies to each).
	Namespaces int `json:"namespaces"`
	// CheckpointsSpared counts checkpoints that KeepLatest or DropBranches
	// would remove but that stay because a kept checkpoint needs them to be
	// rebuilt (included in CheckpointsKept).
	CheckpointsSpared int `json:"checkpoints_spared"`
	// ValuesThinned counts whole values of the checkpoint protocol turned
	// into version deltas (thinValues).
	ValuesThinned int   `json:"values_thinned"`
	BytesFreed    int64 `json:"bytes_freed"`
	DryRun        bool  `json:"dry_run"`
	// The stored bytes of every surface before and after (checkpoints and
	// writes included, not only snapshots).
	DataBytesBefore int64 `json:"data_bytes_before"`
	DataBytesAfter  int64 `json:"data_bytes_after"`
	DataBytesFreed  int64 `json:"data_bytes_freed"`
}
