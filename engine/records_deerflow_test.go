package engine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/engine/records"
	"github.com/google/go-cmp/cmp"
)

// What DeerFlow's stores need of the record surfaces beyond the first
// contract: a run's messages paged both ways, the last visible AI reply of
// each run, a caller's created_at kept, DeerFlow's pin key and moving a
// thread to another owner.

func TestRunMessagesPageBothWays(t *testing.T) {
	db, _ := openRec(t, nil)
	e := db.Events()
	// seq 1..12 on one thread: runs r1 (1..6) and r2 (7..12); messages at
	// odd seqs, traces at even ones.
	var batch []records.Event
	for i := 1; i <= 12; i++ {
		run := "r1"
		if i > 6 {
			run = "r2"
		}
		ev := msg("t", run, i)
		if i%2 == 0 {
			ev = records.Event{ThreadID: "t", RunID: run, EventType: "llm.trace", Category: records.CategoryTrace}
		}
		batch = append(batch, ev)
	}
	if _, err := e.PutBatch(rctx, batch); err != nil {
		t.Fatal(err)
	}
	i64 := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name string
		run  string
		q    records.MessageQuery
		want []int64
	}{
		{"latest", "r2", records.MessageQuery{}, []int64{7, 9, 11}},
		{"latest limited", "r2", records.MessageQuery{Limit: 2}, []int64{9, 11}},
		{"before", "r2", records.MessageQuery{Limit: 1, BeforeSeq: i64(11)}, []int64{9}},
		{"after", "r1", records.MessageQuery{Limit: 2, AfterSeq: i64(1)}, []int64{3, 5}},
		{"after the run's last", "r1", records.MessageQuery{AfterSeq: i64(5)}, []int64{}},
		{"unknown run", "r3", records.MessageQuery{}, []int64{}},
	} {
		got, err := e.ListRunMessages(rctx, "t", tc.run, tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, seqs(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	if _, err := e.ListRunMessages(rctx, "t", "r1", records.MessageQuery{BeforeSeq: i64(3), AfterSeq: i64(1)}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("both cursors: %v", err)
	}
	if _, err := e.ListRunMessages(rctx, "", "r1", records.MessageQuery{}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("no thread id: %v", err)
	}
}

func TestLastVisibleAISeqSkipsMiddlewareAndOtherTypes(t *testing.T) {
	db, _ := openRec(t, nil)
	e := db.Events()
	ai := func(run, typ, caller string) records.Event {
		ev := records.Event{ThreadID: "t", RunID: run, EventType: typ, Category: records.CategoryMessage}
		if caller != "" {
			ev.Metadata = map[string]any{"caller": caller}
		}
		return ev
	}
	evs := []records.Event{
		ai("r1", "llm.ai.response", "lead_agent"), // 1
		ai("r1", "llm.ai.response", ""),           // 2: visible, the last one of r1
		ai("r1", "llm.ai.response", "middleware:summarize"),
		ai("r1", "llm.human.input", ""),
		ai("r2", "ai_message", "subagent"), // 5: visible
		{ThreadID: "t", RunID: "r2", EventType: "llm.ai.response", Category: records.CategoryTrace},
		ai("r3", "llm.ai.response", "middleware:title"),
	}
	// Enough hidden replies after r2's visible one to need a second page.
	for range 70 {
		evs = append(evs, ai("r2", "llm.ai.response", "middleware:x"))
	}
	if _, err := e.PutBatch(rctx, evs); err != nil {
		t.Fatal(err)
	}
	got, err := e.LastVisibleAISeq(rctx, "t", []string{"r1", "r2", "r3", "r4", "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int64{"r1": 2, "r2": 5}, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if got, err := e.LastVisibleAISeq(rctx, "t", nil); err != nil || len(got) != 0 {
		t.Fatalf("no runs: %v %v", got, err)
	}
	if _, err := e.LastVisibleAISeq(rctx, "t", make([]string, maxVisibleRuns+1)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("too many runs: %v", err)
	}
}

func TestEventKeepsTheCallersCreatedAt(t *testing.T) {
	db, clk := openRec(t, nil)
	e := db.Events()
	at := time.Date(2025, 3, 4, 5, 6, 7, 123456000, time.UTC)
	ev := msg("t", "r", "x")
	ev.CreatedAt = at
	got, err := e.PutBatch(rctx, []records.Event{ev, msg("t", "r", "y")})
	if err != nil {
		t.Fatal(err)
	}
	if !got[0].CreatedAt.Equal(at) || !got[1].CreatedAt.Equal(clk.Now()) {
		t.Fatalf("put: %v %v", got[0].CreatedAt, got[1].CreatedAt)
	}
	read, err := e.ListMessages(rctx, "t", records.MessageQuery{})
	if err != nil || len(read) != 2 || !read[0].CreatedAt.Equal(at) {
		t.Fatalf("read back: %v %v", read, err)
	}
}

func TestThreadPinnedByDeerFlowsKeyAndSetOwner(t *testing.T) {
	db, clk := openRec(t, nil)
	th := db.Threads()
	alice := User("alice")
	if _, err := th.Create(rctx, alice, records.NewThread{ThreadID: "old", Metadata: map[string]any{"deerflow_pinned": true}}); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Second)
	if _, err := th.Create(rctx, alice, records.NewThread{ThreadID: "new"}); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Second)
	if _, err := th.Create(rctx, alice, records.NewThread{ThreadID: "newest", Metadata: map[string]any{"deerflow_pinned": 1}}); err != nil {
		t.Fatal(err)
	}
	ids := func() []string {
		ts, err := th.Search(rctx, alice, records.ThreadQuery{})
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, x := range ts {
			out = append(out, x.ThreadID)
		}
		return out
	}
	if diff := cmp.Diff([]string{"old", "newest", "new"}, ids()); diff != "" {
		t.Fatalf("pinned first, 1 is not true (-want +got):\n%s", diff)
	}
	if err := th.MergeMetadata(rctx, alice, "old", map[string]any{"deerflow_pinned": false}, false); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"newest", "new", "old"}, ids()); diff != "" {
		t.Fatalf("unpinned (-want +got):\n%s", diff)
	}

	if err := th.SetOwner(rctx, User("bob"), "old", "carol"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another owner's thread: %v", err)
	}
	if err := th.SetOwner(rctx, alice, "old", ""); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("empty new owner: %v", err)
	}
	if err := th.SetOwner(rctx, AnyOwner, "old", "carol"); err != nil {
		t.Fatal(err)
	}
	if _, err := th.Get(rctx, alice, "old"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("old owner still sees it: %v", err)
	}
	got, err := th.Get(rctx, User("carol"), "old")
	if err != nil || got.UserID != "carol" {
		t.Fatalf("new owner: %+v %v", got, err)
	}
	if r, err := db.Verify(rctx, admin.VerifyOptions{}); err != nil || !r.OK {
		t.Fatalf("verify: %+v %v", r, err)
	}
}

func TestRunCreatedAtModelProgressAndActiveList(t *testing.T) {
	db, clk := openRec(t, nil)
	r := db.Runs()
	old := clk.Now().Add(-time.Hour)
	c, err := r.Create(rctx, records.NewRun{RunID: "a", ThreadID: "t1", CreatedAt: old})
	if err != nil || !c.Run.CreatedAt.Equal(old) {
		t.Fatalf("create: %+v %v", c.Run.CreatedAt, err)
	}
	if _, err := r.Create(rctx, records.NewRun{RunID: "b", ThreadID: "t2", Status: records.RunRunning}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Create(rctx, records.NewRun{RunID: "c", ThreadID: "t3"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Complete(rctx, "c", records.RunSuccess, "", records.RunTotals{}); err != nil {
		t.Fatal(err)
	}
	ids := func(q records.ActiveQuery) []string {
		runs, err := r.ListActive(rctx, q)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, x := range runs {
			out = append(out, x.RunID)
		}
		return out
	}
	if diff := cmp.Diff([]string{"a", "b"}, ids(records.ActiveQuery{})); diff != "" {
		t.Fatalf("active (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a"}, ids(records.ActiveQuery{PendingOnly: true})); diff != "" {
		t.Fatalf("pending (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a"}, ids(records.ActiveQuery{Before: old.Add(time.Minute)})); diff != "" {
		t.Fatalf("before (-want +got):\n%s", diff)
	}

	if err := r.SetModelName(rctx, "a", "gpt-x"); err != nil {
		t.Fatal(err)
	}
	if err := r.SetModelName(rctx, "zz", "m"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing run: %v", err)
	}
	n := func(v int64) *int64 { return &v }
	s := func(v string) *string { return &v }
	if err := r.Progress(rctx, "b", records.RunProgress{TotalTokens: n(10), LastAIMessage: s("first"),
		TokenUsageByModel: map[string]records.ModelTokens{"m": {Total: 10}}}); err != nil {
		t.Fatal(err)
	}
	if err := r.Progress(rctx, "b", records.RunProgress{LLMCallCount: n(2)}); err != nil {
		t.Fatal(err)
	}
	got, err := r.Get(rctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != records.RunRunning || got.TotalTokens != 10 || got.LLMCallCount != 2 || got.LastAIMessage != "first" || got.TokenUsageByModel["m"].Total != 10 {
		t.Fatalf("progress kept the omitted fields? %+v", got)
	}
	if u, err := r.TokenUsage(rctx, "t2", true); err != nil || u.TotalTokens != 10 {
		t.Fatalf("usage with active: %+v %v", u, err)
	}
	if err := r.Progress(rctx, "c", records.RunProgress{TotalTokens: n(99)}); !errors.Is(err, ErrConflict) {
		t.Fatalf("ended run: %v", err)
	}
	if err := r.Progress(rctx, "b", records.RunProgress{TotalTokens: n(-1)}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("negative: %v", err)
	}
	if a, _ := r.Get(rctx, "a"); a.ModelName != "gpt-x" {
		t.Fatalf("model: %q", a.ModelName)
	}
}

func TestEventTraceLimitPerCall(t *testing.T) {
	db, _ := openRec(t, nil)
	e := db.Events().WithTraceContentLimit(100)
	long := strings.Repeat("é", 80) // 160 bytes
	got, err := e.PutBatch(rctx, []records.Event{
		{ThreadID: "t", RunID: "r", EventType: "llm_end", Category: records.CategoryTrace, Content: long},
		{ThreadID: "t", RunID: "r", EventType: "ai", Category: records.CategoryMessage, Content: long},
	})
	if err != nil {
		t.Fatal(err)
	}
	if s := got[0].Content.(string); len(s) != 100 || got[0].Metadata[records.MetaContentTruncated] != true || got[0].Metadata[records.MetaOriginalByteLength] != int64(160) {
		t.Fatalf("trace: %d bytes, %v", len(s), got[0].Metadata)
	}
	if got[1].Content != long {
		t.Fatal("a message was cut")
	}
	// The handle's own limit (10 KiB by default) is untouched.
	if ev, err := db.Events().Put(rctx, records.Event{ThreadID: "t", RunID: "r", EventType: "x", Category: records.CategoryTrace, Content: long}); err != nil || ev.Content != long {
		t.Fatalf("default limit: %v %v", ev.Content, err)
	}
	if _, err := db.Events().WithTraceContentLimit(-1).Put(rctx, msg("t", "r", "x")); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("negative limit: %v", err)
	}
}
