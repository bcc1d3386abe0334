//go:build !js

// Native only: it runs child processes and locks a file with another SQLite
// (GOOS=js starts no processes and links no SQLite of its own).

package engine

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/engine/records"
	"github.com/ncruces/go-sqlite3"
)

// The concurrency test: two processes share one file, each with writers on
// threads of their own (the workload: commits, events, runs), writers on
// one thread both processes share (commits on the head, events, runs that
// conflict), readers of heads and histories of every thread, and a
// retention and WAL-checkpoint loop, all at once for a bounded time. Every
// process prints what each call returned; afterwards the parent checks that
// no call failed except with a documented conflict, that no step, event or
// seq was lost or repeated, and that every state a reader saw is the state
// of the checkpoint it named in the final file (never a mix of two).

const concChildEnv = "AGENTSTATE_CONC_CHILD"

const sharedThread = "shared"

func concOptions() *Options {
	o := DefaultOptions()
	o.Mode, o.SnapshotEvery = channels.ModeDelta, 4
	return &o
}

func TestConcurrencyTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two child processes; skipped with -short")
	}
	seed := relSeed(t)
	dur := time.Duration(relScale(3000, 2000, 60000)) * time.Millisecond
	// On a loaded machine (CI shares two cores) a round may end before
	// enough has happened to prove anything; then it runs again, twice as
	// long (CI once needed more than 3+6+12 s under -race at a load of 8).
	for attempt := range 4 {
		err := concurrencyRound(t, seed, dur<<attempt)
		if !errors.Is(err, errTooLittle) {
			if err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Logf("attempt %d: %v", attempt+1, err)
	}
	t.Fatal("four rounds, each twice as long, were all too short to prove anything")
}

// errTooLittle: the round ended before enough calls returned.
var errTooLittle = errors.New("too little happened to prove anything")

func concurrencyRound(t *testing.T, seed uint64, dur time.Duration) error {
	path := filepath.Join(t.TempDir(), "conc.db")
	openTest(t, path, concOptions()).Close() // the schema exists before the race
	start := time.Now().Add(300 * time.Millisecond).UnixNano()
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	var errs []*bytes.Buffer
	for p := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%d|%d|%d|%d", concChildEnv, path, p, seed, dur.Milliseconds(), start))
		out, stderr := &bytes.Buffer{}, &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs, errs = append(cmds, cmd), append(outs, out), append(errs, stderr)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("process %d: %v\n%s\n%s", i, err, tail(outs[i].String(), 20), errs[i])
		}
	}
	var all []string
	for _, out := range outs {
		all = append(all, strings.Split(strings.TrimSpace(out.String()), "\n")...)
	}
	return checkConcurrency(t, path, relWork{seed: seed}, all)
}

// concReport collects what the processes printed.
type concReport struct {
	commits  map[string]map[int]string // thread -> step -> checkpoint id
	shared   map[string]string         // message id -> checkpoint id that added it
	sharedEv map[int64]string          // seq -> message id of the shared events
	unsure   map[string]bool           // shared messages whose commit met the deadline
	views    []concView
	runsDone map[string]int
	counts   map[string]int
	failures []string
}

type concView struct{ thread, id, digest string }

func checkConcurrency(t *testing.T, path string, w relWork, lines []string) error {
	r := concReport{commits: map[string]map[int]string{}, shared: map[string]string{}, sharedEv: map[int64]string{},
		runsDone: map[string]int{}, counts: map[string]int{}, unsure: map[string]bool{}}
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		r.counts[f[0]]++
		atoi := func(i int) int { n, _ := strconv.Atoi(f[i]); return n }
		switch f[0] {
		case "C": // thread step id
			if r.commits[f[1]] == nil {
				r.commits[f[1]] = map[int]string{}
			}
			r.commits[f[1]][atoi(2)] = f[3]
		case "D": // thread run step
			r.runsDone[f[2]] = atoi(3)
		case "S": // checkpoint message
			if _, dup := r.shared[f[2]]; dup {
				r.failures = append(r.failures, "shared message committed twice: "+line)
			}
			r.shared[f[2]] = f[1]
		case "Q": // first last message
			for s := atoi(1); s <= atoi(2); s++ {
				if _, dup := r.sharedEv[int64(s)]; dup {
					r.failures = append(r.failures, fmt.Sprintf("seq %d of the shared thread handed out twice", s))
				}
				r.sharedEv[int64(s)] = f[3]
			}
		case "SX":
			r.unsure[f[1]] = true
		case "V": // thread checkpoint digest
			r.views = append(r.views, concView{f[1], f[2], f[3]})
		case "ERR":
			r.failures = append(r.failures, line)
		}
	}
	t.Logf("calls that returned: %v", r.counts)
	if len(r.failures) > 0 {
		return fmt.Errorf("%d failures, first ones:\n%s", len(r.failures), strings.Join(r.failures[:min(len(r.failures), 20)], "\n"))
	}
	if r.counts["C"] < 20 || r.counts["S"] < 20 || r.counts["V"] < 20 || r.counts["RETAIN"] < 2 {
		return fmt.Errorf("%w: %v", errTooLittle, r.counts)
	}
	ctx := context.Background()
	o := concOptions()
	o.ReconcileOnOpen = false
	db, err := Open(ctx, testPath(t, path), o)
	if err != nil {
		return err
	}
	defer db.Close()
	if ps := relVerify(ctx, db); len(ps) > 0 {
		return fmt.Errorf("the file does not verify:\n%s", strings.Join(ps, "\n"))
	}
	// Own threads: every reported step there under its id, the state of
	// every checkpoint the model's, events without gap.
	for th, steps := range r.commits {
		rep, err := checkWorkThread(ctx, db, w, th, 0)
		if err != nil {
			return fmt.Errorf("thread %s: %w", th, err)
		}
		for n, id := range steps {
			if rep.IDs[n] != id {
				return fmt.Errorf("thread %s: step %d was reported as %s, the file has %q", th, n, id, rep.IDs[n])
			}
		}
		if _, err := checkWorkEvents(ctx, db, w, th); err != nil {
			return fmt.Errorf("thread %s: %w", th, err)
		}
	}
	for run, n := range r.runsDone {
		got, err := db.Runs().Get(ctx, run)
		if err != nil || got.Status != records.RunSuccess || got.TotalTokens != int64(n) {
			return fmt.Errorf("run %s was reported completed at step %d: %+v %v", run, n, got.Status, err)
		}
	}
	// The shared thread: one chain; the head holds every message a writer
	// was told was committed, once, each in the checkpoint that added it
	// and in every later one.
	head, err := db.State(ctx, Config{ThreadID: sharedThread})
	if err != nil {
		return err
	}
	ms, _ := head.Values[MessagesChannel].([]codec.Message)
	seen := map[string]int{}
	for i, m := range ms {
		if _, dup := seen[m.ID]; dup {
			return fmt.Errorf("shared thread: message %s is there twice", m.ID)
		}
		seen[m.ID] = i
	}
	for id, cp := range r.shared {
		if _, ok := seen[id]; !ok {
			return fmt.Errorf("shared thread: message %s (committed as %s) was lost", id, cp)
		}
		st, err := db.State(ctx, Config{ThreadID: sharedThread, CheckpointID: cp})
		if err != nil {
			return fmt.Errorf("shared checkpoint %s: %w", cp, err)
		}
		cms, _ := st.Values[MessagesChannel].([]codec.Message)
		if len(cms) == 0 || cms[len(cms)-1].ID != id {
			return fmt.Errorf("shared checkpoint %s does not end with the message %s its commit added", cp, id)
		}
	}
	for _, m := range ms {
		if _, ok := r.shared[m.ID]; !ok && !r.unsure[m.ID] {
			return fmt.Errorf("shared thread: message %s is there, but no commit of it returned", m.ID)
		}
	}
	// Each writer's messages keep their order.
	last := map[string]int{}
	for _, m := range ms {
		writer, k, _ := strings.Cut(m.ID, "-")
		n, _ := strconv.Atoi(k)
		if n <= last[writer] {
			return fmt.Errorf("shared thread: message %s after %s-%d", m.ID, writer, last[writer])
		}
		last[writer] = n
	}
	evs, err := relEventsAfterAll(ctx, db, sharedThread) // every page: a run can put more than maxPage
	if err != nil {
		return err
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			return fmt.Errorf("shared events: seq %d at position %d: a seq was lost or repeated", ev.Seq, i+1)
		}
		if want, ok := r.sharedEv[ev.Seq]; ok && ev.Content != want {
			return fmt.Errorf("shared events: seq %d holds %v, the writer was given it for %s", ev.Seq, ev.Content, want)
		}
	}
	for seq := range r.sharedEv {
		if seq > int64(len(evs)) {
			return fmt.Errorf("shared events: seq %d was handed out but is not there", seq)
		}
	}
	// Every state a reader saw is the state of the checkpoint it named.
	digests := map[[2]string]string{}
	for _, v := range r.views {
		k := [2]string{v.thread, v.id}
		want, ok := digests[k]
		if !ok {
			st, err := db.State(ctx, Config{ThreadID: v.thread, CheckpointID: v.id})
			if err != nil {
				return fmt.Errorf("a reader saw checkpoint %s of %s: %w", v.id, v.thread, err)
			}
			want = stateDigest(st)
			digests[k] = want
		}
		if v.digest != want {
			return fmt.Errorf("a reader saw checkpoint %s of %s with state %s, the file holds %s", v.id, v.thread, v.digest, want)
		}
	}
	t.Logf("%d reads of %d distinct checkpoints matched the file", len(r.views), len(digests))
	return nil
}

func stateDigest(s State) string {
	b, err := codec.Marshal(s.Values)
	if err != nil {
		return "undecodable:" + err.Error()
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// retryable reports errors a caller is told it may retry: conflicts the
// engine documents (an active run on the thread).
func retryable(err error) bool { return errors.Is(err, ErrConflict) }

// concChild is the body of a child process of TestConcurrencyTwoProcesses.
func concChild(arg string) error {
	parts := strings.Split(arg, "|")
	if len(parts) != 5 {
		return fmt.Errorf("bad %s %q", concChildEnv, arg)
	}
	path := parts[0]
	proc, _ := strconv.Atoi(parts[1])
	seed, _ := strconv.ParseUint(parts[2], 10, 64)
	ms, _ := strconv.Atoi(parts[3])
	at, _ := strconv.ParseInt(parts[4], 10, 64)
	db, err := Open(context.Background(), testPath(nil, path), concOptions())
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
	// done reports whether err only says the run's time is up.
	// The deadline, not ctx.Err: a dial's network deadline can fire before
	// the context's own timer, and its error matches DeadlineExceeded.
	done := func(err error) bool { return ctxEnded(ctx) != nil && errors.Is(err, context.DeadlineExceeded) }
	fail := func(op string, err error) {
		if !done(err) {
			say("ERR", fmt.Sprintf("process %d %s: %v (sqlite busy: %v)", proc, op, err, errors.Is(err, sqlite3.BUSY)))
		}
	}
	w := relWork{seed: seed}
	var wg sync.WaitGroup
	// Writers on threads of their own.
	for g := range 2 {
		wg.Go(func() {
			th := fmt.Sprintf("p%d-w%d", proc, g)
			err := runWorkload(ctx, db, w, th, 1<<30, func(kind string, a ...any) {
				switch kind {
				case "C", "E":
					say(append([]any{kind, th}, a...)...)
				case "D":
					say(append([]any{kind, th}, a...)...)
				}
			})
			fail("workload "+th, err)
		})
	}
	// Writers on the shared thread: commits on the head, events, runs.
	for g := range 2 {
		wg.Go(func() {
			writer := fmt.Sprintf("p%dg%d", proc, g)
			run := ""
			for k := 1; ctx.Err() == nil; k++ {
				id := fmt.Sprintf("%s-%d", writer, k)
				if run == "" {
					c, err := db.Runs().Create(ctx, records.NewRun{ThreadID: sharedThread, Status: records.RunRunning})
					switch {
					case err == nil:
						run = c.Run.RunID
					case retryable(err):
						say("CONFLICT")
					default:
						fail("create run", err)
					}
				}
				cfg, err := db.Commit(ctx, sharedThread, Step{RunID: run, Tasks: []TaskWrites{{TaskID: writer,
					Writes: []ChannelWrite{{Channel: MessagesChannel, Value: relMsg(id, codec.AI, "from "+writer)}}}}})
				if err != nil {
					if done(err) {
						say("SX", id) // may or may not have committed
					}
					fail("shared commit", err)
					continue
				}
				say("S", cfg.CheckpointID, id)
				evs, err := db.Events().PutBatch(ctx, []records.Event{
					{ThreadID: sharedThread, RunID: run, EventType: "llm.ai.response", Category: records.CategoryMessage, Content: id},
					{ThreadID: sharedThread, RunID: run, EventType: "llm.trace", Category: records.CategoryTrace, Content: id},
				})
				if err != nil {
					fail("shared events", err)
					continue
				}
				say("Q", evs[0].Seq, evs[1].Seq, id)
				if run != "" && k%4 == 0 {
					if err := db.Runs().Complete(ctx, run, records.RunSuccess, "", records.RunTotals{}); err != nil {
						fail("complete shared run", err)
					}
					run = ""
				}
			}
		})
	}
	// Readers of every thread's head and recent history.
	threads := []string{sharedThread, "p0-w0", "p0-w1", "p1-w0", "p1-w1"}
	for g := range 2 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(proc*10+g)))
			for ctx.Err() == nil {
				th := threads[rng.IntN(len(threads))]
				st, err := db.State(ctx, Config{ThreadID: th})
				switch {
				case errors.Is(err, ErrNotFound):
					continue
				case err != nil:
					fail("read head of "+th, err)
					continue
				}
				say("V", th, st.Config.CheckpointID, stateDigest(st))
				for s, err := range db.StateHistory(ctx, th, HistoryOptions{Limit: 3}) {
					if err != nil {
						fail("read history of "+th, err)
						break
					}
					say("V", th, s.Config.CheckpointID, stateDigest(s))
				}
				if _, err := db.Events().ListMessages(ctx, th, records.MessageQuery{Limit: 5}); err != nil {
					fail("list messages of "+th, err)
				}
			}
		})
	}
	// Handles opened and closed while all of that runs: Open reads the
	// header, sets WAL mode, reconciles runs; Close may checkpoint.
	wg.Go(func() {
		for ctx.Err() == nil {
			o := concOptions()
			o.ReadConns = 1
			h, err := Open(ctx, testPath(nil, path), o)
			if err != nil {
				fail("open a second handle", err)
				continue
			}
			if _, err := h.State(ctx, Config{ThreadID: sharedThread}); err != nil && !errors.Is(err, ErrNotFound) {
				fail("read through a second handle", err)
			}
			if err := h.Close(); err != nil {
				fail("close a second handle", err)
			}
			say("REOPEN")
			time.Sleep(20 * time.Millisecond)
		}
	})
	// Retention and WAL checkpoints while all of that runs.
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			time.Sleep(time.Duration(150+proc*70) * time.Millisecond)
			if _, err := db.Retain(ctx, admin.RetainOptions{}); err != nil {
				fail("retain", err)
			} else {
				say("RETAIN")
			}
			if i%2 == proc {
				if _, err := db.CheckpointWAL(ctx); err != nil {
					fail("wal checkpoint", err)
				} else {
					say("WAL")
				}
			}
		}
	})
	wg.Wait()
	return nil
}

// A call whose context ends while it waits for another connection's lock
// fails with the context's error, not with SQLite's BUSY: the busy handler
// stops waiting once the context is done, and SQLite then reports BUSY.
// (Found by TestConcurrencyTwoProcesses: writes cut by the run's deadline
// surfaced as "database is locked".)
func TestLockWaitCutByContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	db := openTest(t, path, nil)
	if onPG() {
		// Another session holds the thread's write lock.
		defer pgHoldLock(t, testPath(t, path), "t")()
	} else {
		holder, err := sqlite3.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		if err := holder.Exec("BEGIN IMMEDIATE"); err != nil {
			t.Fatal(err)
		}
		defer holder.Exec("ROLLBACK")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := db.Events().Put(ctx, records.Event{ThreadID: "t", EventType: "x", Category: records.CategoryTrace})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("write blocked by a lock until its deadline: %v (BUSY: %v), want context.DeadlineExceeded", err, errors.Is(err, sqlite3.BUSY))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the write waited %v after its deadline", d)
	}
}

func init() { childProcesses[concChildEnv] = concChild }
