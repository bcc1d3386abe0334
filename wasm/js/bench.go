//go:build js && wasm

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
)

// The CLI's bench workload (cmd/agentstate/bench.go, text.go), run inside
// the js build so the README can compare it with the native figures:
// turns of a 200-byte human and an 800-byte AI message, each committed as
// one step on one thread, then 20 warm reads of the head. The text and ids
// are the CLI's, byte for byte; keep the two in sync.

func init() { ops["bench"] = opBench }

func opBench(ctx context.Context, h *handle, req []byte, _ in) (any, *out, error) {
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
		for _, m := range []codec.Message{
			{ID: fmt.Sprintf("human-%05d", i), Type: codec.Human, Content: benchSentence(uint64(2*i), 200)},
			{ID: fmt.Sprintf("ai-%05d", i), Type: codec.AI, Content: benchSentence(uint64(2*i+1), 800)},
		} {
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

var benchWords = strings.Fields(`the of and to in is that for it as with was on be at by this had not are but from or
have an they which one you were her all she there would their we him been has when who will more no if out so
said what up its about into than them can only other new some could time these two may then do first any my now
such like our over man me even most made after also did many before must through back years where much your way
well down should because each just those people how too little state good very make world still own see men work
long get here between both life being under never day same another know while last might us great old year off
come since against go came right used take three agent model tool call result answer question search file plan
step memory context thread checkpoint state message summary error retry weather report data table query user
assistant system reply update review draft final version branch merge deploy server client request response`)

func benchSentence(seed uint64, n int) string {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(benchWords[rng.IntN(len(benchWords))])
	}
	return b.String()[:n]
}
