//go:build !js

// Native only: it starts processes (see process_test.go).

package engine

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/engine/records"
)

// The many-process test: P processes x G goroutines share one database for
// a fixed time. Half of each process's goroutines run the workload
// (relWork) on threads of their own (commits, events, runs); the other
// half commit on the head of two threads every process shares, append
// events there and create runs there that conflict (StrategyReject). A
// monitor in each process looks for a second active run on any thread.
// Afterwards: no error but ErrConflict reached a caller; every reported
// step is there once, in order; every thread's seqs run 1..n without a gap
// or a repeat; no two runs reported active on one thread overlapped in
// time, and no instant showed two; the file verifies. Its throughput is
// commits per second (steps of the workload plus shared commits).
//
// TestManyProcesses runs 4 x 8 for 10 s (AGENTSTATE_SOAK: 60 s);
// BenchmarkManyProcesses runs 1 and 4 processes for
// AGENTSTATE_MANY_SECONDS (default 60; use -benchtime 1x) and, on
// PostgreSQL, the same rows with raw pgx inserts as the floor.

const manyChildEnv = "AGENTSTATE_MANY_CHILD"

func init() { childProcesses[manyChildEnv] = manyChild }

var manySharedThreads = []string{"many-shared-0", "many-shared-1"}

type manyConfig struct {
	procs, goroutines int
	dur               time.Duration
	raw               bool // raw pgx inserts of the same rows (PostgreSQL only)
}

// manyResult is what a round measured.
type manyResult struct {
	commits int
	events  int
	elapsed time.Duration
	counts  map[string]int
}

func (r manyResult) perSecond() float64 { return float64(r.commits) / r.elapsed.Seconds() }

func TestManyProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes; skipped with -short")
	}
	seed := relSeed(t)
	cfg := manyConfig{procs: 4, goroutines: 8, dur: time.Duration(relScale(10, 10, 60)) * time.Second}
	res, err := manyRound(t, cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	if res.commits < 50 {
		t.Fatalf("only %d commits in %v: too few to prove anything", res.commits, cfg.dur)
	}
	t.Logf("%s: %d processes x %d goroutines, %v: %d commits (%.0f/s), %d events, calls %v",
		testBackend, cfg.procs, cfg.goroutines, cfg.dur, res.commits, res.perSecond(), res.events, res.counts)
}

func BenchmarkManyProcesses(b *testing.B) {
	secs, _ := strconv.Atoi(envOr("AGENTSTATE_MANY_SECONDS", "60"))
	seed := relSeed(b)
	type variant struct {
		name string
		cfg  manyConfig
	}
	vs := []variant{
		{"api-1proc", manyConfig{procs: 1, goroutines: 8}},
		{"api-4proc", manyConfig{procs: 4, goroutines: 8}},
	}
	if onPG() {
		vs = append(vs, variant{"raw-4proc", manyConfig{procs: 4, goroutines: 8, raw: true}})
	}
	for _, v := range vs {
		b.Run(v.name, func(b *testing.B) {
			v.cfg.dur = time.Duration(secs) * time.Second
			var res manyResult
			for range b.N {
				var err error
				if res, err = manyRound(b, v.cfg, seed); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(res.perSecond(), "commits/s")
			b.ReportMetric(float64(res.events)/res.elapsed.Seconds(), "events/s")
		})
	}
}

// manyRound runs one round and checks it (raw rounds are only counted).
func manyRound(t testing.TB, cfg manyConfig, seed uint64) (manyResult, error) {
	path := filepath.Join(t.TempDir(), "many.db")
	openTest(t, path, concOptions()).Close() // the schema exists before the race
	start := time.Now().Add(500 * time.Millisecond)
	var cmds []*exec.Cmd
	var outs, errs []*bytes.Buffer
	for p := range cfg.procs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%d|%d|%d|%d|%d|%t", manyChildEnv, path, p, seed,
			cfg.dur.Milliseconds(), start.UnixNano(), cfg.goroutines, cfg.raw))
		out, stderr := &bytes.Buffer{}, &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs, errs = append(cmds, cmd), append(outs, out), append(errs, stderr)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			return manyResult{}, fmt.Errorf("process %d: %v\n%s\n%s", i, err, tail(outs[i].String(), 20), errs[i])
		}
	}
	var lines []string
	for _, out := range outs {
		lines = append(lines, strings.Split(strings.TrimSpace(out.String()), "\n")...)
	}
	return checkMany(t, path, relWork{seed: seed}, cfg, lines)
}

// runInterval is the time a run was reported active: after its Create
// returned, before its Complete was called (both inside the true interval).
type runInterval struct {
	run        string
	start, end int64
}

func checkMany(t testing.TB, path string, w relWork, cfg manyConfig, lines []string) (manyResult, error) {
	res := manyResult{counts: map[string]int{}}
	var failures []string
	commits := map[string]map[int]string{} // own thread -> step -> id
	shared := map[string]map[string]string{}
	sharedSeqs := map[string]map[int64]string{}
	unsure := map[string]bool{}
	intervals := map[string]map[string]*runInterval{}
	var first, last int64
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		res.counts[f[0]]++
		atoi := func(i int) int { n, _ := strconv.Atoi(f[i]); return n }
		at := func(i int) int64 { n, _ := strconv.ParseInt(f[i], 10, 64); return n }
		switch f[0] {
		case "C": // thread step id
			if commits[f[1]] == nil {
				commits[f[1]] = map[int]string{}
			}
			commits[f[1]][atoi(2)] = f[3]
			res.commits++
		case "E":
			res.events += 2
		case "S": // thread checkpoint message
			if shared[f[1]] == nil {
				shared[f[1]] = map[string]string{}
			}
			if _, dup := shared[f[1]][f[3]]; dup {
				failures = append(failures, "shared message committed twice: "+line)
			}
			shared[f[1]][f[3]] = f[2]
			res.commits++
		case "Q": // thread first-seq last-seq message
			if sharedSeqs[f[1]] == nil {
				sharedSeqs[f[1]] = map[int64]string{}
			}
			for s := at(2); s <= at(3); s++ {
				if _, dup := sharedSeqs[f[1]][s]; dup {
					failures = append(failures, fmt.Sprintf("seq %d of %s handed out twice", s, f[1]))
				}
				sharedSeqs[f[1]][s] = f[4]
			}
			res.events += 2
		case "SX":
			unsure[f[1]] = true
		case "RA", "RD": // thread run unix-nanos
			if intervals[f[1]] == nil {
				intervals[f[1]] = map[string]*runInterval{}
			}
			iv := intervals[f[1]][f[2]]
			if iv == nil {
				iv = &runInterval{run: f[2], end: 1<<63 - 1}
				intervals[f[1]][f[2]] = iv
			}
			if f[0] == "RA" {
				iv.start = at(3)
			} else {
				iv.end = at(3)
			}
		case "SPAN": // unix-nanos of the first and last call
			if first == 0 || at(1) < first {
				first = at(1)
			}
			last = max(last, at(2))
		case "ERR", "MULTI":
			failures = append(failures, line)
		}
	}
	res.elapsed = time.Duration(last - first)
	if res.elapsed <= 0 {
		res.elapsed = cfg.dur
	}
	if len(failures) > 0 {
		return res, fmt.Errorf("%d failures, first ones:\n%s", len(failures), strings.Join(failures[:min(len(failures), 20)], "\n"))
	}
	if cfg.raw {
		return res, nil
	}
	// At most one active run per thread: the intervals the callers saw
	// never overlap.
	for th, ivs := range intervals {
		list := make([]*runInterval, 0, len(ivs))
		for _, iv := range ivs {
			list = append(list, iv)
		}
		slices.SortFunc(list, func(a, b *runInterval) int { return int(a.start - b.start) })
		for i := 1; i < len(list); i++ {
			if list[i].start < list[i-1].end {
				return res, fmt.Errorf("thread %s: run %s was active from %d, run %s until %d: two active runs at once", th, list[i].run, list[i].start, list[i-1].run, list[i-1].end)
			}
		}
	}
	ctx := context.Background()
	o := concOptions()
	o.ReconcileOnOpen = false
	db, err := Open(ctx, testPath(t, path), o)
	if err != nil {
		return res, err
	}
	defer db.Close()
	if ps := relVerifyCheap(ctx, db, true); len(ps) > 0 {
		return res, fmt.Errorf("the file does not verify:\n%s", strings.Join(ps, "\n"))
	}
	if rep, err := db.Verify(ctx, admin.VerifyOptions{}); err != nil || !rep.OK {
		return res, fmt.Errorf("Verify: %v %v", err, rep.Problems)
	}
	for th, steps := range commits {
		rep, err := checkWorkThread(ctx, db, w, th, 1<<30)
		if err != nil {
			return res, fmt.Errorf("thread %s: %w", th, err)
		}
		for n, id := range steps {
			if rep.IDs[n] != id {
				return res, fmt.Errorf("thread %s: step %d was reported as %s, the database has %q", th, n, id, rep.IDs[n])
			}
		}
		if rep.Head < len(steps) || rep.Head > len(steps)+1 {
			return res, fmt.Errorf("thread %s: head at step %d, %d steps reported", th, rep.Head, len(steps))
		}
		if _, err := checkWorkEvents(ctx, db, w, th); err != nil {
			return res, fmt.Errorf("thread %s: %w", th, err)
		}
	}
	for _, th := range manySharedThreads {
		head, err := db.State(ctx, Config{ThreadID: th})
		if err != nil {
			return res, fmt.Errorf("%s: %w", th, err)
		}
		ms, _ := head.Values[MessagesChannel].([]codec.Message)
		seen := map[string]bool{}
		for _, m := range ms {
			if seen[m.ID] {
				return res, fmt.Errorf("%s: message %s is there twice", th, m.ID)
			}
			seen[m.ID] = true
			if _, ok := shared[th][m.ID]; !ok && !unsure[m.ID] {
				return res, fmt.Errorf("%s: message %s is there, but no commit of it returned", th, m.ID)
			}
		}
		for id, cp := range shared[th] {
			if !seen[id] {
				return res, fmt.Errorf("%s: message %s (committed as %s) was lost", th, id, cp)
			}
		}
		evs, err := relEventsAfterAll(ctx, db, th)
		if err != nil {
			return res, err
		}
		for i, ev := range evs {
			if ev.Seq != int64(i+1) {
				return res, fmt.Errorf("%s: seq %d at position %d: a seq was lost or repeated", th, ev.Seq, i+1)
			}
			if want, ok := sharedSeqs[th][ev.Seq]; ok && ev.Content != want {
				return res, fmt.Errorf("%s: seq %d holds %v, the writer was given it for %s", th, ev.Seq, ev.Content, want)
			}
		}
		for seq := range sharedSeqs[th] {
			if seq > int64(len(evs)) {
				return res, fmt.Errorf("%s: seq %d was handed out but is not there", th, seq)
			}
		}
	}
	return res, nil
}

func relEventsAfterAll(ctx context.Context, db *DB, thread string) ([]records.Event, error) {
	var all []records.Event
	after := int64(0)
	for {
		page, err := relEventsAfter(ctx, db, thread, after)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if len(page) < maxPage {
			return all, nil
		}
		after = page[len(page)-1].Seq
	}
}

// manyChild is the body of a child process of the many-process test.
func manyChild(arg string) error {
	parts := strings.Split(arg, "|")
	if len(parts) != 7 {
		return fmt.Errorf("bad %s %q", manyChildEnv, arg)
	}
	path := parts[0]
	proc, _ := strconv.Atoi(parts[1])
	seed, _ := strconv.ParseUint(parts[2], 10, 64)
	ms, _ := strconv.Atoi(parts[3])
	at, _ := strconv.ParseInt(parts[4], 10, 64)
	goroutines, _ := strconv.Atoi(parts[5])
	raw := parts[6] == "true"
	o := concOptions()
	o.WriteConns = 0
	if onPG() {
		o.WriteConns = goroutines // every goroutine can write at once
	}
	db, err := Open(context.Background(), testPath(nil, path), o)
	if err != nil {
		return err
	}
	defer db.Close()
	time.Sleep(time.Until(time.Unix(0, at)))
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(ms)*time.Millisecond)
	defer cancel()
	var outMu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	defer func() { outMu.Lock(); out.Flush(); outMu.Unlock() }()
	say := func(a ...any) {
		outMu.Lock()
		fmt.Fprintln(out, a...)
		outMu.Unlock()
	}
	// The deadline, not ctx.Err: a dial's network deadline can fire before
	// the context's own timer, and its error matches DeadlineExceeded.
	done := func(err error) bool { return ctxEnded(ctx) != nil && errors.Is(err, context.DeadlineExceeded) }
	fail := func(op string, err error) {
		if err != nil && !done(err) {
			say("ERR", fmt.Sprintf("process %d %s: %v", proc, op, err))
		}
	}
	started := time.Now()
	defer func() { say("SPAN", started.UnixNano(), time.Now().UnixNano()) }()
	w := relWork{seed: seed}
	var wg sync.WaitGroup
	for g := range goroutines {
		th := fmt.Sprintf("many-p%d-g%d", proc, g)
		switch {
		case raw:
			wg.Go(func() { fail("raw "+th, manyRaw(ctx, testPath(nil, path), w, th, say)) })
		case g%2 == 0:
			wg.Go(func() {
				err := runWorkload(ctx, db, w, th, 1<<30, func(kind string, a ...any) {
					if kind == "C" || kind == "E" {
						say(append([]any{kind, th}, a...)...)
					}
				})
				fail("workload "+th, err)
			})
		default:
			wg.Go(func() { manyShared(ctx, db, manySharedThreads[g/2%2], fmt.Sprintf("p%dg%d", proc, g), say, fail) })
		}
	}
	if !raw {
		wg.Go(func() {
			for ctx.Err() == nil {
				err := db.read(ctx, func(c *conn) error {
					return c.query(`SELECT thread_id, count(*) FROM runs WHERE status IN ('pending', 'running') GROUP BY thread_id HAVING count(*) > 1`, nil,
						func(st row) error { say("MULTI", st.Text(0), st.Int64(1)); return nil })
				})
				fail("monitor", err)
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	return nil
}

// manyShared commits on the head of a shared thread, appends two events
// after each commit, and holds a run there for four commits at a time when
// it can (another writer's active run is a conflict, not an error).
func manyShared(ctx context.Context, db *DB, thread, writer string, say func(...any), fail func(string, error)) {
	run := ""
	for k := 1; ctx.Err() == nil; k++ {
		id := fmt.Sprintf("%s-%d", writer, k)
		if run == "" {
			c, err := db.Runs().Create(ctx, records.NewRun{ThreadID: thread, Status: records.RunRunning})
			switch {
			case err == nil:
				run = c.Run.RunID
				say("RA", thread, run, time.Now().UnixNano())
			case errors.Is(err, ErrConflict):
				say("CONFLICT")
			default:
				fail("create run", err)
			}
		}
		cfg, err := db.Commit(ctx, thread, Step{RunID: run, Tasks: []TaskWrites{{TaskID: writer,
			Writes: []ChannelWrite{{Channel: MessagesChannel, Value: relMsg(id, codec.AI, "from "+writer)}}}}})
		if err != nil {
			if ctx.Err() != nil {
				say("SX", id) // may or may not have committed
			}
			fail("shared commit", err)
			continue
		}
		say("S", thread, cfg.CheckpointID, id)
		evs, err := db.Events().PutBatch(ctx, []records.Event{
			{ThreadID: thread, RunID: run, EventType: "llm.ai.response", Category: records.CategoryMessage, Content: id},
			{ThreadID: thread, RunID: run, EventType: "llm.trace", Category: records.CategoryTrace, Content: id},
		})
		if err != nil {
			fail("shared events", err)
			continue
		}
		say("Q", thread, evs[0].Seq, evs[1].Seq, id)
		if run != "" && k%4 == 0 {
			say("RD", thread, run, time.Now().UnixNano())
			fail("complete shared run", db.Runs().Complete(ctx, run, records.RunSuccess, "", records.RunTotals{}))
			run = ""
		}
	}
	if run != "" {
		say("RD", thread, run, time.Now().UnixNano())
		fail("complete shared run", db.Runs().Complete(context.Background(), run, records.RunSuccess, "", records.RunTotals{}))
	}
}
