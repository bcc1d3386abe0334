package langgraph

import (
	"slices"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
)

// DeltaChannels (LangGraph 1.2 Python, LangGraph.js 1.7 "DeltaValue") store
// a channel's value only at snapshots, every K updates or when forced (a
// fork, an Overwrite): LangGraph Python as extension 7 around the value,
// LangGraph.js as {"lc": 2, "type": "delta_snapshot", "value": ...}. Between
// snapshots the checkpoint holds nothing for the channel and its value is
// the last snapshot plus the writes since. Both LangGraphs read channel ch
// at checkpoint C the same way (FORMATS.md, "DeltaChannel"):
//
//   - no version of ch at C: no value;
//   - C's channel_values hold ch: that value (a snapshot's, or a plain
//     value of a thread migrated from an ordinary channel);
//   - otherwise walk the parent chain from C's parent, collecting each
//     ancestor's writes to ch (all of them, in (task_path, task_id, idx)
//     order), up to and including the first ancestor whose channel_values
//     hold ch, whose value seeds the fold (none: the empty list); the last
//     Overwrite among the writes replaces the seed and only the writes after
//     it are reduced.
//
// The reducers are batch-invariant (LangGraph requires it), so the walk
// equals folding each parent's writes onto the parent's walk value, which
// is how deltaWalk computes every checkpoint's value in one pass.
//
// The reducer is code the file does not name. A message channel of the
// destination's Schema uses LangGraph's delta message reducer
// (deltaMessages); another DeltaChannel imports only when Options names its
// reducer (Concat), and is refused otherwise.

// Reducer names the reducer of a DeltaChannel that is not a message channel
// of the destination's Schema (see Options.DeltaReducers).
type Reducer string

// Concat is list concatenation: each write is a list whose items are
// appended, or a single item, appended (LangGraph's operator.add over lists).
const Concat Reducer = "concat"

// snapshotOf recognises a DeltaChannel snapshot and returns its value.
func snapshotOf(v any) (inner any, ok bool) {
	switch x := v.(type) {
	case map[string]any:
		if x["lc"] == int64(2) && x["type"] == "delta_snapshot" {
			inner, ok = x["value"]
		}
	case *pyRaw:
		if x.ext != nil && x.ext.code == extDeltaSnapshot {
			return x.ext.arg, true
		}
	}
	return inner, ok
}

// deltaChannelsOf lists the DeltaChannels of one namespace: the channels
// with a snapshot anywhere, or with snapshot counters in some metadata,
// each with the first checkpoint that shows it.
func deltaChannelsOf(cps []*rawCheckpoint) map[string]string {
	out := map[string]string{}
	for _, cp := range cps {
		for ch := range fieldsOf(cp.metadata[channels.CountersKey]) {
			if _, seen := out[ch]; !seen {
				out[ch] = cp.id
			}
		}
		for ch, v := range cp.values {
			if _, ok := snapshotOf(v); ok {
				if _, seen := out[ch]; !seen {
					out[ch] = cp.id
				}
			}
		}
	}
	return out
}

// deltaWalk computes one DeltaChannel's value at every checkpoint of a
// namespace (in id order, parents first): stored(cp) returns the value cp
// holds, if any; step(prev, parentID) folds the parent's writes onto prev.
func deltaWalk[T any](cps []*checkpointRef, empty T, stored func(i int) (T, bool, error), step func(prev T, parent string) (T, error)) (map[string]T, error) {
	out := make(map[string]T, len(cps))
	for i, cp := range cps {
		if v, ok, err := stored(i); err != nil {
			return nil, err
		} else if ok {
			out[cp.id] = v
			continue
		}
		prev, found := out[cp.parent]
		if !found {
			prev = empty
		}
		v, err := step(prev, cp.parent)
		if err != nil {
			return nil, err
		}
		out[cp.id] = v
	}
	return out, nil
}

// checkpointRef is what the walk needs of a checkpoint.
type checkpointRef struct{ id, parent string }

// deltaMessages is LangGraph's delta message reducer (Python's
// _messages_delta_reducer, LangGraph.js's messagesDeltaReducer) on one
// update: the messages of the writes are flattened, everything before the
// last REMOVE_ALL_MESSAGES is dropped with the state, then each message
// replaces the one with its id, or is appended, and a RemoveMessage
// deletes its id if present (an unknown id is ignored). It differs from
// add_messages (channels.ApplyMessages), which refuses unknown ids; the
// import rebuilds what LangGraph shows and lets the engine's own fold
// catch up with an Overwrite where the two disagree.
func deltaMessages(state []codec.Message, writes []channels.MessageUpdate) []codec.Message {
	var msgs []codec.Message
	base := state
	for _, u := range writes {
		if u.Overwrite {
			base, msgs = u.Messages, nil
			continue
		}
		msgs = append(msgs, u.Messages...)
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Type == codec.Remove && msgs[i].ID == codec.RemoveAll {
			base, msgs = nil, msgs[i+1:]
			break
		}
	}
	out := slices.Clone(base)
	if out == nil {
		out = []codec.Message{}
	}
	removed := make([]bool, len(out))
	index := make(map[string]int, len(out))
	for i, m := range out {
		if m.ID != "" {
			index[m.ID] = i
		}
	}
	for _, m := range msgs {
		switch i, known := index[m.ID]; {
		case m.ID == "":
			out = append(out, m)
			removed = append(removed, false)
		case m.Type == codec.Remove:
			if known {
				removed[i] = true
				delete(index, m.ID)
			}
		case known:
			out[i] = m
		default:
			index[m.ID] = len(out)
			out = append(out, m)
			removed = append(removed, false)
		}
	}
	kept := out[:0]
	for i, m := range out {
		if !removed[i] {
			kept = append(kept, m)
		}
	}
	return kept
}

// deltaConcat is Concat on one parent's writes: an Overwrite replaces the
// list (nil: empty), a list's items are appended, anything else is one item.
func deltaConcat(state []any, writes []any) []any {
	out := slices.Clone(state)
	for _, w := range writes {
		if inner, ok := overwriteOf(w); ok {
			out, _ = listItems(inner)
			out = slices.Clone(out)
			continue
		}
		if items, ok := listItems(w); ok {
			out = append(out, items...)
			continue
		}
		out = append(out, w)
	}
	if out == nil {
		out = []any{}
	}
	return out
}
