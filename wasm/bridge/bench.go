//go:build js || (wasip1 && hostsqlite)

package bridge

import (
	"context"
	"time"

	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/internal/workload"
)

// The CLI's bench workload (workload.Turn, as cmd/agentstate/bench.go
// runs it), run inside the js build so the README can compare it with the
// native figures: turns of a human and an AI message, each committed as one
// step on one thread, then 20 warm reads of the head.

func opBench(ctx context.Context, h *handle, req []byte, _ in) (any, *Out, error) {
	var r struct {
		Turns int `json:"turns"`
	}
	if err := decodeJSON(req, &r); err != nil {
		return nil, nil, err
	}
	if r.Turns < 1 {
		return nil, nil, errArg("bench: turns must be >= 1")
	}
	const thread = "bench"
	var spent time.Duration
	for i := range r.Turns {
		start := time.Now()
		for _, m := range workload.Turn(i) {
			step := engine.Step{Tasks: []engine.TaskWrites{{TaskID: m.Type, Writes: []engine.ChannelWrite{{Channel: engine.MessagesChannel, Value: m}}}}}
			if _, err := h.db.Commit(ctx, thread, step); err != nil {
				return nil, nil, err
			}
		}
		spent += time.Since(start)
	}
	const warmReads = 20
	head := engine.Config{ThreadID: thread}
	if _, err := h.db.State(ctx, head); err != nil { // fill the caches
		return nil, nil, err
	}
	start := time.Now()
	for range warmReads {
		if _, err := h.db.State(ctx, head); err != nil {
			return nil, nil, err
		}
	}
	msf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return map[string]any{
		"turns":             r.Turns,
		"ms_per_turn":       msf(spent) / float64(r.Turns),
		"head_read_ms_warm": msf(time.Since(start)) / warmReads,
	}, nil, nil
}
