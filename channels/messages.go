package channels

import (
	"crypto/rand"
	"errors"
	"fmt"
	"slices"

	"github.com/agentstate/agentstate/codec"
)

// MessageUpdate is one write to a message channel, the unit that is
// persisted, replayed and folded. With Overwrite unset, Messages are merged
// into the list by ApplyMessages; with Overwrite set, Messages become the
// whole list (compaction, rollback). Two writes are not in general
// equivalent to one write holding both message lists (see the package
// documentation), so a write must be stored and replayed as the unit it was
// committed as.
type MessageUpdate struct {
	Overwrite bool            `msgpack:"overwrite,omitempty" json:"overwrite,omitempty"`
	Messages  []codec.Message `msgpack:"messages" json:"messages"`
}

// WithIDs returns u with a fresh id, from newID (NewID when nil), on every
// message that has none. Remove markers are left alone: a marker without an
// id names nothing and stays an error. u itself is not modified; when every
// message already has an id, the result shares u's slice.
//
// Call it before a write is persisted, never while folding: the ids must be
// part of the stored write so that every replay yields the same list.
func (u MessageUpdate) WithIDs(newID func() string) MessageUpdate {
	if newID == nil {
		newID = NewID
	}
	var out []codec.Message
	for i, m := range u.Messages {
		if m.ID != "" || m.Type == codec.Remove {
			continue
		}
		if out == nil {
			out = slices.Clone(u.Messages)
		}
		out[i].ID = newID()
	}
	if out != nil {
		u.Messages = out
	}
	return u
}

// NewID returns a random RFC 4122 version 4 UUID in its 36-character text
// form, the kind of id LangGraph gives a message that has none.
func NewID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails since Go 1.24
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return codec.UUIDText(b)
}

// Validate reports a write that must not be persisted: a message without an
// id (ErrNoID), a remove marker inside an Overwrite (ErrBadValue), or a
// message that codec.Message.Validate rejects (codec.ErrCorrupt).
func (u MessageUpdate) Validate() error {
	for i, m := range u.Messages {
		if m.ID == "" {
			return fmt.Errorf("%w: %s message at position %d", ErrNoID, m.Type, i)
		}
		if u.Overwrite && m.Type == codec.Remove {
			return fmt.Errorf("%w: remove marker %q inside an Overwrite (position %d)", ErrBadValue, m.ID, i)
		}
		if err := m.Validate(); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
	}
	return nil
}

// Encode validates u and returns its stored form, bytes that
// DecodeMessageUpdate turns back into an equal MessageUpdate.
func (u MessageUpdate) Encode() ([]byte, error) {
	if err := u.Validate(); err != nil {
		return nil, err
	}
	return codec.Marshal(u)
}

// DecodeMessageUpdate decodes and validates a write stored by Encode. Every
// error matches codec.ErrCorrupt (or codec.ErrUnsupported for a newer
// envelope); it never panics.
func DecodeMessageUpdate(data []byte) (MessageUpdate, error) {
	var u MessageUpdate
	if err := codec.Unmarshal(data, &u); err != nil {
		return MessageUpdate{}, err
	}
	if err := u.Validate(); err != nil {
		if !errors.Is(err, codec.ErrCorrupt) {
			err = fmt.Errorf("%w: %w", codec.ErrCorrupt, err)
		}
		return MessageUpdate{}, err
	}
	return u, nil
}

// ApplyMessages folds writes, in order, into state with LangGraph's
// add_messages rules and returns the new list. Per write:
//
//   - Overwrite: the list becomes exactly u.Messages (ids required, remove
//     markers refused, duplicates kept as given, like a seed).
//   - A remove marker with id codec.RemoveAll drops the list and everything
//     before the last such marker in the write; the rest of the write is then
//     folded into the empty list with the rules below (LangGraph returns that
//     rest raw; see the package documentation for why we fold it).
//   - A message whose id is in the list replaces it in place, at the id's
//     latest position; a new id is appended.
//   - A remove marker names an id that must be in the list at that point
//     (including messages appended earlier in the same write), else
//     ErrUnknownID. Removals take effect at the end of the write and delete
//     every message with that id; a later message with the same id in the
//     same write cancels the removal, so remove-then-re-add keeps the message
//     in place with the new content.
//
// It costs O(len(state) + total messages in writes): one index by id, removals
// as tombstones, one compaction pass at the end. Folding is batching
// invariant: ApplyMessages(ApplyMessages(s, a), b) equals
// ApplyMessages(s, a+b), errors included. On error it returns nil and an
// error matching ErrUnknownID, ErrNoID or ErrBadValue that names the write
// and message position (positions count from the start of writes). state and
// writes are never modified; the result is a new, non-nil slice that shares
// no backing array with them (the messages themselves are shared, and are
// treated as immutable values).
func ApplyMessages(state []codec.Message, writes []MessageUpdate) ([]codec.Message, error) {
	capacity := len(state)
	for _, w := range writes {
		capacity += len(w.Messages)
	}
	f := folder{slots: make([]codec.Message, 0, capacity)}
	f.reset(state)
	for j, w := range writes {
		if err := f.apply(j, w); err != nil {
			return nil, err
		}
	}
	return f.result(), nil
}

// folder is the working state of ApplyMessages. slots only grows between
// resets; a removed message is a tombstone (dead) until result compacts, so
// a removal costs O(1) instead of a rescan of the list.
type folder struct {
	slots []codec.Message
	dead  []bool
	// index maps every live id to its latest slot.
	index map[string]int
	// dups holds the earlier live slots of ids that a base (the initial
	// state or an Overwrite) holds more than once. A fold never creates a
	// duplicate itself, so this is nil unless a seed brought one.
	dups map[string][]int
	// pending marks ids removed by the current write: true while the
	// removal stands, false once a later message of the write cancelled it.
	pending map[string]bool
	order   []string // pending ids in first-seen order
}

// reset makes base the whole list, as an Overwrite or a remove-all does.
func (f *folder) reset(base []codec.Message) {
	f.slots = append(f.slots[:0], base...)
	if cap(f.dead) >= len(base) {
		f.dead = f.dead[:len(base)]
		clear(f.dead)
	} else {
		f.dead = make([]bool, len(base), cap(f.slots))
	}
	// A fresh map rather than clear(): clearing costs the map's peak size,
	// so a remove-all in each of W writes would cost O(L x W).
	f.index = make(map[string]int, len(base))
	f.dups = nil
	for i, m := range base {
		if m.ID == "" {
			continue // unaddressable, but kept: it is part of the seed
		}
		if prev, ok := f.index[m.ID]; ok {
			if f.dups == nil {
				f.dups = make(map[string][]int)
			}
			f.dups[m.ID] = append(f.dups[m.ID], prev)
		}
		f.index[m.ID] = i
	}
}

func isRemoveAll(m *codec.Message) bool {
	return m.Type == codec.Remove && m.ID == codec.RemoveAll
}

func (f *folder) apply(j int, w MessageUpdate) error {
	if w.Overwrite {
		for i := range w.Messages {
			m := &w.Messages[i]
			if m.ID == "" {
				return fmt.Errorf("%w: %s message in Overwrite (write %d, message %d)", ErrNoID, m.Type, j, i)
			}
			if m.Type == codec.Remove {
				return fmt.Errorf("%w: remove marker %q inside an Overwrite (write %d, message %d)", ErrBadValue, m.ID, j, i)
			}
		}
		f.reset(w.Messages)
		return nil
	}
	start := 0
	for i := len(w.Messages) - 1; i >= 0; i-- {
		if isRemoveAll(&w.Messages[i]) {
			f.reset(nil)
			start = i + 1
			break
		}
	}
	for i := start; i < len(w.Messages); i++ {
		m := &w.Messages[i]
		if m.ID == "" {
			return fmt.Errorf("%w: %s message (write %d, message %d)", ErrNoID, m.Type, j, i)
		}
		pos, exists := f.index[m.ID]
		if m.Type == codec.Remove {
			if !exists {
				return fmt.Errorf("%w %q (write %d, message %d)", ErrUnknownID, m.ID, j, i)
			}
			if f.pending == nil {
				f.pending = make(map[string]bool)
			}
			if _, seen := f.pending[m.ID]; !seen {
				f.order = append(f.order, m.ID)
			}
			f.pending[m.ID] = true
			continue
		}
		if exists {
			if f.pending[m.ID] {
				f.pending[m.ID] = false
			}
			f.slots[pos] = *m
			continue
		}
		f.index[m.ID] = len(f.slots)
		f.slots = append(f.slots, *m)
		f.dead = append(f.dead, false)
	}
	for _, id := range f.order {
		if f.pending[id] {
			f.dead[f.index[id]] = true
			for _, p := range f.dups[id] {
				f.dead[p] = true
			}
			delete(f.dups, id)
			delete(f.index, id)
		}
		// Deleting the write's own keys keeps this O(write), where clear()
		// would cost the map's peak size on every write.
		delete(f.pending, id)
	}
	f.order = f.order[:0]
	return nil
}

// appendLive appends the messages that are not tombstones to dst.
func (f *folder) appendLive(dst []codec.Message) []codec.Message {
	for i := range f.slots {
		if !f.dead[i] {
			dst = append(dst, f.slots[i])
		}
	}
	return dst
}

// result compacts the tombstones away in place: slots is ours alone.
func (f *folder) result() []codec.Message {
	out := f.appendLive(f.slots[:0]) // writes never pass the slot being read
	clear(f.slots[len(out):])        // let dropped messages be collected
	if out == nil {
		out = []codec.Message{}
	}
	return out
}
