package admin

import (
	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine/records"
)

// LogEntry is one checkpoint of a thread's history, without its values.
type LogEntry struct {
	CheckpointID string `json:"checkpoint_id"`
	CheckpointNS string `json:"checkpoint_ns"`
	ParentID     string `json:"parent_id,omitempty"`
	CreatedAt    string `json:"created_at"`
	Step         int64  `json:"step"`
	Source       string `json:"source"`
	// Changed lists the channels whose version differs from the parent's.
	Changed []string `json:"changed"`
	// Stored lists the channels whose value this checkpoint stores;
	// Snapshot is set when it stores a value of a delta thread.
	Stored   []string `json:"stored"`
	Snapshot bool     `json:"snapshot"`
	// PendingWrites counts the writes stored under this checkpoint.
	PendingWrites int `json:"pending_writes"`
}

// LogOptions select the entries CheckpointLog yields.
type LogOptions struct {
	Namespace string // "" is the root graph
	Before    string // only checkpoints whose id sorts before this one
	Limit     int    // 0: all
}

// ThreadSummary is one thread as the operator sees it: what each surface
// holds for it, and its thread record if it has one.
type ThreadSummary struct {
	ThreadID string `json:"thread_id"`
	// Mode is the channel mode of a thread-API thread, "" otherwise.
	Mode channels.Mode `json:"mode,omitempty"`
	// Checkpoints counts checkpoints in every namespace; Head is the latest
	// root checkpoint.
	Checkpoints int64           `json:"checkpoints"`
	Head        string          `json:"head,omitempty"`
	Runs        int64           `json:"runs"`
	Events      int64           `json:"events"`
	Record      *records.Thread `json:"record,omitempty"`
}

// ThreadListOptions select threads for ListThreads. With Owner, Status or
// Metadata set, only threads with a thread record that matches are listed
// (Threads.Search); otherwise every thread any surface knows, by id.
type ThreadListOptions struct {
	Owner    string // a user id; "" for any owner
	Status   records.ThreadStatus
	Metadata map[string]any
	Limit    int // default 100, at most 1000
	Offset   int
}
