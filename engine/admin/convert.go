package admin

// ConvertReport says what a conversion changed.
type ConvertReport struct {
	Threads          int `json:"threads"`
	SnapshotsAdded   int `json:"snapshots_added"`
	SnapshotsRemoved int `json:"snapshots_removed"`
}
