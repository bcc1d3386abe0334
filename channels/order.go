package channels

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// TaskWrite is one write of a task to one channel within a step, as
// put_writes stores it: Idx is the write's position in the task's list.
type TaskWrite struct {
	TaskID string
	Idx    int
	Value  any
}

// CompareWrites orders writes by (TaskID, Idx), for slices.SortFunc. Task
// ids compare byte by byte, which for UTF-8 is code point order (Python's
// str order) and SQLite's BINARY collation, so an ORDER BY task_id, idx in
// SQL and this function agree. (JavaScript's default sort compares UTF-16
// units and differs for characters above U+FFFF.)
func CompareWrites(a, b TaskWrite) int {
	if c := strings.Compare(a.TaskID, b.TaskID); c != 0 {
		return c
	}
	return cmp.Compare(a.Idx, b.Idx)
}

// OrderStep returns the values of one step's writes to ch in the order they
// apply: (task_id, idx), whatever order the tasks finished in, so that a live
// commit and a replay of the stored writes fold the same sequence (LangGraph
// Python's #8382 is the two orders differing). It refuses a step that
// LangGraph refuses: two writes with the same (task_id, idx)
// (ErrDuplicateWrite) and more than one write that replaces the whole value
// (ErrConcurrentUpdate), that is two Overwrites or two writes to a LastValue
// channel. writes is not modified.
//
// Inside a step, writes apply one after another: an Overwrite discards the
// writes ordered before it and those after it apply on top. LangGraph's
// channels disagree here (BinaryOperatorAggregate drops every other write of
// the step, DeltaChannel applies them all on top live but only the later ones
// on replay); the sequential rule is the one a replay can reproduce.
func OrderStep(ch Channel, writes []TaskWrite) ([]any, error) {
	if ch == nil {
		return nil, fmt.Errorf("%w: nil channel", ErrBadValue)
	}
	sorted := slices.Clone(writes)
	slices.SortStableFunc(sorted, CompareWrites)
	values := make([]any, len(sorted))
	lastOverwrite := -1
	for i, w := range sorted {
		if i > 0 && CompareWrites(sorted[i-1], w) == 0 {
			return nil, fmt.Errorf("%w: task %q idx %d", ErrDuplicateWrite, w.TaskID, w.Idx)
		}
		if ch.IsOverwrite(w.Value) {
			if lastOverwrite >= 0 {
				prev := sorted[lastOverwrite]
				return nil, fmt.Errorf("%w: task %q idx %d and task %q idx %d both replace the whole value",
					ErrConcurrentUpdate, prev.TaskID, prev.Idx, w.TaskID, w.Idx)
			}
			lastOverwrite = i
		}
		values[i] = w.Value
	}
	return values, nil
}
