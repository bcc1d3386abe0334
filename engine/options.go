package engine

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/agentstate/agentstate/channels"
)

// Memory is the path that opens a fresh private in-memory database.
const Memory = ":memory:"

// Synchronous settings: how often the file is forced to stable storage. The
// file is in WAL mode, so neither setting can leave it inconsistent: after a
// crash or a power cut it always holds a prefix of the committed
// transactions, each whole or absent.
const (
	// SyncNormal syncs the write-ahead log only when it is copied into the
	// main file (a checkpoint). A commit that returned survives the crash or
	// kill of the process; on power loss or an OS crash the last commits
	// since the previous checkpoint may be lost, never half applied.
	SyncNormal = "normal"
	// SyncFull also syncs the write-ahead log at every commit: a commit that
	// returned survives power loss, at the cost of one fsync per write.
	SyncFull = "full"
)

// Options govern every surface of one database handle. Start from
// DefaultOptions and change what you need: Open validates every field and
// refuses a value out of range instead of clamping it.
type Options struct {
	// Synchronous is SyncNormal (default) or SyncFull: what a commit that
	// returned survives (see their documentation).
	Synchronous string
	// BusyTimeout is how long a call waits for another process's lock before
	// failing with SQLite's BUSY error. Default 30s; must be >= 0.
	BusyTimeout time.Duration
	// ReadConns is the number of reader connections in the pool (writer
	// connections exist besides). Default 4; must be 1..64.
	ReadConns int
	// WriteConns is the number of writer connections. 0 (default) means the
	// backend's choice: 1 for SQLite (the only value it takes), 4 for
	// PostgreSQL (transactions on different threads run at once). 0..64.
	WriteConns int
	// ReadOnly opens a file of the current schema without ever writing to
	// it (no upgrade, no reconciliation; writes fail with ErrReadOnly), also
	// on media this process cannot write (docs/cli.md, "Read-only commands").
	ReadOnly bool
	// Mode is the message channel mode: ModeAuto (default: the mode and K
	// the file records, full for a new file), ModeFull or ModeDelta, which
	// must match what the file records (ErrModeMismatch; see ConvertFile).
	// It is frozen for the handle's life; DB.Options reports it resolved.
	Mode channels.Mode
	// SnapshotEvery is K, the delta snapshot cadence with ModeDelta (with
	// ModeAuto the file's K, or 10 for a new file). Default 10; must be >= 1.
	SnapshotEvery int
	// HistoryCacheBytes bounds the delta history cache, and an eighth of
	// it the frames of compressed message-list chunks that delta snapshots
	// reuse. Default 64 MiB; 0 disables both and the thread API's state
	// cache, so that every read rebuilds from the file; must be >= 0.
	HistoryCacheBytes int64
	// Schema names the state channels of threads written through the
	// thread API (Commit, State, ...) and how each reduces its writes.
	// Default: one channel, "messages", with add_messages semantics.
	Schema Schema
	// AutoRetain runs retention on a thread at each new delta snapshot or
	// whole value, so a long-lived file grows linearly (off: a delta thread
	// grows as N^2/K). Default on; docs/contract.md §2.5 gives its costs.
	AutoRetain bool
	// Now is the clock for every timestamp the engine writes (TTL, records,
	// leases). Default time.Now; tests inject a fake clock instead of sleeping.
	Now func() time.Time

	// StoreDefaultTTL is the TTL of store items put without their own.
	// Default 0: items never expire; must be >= 0.
	StoreDefaultTTL time.Duration
	// StoreRefreshOnRead makes store reads (get, search) push back the
	// expiry of the items they return, unless a read asks otherwise.
	// Default true.
	StoreRefreshOnRead bool
	// StoreSweepInterval is how often a background sweeper deletes expired
	// store items (never returned anyway). Default 0: none; else >= 10ms.
	StoreSweepInterval time.Duration
	// TraceContentLimit bounds, in UTF-8 bytes, the content of events of
	// category "trace"; longer content is cut on a rune boundary and the cut
	// recorded in the event's metadata. Default 10 KiB; 0 keeps traces
	// whole; must be >= 0.
	TraceContentLimit int
	// ReconcileOnOpen turns runs left pending or running by a handle that is
	// gone (its lease expired, or it recorded none) into errors when the file
	// is opened read-write. Default true.
	ReconcileOnOpen bool
	// RunLease is how long a run stays owned by the handle that created it
	// without renewal; the handle renews its leases every RunLease/3 while it
	// is open. Default 1 minute; must be 1s..24h.
	RunLease time.Duration
	// SharedFile: live in an SQLite file other tools' tables share (default
	// false; docs/format.md, "Shared files").
	SharedFile bool

	// RunOwner labels the runs this handle creates (a suffix unique to the
	// handle is added). Default "hostname:pid"; at most 128 bytes, no
	// control characters.
	RunOwner string
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{
		Synchronous:       SyncNormal,
		BusyTimeout:       30 * time.Second,
		ReadConns:         4,
		Mode:              channels.ModeAuto,
		SnapshotEvery:     10,
		HistoryCacheBytes: 64 << 20,
		AutoRetain:        true,
		Now:               time.Now,
		Schema:            DefaultSchema(),

		StoreRefreshOnRead: true,
		TraceContentLimit:  10 << 10,
		ReconcileOnOpen:    true,
		RunLease:           time.Minute,
		RunOwner:           defaultRunOwner(),
	}
}

func defaultRunOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return cutRunes(host, 100) + ":" + strconv.Itoa(os.Getpid())
}

func (o Options) validate() error {
	switch {
	case o.Synchronous != SyncNormal && o.Synchronous != SyncFull:
		return fmt.Errorf("%w: Synchronous %q is not %q or %q", ErrInvalidOption, o.Synchronous, SyncNormal, SyncFull)
	case o.BusyTimeout < 0:
		return fmt.Errorf("%w: BusyTimeout %v is negative", ErrInvalidOption, o.BusyTimeout)
	case o.ReadConns < 1 || o.ReadConns > 64:
		return fmt.Errorf("%w: ReadConns %d is outside 1..64", ErrInvalidOption, o.ReadConns)
	case o.WriteConns < 0 || o.WriteConns > 64:
		return fmt.Errorf("%w: WriteConns %d is outside 0..64", ErrInvalidOption, o.WriteConns)
	case o.Mode != channels.ModeFull && o.Mode != channels.ModeDelta && o.Mode != channels.ModeAuto:
		return fmt.Errorf("%w: Mode %q is not %q, %q or %q", ErrInvalidOption, o.Mode, channels.ModeFull, channels.ModeDelta, channels.ModeAuto)
	case o.SnapshotEvery < 1:
		return fmt.Errorf("%w: SnapshotEvery %d must be >= 1", ErrInvalidOption, o.SnapshotEvery)
	case o.HistoryCacheBytes < 0:
		return fmt.Errorf("%w: HistoryCacheBytes %d is negative", ErrInvalidOption, o.HistoryCacheBytes)
	case o.Now == nil:
		return fmt.Errorf("%w: Now is nil", ErrInvalidOption)
	case o.Schema.validate() != nil:
		return fmt.Errorf("%w: %w", ErrInvalidOption, o.Schema.validate())
	case o.StoreDefaultTTL < 0:
		return fmt.Errorf("%w: StoreDefaultTTL %v is negative", ErrInvalidOption, o.StoreDefaultTTL)
	case o.StoreSweepInterval < 0 || o.StoreSweepInterval > 0 && o.StoreSweepInterval < 10*time.Millisecond:
		return fmt.Errorf("%w: StoreSweepInterval %v must be 0 (no sweeper) or >= 10ms", ErrInvalidOption, o.StoreSweepInterval)
	case o.TraceContentLimit < 0:
		return fmt.Errorf("%w: TraceContentLimit %d is negative", ErrInvalidOption, o.TraceContentLimit)
	case o.RunLease < time.Second || o.RunLease > 24*time.Hour:
		return fmt.Errorf("%w: RunLease %v is outside 1s..24h", ErrInvalidOption, o.RunLease)
	case checkText("RunOwner", o.RunOwner, 128) != nil:
		return fmt.Errorf("%w: RunOwner %s must be at most 128 bytes of UTF-8 text without control characters", ErrInvalidOption, quoteCut(o.RunOwner))
	}
	return nil
}
