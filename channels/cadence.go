package channels

import (
	"fmt"
	"maps"
	"math"

	"github.com/agentstate/agentstate/codec"
)

// CountersKey is the checkpoint metadata key under which LangGraph (Python
// and JS) keeps the per-channel counters since the last delta snapshot.
const CountersKey = "counters_since_delta_snapshot"

// DefaultK is the snapshot cadence the engine uses when none is chosen.
const DefaultK = 10

// Counter is one channel's entry under CountersKey, LangGraph's
// (updates, supersteps) pair: checkpoints that updated the channel, and
// checkpoints of any kind, since its last snapshot.
type Counter struct {
	Updates    int
	Supersteps int
}

// Cadence is the delta-mode snapshot policy of a database handle.
type Cadence struct {
	// K is how many updates of a channel a checkpoint may replay at most:
	// the checkpoint whose update brings the count to K stores a snapshot.
	// It must be at least 1; 1 snapshots at every update.
	K int
	// MaxSupersteps, when above 0, also snapshots a channel once that many
	// checkpoints have passed since its last snapshot, updated or not, which
	// bounds the ancestor walk of a channel that stopped being written.
	// LangGraph's DELTA_MAX_SUPERSTEPS_SINCE_SNAPSHOT is 5000; 0 disables.
	MaxSupersteps int
}

// Validate reports a cadence that Next cannot honour, as ErrBadCadence.
// The engine calls it when a handle is opened, so that a bad option fails
// there instead of being clamped.
func (c Cadence) Validate() error {
	if c.K < 1 {
		return fmt.Errorf("%w: K = %d, must be at least 1", ErrBadCadence, c.K)
	}
	if c.MaxSupersteps < 0 {
		return fmt.Errorf("%w: MaxSupersteps = %d, must be 0 (off) or positive", ErrBadCadence, c.MaxSupersteps)
	}
	return nil
}

// Next advances one channel's counter across one new checkpoint and says
// whether that checkpoint must store a snapshot of the channel. updated is
// whether the step wrote to the channel, overwrite whether one of those
// writes was an Overwrite (Channel.IsOverwrite), first whether this is the
// first checkpoint of the thread that holds the channel. It snapshots when
// first or overwrite is set, when the updates reach K, or when the
// checkpoints reach MaxSupersteps; after a snapshot the counter is zero. So
// a checkpoint never replays more than K-1 updates from its nearest
// snapshot, and an Overwrite is always followed by a snapshot, which keeps
// the writes before it out of every later fold. A cadence that fails
// Validate snapshots at every update, never less often.
func (c Cadence) Next(prev Counter, updated, overwrite, first bool) (snapshot bool, next Counter) {
	next = prev
	next.Supersteps++
	if updated || overwrite {
		next.Updates++
	}
	snapshot = first || overwrite ||
		next.Updates >= max(c.K, 1) ||
		(c.MaxSupersteps > 0 && next.Supersteps >= c.MaxSupersteps)
	if snapshot {
		next = Counter{}
	}
	return snapshot, next
}

// ReadCounters returns the counters stored under CountersKey in a
// checkpoint's metadata: an empty, non-nil map when there are none. It
// accepts LangGraph's shape, {channel: [updates, supersteps]}, with the
// numbers as msgpack or JSON decode them, and a bare number as an updates
// count. Any other shape is an error matching ErrBadCounters and
// codec.ErrCorrupt. meta is not modified.
func ReadCounters(meta map[string]any) (map[string]Counter, error) {
	out := map[string]Counter{}
	raw, ok := meta[CountersKey]
	if !ok || raw == nil {
		return out, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, badCounters("%s is %T, not a map", CountersKey, raw)
	}
	for ch, v := range m {
		var c Counter
		var okU, okS bool
		switch p := v.(type) {
		case []any:
			if len(p) != 2 {
				return nil, badCounters("channel %q: %d numbers, want [updates, supersteps]", ch, len(p))
			}
			c.Updates, okU = count(p[0])
			c.Supersteps, okS = count(p[1])
		case []int64:
			if len(p) != 2 {
				return nil, badCounters("channel %q: %d numbers, want [updates, supersteps]", ch, len(p))
			}
			c.Updates, okU = count(p[0])
			c.Supersteps, okS = count(p[1])
		default:
			c.Updates, okU = count(v)
			okS = true
		}
		if !okU || !okS {
			return nil, badCounters("channel %q: %v is not a pair of non-negative integers", ch, v)
		}
		out[ch] = c
	}
	return out, nil
}

func badCounters(format string, args ...any) error {
	return fmt.Errorf("%w: %w: "+format, append([]any{ErrBadCounters, codec.ErrCorrupt}, args...)...)
}

// count reads a non-negative integer in any of the types a decoder may
// produce for it. The bound keeps a hostile value from overflowing int on a
// 32-bit build; no real counter comes near it.
func count(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, n >= 0 && n <= math.MaxInt32
	case int64:
		return int(n), n >= 0 && n <= math.MaxInt32
	case int32:
		return int(n), n >= 0
	case uint64:
		return int(n), n <= math.MaxInt32
	case uint32:
		return int(n), n <= math.MaxInt32
	case float64:
		if n >= 0 && n <= math.MaxInt32 && n == math.Trunc(n) {
			return int(n), true
		}
	}
	return 0, false
}

// SetCounters returns a copy of meta (a new map when meta is nil) with
// counters stored under CountersKey the way LangGraph stores them: only
// non-zero entries, each as [updates, supersteps], and no key at all when
// every counter is zero. The stored values are the types codec decodes them
// to, so metadata compares equal before and after a round trip. meta and
// counters are not modified.
func SetCounters(meta map[string]any, counters map[string]Counter) map[string]any {
	out := maps.Clone(meta)
	if out == nil {
		out = map[string]any{}
	}
	stored := map[string]any{}
	for ch, c := range counters {
		if c != (Counter{}) {
			stored[ch] = []any{int64(c.Updates), int64(c.Supersteps)}
		}
	}
	if len(stored) > 0 {
		out[CountersKey] = stored
	} else {
		delete(out, CountersKey)
	}
	return out
}
