package channels

import "github.com/agentstate/agentstate/codec"

// Stepper is a Channel that can fold a chain of steps onto one state
// without rebuilding its working state from the value at every step:
// verify's replay of a thread folds every checkpoint's writes onto its
// parent's state, and from the value each time that costs O(state) a step.
type Stepper interface {
	Channel
	// Start returns a StepFolder whose value is state (nil: the channel
	// is empty).
	Start(state any) (StepFolder, error)
}

// StepFolder folds one step after another onto a state.
type StepFolder interface {
	// Step folds one step's updates, as state = Fold(ch, state, updates)
	// would (an Overwrite starts the fold over, and what lies before the
	// last one is not read). After an error the folder is of no further use.
	Step(updates []any) error
	// Value returns the current state as a new value, O(state).
	Value() any
}

// Start implements Stepper: a folder over ApplyMessages's working state,
// kept from step to step (ApplyMessages is batching invariant).
func (Messages) Start(state any) (StepFolder, error) {
	s, err := messageState(state)
	if err != nil {
		return nil, err
	}
	m := &messageFolder{f: folder{slots: make([]codec.Message, 0, len(s))}}
	m.f.reset(s)
	return m, nil
}

type messageFolder struct{ f folder }

// Step folds updates as Fold does: from the last Overwrite, with the
// positions of errors counted from there.
func (m *messageFolder) Step(updates []any) error {
	ws, err := messageUpdates(updates[max(lastOverwrite(Messages{}, updates), 0):])
	if err != nil {
		return err
	}
	for j, w := range ws {
		if err := m.f.apply(j, w); err != nil {
			return err
		}
	}
	return nil
}

// Value copies the live messages out; the folder goes on with its slots.
func (m *messageFolder) Value() any {
	return m.f.appendLive(make([]codec.Message, 0, len(m.f.slots)))
}
