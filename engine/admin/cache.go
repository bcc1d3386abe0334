package admin

// CacheStats are the history cache's setting and its counters since Open.
type CacheStats struct {
	Enabled    bool  `json:"enabled"` // Options.HistoryCacheBytes > 0
	Hits       int64 `json:"hits"`
	Misses     int64 `json:"misses"`
	Evictions  int64 `json:"evictions"`
	Entries    int64 `json:"entries"`
	Bytes      int64 `json:"bytes"`
	MaxBytes   int64 `json:"max_bytes"`
	FullWalks  int64 `json:"full_walks"`
	Extensions int64 `json:"extensions"`
	// ValueHits and ValueMisses count the lookups of the last value of a
	// channel's version-delta chain (values.go) by writes and reads.
	ValueHits   int64 `json:"value_hits"`
	ValueMisses int64 `json:"value_misses"`
	// StateEntries and StateBytes are the materialized states of the
	// thread API kept in the same budget (statecache.go): Bytes counts
	// them too.
	StateEntries int64 `json:"state_entries"`
	StateBytes   int64 `json:"state_bytes"`
}
