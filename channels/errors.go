package channels

import "errors"

// Sentinel errors. Every error this package returns matches one of them
// with errors.Is (or codec.ErrCorrupt / codec.ErrUnsupported for bytes that
// do not decode, or, from Reducer.Apply, the reducer function's own error)
// and names the offending id, position or type in its text.
var (
	// ErrUnknownID reports a remove marker for an id that is not in the list
	// at that point of the fold. LangGraph raises the same condition.
	ErrUnknownID = errors.New("channels: remove of unknown message id")

	// ErrNoID reports a message in a write without an id. Ids are assigned
	// before a write is persisted (MessageUpdate.WithIDs), never during a
	// fold, so that every replay of the write yields the same ids.
	ErrNoID = errors.New("channels: message without id")

	// ErrBadValue reports a state or update of the wrong type or shape for
	// its channel, for example a remove marker inside an Overwrite, or a
	// reducer that panicked.
	ErrBadValue = errors.New("channels: bad value for channel")

	// ErrConcurrentUpdate reports a step whose writes to one channel cannot
	// all apply: more than one Overwrite (or more than one write to a
	// LastValue channel), as LangGraph's InvalidUpdateError does.
	ErrConcurrentUpdate = errors.New("channels: conflicting writes in one step")

	// ErrDuplicateWrite reports two writes of one step with the same
	// (task_id, idx): the caller must keep only the first, as put_writes does.
	ErrDuplicateWrite = errors.New("channels: duplicate (task_id, idx) in one step")

	// ErrBadCounters reports a counters_since_delta_snapshot metadata entry
	// that is not a map of channel -> [updates, supersteps]. It is always
	// returned together with codec.ErrCorrupt.
	ErrBadCounters = errors.New("channels: malformed counters_since_delta_snapshot")

	// ErrBadCadence reports a snapshot cadence outside its allowed range.
	ErrBadCadence = errors.New("channels: invalid snapshot cadence")
)
