package engine_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/engine/records"
)

// Example_records shows the four record surfaces of one file: the store,
// runs, events and threads. (The README quick start is this example.)
func Example_records() {
	ctx := context.Background()
	db, err := engine.Open(ctx, engine.Memory, nil)
	if err != nil {
		panic(err)
	}
	defer db.Close()

	// Store: LangGraph BaseStore semantics, optional TTL.
	ns := []string{"users", "alice", "memories"}
	db.Store().Put(ctx, ns, "m1", map[string]any{"text": "likes tea", "score": 7}, records.WithTTL(24*time.Hour))
	items, _ := db.Store().Search(ctx, records.SearchOp{
		Prefix: []string{"users", "alice"},
		Filter: map[string]any{"score": map[string]any{"$gte": 5}},
	})
	fmt.Println("memories:", len(items), items[0].Value["text"])

	// Threads: every call is scoped to an owner.
	alice := engine.User("alice")
	th, _ := db.Threads().Create(ctx, alice, records.NewThread{DisplayName: "Trip plan"})
	_, err = db.Threads().Get(ctx, engine.User("bob"), th.ThreadID)
	fmt.Println("bob sees alice's thread:", !errors.Is(err, engine.ErrNotFound))

	// Runs: one active run per thread, enforced by the database.
	runs := db.Runs()
	c, _ := runs.Create(ctx, records.NewRun{ThreadID: th.ThreadID, ModelName: "gpt-x", Status: records.RunRunning})
	_, err = runs.Create(ctx, records.NewRun{ThreadID: th.ThreadID})
	fmt.Println("second active run refused:", errors.Is(err, engine.ErrConflict))

	// Events: seq is allocated in the write transaction, gap-free per thread.
	ev := db.Events()
	ev.Put(ctx, records.Event{ThreadID: th.ThreadID, RunID: c.Run.RunID, EventType: "llm.human.input", Category: records.CategoryMessage, Content: "Plan a trip"})
	ev.Put(ctx, records.Event{ThreadID: th.ThreadID, RunID: c.Run.RunID, EventType: "llm.ai.response", Category: records.CategoryMessage, Content: "Sure!"})
	page, _ := ev.ListMessages(ctx, th.ThreadID, records.MessageQuery{Limit: 50})
	fmt.Println("messages:", page[0].Seq, page[0].Content, "/", page[1].Seq, page[1].Content)

	runs.Complete(ctx, c.Run.RunID, records.RunSuccess, "", records.RunTotals{
		TotalInputTokens: 12, TotalOutputTokens: 3, TotalTokens: 15, LLMCallCount: 1, LeadAgentTokens: 15,
		TokenUsageByModel: map[string]records.ModelTokens{"gpt-x": {Input: 12, Output: 3, Total: 15}},
		MessageCount:      2, FirstHumanMessage: "Plan a trip", LastAIMessage: "Sure!",
	})
	usage, _ := runs.TokenUsage(ctx, th.ThreadID, false)
	fmt.Println("tokens:", usage.TotalTokens, "by model:", usage.ByModel["gpt-x"].Total)

	// API boundary: internal channels and hidden inline images stay server-side.
	safe := engine.SafeForBrowser(map[string]any{"messages": []any{}, "__pregel_tasks": []any{}})
	fmt.Println("safe keys:", len(safe))
	// Output:
	// memories: 1 likes tea
	// bob sees alice's thread: false
	// second active run refused: true
	// messages: 1 Plan a trip / 2 Sure!
	// tokens: 15 by model: 15
	// safe keys: 1
}
