package channels

import (
	"fmt"
	"slices"

	"github.com/agentstate/agentstate/codec"
)

// naiveApply is the reference reducer: LangGraph's add_messages applied one
// write at a time, copying the list and rebuilding the id index for every
// write, O(len(state) x writes). It follows LangGraph's code line by line
// and departs from it only where the package documents a choice: the rest of
// a write after remove-all is merged into the empty list instead of being
// returned raw, ids are never invented, and an Overwrite holds no markers.
func naiveApply(state []codec.Message, writes []MessageUpdate) ([]codec.Message, error) {
	cur := slices.Clone(state)
	for j, w := range writes {
		var err error
		if cur, err = naiveOne(cur, w); err != nil {
			return nil, fmt.Errorf("write %d: %w", j, err)
		}
	}
	if cur == nil {
		cur = []codec.Message{}
	}
	return cur, nil
}

func naiveOne(left []codec.Message, w MessageUpdate) ([]codec.Message, error) {
	if w.Overwrite {
		for _, m := range w.Messages {
			if m.ID == "" {
				return nil, ErrNoID
			}
			if m.Type == codec.Remove {
				return nil, ErrBadValue
			}
		}
		return slices.Clone(w.Messages), nil
	}
	right := w.Messages
	removeAll := -1
	for i, m := range right {
		if m.Type == codec.Remove && m.ID == codec.RemoveAll {
			removeAll = i
		}
	}
	if removeAll >= 0 {
		left, right = nil, right[removeAll+1:]
	}
	merged := slices.Clone(left)
	byID := make(map[string]int, len(merged))
	for i, m := range merged {
		if m.ID != "" {
			byID[m.ID] = i
		}
	}
	toRemove := map[string]bool{}
	for _, m := range right {
		if m.ID == "" {
			return nil, ErrNoID
		}
		if i, ok := byID[m.ID]; ok {
			if m.Type == codec.Remove {
				toRemove[m.ID] = true
			} else {
				delete(toRemove, m.ID)
				merged[i] = m
			}
			continue
		}
		if m.Type == codec.Remove {
			return nil, fmt.Errorf("%w %q", ErrUnknownID, m.ID)
		}
		byID[m.ID] = len(merged)
		merged = append(merged, m)
	}
	out := make([]codec.Message, 0, len(merged))
	for _, m := range merged {
		if m.ID == "" || !toRemove[m.ID] {
			out = append(out, m)
		}
	}
	return out, nil
}
