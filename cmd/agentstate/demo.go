package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
)

const demoThread = "demo"

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", "demo [--db FILE] [--json]", stdout)
	path := fs.String("db", "agentstate.db", "file to write the demo conversation to (created in delta mode, K=4, if new)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if err := notDir(*path); err != nil {
		return err
	}
	opts := engine.DefaultOptions()
	opts.Mode, opts.SnapshotEvery = channels.ModeDelta, 4
	if _, err := os.Stat(*path); err == nil {
		opts.Mode = channels.ModeAuto // an existing file keeps its mode
	}
	db, err := engine.Open(ctx, *path, &opts)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.DeleteThread(ctx, demoThread); err != nil {
		return err
	}
	d, err := writeDemo(ctx, db)
	if err != nil {
		return err
	}
	head, err := db.State(ctx, engine.Config{ThreadID: demoThread})
	if err != nil {
		return err
	}
	var history []engine.State
	for s, err := range db.StateHistory(ctx, demoThread, engine.HistoryOptions{}) {
		if err != nil {
			return err
		}
		history = append(history, s)
	}
	if _, err := db.CheckpointWAL(ctx); err != nil {
		return err
	}
	info, err := db.Info(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{
			"file": info, "thread": demoThread, "head": head, "history": len(history),
			"forked_from": d.forkedFrom,
		})
	}
	fmt.Fprintf(stdout, "Wrote thread %q to %s (%s mode", demoThread, *path, info.Mode)
	if info.Mode == channels.ModeDelta {
		fmt.Fprintf(stdout, ", K=%d", info.SnapshotEvery)
	}
	fmt.Fprintf(stdout, "): %d checkpoints, a tool call, a fork from checkpoint %s and a compaction.\n\n", len(history), short(d.forkedFrom))
	fmt.Fprintln(stdout, "State of the head:")
	printMessages(stdout, head.Values[engine.MessagesChannel])
	fmt.Fprintln(stdout, "\nHistory, newest first:")
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  checkpoint\tparent\tstep\tsource\tmessages\tstored")
	for _, s := range history {
		parent := "-"
		if s.ParentConfig != nil {
			parent = short(s.ParentConfig.CheckpointID)
		}
		ms, _ := s.Values[engine.MessagesChannel].([]codec.Message)
		stored := "-"
		if len(s.Stored) > 0 {
			stored = strings.Join(s.Stored, ",")
		}
		fmt.Fprintf(tw, "  %s\t%s\t%v\t%v\t%d\t%s\n", short(s.Config.CheckpointID), parent, s.Metadata["step"], s.Metadata["source"], len(ms), stored)
	}
	tw.Flush()
	fmt.Fprintln(stdout, "\nStorage:")
	tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  file bytes\t%d\n", info.FileBytes)
	for _, t := range []string{"checkpoints", "blobs", "writes"} {
		fmt.Fprintf(tw, "  rows %s\t%d\n", t, info.Rows[t])
	}
	tw.Flush()
	fmt.Fprintf(stdout, "\nLook around: %s info %s\n", selfCommand(), shellQuote(*path))
	return nil
}

// selfCommand is how the user can run this program again from the same
// directory: as they started it when that was through PATH or a path, and
// with go run when it was go run's build (go run leaves no binary behind).
func selfCommand() string {
	arg0 := os.Args[0]
	if !strings.ContainsRune(arg0, filepath.Separator) {
		return shellQuote(arg0) // found on PATH
	}
	exe, _ := os.Executable()
	if strings.Contains(filepath.ToSlash(exe), "/go-build") {
		if _, err := os.Stat(filepath.Join("cmd", "agentstate", "main.go")); err == nil {
			return "go run ./cmd/agentstate"
		}
		return "go run github.com/agentstate/agentstate/cmd/agentstate@latest"
	}
	return shellQuote(arg0)
}

type demoResult struct{ forkedFrom string }

// writeDemo records a short agent conversation: a system prompt, a question
// answered with a tool call, a follow-up, then a second thought (a fork
// from before the follow-up) and a compaction of the history.
func writeDemo(ctx context.Context, db *engine.DB) (demoResult, error) {
	var d demoResult
	step := func(parent, task string, ms ...codec.Message) (engine.Config, error) {
		return db.Commit(ctx, demoThread, engine.Step{Parent: parent, RunID: "run-1", Tasks: []engine.TaskWrites{
			{TaskID: task, Writes: []engine.ChannelWrite{{Channel: engine.MessagesChannel, Value: ms}}},
		}})
	}
	turns := []struct {
		task string
		msg  codec.Message
	}{
		{"input", codec.Message{ID: "sys", Type: codec.System, Content: "You are a travel assistant. Use tools for live data."}},
		{"input", codec.Message{ID: "q1", Type: codec.Human, Content: "What is the weather in Lisbon tomorrow?"}},
		{"agent", codec.Message{ID: "a1", Type: codec.AI, Content: "", ToolCalls: []codec.ToolCall{{ID: "call-1", Name: "weather", Args: map[string]any{"city": "Lisbon", "day": "tomorrow"}}},
			UsageMetadata: &codec.UsageMetadata{InputTokens: 42, OutputTokens: 12, TotalTokens: 54}}},
		{"tools", codec.Message{ID: "t1", Type: codec.Tool, Name: "weather", ToolCallID: "call-1", Content: `{"high": 24, "low": 16, "sky": "sunny"}`}},
		{"agent", codec.Message{ID: "a2", Type: codec.AI, Content: "Sunny tomorrow in Lisbon, between 16 and 24 degrees."}},
		{"input", codec.Message{ID: "q2", Type: codec.Human, Content: "And should I pack an umbrella?"}},
		{"agent", codec.Message{ID: "a3", Type: codec.AI, Content: "No need: no rain is expected."}},
	}
	var cfg engine.Config
	var beforeQ2 engine.Config
	for _, t := range turns {
		if t.msg.ID == "q2" {
			beforeQ2 = cfg
		}
		var err error
		if cfg, err = step("", t.task, t.msg); err != nil {
			return d, err
		}
	}
	// Second thoughts: go back to before the follow-up and ask another one.
	fork, err := db.Fork(ctx, beforeQ2)
	if err != nil {
		return d, err
	}
	d.forkedFrom = beforeQ2.CheckpointID
	if cfg, err = step(fork.CheckpointID, "input", codec.Message{ID: "q2b", Type: codec.Human, Content: "What about the day after?"}); err != nil {
		return d, err
	}
	if cfg, err = step(cfg.CheckpointID, "agent", codec.Message{ID: "a3b", Type: codec.AI, Content: "Also sunny, a little warmer."}); err != nil {
		return d, err
	}
	// Compaction keeps the system prompt and a summary of the rest.
	summary := []codec.Message{
		{ID: "sys", Type: codec.System, Content: "You are a travel assistant. Use tools for live data."},
		{ID: "summary-1", Type: codec.System, Content: "Summary: the user plans a trip to Lisbon; the next two days are sunny (16-25 degrees)."},
	}
	if _, err := db.Compact(ctx, cfg, engine.MessagesChannel, summary); err != nil {
		return d, err
	}
	return d, nil
}

func printMessages(w io.Writer, v any) {
	ms, _ := v.([]codec.Message)
	for _, m := range ms {
		text := m.Text()
		if len(m.ToolCalls) > 0 {
			text = fmt.Sprintf("calls %s(%v)", m.ToolCalls[0].Name, m.ToolCalls[0].Args)
		}
		fmt.Fprintf(w, "  %-7s %-10s %s\n", m.Type, m.ID, text)
	}
}

// short is the tail of a checkpoint id: UUIDv7 ids made in the same
// millisecond share their head.
func short(id string) string {
	if len(id) > 12 {
		return "…" + id[len(id)-12:]
	}
	return id
}
