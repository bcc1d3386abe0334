package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/engine/records"
	"github.com/google/go-cmp/cmp"
)

func mustCreate(t testing.TB, db *DB, nr records.NewRun) records.Run {
	t.Helper()
	c, err := db.Runs().Create(rctx, nr)
	if err != nil {
		t.Fatalf("create %+v: %v", nr, err)
	}
	return c.Run
}

func listRunIDs(t testing.TB, db *DB, thread string) []string {
	t.Helper()
	ids := []string{}
	for run, err := range db.Runs().List(rctx, thread) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, run.RunID)
	}
	return ids
}

func TestRunCreateGetList(t *testing.T) {
	db, clk := openRec(t, nil)
	r := db.Runs()
	t0 := clk.Now()
	c, err := r.Create(rctx, records.NewRun{
		RunID: "r1", ThreadID: "t1", AssistantID: "lead", UserID: "u1", ModelName: "gpt-x",
		Metadata: map[string]any{"source": "api"}, Kwargs: map[string]any{"input": map[string]any{"q": "hi"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := records.Run{
		RunID: "r1", ThreadID: "t1", AssistantID: "lead", UserID: "u1", Status: records.RunPending, ModelName: "gpt-x",
		MultitaskStrategy: records.StrategyReject, Metadata: map[string]any{"source": "api"},
		Kwargs: map[string]any{"input": map[string]any{"q": "hi"}}, CreatedAt: t0, UpdatedAt: t0, Owner: r.Owner(),
	}
	if diff := cmp.Diff(records.Created{Run: want, New: true}, c); diff != "" {
		t.Fatalf("create (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(r.Owner(), db.Options().RunOwner+"#") {
		t.Fatalf("owner %q does not start with the RunOwner label", r.Owner())
	}
	got, err := r.Get(rctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("get (-want +got):\n%s", diff)
	}
	// Idempotent on run id: the second create returns the first run.
	again, err := r.Create(rctx, records.NewRun{RunID: "r1", ThreadID: "t1", ModelName: "other"})
	if err != nil || again.New || again.Run.ModelName != "gpt-x" {
		t.Fatalf("second create: %+v, %v", again, err)
	}
	// A run id belongs to one thread.
	if _, err := r.Create(rctx, records.NewRun{RunID: "r1", ThreadID: "t2"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("run id reused on another thread: %v", err)
	}
	if _, err := r.Get(rctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get missing: %v", err)
	}

	// List: newest first, across pages of 100, ties broken by insertion.
	for i := range 250 {
		if i%2 == 0 {
			clk.Add(time.Millisecond)
		}
		id := fmt.Sprintf("L%03d", i)
		mustCreate(t, db, records.NewRun{RunID: id, ThreadID: "list"})
		if err := r.SetStatus(rctx, id, records.RunSuccess, ""); err != nil {
			t.Fatal(err)
		}
	}
	var wantIDs []string
	for i := 249; i >= 0; i-- {
		wantIDs = append(wantIDs, fmt.Sprintf("L%03d", i))
	}
	if diff := cmp.Diff(wantIDs, listRunIDs(t, db, "list")); diff != "" {
		t.Fatalf("list (-want +got):\n%s", diff)
	}
	// Breaking out of the loop stops it.
	n := 0
	for range r.List(rctx, "list") {
		n++
		if n == 3 {
			break
		}
	}
	if n != 3 {
		t.Fatalf("early stop yielded %d", n)
	}
	if ids := listRunIDs(t, db, "empty"); len(ids) != 0 {
		t.Fatalf("list of an empty thread: %v", ids)
	}
}

func TestRunIdempotencyKey(t *testing.T) {
	db, _ := openRec(t, nil)
	r := db.Runs()
	a, err := r.Create(rctx, records.NewRun{ThreadID: "t", IdempotencyKey: "req-1"})
	if err != nil || !a.New || a.Run.RunID == "" {
		t.Fatalf("first: %+v %v", a, err)
	}
	// Same key, fresh run id: the first run comes back, nothing new is stored.
	b, err := r.Create(rctx, records.NewRun{ThreadID: "t", IdempotencyKey: "req-1"})
	if err != nil || b.New || b.Run.RunID != a.Run.RunID {
		t.Fatalf("second: %+v %v", b, err)
	}
	// Even after the first run ended.
	r.SetStatus(rctx, a.Run.RunID, records.RunSuccess, "")
	c, err := r.Create(rctx, records.NewRun{ThreadID: "t", IdempotencyKey: "req-1"})
	if err != nil || c.New || c.Run.RunID != a.Run.RunID {
		t.Fatalf("after success: %+v %v", c, err)
	}
	// The key is unique in the database (DeerFlow's RunStore): on another
	// thread it returns the first run, whose thread tells the caller so,
	// and stores nothing on the other thread.
	d, err := r.Create(rctx, records.NewRun{ThreadID: "t2", IdempotencyKey: "req-1"})
	if err != nil || d.New || d.Run.RunID != a.Run.RunID || d.Run.ThreadID != "t" {
		t.Fatalf("other thread: %+v %v", d, err)
	}
	if ids := listRunIDs(t, db, "t"); len(ids) != 1 {
		t.Fatalf("thread t has %d runs, want 1", len(ids))
	}
	if ids := listRunIDs(t, db, "t2"); len(ids) != 0 {
		t.Fatalf("thread t2 has runs %v, want none", ids)
	}
	// A put cannot give a second run the key either.
	before := dumpRecords(t, db)
	if _, err := r.Apply(rctx, records.RunOp{Op: records.OpPut, RunID: "p1", Run: records.NewRun{ThreadID: "t3", IdempotencyKey: "req-1"}}); !errors.Is(err, ErrConflict) {
		t.Fatalf("put with a used key: %v", err)
	}
	if diff := cmp.Diff(before, dumpRecords(t, db)); diff != "" {
		t.Fatalf("a refused put changed the file:\n%s", diff)
	}
}

// Creates with one key on different threads, from two handles at once: one
// run is created, every other create gets it back.
func TestRunIdempotencyKeyRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "race.db")
	dbs := []*DB{openTest(t, path, nil), openTest(t, path, nil)}
	for round := range 3 {
		key := fmt.Sprintf("key-%d", round)
		var wg sync.WaitGroup
		start := make(chan struct{})
		got := make([]records.Created, 6)
		errs := make([]error, 6)
		for g := range 6 {
			wg.Go(func() {
				<-start
				got[g], errs[g] = dbs[g%2].Runs().Create(rctx, records.NewRun{ThreadID: fmt.Sprintf("r%d-t%d", round, g), IdempotencyKey: key})
			})
		}
		close(start)
		wg.Wait()
		var first string
		for g := range got {
			if errs[g] != nil {
				t.Fatalf("round %d goroutine %d: %v", round, g, errs[g])
			}
			if got[g].New {
				if first != "" {
					t.Fatalf("round %d: two runs created with key %s", round, key)
				}
				first = got[g].Run.RunID
			}
		}
		for g := range got {
			if got[g].Run.RunID != first {
				t.Fatalf("round %d goroutine %d got run %s, want %s", round, g, got[g].Run.RunID, first)
			}
		}
	}
}

func TestRunOneActivePerThread(t *testing.T) {
	db, _ := openRec(t, nil)
	r := db.Runs()
	mustCreate(t, db, records.NewRun{RunID: "r1", ThreadID: "t", Status: records.RunRunning})
	before := dumpRecords(t, db)
	_, err := r.Create(rctx, records.NewRun{RunID: "r2", ThreadID: "t"})
	var active *ActiveRunError
	if !errors.As(err, &active) || !errors.Is(err, ErrConflict) {
		t.Fatalf("second active run: %v, want *ActiveRunError matching ErrConflict", err)
	}
	if diff := cmp.Diff(&ActiveRunError{ThreadID: "t", RunID: "r1", Status: records.RunRunning}, active); diff != "" {
		t.Fatalf("error fields (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, dumpRecords(t, db)); diff != "" {
		t.Fatalf("a refused create changed the file:\n%s", diff)
	}
	// Another thread is independent; an ended run frees the thread.
	mustCreate(t, db, records.NewRun{RunID: "o1", ThreadID: "other"})
	r.SetStatus(rctx, "r1", records.RunSuccess, "")
	mustCreate(t, db, records.NewRun{RunID: "r2", ThreadID: "t"})

	// The database itself refuses a second active run, whatever the caller.
	err = db.write(rctx, func(c *conn) error {
		return c.exec(`INSERT INTO runs(run_id, thread_id, status, created_at, updated_at) VALUES ('sneaky', 't', 'running', 0, 0)`)
	})
	if !errors.Is(err, driver.ErrUnique) {
		t.Fatalf("raw insert of a second active run: %v, want a UNIQUE constraint error", err)
	}
}

// TestRunCreateRace: 8 goroutines on two handles of one file create runs on
// one thread at once; exactly one wins and the others get ActiveRunError.
func TestRunCreateRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "race.db")
	dbs := []*DB{openTest(t, path, nil), openTest(t, path, nil)}
	for round := range 5 {
		thread := fmt.Sprintf("t%d", round)
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, 8)
		for g := range 8 {
			wg.Go(func() {
				<-start
				_, errs[g] = dbs[g%2].Runs().Create(rctx, records.NewRun{RunID: fmt.Sprintf("%s-g%d", thread, g), ThreadID: thread})
			})
		}
		close(start)
		wg.Wait()
		wins := 0
		for g, err := range errs {
			var active *ActiveRunError
			switch {
			case err == nil:
				wins++
			case errors.As(err, &active):
			default:
				t.Fatalf("round %d goroutine %d: %v", round, g, err)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d creates won, want exactly 1", round, wins)
		}
		if ids := listRunIDs(t, dbs[0], thread); len(ids) != 1 {
			t.Fatalf("round %d: thread holds runs %v", round, ids)
		}
	}
}

func TestRunTransitions(t *testing.T) {
	db, _ := openRec(t, nil)
	r := db.Runs()
	statuses := []records.RunStatus{records.RunPending, records.RunRunning, records.RunSuccess, records.RunError, records.RunTimeout, records.RunInterrupted}
	allowedMoves := map[records.RunStatus][]records.RunStatus{
		records.RunPending: {records.RunPending, records.RunRunning, records.RunSuccess, records.RunError, records.RunTimeout, records.RunInterrupted},
		records.RunRunning: {records.RunRunning, records.RunSuccess, records.RunError, records.RunTimeout, records.RunInterrupted},
		records.RunSuccess: {records.RunSuccess},
		records.RunError:   {records.RunError},
		records.RunTimeout: {records.RunTimeout},
		// DeerFlow's rollback path: the cancel acknowledged, then the
		// task's finalize records the error.
		records.RunInterrupted: {records.RunInterrupted, records.RunError},
	}
	i := 0
	for _, from := range statuses {
		for _, to := range statuses {
			i++
			id, thread := fmt.Sprintf("r%d", i), fmt.Sprintf("t%d", i)
			mustCreate(t, db, records.NewRun{RunID: id, ThreadID: thread})
			if from != records.RunPending {
				if err := r.SetStatus(rctx, id, from, "first"); err != nil {
					t.Fatalf("setup %s: %v", from, err)
				}
			}
			before := dumpRecords(t, db)
			err := r.SetStatus(rctx, id, to, "second")
			ok := slices.Contains(allowedMoves[from], to)
			if ok {
				if err != nil {
					t.Errorf("%s -> %s refused: %v", from, to, err)
				}
				got, _ := r.Get(rctx, id)
				wantErr := "second"
				if from == to && !isActive(to) {
					wantErr = "first" // a terminal status is final, text included
				}
				if got.Status != to || got.Error != wantErr {
					t.Errorf("%s -> %s: status %s error %q", from, to, got.Status, got.Error)
				}
				continue
			}
			var te *TransitionError
			if !errors.As(err, &te) || !errors.Is(err, ErrConflict) {
				t.Errorf("%s -> %s: err %v, want *TransitionError", from, to, err)
				continue
			}
			if diff := cmp.Diff(&TransitionError{RunID: id, From: from, To: to}, te); diff != "" {
				t.Errorf("%s -> %s error (-want +got):\n%s", from, to, diff)
			}
			if !strings.Contains(err.Error(), string(from)) || !strings.Contains(err.Error(), string(to)) {
				t.Errorf("error %q does not name the transition", err)
			}
			if diff := cmp.Diff(before, dumpRecords(t, db)); diff != "" {
				t.Errorf("%s -> %s: refused change wrote:\n%s", from, to, diff)
			}
		}
	}
	if err := r.SetStatus(rctx, "missing", records.RunRunning, ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing run: %v", err)
	}
	if err := r.SetStatus(rctx, "r1", "done", ""); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("unknown status: %v", err)
	}
}

func TestRunComplete(t *testing.T) {
	db, clk := openRec(t, nil)
	r := db.Runs()
	mustCreate(t, db, records.NewRun{RunID: "r1", ThreadID: "t", Status: records.RunRunning})
	long := strings.Repeat("é", 2500)
	totals := records.RunTotals{
		TotalInputTokens: 100, TotalOutputTokens: 50, TotalTokens: 150, LLMCallCount: 3,
		LeadAgentTokens: 120, SubagentTokens: 20, MiddlewareTokens: 10,
		TokenUsageByModel: map[string]records.ModelTokens{"m1": {Input: 100, Output: 40, Total: 140}, "m2": {Input: 0, Output: 10, Total: 10}},
		MessageCount:      4, FirstHumanMessage: long, LastAIMessage: "bye",
	}
	clk.Add(time.Second)
	if err := r.Complete(rctx, "r1", records.RunSuccess, "", totals); err != nil {
		t.Fatal(err)
	}
	got, _ := r.Get(rctx, "r1")
	want := totals
	want.FirstHumanMessage = strings.Repeat("é", 2000)
	if diff := cmp.Diff(want, got.RunTotals); diff != "" {
		t.Fatalf("totals (-want +got):\n%s", diff)
	}
	if got.Status != records.RunSuccess || !got.UpdatedAt.Equal(clk.Now()) {
		t.Fatalf("status %s updated %v", got.Status, got.UpdatedAt)
	}
	// A terminal status is final...
	err := r.Complete(rctx, "r1", records.RunError, "late", records.RunTotals{})
	var te *TransitionError
	if !errors.As(err, &te) || te.From != records.RunSuccess || te.To != records.RunError {
		t.Fatalf("complete over success: %v", err)
	}
	// ...but completing with the status the run has records the totals (a
	// run cancelled elsewhere, whose worker reports its usage afterwards).
	mustCreate(t, db, records.NewRun{RunID: "r2", ThreadID: "t", Status: records.RunRunning})
	r.SetStatus(rctx, "r2", records.RunInterrupted, "cancelled")
	if err := r.Complete(rctx, "r2", records.RunInterrupted, "cancelled", records.RunTotals{TotalTokens: 7}); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Get(rctx, "r2"); got.TotalTokens != 7 {
		t.Fatalf("totals after interrupted completion: %+v", got.RunTotals)
	}
	// An interrupted run may still end as an error (DeerFlow's rollback
	// path), but not as a success: that is a different outcome.
	if err := r.Complete(rctx, "r2", records.RunSuccess, "", records.RunTotals{TotalTokens: 9}); !errors.As(err, &te) || te.From != records.RunInterrupted {
		t.Fatalf("success over interrupted: %v", err)
	}
	if err := r.Complete(rctx, "r2", records.RunError, "rolled back", records.RunTotals{TotalTokens: 8}); err != nil {
		t.Fatalf("error over interrupted: %v", err)
	}
	if got, _ := r.Get(rctx, "r2"); got.Status != records.RunError || got.Error != "rolled back" || got.TotalTokens != 8 {
		t.Fatalf("after error over interrupted: %s %q %+v", got.Status, got.Error, got.RunTotals)
	}
	for _, bad := range []struct {
		name   string
		status records.RunStatus
		t      records.RunTotals
	}{
		{"active status", records.RunRunning, records.RunTotals{}},
		{"negative tokens", records.RunSuccess, records.RunTotals{TotalTokens: -1}},
		{"negative model tokens", records.RunSuccess, records.RunTotals{TokenUsageByModel: map[string]records.ModelTokens{"m": {Total: -1}}}},
		{"empty model name", records.RunSuccess, records.RunTotals{TokenUsageByModel: map[string]records.ModelTokens{"": {}}}},
	} {
		if err := r.Complete(rctx, "r2", bad.status, "", bad.t); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v", bad.name, err)
		}
	}
}

func TestRunInterruptAndRollbackStrategies(t *testing.T) {
	db, clk := openRec(t, nil)
	r := db.Runs()
	for _, strategy := range []records.Strategy{records.StrategyInterrupt, records.StrategyRollback} {
		thread := "t-" + string(strategy)
		mustCreate(t, db, records.NewRun{RunID: thread + "-1", ThreadID: thread, Status: records.RunRunning})
		clk.Add(time.Second)
		c, err := r.Create(rctx, records.NewRun{RunID: thread + "-2", ThreadID: thread, MultitaskStrategy: strategy})
		if err != nil {
			t.Fatal(err)
		}
		if !c.New || c.Interrupted != thread+"-1" || c.Run.Status != records.RunPending {
			t.Fatalf("%s: %+v", strategy, c)
		}
		old, _ := r.Get(rctx, thread+"-1")
		if old.Status != records.RunInterrupted || !strings.Contains(old.Error, thread+"-2") || !old.UpdatedAt.Equal(clk.Now()) {
			t.Fatalf("%s: old run %s %q %v", strategy, old.Status, old.Error, old.UpdatedAt)
		}
		// Nothing active: the strategy interrupts nothing.
		r.SetStatus(rctx, thread+"-2", records.RunSuccess, "")
		c, err = r.Create(rctx, records.NewRun{RunID: thread + "-3", ThreadID: thread, MultitaskStrategy: strategy})
		if err != nil || c.Interrupted != "" {
			t.Fatalf("%s without an active run: %+v %v", strategy, c, err)
		}
	}
	// Atomic: when the insert fails, the active run stays as it was. A
	// trigger makes the insert of run "boom" fail after the interrupt.
	err := db.write(rctx, func(c *conn) error {
		if onPG() {
			return c.d.ExecScript(`CREATE FUNCTION pg_temp.boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'boom'; END $$;
				CREATE TRIGGER boom BEFORE INSERT ON runs FOR EACH ROW WHEN (NEW.run_id = 'boom') EXECUTE FUNCTION pg_temp.boom()`, nil)
		}
		return c.exec(`CREATE TEMP TRIGGER boom BEFORE INSERT ON runs WHEN NEW.run_id = 'boom' BEGIN SELECT RAISE(ABORT, 'boom'); END`)
	})
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, db, records.NewRun{RunID: "live", ThreadID: "atomic", Status: records.RunRunning})
	before := dumpRecords(t, db)
	if _, err := r.Create(rctx, records.NewRun{RunID: "boom", ThreadID: "atomic", MultitaskStrategy: records.StrategyInterrupt}); err == nil {
		t.Fatal("the trigger did not fire")
	}
	if diff := cmp.Diff(before, dumpRecords(t, db)); diff != "" {
		t.Fatalf("a failed interrupt-create left changes:\n%s", diff)
	}
	if got, _ := r.Get(rctx, "live"); got.Status != records.RunRunning {
		t.Fatalf("active run is %s after the failed create", got.Status)
	}
}

func TestRunCreateValidation(t *testing.T) {
	db, _ := openRec(t, nil)
	before := dumpRecords(t, db)
	for _, nr := range []records.NewRun{
		{},
		{ThreadID: "t", Status: records.RunSuccess},
		{ThreadID: "t", Status: "bogus"},
		{ThreadID: "t", MultitaskStrategy: "enqueue"},
		{ThreadID: "t", RunID: strings.Repeat("x", 300)},
		{ThreadID: "t\x00"},
		{ThreadID: "t", Metadata: map[string]any{"f": make(chan int)}},
	} {
		if _, err := db.Runs().Create(rctx, nr); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%+v: %v, want ErrInvalidArgument", nr, err)
		}
	}
	if diff := cmp.Diff(before, dumpRecords(t, db)); diff != "" {
		t.Fatalf("refused creates wrote:\n%s", diff)
	}
}

func TestRunDelete(t *testing.T) {
	db, _ := openRec(t, nil)
	mustCreate(t, db, records.NewRun{RunID: "r", ThreadID: "t"})
	if err := db.Runs().Delete(rctx, "r"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Runs().Get(rctx, "r"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if err := db.Runs().Delete(rctx, "r"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	// Deleting the active run frees the thread.
	mustCreate(t, db, records.NewRun{RunID: "r2", ThreadID: "t"})
}

func TestRunTokenUsage(t *testing.T) {
	db, _ := openRec(t, nil)
	r := db.Runs()
	complete := func(id, model string, status records.RunStatus, tot records.RunTotals) {
		t.Helper()
		mustCreate(t, db, records.NewRun{RunID: id, ThreadID: "t", ModelName: model})
		if err := r.Complete(rctx, id, status, "", tot); err != nil {
			t.Fatal(err)
		}
	}
	complete("a", "m1", records.RunSuccess, records.RunTotals{TotalInputTokens: 10, TotalOutputTokens: 5, TotalTokens: 15, LLMCallCount: 1, LeadAgentTokens: 15,
		TokenUsageByModel: map[string]records.ModelTokens{"m1": {Input: 10, Output: 5, Total: 15}}})
	// Two models in one run: the run counts under each.
	complete("b", "m1", records.RunError, records.RunTotals{TotalInputTokens: 20, TotalOutputTokens: 10, TotalTokens: 30, LLMCallCount: 2, LeadAgentTokens: 20, SubagentTokens: 10,
		TokenUsageByModel: map[string]records.ModelTokens{"m1": {Input: 12, Output: 6, Total: 18}, "m2": {Input: 8, Output: 4, Total: 12}}})
	// An older row without per-model data falls back to model_name...
	complete("c", "legacy", records.RunSuccess, records.RunTotals{TotalInputTokens: 3, TotalOutputTokens: 2, TotalTokens: 5, LLMCallCount: 1, MiddlewareTokens: 5})
	// ...or to "unknown" without a model name.
	complete("d", "", records.RunTimeout, records.RunTotals{TotalTokens: 1})
	// An active run counts only when asked.
	mustCreate(t, db, records.NewRun{RunID: "e", ThreadID: "t", ModelName: "m2"})
	// Another thread never counts.
	mustCreate(t, db, records.NewRun{RunID: "x", ThreadID: "other", ModelName: "m1"})

	got, err := r.TokenUsage(rctx, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	want := records.TokenUsage{
		Runs: 4, TotalInputTokens: 33, TotalOutputTokens: 17, TotalTokens: 51, LLMCallCount: 4,
		ByModel: map[string]records.ModelUsage{
			"m1":                 {ModelTokens: records.ModelTokens{Input: 22, Output: 11, Total: 33}, Runs: 2},
			"m2":                 {ModelTokens: records.ModelTokens{Input: 8, Output: 4, Total: 12}, Runs: 1},
			"legacy":             {ModelTokens: records.ModelTokens{Input: 3, Output: 2, Total: 5}, Runs: 1},
			records.UnknownModel: {ModelTokens: records.ModelTokens{Input: 0, Output: 0, Total: 1}, Runs: 1},
		},
		ByCaller: records.CallerTokens{LeadAgent: 35, Subagent: 10, Middleware: 5},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("token usage (-want +got):\n%s", diff)
	}
	got, _ = r.TokenUsage(rctx, "t", true)
	want.Runs = 5
	want.ByModel["m2"] = records.ModelUsage{ModelTokens: records.ModelTokens{Input: 8, Output: 4, Total: 12}, Runs: 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("token usage with active (-want +got):\n%s", diff)
	}
	got, _ = r.TokenUsage(rctx, "empty", true)
	if diff := cmp.Diff(records.TokenUsage{ByModel: map[string]records.ModelUsage{}}, got); diff != "" {
		t.Fatalf("empty thread (-want +got):\n%s", diff)
	}
}

// TestRunReconcile: runs of a live handle survive other handles' reconcile
// while their lease is renewed; once it lapses (or for runs without an
// owner) they become errors, at Open or on demand.
func TestRunReconcile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.db")
	clk := newRecClock()
	o := DefaultOptions()
	o.Now = clk.Now
	o.RunLease = time.Minute
	a := openTest(t, path, &o)
	mustCreate(t, a, records.NewRun{RunID: "owned", ThreadID: "t1", Status: records.RunRunning})
	mustCreate(t, a, records.NewRun{RunID: "owned-pending", ThreadID: "t2"})
	// A row written without an owner (by an older build, say) is an orphan.
	err := a.write(rctx, func(c *conn) error {
		return c.exec(`INSERT INTO runs(run_id, thread_id, status, created_at, updated_at) VALUES ('legacy', 't3', 'running', 0, 0)`)
	})
	if err != nil {
		t.Fatal(err)
	}

	// Opening a second handle reconciles: only the unowned run goes.
	b := openTest(t, path, &o)
	status := func(id string) (records.RunStatus, string) {
		run, err := b.Runs().Get(rctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return run.Status, run.Error
	}
	if s, e := status("legacy"); s != records.RunError || e != records.OrphanReason {
		t.Fatalf("legacy run: %s %q", s, e)
	}
	if s, _ := status("owned"); s != records.RunRunning {
		t.Fatalf("a live handle's run was reconciled at open: %s", s)
	}

	// The owner renews its lease; time passes past the first lease.
	clk.Add(40 * time.Second)
	if n, err := a.Runs().RenewLeases(rctx); err != nil || n != 2 {
		t.Fatalf("renew: %d %v, want 2", n, err)
	}
	clk.Add(40 * time.Second)
	if n, err := b.Runs().Reconcile(rctx); err != nil || n != 0 {
		t.Fatalf("reconcile with live leases: %d %v", n, err)
	}
	// The owner never reconciles its own runs, even with its lease lapsed.
	clk.Add(time.Hour)
	if n, _ := a.Runs().Reconcile(rctx); n != 0 {
		t.Fatalf("owner reconciled %d of its own runs", n)
	}
	// Nor does another handle while the owner's handle is open: it may be
	// starved of the write lock or the CPU, not dead. That takes a lock
	// another handle can see; the host SQLite has none (leases alone decide).
	nativeFilesOnly(t, "an owner shown alive by its lock file")
	if n, err := b.Runs().Reconcile(rctx); err != nil || n != 0 {
		t.Fatalf("reconcile of a live owner's lapsed runs: %d %v, want 0", n, err)
	}
	// Once the owner cannot be shown alive (its process died, or it runs
	// where there are no file locks), its lapsed lease decides.
	if a.recs.hold == nil {
		t.Fatal("the owner holds no liveness lock on this platform")
	}
	a.recs.hold.Release()
	if n, err := b.Runs().Reconcile(rctx); err != nil || n != 2 {
		t.Fatalf("reconcile after lease expiry: %d %v, want 2", n, err)
	}
	if s, e := status("owned-pending"); s != records.RunError || e != records.OrphanReason {
		t.Fatalf("expired run: %s %q", s, e)
	}
	// The owner finds out through the transition rule.
	var te *TransitionError
	if err := a.Runs().SetStatus(rctx, "owned", records.RunSuccess, ""); !errors.As(err, &te) {
		t.Fatalf("owner completing a reconciled run: %v", err)
	}

	// A status change by the owner renews the lease too.
	mustCreate(t, a, records.NewRun{RunID: "fresh", ThreadID: "t4"})
	clk.Add(50 * time.Second)
	a.Runs().SetStatus(rctx, "fresh", records.RunRunning, "")
	clk.Add(50 * time.Second)
	if n, _ := b.Runs().Reconcile(rctx); n != 0 {
		t.Fatalf("run renewed by SetStatus was reconciled")
	}

	// ReconcileOnOpen false leaves orphans alone at Open.
	a.Close()
	clk.Add(2 * time.Minute)
	off := o
	off.ReconcileOnOpen = false
	c := openTest(t, path, &off)
	if run, _ := c.Runs().Get(rctx, "fresh"); run.Status != records.RunRunning {
		t.Fatalf("ReconcileOnOpen=false still reconciled: %s", run.Status)
	}
	// With it on (the default), Open reconciles the closed handle's run.
	d := openTest(t, path, &o)
	if run, _ := d.Runs().Get(rctx, "fresh"); run.Status != records.RunError {
		t.Fatalf("Open did not reconcile an expired run: %s", run.Status)
	}
}

// TestRunLeaseLoop checks the background loop with a real (short) lease:
// the owner's runs stay alive through several lease periods while the
// handle is open.
func TestRunLeaseLoop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lease.db")
	o := DefaultOptions()
	o.RunLease = time.Second
	a := openTest(t, path, &o)
	mustCreate(t, a, records.NewRun{RunID: "r", ThreadID: "t", Status: records.RunRunning})
	b := openTest(t, path, &o)
	deadline := time.Now().Add(1600 * time.Millisecond)
	for time.Now().Before(deadline) {
		if n, err := b.Runs().Reconcile(rctx); err != nil || n != 0 {
			t.Fatalf("live run reconciled: %d %v", n, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
