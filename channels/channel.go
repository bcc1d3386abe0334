package channels

import (
	"fmt"

	"github.com/agentstate/agentstate/codec"
)

// Channel is the reducing rule of one state field, the only thing the engine
// needs to know about a field to commit a step and to rebuild a value. A nil
// state means "no value yet". States and updates are stored with
// codec.Marshal and read back with DecodeState and DecodeUpdate; apply the
// decoded updates, not the caller's originals, so that a live commit and a
// later replay fold byte-identical values (codec turns Go ints into int64,
// for example).
type Channel interface {
	// Apply folds updates, in order, into state and returns the new state,
	// or an error and no state. It never modifies state or updates, and
	// Apply(Apply(s, a), b) equals Apply(s, a+b).
	Apply(state any, updates []any) (any, error)
	// IsOverwrite reports whether update replaces the state whatever it
	// was, so that a fold may start from it (Fold) and the cadence must
	// snapshot after it (Cadence.Next).
	IsOverwrite(update any) bool
	// DecodeUpdate reads one stored update. Errors match codec.ErrCorrupt
	// or codec.ErrUnsupported; it never panics.
	DecodeUpdate(data []byte) (any, error)
	// DecodeState reads one stored state (a snapshot or a full value).
	// Errors match codec.ErrCorrupt or codec.ErrUnsupported; it never panics.
	DecodeState(data []byte) (any, error)
}

// Fold rebuilds a value from a seed (nil when the walk found none) and the
// writes recorded after it, oldest first and in (task_id, idx) order inside
// a step. Only the writes from the last Overwrite on are read, so a fold
// after a compaction costs nothing for the history before it. For every
// sequence that ch.Apply accepts, Fold returns what ch.Apply(seed, writes)
// returns; an error lying before the last Overwrite is not seen (the writes
// there were validated when they were committed). Fold(ch, Fold(ch, s, a), b)
// equals Fold(ch, s, a+b), which is what lets a history cache extend a
// parent's value by the parent's writes.
func Fold(ch Channel, seed any, writes []any) (any, error) {
	if ch == nil {
		return nil, fmt.Errorf("%w: nil channel", ErrBadValue)
	}
	if i := lastOverwrite(ch, writes); i >= 0 {
		return ch.Apply(nil, writes[i:])
	}
	return ch.Apply(seed, writes)
}

// lastOverwrite is the position of the last of writes that replaces the
// state whatever it was, or -1: a fold starts there.
func lastOverwrite(ch Channel, writes []any) int {
	for i := len(writes) - 1; i >= 0; i-- {
		if ch.IsOverwrite(writes[i]) {
			return i
		}
	}
	return -1
}

// Messages is a message-list channel with add_messages semantics
// (ApplyMessages). Its state is []codec.Message; its updates are
// MessageUpdate values (or non-nil pointers to them). Apply never returns a
// nil list, so an empty channel reads as an empty list once written.
type Messages struct{}

// Apply folds MessageUpdate values into a []codec.Message state with
// ApplyMessages; any other type of state or update is ErrBadValue.
func (Messages) Apply(state any, updates []any) (any, error) {
	s, err := messageState(state)
	if err != nil {
		return nil, err
	}
	ws, err := messageUpdates(updates)
	if err != nil {
		return nil, err
	}
	return ApplyMessages(s, ws)
}

// messageState is a message channel's state as its list.
func messageState(state any) ([]codec.Message, error) {
	switch v := state.(type) {
	case nil:
		return nil, nil
	case []codec.Message:
		return v, nil
	}
	return nil, fmt.Errorf("%w: message channel state of type %T", ErrBadValue, state)
}

// messageUpdates are a message channel's updates as MessageUpdate values.
func messageUpdates(updates []any) ([]MessageUpdate, error) {
	ws := make([]MessageUpdate, len(updates))
	for i, u := range updates {
		switch v := u.(type) {
		case MessageUpdate:
			ws[i] = v
		case *MessageUpdate:
			if v == nil {
				return nil, fmt.Errorf("%w: nil *MessageUpdate at position %d", ErrBadValue, i)
			}
			ws[i] = *v
		default:
			return nil, fmt.Errorf("%w: message channel update of type %T at position %d (want MessageUpdate)", ErrBadValue, u, i)
		}
	}
	return ws, nil
}

// IsOverwrite reports a MessageUpdate with Overwrite set.
func (Messages) IsOverwrite(update any) bool {
	switch v := update.(type) {
	case MessageUpdate:
		return v.Overwrite
	case *MessageUpdate:
		return v != nil && v.Overwrite
	}
	return false
}

// DecodeUpdate returns the MessageUpdate stored by MessageUpdate.Encode.
func (Messages) DecodeUpdate(data []byte) (any, error) {
	u, err := DecodeMessageUpdate(data)
	if err != nil {
		return nil, err
	}
	return u, nil
}

// DecodeState returns the []codec.Message stored by codec.Marshal, validated
// by codec.DecodeMessages.
func (Messages) DecodeState(data []byte) (any, error) {
	ms, err := codec.DecodeMessages(data)
	if err != nil {
		return nil, err
	}
	if ms == nil {
		ms = []codec.Message{}
	}
	return ms, nil
}

// Overwrite wraps a value written to a LastValue or Reducer channel so that
// it replaces the state instead of being reduced into it, as LangGraph's
// Overwrite does. codec.Marshal stores it as the map {"__overwrite__": Value},
// the form LangGraph itself recognises, and DecodeUpdate turns that map back
// into an Overwrite. Message channels use MessageUpdate.Overwrite instead.
type Overwrite struct {
	Value any `msgpack:"__overwrite__" json:"__overwrite__"`
}

const overwriteKey = "__overwrite__"

// overwriteValue unwraps an Overwrite in any of the forms it can take: the
// Go value, a pointer to it, or the single-key map it is stored as.
func overwriteValue(u any) (any, bool) {
	switch v := u.(type) {
	case Overwrite:
		return v.Value, true
	case *Overwrite:
		if v != nil {
			return v.Value, true
		}
	case map[string]any:
		if len(v) == 1 {
			if x, ok := v[overwriteKey]; ok {
				return x, true
			}
		}
	}
	return nil, false
}

func decodeAny(data []byte) (any, error) {
	var v any
	if err := codec.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return v, nil
}

func decodeAnyUpdate(data []byte) (any, error) {
	v, err := decodeAny(data)
	if err != nil {
		return nil, err
	}
	if x, ok := overwriteValue(v); ok {
		return Overwrite{Value: x}, nil
	}
	return v, nil
}

// LastValue is a channel whose state is the last value written to it
// (LangGraph's LastValue). Every update replaces the state, so every update
// is an Overwrite: a fold reads only the last write, OrderStep refuses two
// writes to it in one step (as LangGraph does), and a delta cadence would
// snapshot it at each update.
type LastValue struct{}

// Apply returns the last update, unwrapped if it is an Overwrite, or state
// when there are no updates.
func (LastValue) Apply(state any, updates []any) (any, error) {
	if len(updates) == 0 {
		return state, nil
	}
	last := updates[len(updates)-1]
	if v, ok := overwriteValue(last); ok {
		return v, nil
	}
	return last, nil
}

// IsOverwrite is always true: each write replaces the value.
func (LastValue) IsOverwrite(any) bool { return true }

// DecodeUpdate returns the value stored by codec.Marshal, with a stored
// Overwrite turned back into an Overwrite.
func (LastValue) DecodeUpdate(data []byte) (any, error) { return decodeAnyUpdate(data) }

// DecodeState returns the value stored by codec.Marshal.
func (LastValue) DecodeState(data []byte) (any, error) { return decodeAny(data) }

// Reducer is a channel that folds each update into the state with a Go
// function (LangGraph's BinaryOperatorAggregate). The function receives nil
// as the state of an empty channel and must be deterministic and free of
// side effects: it runs again on every replay. An Overwrite update replaces
// the state without calling it. Because updates are folded one at a time,
// the channel is batching invariant whatever the function does.
type Reducer func(state, update any) (any, error)

// Apply folds updates through r in order. An error from r is returned
// wrapped with the update's position; a panic in r is recovered and
// returned as ErrBadValue, since r may meet stored values it did not expect.
func (r Reducer) Apply(state any, updates []any) (out any, err error) {
	if r == nil {
		return nil, fmt.Errorf("%w: nil Reducer", ErrBadValue)
	}
	i := 0
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("%w: reducer panicked on update %d: %v", ErrBadValue, i, p)
		}
	}()
	for ; i < len(updates); i++ {
		if v, ok := overwriteValue(updates[i]); ok {
			state = v
			continue
		}
		if state, err = r(state, updates[i]); err != nil {
			return nil, fmt.Errorf("channels: reducer on update %d: %w", i, err)
		}
	}
	return state, nil
}

// IsOverwrite reports an Overwrite, in Go or stored form.
func (Reducer) IsOverwrite(update any) bool {
	_, ok := overwriteValue(update)
	return ok
}

// DecodeUpdate returns the value stored by codec.Marshal, with a stored
// Overwrite turned back into an Overwrite.
func (Reducer) DecodeUpdate(data []byte) (any, error) { return decodeAnyUpdate(data) }

// DecodeState returns the value stored by codec.Marshal.
func (Reducer) DecodeState(data []byte) (any, error) { return decodeAny(data) }
