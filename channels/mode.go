package channels

// Mode is how a thread stores its message channels (docs/contract.md §2.2).
type Mode string

// Channel modes.
const (
	// ModeFull stores the whole message list in every checkpoint that changes it.
	ModeFull Mode = "full"
	// ModeDelta stores each step's messages once and a snapshot every K updates.
	ModeDelta Mode = "delta"
	// ModeAuto adopts the mode and K the file records (full for a new file):
	// for tools that read files written by others.
	ModeAuto Mode = "auto"
)
