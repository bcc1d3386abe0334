package langgraph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
)

// Diff is one checkpoint whose state in the destination differs from the
// source's, or cannot be read.
type Diff struct {
	ThreadID     string `json:"thread_id"`
	CheckpointNS string `json:"checkpoint_ns"`
	CheckpointID string `json:"checkpoint_id"`
	Message      string `json:"message"`
}

// Compare is the import's promise, checked: it reads every thread of src
// that Import can read (with the same Options), each checkpoint's state as
// the import derives it from the source (DeltaChannels rebuilt, messages
// converted, other values decoded or kept as bytes), and the same
// checkpoint in db (DB.ReadState), and lists the checkpoints whose parent or
// state (as JSON) differ, or that db lacks. Threads the import cannot read
// are not compared. It only reads.
func Compare(ctx context.Context, db *engine.DB, src string, o Options) (checked int, diffs []Diff, err error) {
	if o.Into != IntoMessages {
		return compareProtocol(ctx, db, src, o)
	}
	s, threads, err := openThreads(ctx, src)
	if err != nil {
		return 0, nil, err
	}
	defer s.close()
	dbo := db.Options()
	prep := newPreparer(dbo.Schema, o.DeltaReducers)
	// Planning tells which threads the import can write; the values it
	// encodes are not kept, so the cheapest effort does.
	comp, err := codec.NewCompressor(codec.Fast, 0)
	if err != nil {
		return 0, nil, err
	}
	for _, th := range threads {
		if threadProblem(th) != nil {
			continue // not imported (importThreads)
		}
		t, err := readThread(ctx, s, prep, th)
		if err == nil {
			_, _, err = planThread(t, dbo, comp, o.OrphansAsRoots)
		}
		var p *Problem
		if errors.As(err, &p) {
			continue
		}
		if err != nil {
			return checked, diffs, err
		}
		for _, ns := range t.namespaces {
			known := map[string]bool{}
			for _, cp := range ns.cps {
				known[cp.id] = true
			}
			for _, cp := range ns.cps {
				if err := ctx.Err(); err != nil {
					return checked, diffs, err
				}
				checked++
				diff := func(format string, args ...any) {
					diffs = append(diffs, Diff{ThreadID: th, CheckpointNS: ns.ns, CheckpointID: cp.id, Message: fmt.Sprintf(format, args...)})
				}
				view, err := db.ReadState(ctx, engine.Config{ThreadID: th, CheckpointNS: ns.ns, CheckpointID: cp.id})
				if err != nil {
					diff("cannot be read: %v", err)
					continue
				}
				parent := ""
				if view.ParentConfig != nil {
					parent = view.ParentConfig.CheckpointID
				}
				if want := cp.parent; parent != want && known[want] {
					diff("parent %q, the source's is %q", parent, want)
				}
				want, err1 := json.Marshal(cp.values)
				got, err2 := json.Marshal(view.Values)
				if err1 != nil || err2 != nil {
					diff("cannot be compared: %v %v", err1, err2)
					continue
				}
				if !bytes.Equal(want, got) {
					diff("state differs: source %s, imported %s", clip(want), clip(got))
				}
			}
		}
	}
	return checked, diffs, nil
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}
