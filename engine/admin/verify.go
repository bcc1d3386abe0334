package admin

import (
	"fmt"
	"strings"
)

// VerifyOptions select what Verify checks.
type VerifyOptions struct {
	// ThreadID limits the checks of checkpoints and records to one thread;
	// the SQLite integrity check and the schema checks always cover the
	// whole file.
	ThreadID string
	// MaxProblems caps the problems reported (the rest are counted in
	// Truncated). Default 1000; must be >= 0.
	MaxProblems int
	// Progress, if not nil, is called after each thread with the number of
	// threads checked and the total.
	Progress func(done, total int)
}

// Problem is one thing wrong in a file. String gives it as one line that
// names where it is.
type Problem struct {
	// Kind is one of: integrity, schema, mode, checkpoint, parent, write,
	// blob, replay, run, event, thread, store.
	Kind         string `json:"kind"`
	ThreadID     string `json:"thread_id,omitempty"`
	CheckpointNS string `json:"checkpoint_ns,omitempty"`
	CheckpointID string `json:"checkpoint_id,omitempty"`
	Message      string `json:"message"`
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.Kind)
	b.WriteString(": ")
	if p.ThreadID != "" {
		fmt.Fprintf(&b, "thread %q ", p.ThreadID)
	}
	if p.CheckpointNS != "" {
		fmt.Fprintf(&b, "namespace %q ", p.CheckpointNS)
	}
	if p.CheckpointID != "" {
		fmt.Fprintf(&b, "checkpoint %q ", p.CheckpointID)
	}
	if b.Len() > len(p.Kind)+2 {
		s := strings.TrimSuffix(b.String(), " ")
		b.Reset()
		b.WriteString(s)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// VerifyReport is what Verify found and how much it checked.
type VerifyReport struct {
	Path     string    `json:"path"`
	OK       bool      `json:"ok"`
	Problems []Problem `json:"problems"`
	// Truncated counts problems found past MaxProblems and not listed.
	Truncated int `json:"truncated"`

	Threads     int `json:"threads"`
	Checkpoints int `json:"checkpoints"`
	Writes      int `json:"writes"`
	Blobs       int `json:"blobs"`
	// Replayed counts checkpoints of thread-API threads whose state was
	// rebuilt from their parent and writes; SnapshotsChecked the stored
	// values compared with that rebuild; DeltaReads the checkpoints read
	// back through the delta history walk and compared, DeltaReadsSkipped
	// those replayed but not read back that way (past the 16th checkpoint
	// after a stored value, only every power of two and the heads are).
	Replayed          int `json:"replayed"`
	SnapshotsChecked  int `json:"snapshots_checked"`
	DeltaReads        int `json:"delta_reads"`
	DeltaReadsSkipped int `json:"delta_reads_skipped"`
	Runs              int `json:"runs"`
	Events            int `json:"events"`
	ThreadRecords     int `json:"thread_records"`
	StoreItems        int `json:"store_items"`
}
