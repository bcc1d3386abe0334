package admin

// DeleteRunsOptions say what DeleteForRuns does with the checkpoints of
// other runs that descend from deleted ones.
type DeleteRunsOptions struct {
	// Reroot keeps such a checkpoint as a root of its own (its parent link
	// is dropped; its own channel values stay whole, but a DeltaChannel's
	// history that ran through the deleted checkpoints now starts at it),
	// where DeleteForRuns otherwise refuses. This is how LangGraph's own savers
	// delete runs, and what its conformance suite expects.
	Reroot bool
}

// PruneStrategy says what Prune keeps.
type PruneStrategy string

const (
	// PruneKeepLatest keeps the latest checkpoint of each namespace with its
	// pending writes, plus whatever older checkpoints and writes its delta
	// channels need to be rebuilt; everything else goes.
	PruneKeepLatest PruneStrategy = "keep_latest"
	// PruneDelete removes the threads entirely.
	PruneDelete PruneStrategy = "delete"
)

// PruneReport says what Prune removed and kept.
type PruneReport struct {
	Threads            int `json:"threads"`
	CheckpointsRemoved int `json:"checkpoints_removed"`
	CheckpointsKept    int `json:"checkpoints_kept"`
}
