package admin

import (
	"github.com/agentstate/agentstate/channels"
)

// SurfaceStats is the size of one surface: its rows and the bytes of what
// they hold (keys, values and text; not SQLite's page overhead).
type SurfaceStats struct {
	Name  string `json:"name"`
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
}

// ThreadSize is the stored size of one thread across its checkpoints,
// channel values, writes and events.
type ThreadSize struct {
	ThreadID    string        `json:"thread_id"`
	Mode        channels.Mode `json:"mode,omitempty"` // "" for threads the thread API did not write
	Checkpoints int64         `json:"checkpoints"`
	Bytes       int64         `json:"bytes"`
}

// Stats is Info plus where the bytes are: per surface, the largest threads,
// and the history cache.
type Stats struct {
	Info
	Surfaces       []SurfaceStats `json:"surfaces"`
	LargestThreads []ThreadSize   `json:"largest_threads"`
	HistoryCache   CacheStats     `json:"history_cache"`
}
