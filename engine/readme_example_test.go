package engine_test

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
)

// Example_readme runs the README's Go quick start: readmeQuickStart holds
// every go block of README.md, verbatim and in order
// (TestREADMEGoBlocksAreCompiled checks that), in a temporary directory
// since it writes agent.db.
func Example_readme() {
	dir, err := os.MkdirTemp("", "agentstate-readme-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	wd, err := os.Getwd()
	if err != nil {
		log.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		log.Fatal(err)
	}
	defer os.Chdir(wd)
	readmeQuickStart()
	// Output:
	// 1 2
	// 0 1
	// -1 0
	// head before the fork: 2 Sunny, 24 degrees.
	// head after the rollback: What is the weather in Lisbon? run-2
	// memories: 1 likes tea
	// messages: 1 Sure!
	// tokens: 15 (12 input, 3 output)
	// safe: 1 false
}

func readmeQuickStart() {
	ctx := context.Background()
	opts := engine.DefaultOptions()
	opts.Mode, opts.SnapshotEvery, opts.AutoRetain = engine.ModeDelta, 10, true
	db, err := engine.Open(ctx, "agent.db", &opts) // engine.Memory for an in-memory file
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	// One step: the tasks' writes are reduced with add_messages semantics and
	// stored with the new checkpoint in one transaction.
	say := func(run, task string, m codec.Message) engine.Step {
		return engine.Step{RunID: run, Tasks: []engine.TaskWrites{{TaskID: task,
			Writes: []engine.ChannelWrite{{Channel: "messages", Value: []codec.Message{m}}}}}}
	}
	cfg, err := db.Commit(ctx, "thread-1", say("run-1", "input",
		codec.Message{Type: codec.Human, Content: "What is the weather in Lisbon?"})) // ids are assigned before storing
	if err != nil {
		log.Fatal(err)
	}
	_, err = db.Commit(ctx, "thread-1", say("run-2", "agent", codec.Message{Type: codec.AI, Content: "Sunny, 24 degrees."}))
	if err != nil {
		log.Fatal(err)
	}

	state, err := db.State(ctx, engine.Config{ThreadID: "thread-1"}) // the head
	if err != nil {
		log.Fatal(err)
	}
	msgs := state.Values["messages"].([]codec.Message) // both messages

	for s, err := range db.StateHistory(ctx, "thread-1", engine.HistoryOptions{Limit: 10}) { // newest first
		if err != nil {
			log.Fatal(err)
		}
		ms, _ := s.Values["messages"].([]codec.Message) // the root, before any step, has none
		fmt.Println(s.Metadata["step"], len(ms))
	}
	fork, err := db.Fork(ctx, cfg) // time travel: a new head copying cfg's state
	if err != nil {
		log.Fatal(err)
	}
	summary := []codec.Message{{Type: codec.System, Content: "The user asked about Lisbon's weather."}}
	_, err = db.Compact(ctx, fork, "messages", summary) // an Overwrite: the list becomes the summary
	if err != nil {
		log.Fatal(err)
	}
	_, err = db.Rollback(ctx, "thread-1", "run-2") // the state before run-2 (its first step's parent), as a new head
	if err != nil {
		log.Fatal(err)
	}

	// Store: LangGraph BaseStore semantics, optional TTL.
	ns := []string{"users", "alice", "memories"}
	err = db.Store().Put(ctx, ns, "m1", map[string]any{"text": "likes tea", "score": 7}, engine.WithTTL(24*time.Hour))
	items, err := db.Store().Search(ctx, engine.SearchOp{
		Prefix: []string{"users", "alice"},
		Filter: map[string]any{"score": map[string]any{"$gte": 5}},
	})

	// Threads: every call is scoped to an owner; another owner's thread is ErrNotFound.
	alice := engine.User("alice")
	th, err := db.Threads().Create(ctx, alice, engine.NewThread{DisplayName: "Trip plan"})

	// Runs: at most one pending/running run per thread, enforced by the database.
	c, err := db.Runs().Create(ctx, engine.NewRun{ThreadID: th.ThreadID, ModelName: "gpt-x", Status: engine.RunRunning})
	_, err = db.Runs().Create(ctx, engine.NewRun{ThreadID: th.ThreadID}) // *engine.ActiveRunError, errors.Is(err, engine.ErrConflict)

	// Events: seq is allocated inside the write transaction, gap-free per thread.
	_, err = db.Events().Put(ctx, engine.Event{ThreadID: th.ThreadID, RunID: c.Run.RunID,
		EventType: "llm.ai.response", Category: engine.CategoryMessage, Content: "Sure!"})
	page, err := db.Events().ListMessages(ctx, th.ThreadID, engine.MessageQuery{Limit: 50})

	// Totals left at zero are summed from the by-model breakdown: 12 input, 3 output.
	err = db.Runs().Complete(ctx, c.Run.RunID, engine.RunSuccess, "", engine.RunTotals{TotalTokens: 15,
		TokenUsageByModel: map[string]engine.ModelTokens{"gpt-x": {Input: 12, Output: 3, Total: 15}}})
	usage, err := db.Runs().TokenUsage(ctx, th.ThreadID, false)

	safe := engine.SafeForBrowser(state.Values) // no __pregel_* channels, no hidden inline images

	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("head before the fork:", len(msgs), msgs[1].Text())
	head, err := db.State(ctx, engine.Config{ThreadID: "thread-1"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("head after the rollback:", head.Values["messages"].([]codec.Message)[0].Text(), head.Metadata["rollback_of"])
	fmt.Println("memories:", len(items), items[0].Value["text"])
	fmt.Println("messages:", len(page), page[0].Content)
	fmt.Printf("tokens: %d (%d input, %d output)\n", usage.TotalTokens, usage.TotalInputTokens, usage.TotalOutputTokens)
	_, private := safe["__pregel_tasks"]
	fmt.Println("safe:", len(safe), private)
}

// TestREADMEGoBlocksAreCompiled: every go block of README.md is in
// readmeQuickStart, line for line (indentation aside), so the README's Go
// compiles and runs as printed.
func TestREADMEGoBlocksAreCompiled(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("readme_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(src), "\n") {
		lines = append(lines, strings.TrimSpace(l))
	}
	code := "\n" + strings.Join(lines, "\n") + "\n"
	var block []string
	in, n := false, 0
	sc := bufio.NewScanner(strings.NewReader(string(readme)))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case !in && l == "```go":
			in, block = true, nil
		case in && l == "```":
			in = false
			n++
			if want := "\n" + strings.Join(block, "\n") + "\n"; !strings.Contains(code, want) {
				t.Errorf("README.md go block %d is not in readmeQuickStart as written:\n%s", n, strings.Join(block, "\n"))
			}
		case in:
			block = append(block, strings.TrimSpace(l))
		}
	}
	if n < 2 {
		t.Fatalf("found %d go blocks in README.md", n)
	}
}

// readmePostgres is the README's PostgreSQL block: compiled here, never run
// (it names a server that does not exist; the postgres half of the tests
// opens real ones).
func readmePostgres(ctx context.Context, opts engine.Options) (*engine.DB, error) {
	db, err := engine.Open(ctx, "postgres://agent:secret@db.internal:5432/app?search_path=agentstate&sslmode=require", &opts)
	return db, err
}

var _ = readmePostgres
