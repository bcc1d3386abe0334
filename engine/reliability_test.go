package engine

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/engine/records"
	"github.com/google/go-cmp/cmp"
)

// Shared pieces of the reliability tests (crash_test.go, powerloss_test.go,
// concurrency_test.go, corrupt_test.go): seeds, the soak switch, a
// deterministic workload with an independent model of its state, and the
// checks run on a file after something tried to break it.
//
// AGENTSTATE_SEED=N replays a run's random choices (content, kill delays,
// crash points, flipped bytes); every test logs the seed it used.
// AGENTSTATE_SOAK=1 runs the long versions (more kills, longer runs).

// relSeed returns the seed of a randomized test and logs it.
func relSeed(t testing.TB) uint64 {
	t.Helper()
	seed := rand.Uint64() >> 1
	if s := os.Getenv("AGENTSTATE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("AGENTSTATE_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with AGENTSTATE_SEED=%d)", seed, seed)
	return seed
}

// relSoak reports whether the long versions should run.
func relSoak() bool { return os.Getenv("AGENTSTATE_SOAK") != "" }

// relScale picks the CI value, the value under the race detector (every
// step is several times slower there), or the soak value.
func relScale(ci, race, soak int) int {
	switch {
	case relSoak():
		return soak
	case raceEnabled:
		return race
	}
	return ci
}

func hashString(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// relWork is a deterministic agent workload: step n of a thread writes a
// human message and an AI answer (sometimes large enough to overflow a page,
// sometimes editing an earlier answer, every 16th step compacting the list
// with an Overwrite), two events, and belongs to a run.
type relWork struct{ seed uint64 }

const relCompactEvery = 16

func (w relWork) rng(thread string, n int) *rand.Rand {
	return rand.New(rand.NewPCG(w.seed, hashString(thread)+uint64(n)))
}

// answer is the AI text of step n: 100..1500 bytes, or 5..9 KB one step in
// five (overflow pages).
func (w relWork) answer(thread string, n int) string {
	r := w.rng(thread, n)
	size := 100 + r.IntN(1400)
	if r.IntN(5) == 0 {
		size = 5000 + r.IntN(4000)
	}
	b := make([]byte, size)
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "
	for i := range b {
		b[i] = letters[r.IntN(len(letters))]
	}
	return fmt.Sprintf("%s/%d:", thread, n) + string(b)
}

func relMsg(id, typ string, content any) codec.Message {
	return codec.Message{ID: id, Type: typ, Content: content}
}

// agentUpdate is what task "agent" writes at step n.
func (w relWork) agentUpdate(thread string, n int) channels.MessageUpdate {
	a := relMsg(fmt.Sprintf("a%d", n), codec.AI, w.answer(thread, n))
	if n%relCompactEvery == 0 {
		return channels.MessageUpdate{Overwrite: true, Messages: []codec.Message{
			relMsg(fmt.Sprintf("s%d", n), codec.System, fmt.Sprintf("summary of %s up to %d", thread, n)), a}}
	}
	u := channels.MessageUpdate{Messages: []codec.Message{a}}
	if n%5 == 0 && n > 2 {
		// Edit an earlier answer: replaced in place if it is still there,
		// appended if a compaction removed it.
		u.Messages = append(u.Messages, relMsg(fmt.Sprintf("a%d", n-2), codec.AI, fmt.Sprintf("answer %d edited at %d", n-2, n)))
	}
	return u
}

func (w relWork) human(thread string, n int) codec.Message {
	return relMsg(fmt.Sprintf("h%d", n), codec.Human, fmt.Sprintf("question %d of %s", n, thread))
}

// step is step n as Commit takes it. Tasks are given out of order on
// purpose: they apply in task id order ("agent" before "user").
func (w relWork) step(thread string, n int, runID string) Step {
	return Step{RunID: runID, Metadata: Metadata{"n": int64(n)}, Tasks: []TaskWrites{
		{TaskID: "user", Writes: []ChannelWrite{{Channel: MessagesChannel, Value: w.human(thread, n)}}},
		{TaskID: "agent", Writes: []ChannelWrite{{Channel: MessagesChannel, Value: w.agentUpdate(thread, n)}}},
	}}
}

// modelApply is an independent model of add_messages for the updates the
// workload makes: Overwrite replaces the list, a known id is replaced in
// place, a new id is appended.
func modelApply(list []codec.Message, u channels.MessageUpdate) []codec.Message {
	if u.Overwrite {
		list = nil
	}
	for _, m := range u.Messages {
		if i := slices.IndexFunc(list, func(x codec.Message) bool { return x.ID == m.ID }); i >= 0 {
			list[i] = m
		} else {
			list = append(list, m)
		}
	}
	return list
}

// model yields the expected message list after each step 1..upto.
type relModel struct {
	w      relWork
	thread string
	n      int
	list   []codec.Message
}

func (w relWork) model(thread string) *relModel { return &relModel{w: w, thread: thread} }

// next advances the model by one step and returns the list after it.
func (m *relModel) next() []codec.Message {
	m.n++
	m.list = modelApply(slices.Clone(m.list), m.w.agentUpdate(m.thread, m.n))
	m.list = modelApply(m.list, channels.MessageUpdate{Messages: []codec.Message{m.w.human(m.thread, m.n)}})
	return m.list
}

// events are the two events step n emits.
func (w relWork) events(thread string, n int, runID string) []records.Event {
	return []records.Event{
		{ThreadID: thread, RunID: runID, EventType: "llm.ai.response", Category: records.CategoryMessage,
			Content: fmt.Sprintf("answer %d", n), Metadata: map[string]any{"n": int64(n), "i": int64(0)}},
		{ThreadID: thread, RunID: runID, EventType: "llm.trace", Category: records.CategoryTrace,
			Content: map[string]any{"step": int64(n), "tokens": int64(len(w.answer(thread, n)))}, Metadata: map[string]any{"n": int64(n), "i": int64(1)}},
	}
}

// relN reads the workload's step number from checkpoint metadata (0 for the
// thread's input checkpoint).
func relN(md Metadata) int {
	switch v := md["n"].(type) {
	case int64:
		return int(v)
	case uint64:
		return int(v)
	case float64:
		return int(v)
	}
	return 0
}

// threadReport is what a check of one workload thread found.
type threadReport struct {
	Head int             // the number of the head's step (0: no step)
	IDs  map[int]string  // step -> checkpoint id
	Runs map[string]bool // run ids the checkpoints name
}

// checkWorkThread checks a thread written only by the workload, one step
// after another: its checkpoints form one chain root, 1, 2, ... Head; every
// checkpoint's parent holds exactly the writes of the step that made it, and
// the head holds none; the state of the checkpoints after step from, of the
// head and of a few older ones (all of them when from is 0) equals the
// model's. Any error is a broken promise.
func checkWorkThread(ctx context.Context, db *DB, w relWork, thread string, from int) (threadReport, error) {
	rep := threadReport{IDs: map[int]string{}, Runs: map[string]bool{}}
	byID := map[string]Tuple{}
	var order []Tuple // newest first
	root := ""
	for tu, err := range db.List(ctx, ListOptions{ThreadID: thread, Namespace: &root}) {
		if err != nil {
			return rep, fmt.Errorf("list: %w", err)
		}
		byID[tu.Config.CheckpointID] = tu
		order = append(order, tu)
	}
	if len(order) == 0 {
		return rep, nil
	}
	// Walk the chain from the head to the root.
	var chain []Tuple
	for cur := order[0]; ; {
		chain = append(chain, cur)
		if cur.ParentConfig == nil {
			break
		}
		p, ok := byID[cur.ParentConfig.CheckpointID]
		if !ok {
			return rep, fmt.Errorf("checkpoint %s: parent %s is missing", cur.Config.CheckpointID, cur.ParentConfig.CheckpointID)
		}
		cur = p
	}
	if len(chain) != len(order) {
		return rep, fmt.Errorf("%d checkpoints, but the head's chain holds %d: a step is there twice or in part", len(order), len(chain))
	}
	slices.Reverse(chain)
	if relN(chain[0].Metadata) != 0 || chain[0].Metadata["source"] != "input" {
		return rep, fmt.Errorf("first checkpoint is not the thread's input checkpoint: %v", chain[0].Metadata)
	}
	m := w.model(thread)
	for k := 1; k < len(chain); k++ {
		tu := chain[k]
		if n := relN(tu.Metadata); n != k {
			return rep, fmt.Errorf("checkpoint %d of the chain (%s) is step %d", k, tu.Config.CheckpointID, n)
		}
		rep.IDs[k] = tu.Config.CheckpointID
		if r, _ := tu.Metadata["run_id"].(string); r != "" {
			rep.Runs[r] = true
		}
		want := m.next()
		if k <= from && k != len(chain)-1 && hashString(tu.Config.CheckpointID)%8 != 0 {
			continue
		}
		st, err := db.State(ctx, tu.Config)
		if err != nil {
			return rep, fmt.Errorf("state of step %d: %w", k, err)
		}
		got, _ := st.Values[MessagesChannel].([]codec.Message)
		if diff := cmp.Diff(want, got); diff != "" {
			return rep, fmt.Errorf("state of step %d differs from the model (-want +got):\n%s", k, cutDiff(diff))
		}
	}
	for k := 1; k < len(chain); k++ {
		if err := checkStepWrites(w, thread, k, chain[k-1].PendingWrites); err != nil {
			return rep, fmt.Errorf("writes of step %d: %w", k, err)
		}
	}
	head := chain[len(chain)-1]
	if len(head.PendingWrites) != 0 {
		return rep, fmt.Errorf("the head (step %d) holds %d pending writes; Commit writes them with their checkpoint", relN(head.Metadata), len(head.PendingWrites))
	}
	rep.Head = len(chain) - 1
	return rep, nil
}

func cutDiff(d string) string {
	if len(d) > 3000 {
		return d[:3000] + "\n..."
	}
	return d
}

// checkStepWrites compares the pending writes of a step's parent with what
// the workload's step k wrote.
func checkStepWrites(w relWork, thread string, k int, got []PendingWrite) error {
	want := []channels.MessageUpdate{w.agentUpdate(thread, k), {Messages: []codec.Message{w.human(thread, k)}}}
	if len(got) != len(want) {
		return fmt.Errorf("%d writes, want %d: %+v", len(got), len(want), got)
	}
	for i, pw := range got {
		if pw.TaskID != []string{"agent", "user"}[i] || pw.Channel != MessagesChannel || pw.Idx != 0 {
			return fmt.Errorf("write %d is %s/%s/%d", i, pw.TaskID, pw.Channel, pw.Idx)
		}
		v, err := channels.Messages{}.DecodeUpdate(pw.Value.Data)
		if err != nil {
			return fmt.Errorf("write %d: %w", i, err)
		}
		u, _ := v.(channels.MessageUpdate)
		if diff := cmp.Diff(want[i], u); diff != "" {
			return fmt.Errorf("write %d (-want +got):\n%s", i, cutDiff(diff))
		}
	}
	return nil
}

// checkWorkEvents checks the events of a workload thread: seqs 1..2E with no
// gap and no repeat, batch k at seqs 2k-1 and 2k holding step k's events.
// It returns E, the last step with events.
func checkWorkEvents(ctx context.Context, db *DB, w relWork, thread string) (int, error) {
	var all []records.Event
	after := int64(0)
	for {
		page, err := relEventsAfter(ctx, db, thread, after)
		if err != nil {
			return 0, err
		}
		all = append(all, page...)
		if len(page) < maxPage {
			break
		}
		after = page[len(page)-1].Seq
	}
	if len(all)%2 != 0 {
		return 0, fmt.Errorf("%d events: a batch of two is there in part", len(all))
	}
	for i, ev := range all {
		k, idx := i/2+1, i%2
		if ev.Seq != int64(i+1) {
			return 0, fmt.Errorf("event %d has seq %d: lost or repeated seq", i+1, ev.Seq)
		}
		want := w.events(thread, k, ev.RunID)[idx]
		want.Seq, want.CreatedAt = ev.Seq, ev.CreatedAt
		if diff := cmp.Diff(want, ev); diff != "" {
			return 0, fmt.Errorf("event seq %d (-want +got):\n%s", ev.Seq, diff)
		}
	}
	return len(all) / 2, nil
}

// relEventsAfter is a page of every event of a thread after a seq,
// whatever its run or category, read straight from the table.
func relEventsAfter(ctx context.Context, db *DB, thread string, after int64) ([]records.Event, error) {
	return db.Events().list(ctx, `SELECT `+eventCols+` FROM events WHERE thread_id=? AND seq > ? ORDER BY seq LIMIT ?`,
		[]any{thread, after, maxPage}, maxPage)
}

// relVerify runs DB.Verify and, besides, the test's own checks of what must
// hold in any agentstate file (kept from before Verify existed, and
// independent of it): SQLite's integrity check, parent links, writes and
// seals that point at checkpoints, event counters, one active run per
// thread, and every checkpoint of a thread-API thread rebuilding its state
// through the public read path. It names each problem.
func relVerify(ctx context.Context, db *DB) []string { return relVerifyCheap(ctx, db, false) }

// relVerifyCheap is relVerify, leaving out the costly part on long threads
// (DB.Verify's replay and the rebuild of every state) when cheap is set.
func relVerifyCheap(ctx context.Context, db *DB, cheap bool) []string {
	var problems []string
	add := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	var threads []string
	err := db.read(ctx, func(c *conn) error {
		if !onPG() { // a server has no file to check
			if err := c.query("PRAGMA integrity_check", nil, func(st row) error {
				if s := st.Text(0); s != "ok" {
					add("integrity_check: %s", s)
				}
				return nil
			}); err != nil {
				return err
			}
		}
		for _, q := range []struct{ sql, what string }{
			{`SELECT c.thread_id, c.checkpoint_id, c.parent_id FROM checkpoints c WHERE c.parent_id IS NOT NULL AND NOT EXISTS
				(SELECT 1 FROM checkpoints p WHERE p.thread_id = c.thread_id AND p.checkpoint_ns = c.checkpoint_ns AND p.checkpoint_id = c.parent_id)`,
				"checkpoint %s/%s: parent %s is missing"},
			{`SELECT w.thread_id, w.checkpoint_id, w.task_id FROM writes w WHERE NOT EXISTS
				(SELECT 1 FROM checkpoints p WHERE p.thread_id = w.thread_id AND p.checkpoint_ns = w.checkpoint_ns AND p.checkpoint_id = w.checkpoint_id)`,
				"write %s/%s task %s: its checkpoint is missing"},
			{`SELECT w.thread_id, w.checkpoint_id, w.consumed_by FROM writes w WHERE w.consumed_by IS NOT NULL AND NOT EXISTS
				(SELECT 1 FROM checkpoints p WHERE p.thread_id = w.thread_id AND p.checkpoint_ns = w.checkpoint_ns AND p.checkpoint_id = w.consumed_by)`,
				"write %s/%s: consumed by missing checkpoint %s"},
			{`SELECT s.thread_id, s.last_seq, s.m FROM (SELECT thread_id, last_seq, (SELECT max(seq) FROM events e WHERE e.thread_id = event_seqs.thread_id) AS m FROM event_seqs) s WHERE s.m > s.last_seq`,
				"events of %s: counter %s is below the highest seq %s"},
			{`SELECT thread_id, count(*), min(run_id) || ',' || max(run_id) FROM runs WHERE status IN ('pending', 'running') GROUP BY thread_id HAVING count(*) > 1`,
				"thread %s has %s active runs: %s"},
		} {
			if err := c.query(q.sql, nil, func(st row) error {
				add(q.what, st.Text(0), st.Text(1), st.Text(2))
				return nil
			}); err != nil {
				return err
			}
		}
		return c.query(`SELECT thread_id FROM thread_modes ORDER BY thread_id`, nil, func(st row) error {
			threads = append(threads, st.Text(0))
			return nil
		})
	})
	if err != nil {
		return append(problems, fmt.Sprintf("verify: %v", err))
	}
	if cheap {
		return problems
	}
	rep, err := db.Verify(ctx, admin.VerifyOptions{})
	if err != nil {
		return append(problems, fmt.Sprintf("Verify: %v", err))
	}
	for _, p := range rep.Problems {
		add("Verify: %s", p)
	}
	if rep.Truncated > 0 {
		add("Verify: %d more problems", rep.Truncated)
	}
	for _, th := range threads {
		for s, err := range db.StateHistory(ctx, th, HistoryOptions{}) {
			if err != nil {
				if errors.Is(err, ErrModeMismatch) {
					break // a delta thread seen from a full handle
				}
				add("thread %s: %v", th, err)
				break
			}
			_ = s
		}
	}
	return problems
}

// mustVerify fails t with every problem relVerify finds.
func mustVerify(t testing.TB, db *DB, when string) {
	t.Helper()
	if ps := relVerify(context.Background(), db); len(ps) > 0 {
		t.Fatalf("%s: the file does not verify:\n%s", when, strings.Join(ps, "\n"))
	}
}

// runWorkload resumes the workload on thread where the file stands and runs
// it up to step maxSteps, calling report after each call returned:
// ("READY", head, events) once, ("C", n, checkpoint id) after Commit,
// ("E", n, first seq, last seq) after the events, ("R", run) after a run
// is created, ("D", run, n) after it completed, ("W", n) after a WAL
// checkpoint. A step whose events the previous process did not write gets
// them first; the run a dead process left active is interrupted.
func runWorkload(ctx context.Context, db *DB, w relWork, thread string, maxSteps int, report func(kind string, a ...any)) error {
	head := 0
	st, err := db.State(ctx, Config{ThreadID: thread})
	switch {
	case err == nil:
		head = relN(st.Metadata)
	case !errors.Is(err, ErrNotFound):
		return fmt.Errorf("head: %w", err)
	}
	evs := 0
	if last, err := db.Events().ListMessages(ctx, thread, records.MessageQuery{Limit: 1}); err != nil {
		return fmt.Errorf("last event: %w", err)
	} else if len(last) == 1 {
		evs = relN(last[0].Metadata)
	}
	report("READY", head, evs)
	runs := db.Runs()
	newRun := func() (string, error) {
		c, err := runs.Create(ctx, records.NewRun{ThreadID: thread, Status: records.RunRunning, MultitaskStrategy: records.StrategyInterrupt})
		if err != nil {
			return "", fmt.Errorf("create run: %w", err)
		}
		report("R", c.Run.RunID)
		return c.Run.RunID, nil
	}
	run, err := newRun()
	if err != nil {
		return err
	}
	emit := func(n int) error {
		out, err := db.Events().PutBatch(ctx, w.events(thread, n, run))
		if err != nil {
			return fmt.Errorf("events %d: %w", n, err)
		}
		report("E", n, out[0].Seq, out[1].Seq)
		return nil
	}
	for n := evs + 1; n <= head; n++ {
		if err := emit(n); err != nil {
			return err
		}
	}
	for n := head + 1; n <= maxSteps; n++ {
		cfg, err := db.Commit(ctx, thread, w.step(thread, n, run))
		if err != nil {
			return fmt.Errorf("commit %d: %w", n, err)
		}
		report("C", n, cfg.CheckpointID)
		if err := emit(n); err != nil {
			return err
		}
		if n%5 == 0 {
			if err := runs.Complete(ctx, run, records.RunSuccess, "", records.RunTotals{TotalTokens: int64(n), MessageCount: 10}); err != nil {
				return fmt.Errorf("complete run: %w", err)
			}
			report("D", run, n)
			if run, err = newRun(); err != nil {
				return err
			}
		}
		if n%11 == 0 {
			if _, err := db.CheckpointWAL(ctx); err != nil {
				return fmt.Errorf("wal checkpoint: %w", err)
			}
			report("W", n)
		}
	}
	if err := runs.Complete(ctx, run, records.RunSuccess, "", records.RunTotals{}); err != nil {
		return fmt.Errorf("complete run: %w", err)
	}
	return nil
}
