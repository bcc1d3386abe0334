package engine

import (
	"fmt"
	"time"
)

// Channel modes. See SPEC section 2.2.
const (
	// ModeFull stores the whole message list in every checkpoint that changes it.
	ModeFull = "full"
	// ModeDelta stores each step's messages once and a snapshot every K updates.
	ModeDelta = "delta"
)

// Memory is the path that opens a fresh private in-memory database.
const Memory = ":memory:"

// Options govern every surface of one database handle. Start from
// DefaultOptions and change what you need: Open validates every field and
// refuses a value out of range instead of clamping it.
type Options struct {
	// BusyTimeout is how long a call waits for another process's lock before
	// failing with SQLite's BUSY error. Default 30s; must be >= 0.
	BusyTimeout time.Duration
	// ReadConns is the number of reader connections in the pool (one writer
	// connection always exists besides). Default 4; must be 1..64.
	ReadConns int
	// ReadOnly opens the file without ever writing to it: no schema upgrade,
	// no reconciliation, and every write call fails with ErrReadOnly. The file
	// must already hold the current schema.
	ReadOnly bool
	// Mode is the message channel mode, ModeFull (default) or ModeDelta. It is
	// frozen for the handle's life and must match what the file records.
	Mode string
	// SnapshotEvery is K, the delta snapshot cadence. Default 10; must be >= 1.
	SnapshotEvery int
	// HistoryCacheBytes bounds the delta history cache. Default 64 MiB; 0
	// disables the cache; must be >= 0.
	HistoryCacheBytes int64
	// Now is the clock for every timestamp the engine writes (TTL, records,
	// leases). Default time.Now; tests inject a fake clock instead of sleeping.
	Now func() time.Time
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{
		BusyTimeout:       30 * time.Second,
		ReadConns:         4,
		Mode:              ModeFull,
		SnapshotEvery:     10,
		HistoryCacheBytes: 64 << 20,
		Now:               time.Now,
	}
}

func (o Options) validate() error {
	switch {
	case o.BusyTimeout < 0:
		return fmt.Errorf("%w: BusyTimeout %v is negative", ErrInvalidOption, o.BusyTimeout)
	case o.ReadConns < 1 || o.ReadConns > 64:
		return fmt.Errorf("%w: ReadConns %d is outside 1..64", ErrInvalidOption, o.ReadConns)
	case o.Mode != ModeFull && o.Mode != ModeDelta:
		return fmt.Errorf("%w: Mode %q is neither %q nor %q", ErrInvalidOption, o.Mode, ModeFull, ModeDelta)
	case o.SnapshotEvery < 1:
		return fmt.Errorf("%w: SnapshotEvery %d must be >= 1", ErrInvalidOption, o.SnapshotEvery)
	case o.HistoryCacheBytes < 0:
		return fmt.Errorf("%w: HistoryCacheBytes %d is negative", ErrInvalidOption, o.HistoryCacheBytes)
	case o.Now == nil:
		return fmt.Errorf("%w: Now is nil", ErrInvalidOption)
	}
	return nil
}
