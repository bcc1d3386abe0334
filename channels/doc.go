// Package channels is the pure state logic of agentstate: the message
// reducer with LangGraph's add_messages semantics, Overwrite and remove
// markers, the delta fold, the snapshot cadence and the order in which a
// step's writes apply. It does no I/O, knows nothing of SQL and imports only
// codec.
//
// # Channels
//
// A Channel is the reducing rule of one state field: Messages (a message
// list, add_messages rules, updates are MessageUpdate), LastValue (the last
// write wins) and Reducer (a Go function folds each write in). States and
// updates are stored with codec.Marshal and read back with the channel's
// DecodeState and DecodeUpdate.
//
// # How the engine uses it
//
// Committing a step, in either mode, for each channel the step wrote:
//
//  1. Give message writes their ids before anything is stored:
//     u = u.WithIDs(idgen), then u.Validate() (bad input fails the commit).
//  2. Store each write (MessageUpdate.Encode, or codec.Marshal for other
//     channels) and decode it back with ch.DecodeUpdate; apply the decoded
//     value, so the live fold sees exactly what a replay will see.
//  3. values, err := OrderStep(ch, taskWrites) puts them in (task_id, idx)
//     order and refuses a step LangGraph refuses.
//  4. next, err := ch.Apply(prev, values). An error aborts the transaction:
//     a write that does not fold (a remove of an unknown id) is never stored,
//     which is what makes every stored history replayable.
//
// Full mode then stores codec.Marshal(next) as the channel's new value.
//
// Delta mode with cadence K (Cadence{K: k}, checked by Validate when the
// handle opens) stores no value unless the cadence says so:
//
//	counters, err := ReadCounters(parentMetadata)
//	overwrite := any value v in values with ch.IsOverwrite(v)
//	snap, c := cadence.Next(counters[name], len(values) > 0, overwrite, isFirstCheckpoint)
//	counters[name] = c
//	if snap { store codec.Marshal(next) as the channel's snapshot }
//	metadata = SetCounters(metadata, counters)
//
// Next is called for every delta channel at every checkpoint, written or not
// (the supersteps count advances either way), and isFirstCheckpoint means
// the first checkpoint of the thread that holds the channel.
//
// Rebuilding a value (contract §2.3): decode the seed the walk found with
// ch.DecodeState (nil when the walk reached the root without one), decode
// the writes after it with ch.DecodeUpdate, oldest checkpoint first and in
// (task_id, idx) order inside each, then value, err := Fold(ch, seed, writes).
// Fold reads nothing before the last Overwrite. Fold(ch, Fold(ch, s, a), b)
// equals Fold(ch, s, a+b), so a history cache can extend a parent's value
// by the parent's writes.
//
// # Choices where LangGraph is ambiguous
//
// The unit of batching is the write (one MessageUpdate), never a flat list
// of messages: folding writes a then b equals folding a+b at once, but
// merging two writes into one does not, in LangGraph either (a removal in one
// write and a re-add in the next moves the message to the end, while in one
// write the re-add cancels the removal; removing an id twice in two writes
// fails, in one write it does not). Stored writes are therefore replayed as
// the units they were committed as. LangGraph.js's messagesDeltaReducer
// flattens writes instead and gets batching invariance by applying removals
// at once and ignoring unknown ids, which contradicts add_messages; we keep
// add_messages.
//
// After a remove-all marker, LangGraph returns the rest of the write raw, so
// duplicate ids and later remove markers end up in the state as messages.
// We fold the rest into the empty list with the usual rules, so that a write
// [..., remove-all, rest...] equals the two writes [remove-all] and [rest]
// and the state never holds a remove marker. Everything before the last
// remove-all is ignored, as in LangGraph, even a remove of an unknown id.
//
// A duplicate id inside one write replaces the earlier message in place, as
// in LangGraph: the later content wins at the first position. A list that
// already holds an id twice (a seed from another program, an Overwrite)
// keeps both; a replacement hits the latest, a removal deletes both.
//
// Inside a step, writes apply one after another in (task_id, idx) order,
// live and in replay; an Overwrite discards the writes ordered before it.
// LangGraph's BinaryOperatorAggregate drops the step's other writes, and its
// DeltaChannel applies them on top of the Overwrite live but replays only
// the later ones, so live and replay disagree there; we chose the rule a
// replay reproduces. Two Overwrites to one channel in a step are refused, as
// in LangGraph.
//
// Ids are never invented during a fold (LangGraph assigns uuid4s inside the
// reducer, so its replays of id-less writes differ): a write without ids is
// ErrNoID, and WithIDs must run before the write is stored.
package channels
