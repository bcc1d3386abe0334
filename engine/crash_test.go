//go:build !js

// Native only: it kills child processes (GOOS=js starts none).

package engine

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine/records"
)

// The crash test: a child process runs the workload (relWork) on one thread:
// each step is a Commit (checkpoint and writes in one transaction), a batch
// of two events, and every fifth step the completion of a run and the
// creation of the next; now and then it checkpoints the WAL into the main
// file. It prints each thing after the call returned. The parent SIGKILLs
// it at a random moment (during Open and recovery, mid-commit, mid-WAL
// checkpoint), then opens the file and checks that every reported step is
// there in full, no step is there in part, events and runs agree, and the
// file verifies; the next child must continue the thread where it stands.
// Two files take turns, one in full mode and one in delta mode with
// automatic retention.

const crashChildEnv = "AGENTSTATE_CRASH_CHILD"

const crashThread = "crash"

func crashOptions(mode channels.Mode) *Options {
	o := DefaultOptions()
	o.Mode = mode
	o.SnapshotEvery = 4
	o.AutoRetain = mode == channels.ModeDelta
	return &o
}

// crashLog is what the children of one file reported, across rounds.
type crashLog struct {
	path      string
	mode      channels.Mode
	command   func(arg string) *exec.Cmd // the child process (nil: this test binary)
	prepare   func() error               // runs before each child and each check
	hostPath  string                     // the file as this process sees it, if path is the child's view
	commits   map[int]string             // step -> checkpoint id, as Commit returned it
	events    map[int][2]int64
	started   map[string]bool
	completed map[string]int // run -> the step that completed it
	maxStep   int
	maxEvents int
	head      int // verified after the last round
	eventsAt  int
}

func TestCrashKill(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes; skipped with -short")
	}
	dir := t.TempDir()
	files := func(epoch int) []*crashLog {
		return []*crashLog{
			{path: filepath.Join(dir, fmt.Sprintf("full%d.db", epoch)), mode: channels.ModeFull},
			{path: filepath.Join(dir, fmt.Sprintf("delta%d.db", epoch)), mode: channels.ModeDelta},
		}
	}
	crashRounds(t, files, relScale(30, 10, 500), func(rng *rand.Rand) (time.Duration, bool) {
		// A third of the kills land within 20ms of the start: most in
		// Open, while it recovers the WAL the last child left.
		if rng.IntN(3) == 0 {
			return time.Duration(rng.IntN(20000)) * time.Microsecond, false
		}
		return time.Duration(rng.IntN(120)) * time.Millisecond, true
	})
}

// crashKillsPerFile bounds the kills one pair of files takes (soak runs
// move on to new files), so the checks after each kill stay cheap.
const crashKillsPerFile = 40

// crashRounds kills children on the files files(epoch) gives, in turn,
// until kills of them died by SIGKILL, checking each file after each round;
// every crashKillsPerFile kills, and at the end, one more child per file
// continues and finishes cleanly, and the next epoch's files take over.
// delay picks when to kill: that long after the start, or after READY.
func crashRounds(t *testing.T, files func(epoch int) []*crashLog, kills int, delay func(*rand.Rand) (time.Duration, bool)) {
	seed := relSeed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	w := relWork{seed: seed}
	var logs []*crashLog
	var steps []string
	killed, inOpen, rounds := 0, 0, 0
	start := time.Now()
	round := func(l *crashLog, final bool) {
		rounds++
		d, fromReady := delay(rng)
		maxSteps := 1 << 30
		if final {
			maxSteps = l.maxStep + 7
		}
		out, wasKilled, ready, err := runCrashChild(l, seed, maxSteps, d, fromReady, final)
		if err != nil {
			t.Fatalf("round %d (%s): %v\nchild output:\n%s", rounds, l.mode, err, tail(out, 40))
		}
		if wasKilled {
			killed++
			if !ready {
				inOpen++
			}
		}
		if err := l.absorb(out); err != nil {
			t.Fatalf("round %d (%s): %v", rounds, l.mode, err)
		}
		how := "a clean exit"
		if wasKilled {
			how = "SIGKILL"
		}
		// DB.Verify replays every checkpoint: every fourth round and at
		// the end; SQLite's integrity check and the thread checks always.
		if err := l.verify(w, final || rounds%4 == 0); err != nil {
			t.Fatalf("round %d (%s) after %s: %v\nchild output:\n%s", rounds, l.mode, how, err, tail(out, 40))
		}
		if final && (l.head != maxSteps || l.eventsAt != l.head) {
			t.Fatalf("round %d (%s): the last child ended at step %d with events up to %d, want %d", rounds, l.mode, l.head, l.eventsAt, maxSteps)
		}
	}
	for epoch := 0; killed < kills; epoch++ {
		logs = files(epoch)
		for _, l := range logs {
			l.commits, l.events, l.started, l.completed = map[int]string{}, map[int][2]int64{}, map[string]bool{}, map[string]int{}
		}
		for i, until := 0, min(kills, killed+crashKillsPerFile); killed < until; i++ {
			round(logs[i%len(logs)], false)
		}
		// The next child continues each thread and finishes cleanly.
		for _, l := range logs {
			round(l, true)
			steps = append(steps, fmt.Sprintf("%s: %d steps", l.mode, l.head))
		}
	}
	t.Logf("%d kills (%d before the child was ready) in %d rounds, %v; %s",
		killed, inOpen, rounds, time.Since(start).Round(time.Millisecond), strings.Join(steps, ", "))
}

func tail(s string, lines int) string {
	ls := strings.Split(s, "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

// runCrashChild runs one child on l's file and kills it delay after it
// starts (or after it prints READY), unless final. It returns the child's
// stdout, whether it was killed, and whether it had printed READY.
func runCrashChild(l *crashLog, seed uint64, maxSteps int, delay time.Duration, fromReady, final bool) (string, bool, bool, error) {
	arg := fmt.Sprintf("%s|%s|%d|%d", l.path, l.mode, seed, maxSteps)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if l.command != nil {
		cmd = l.command(arg)
	}
	cmd.Env = append(os.Environ(), crashChildEnv+"="+arg)
	if l.prepare != nil {
		if err := l.prepare(); err != nil {
			return "", false, false, err
		}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return "", false, false, err
	}
	if err := cmd.Start(); err != nil {
		return "", false, false, err
	}
	kill := func() { cmd.Process.Signal(syscall.SIGKILL) }
	var timer *time.Timer
	if !final && !fromReady {
		timer = time.AfterFunc(delay, kill)
	}
	var out strings.Builder
	ready := false
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		if strings.HasPrefix(line, "READY") {
			ready = true

			if !final && fromReady {
				timer = time.AfterFunc(delay, kill)
			}
		}
	}
	io.Copy(io.Discard, pipe)
	err = cmd.Wait()
	if timer != nil {
		timer.Stop()
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return out.String(), true, ready, nil
		}
	}
	if err != nil {
		return out.String() + "stderr:\n" + stderr.String(), false, ready, fmt.Errorf("child failed: %v", err)
	}
	if !strings.Contains(out.String(), "DONE") {
		return out.String() + "stderr:\n" + stderr.String(), false, ready, fmt.Errorf("child exited without DONE")
	}
	return out.String(), false, ready, nil
}

// absorb records what a child reported. A child that resumes must start
// from the head the parent verified.
func (l *crashLog) absorb(out string) error {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		num := func(i int) int64 {
			if i >= len(f) {
				return -1
			}
			n, _ := strconv.ParseInt(f[i], 10, 64)
			return n
		}
		switch f[0] {
		case "READY":
			if len(f) != 3 {
				continue // cut by the kill
			}
			if h, e := int(num(1)), int(num(2)); h != l.head || e != l.eventsAt {
				return fmt.Errorf("child resumed at step %d with events up to %d, the parent verified %d and %d", h, e, l.head, l.eventsAt)
			}
		case "C":
			if len(f) != 3 {
				continue
			}
			n := int(num(1))
			if id, dup := l.commits[n]; dup && id != f[2] {
				return fmt.Errorf("step %d reported committed twice, as %s and %s", n, id, f[2])
			}
			l.commits[n] = f[2]
			l.maxStep = max(l.maxStep, n)
		case "E":
			if len(f) != 4 {
				continue
			}
			n := int(num(1))
			if _, dup := l.events[n]; dup {
				return fmt.Errorf("events of step %d reported twice", n)
			}
			l.events[n] = [2]int64{num(2), num(3)}
			l.maxEvents = max(l.maxEvents, n)
		case "R":
			if len(f) == 2 {
				l.started[f[1]] = true
			}
		case "D":
			if len(f) == 3 {
				l.completed[f[1]] = int(num(2))
			}
		}
	}
	return nil
}

// verify opens the file as a user would after the crash and checks it
// against everything the children reported; full adds DB.Verify.
func (l *crashLog) verify(w relWork, full bool) error {
	ctx := context.Background()
	if l.prepare != nil {
		if err := l.prepare(); err != nil {
			return err
		}
	}
	path := l.path
	if l.hostPath != "" {
		path = l.hostPath
	}
	o := crashOptions(l.mode)
	o.ReconcileOnOpen = false // keep the run records as the child left them
	db, err := Open(ctx, testPath(nil, path), o)
	if err != nil {
		return fmt.Errorf("open after the crash: %w", err)
	}
	defer db.Close()
	if ps := relVerifyCheap(ctx, db, !full); len(ps) > 0 {
		return fmt.Errorf("the file does not verify:\n%s", strings.Join(ps, "\n"))
	}
	rep, err := checkWorkThread(ctx, db, w, crashThread, l.head)
	if err != nil {
		return err
	}
	// Every step reported committed is there, under the id Commit returned;
	// at most one more (committed, then killed before it printed).
	for n, id := range l.commits {
		if rep.IDs[n] != id {
			return fmt.Errorf("step %d was reported committed as %s; the file has %q", n, id, rep.IDs[n])
		}
	}
	if rep.Head < l.maxStep || rep.Head > l.maxStep+1 {
		return fmt.Errorf("the head is step %d; the children reported up to %d", rep.Head, l.maxStep)
	}
	e, err := checkWorkEvents(ctx, db, w, crashThread)
	if err != nil {
		return err
	}
	if e < rep.Head-1 || e > rep.Head {
		return fmt.Errorf("events up to step %d for a head at step %d", e, rep.Head)
	}
	for n, seqs := range l.events {
		if n > e || seqs != [2]int64{int64(2*n - 1), int64(2 * n)} {
			return fmt.Errorf("events of step %d were reported at seqs %v; the file has events up to step %d", n, seqs, e)
		}
	}
	runs := db.Runs()
	for id := range l.started {
		if _, err := runs.Get(ctx, id); err != nil {
			return fmt.Errorf("run %s was reported created: %w", id, err)
		}
	}
	for id, n := range l.completed {
		r, err := runs.Get(ctx, id)
		if err != nil {
			return fmt.Errorf("run %s was reported completed: %w", id, err)
		}
		if r.Status != records.RunSuccess || r.TotalTokens != int64(n) || r.MessageCount != 10 {
			return fmt.Errorf("run %s was reported completed at step %d; the file has %s, %d tokens, %d messages", id, n, r.Status, r.TotalTokens, r.MessageCount)
		}
	}
	for id := range rep.Runs {
		if _, err := runs.Get(ctx, id); err != nil {
			return fmt.Errorf("a checkpoint names run %s: %w", id, err)
		}
	}
	l.head, l.eventsAt = rep.Head, e
	return nil
}

// crashChild is the body of a child process of TestCrashKill: it resumes the
// workload thread where the file stands and runs until killed or until
// maxSteps, printing each thing after it returned.
func crashChild(arg string) error {
	parts := strings.Split(arg, "|")
	if len(parts) != 4 {
		return fmt.Errorf("bad %s %q", crashChildEnv, arg)
	}
	path, mode := parts[0], channels.Mode(parts[1])
	seed, _ := strconv.ParseUint(parts[2], 10, 64)
	maxSteps, _ := strconv.Atoi(parts[3])
	ctx := context.Background()
	db, err := Open(ctx, testPath(nil, path), crashOptions(mode))
	if err != nil {
		return err
	}
	err = runWorkload(ctx, db, relWork{seed: seed}, crashThread, maxSteps, func(kind string, a ...any) {
		fmt.Println(append([]any{kind}, a...)...)
	})
	if err != nil {
		return err
	}
	if err := db.Close(); err != nil {
		return err
	}
	fmt.Println("DONE")
	return nil
}

func init() { childProcesses[crashChildEnv] = crashChild }
