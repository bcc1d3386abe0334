//go:build unix

package engine

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/engine/records"
)

// A PostgreSQL server that stops answering (SIGSTOP: a hung host, a
// network partition that drops packets) never hangs a handle: Open and
// every call return when their context ends, Close within CloseTimeout,
// each with a typed error. The test starts a server of its own
// (.ci/with-postgres), since it stops it.
func TestPGStoppedServerNeverHangs(t *testing.T) {
	pgOnly(t)
	if testing.Short() {
		t.Skip("starts a PostgreSQL server of its own; skipped with -short")
	}
	url, pids := startOwnPG(t)
	o := DefaultOptions()
	o.RunLease = time.Second // the records loop renews every 333 ms
	db, err := Open(rctx, url, &o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	idle, err := Open(rctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	mustCreate(t, db, records.NewRun{RunID: "r1", ThreadID: "t1", Status: records.RunRunning})
	if err := db.Store().Put(rctx, []string{"ns"}, "k", map[string]any{"v": 1}); err != nil {
		t.Fatal(err)
	}

	stop := func(on bool) {
		sig := syscall.SIGCONT
		if on {
			sig = syscall.SIGSTOP
		}
		for _, pid := range pids() {
			syscall.Kill(pid, sig)
		}
	}
	stop(true)
	t.Cleanup(func() { stop(false) })
	// Let the records loop get stuck in a renewal on the stopped server.
	time.Sleep(time.Second)

	// slack is what a call may take past its deadline here: the goal is
	// 100 ms; a busy machine gets more before the test calls it a hang.
	const slack = 1500 * time.Millisecond
	const deadline = 500 * time.Millisecond
	calls := []struct {
		name string
		fn   func(ctx context.Context) error
	}{
		{"Runs.Get", func(ctx context.Context) error { _, err := db.Runs().Get(ctx, "r1"); return err }},
		{"Runs.Create", func(ctx context.Context) error {
			_, err := db.Runs().Create(ctx, records.NewRun{RunID: "r2", ThreadID: "t2", Status: records.RunRunning})
			return err
		}},
		{"Store.Put", func(ctx context.Context) error {
			return db.Store().Put(ctx, []string{"ns"}, "k", map[string]any{"v": 2})
		}},
		{"Store.Get", func(ctx context.Context) error { _, err := db.Store().Get(ctx, []string{"ns"}, "k"); return err }},
		{"Events.Put", func(ctx context.Context) error {
			_, err := db.Events().Put(ctx, records.Event{ThreadID: "t1", EventType: "x", Category: records.CategoryTrace})
			return err
		}},
		{"Info", func(ctx context.Context) error { _, err := db.Info(ctx); return err }},
		{"Reconcile", func(ctx context.Context) error { _, err := db.Runs().Reconcile(ctx); return err }},
		{"Verify", func(ctx context.Context) error { _, err := db.Verify(ctx, admin.VerifyOptions{}); return err }},
	}
	var worst time.Duration
	for _, c := range calls {
		for range 2 { // the second finds the connections the first gave up
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			began := time.Now()
			err := c.fn(ctx)
			took := time.Since(began)
			cancel()
			worst = max(worst, took-deadline)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s on a stopped server: %v, want context.DeadlineExceeded", c.name, err)
			}
			if took > deadline+slack {
				t.Errorf("%s with a %v context returned after %v", c.name, deadline, took)
			}
		}
	}
	t.Logf("calls with a %v context on a stopped server returned at most %v past it", deadline, worst)

	// Open with a 1 s context.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	began := time.Now()
	other, err := Open(ctx, url, nil)
	took := time.Since(began)
	cancel()
	if err == nil {
		other.Close()
		t.Fatal("Open on a stopped server succeeded")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Open on a stopped server: %v, want context.DeadlineExceeded", err)
	}
	if took > time.Second+slack {
		t.Errorf("Open with a 1 s context returned after %v", took)
	}
	t.Logf("Open with a 1 s context on a stopped server returned after %v", took)

	// Close of a handle with nothing in flight.
	began = time.Now()
	idle.Close()
	took = time.Since(began)
	t.Logf("Close on a stopped server returned after %v", took)
	if took > 2500*time.Millisecond+slack {
		t.Errorf("Close with no call in flight returned after %v", took)
	}

	// A call without a deadline is ended by Close after CloseTimeout.
	stuck := make(chan error, 1)
	go func() {
		_, err := db.Runs().Get(context.Background(), "r1")
		stuck <- err
	}()
	time.Sleep(100 * time.Millisecond)
	began = time.Now()
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	// A call made while Close waits fails at once.
	time.Sleep(200 * time.Millisecond)
	late := time.Now()
	if _, err := db.Runs().Get(context.Background(), "r1"); !errors.Is(err, ErrClosed) {
		t.Errorf("a call made during Close: %v, want ErrClosed", err)
	}
	if d := time.Since(late); d > slack {
		t.Errorf("a call made during Close returned after %v", d)
	}
	cerr := <-closed
	took = time.Since(began)
	t.Logf("Close on a stopped server with a call in flight returned after %v (%v)", took, cerr)
	if took > CloseTimeout+2500*time.Millisecond+slack {
		t.Errorf("Close returned after %v, CloseTimeout is %v", took, CloseTimeout)
	}
	select {
	case err := <-stuck:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("the call Close ended: %v, want ErrClosed", err)
		}
	case <-time.After(slack):
		t.Error("the call in flight did not end with Close")
	}
}

// startOwnPG starts a throwaway PostgreSQL server (.ci/with-postgres) for
// t and returns its URL and a function listing its processes (the
// postmaster and its children).
func startOwnPG(t *testing.T) (string, func() []int) {
	t.Helper()
	script, err := filepath.Abs("../.ci/with-postgres")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("initdb"); err != nil {
		if _, err := os.Stat("/usr/lib/postgresql"); err != nil && os.Getenv("AGENTSTATE_CI") == "" {
			t.Skip("no PostgreSQL server binaries to start a server of the test's own")
		}
	}
	// The script runs its command with the server up, and stops the
	// server when the command ends: the command waits for stdin to close.
	cmd := exec.Command(script, "sh", "-c", "cat >/dev/null")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = os.Environ()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
		}
	})
	// "with-postgres: PostgreSQL 15.18 on 127.0.0.1:PORT (data in DIR)"
	re := regexp.MustCompile(`on (127\.0\.0\.1:\d+) \(data in ([^)]+)\)`)
	lines := bufio.NewScanner(stderr)
	var addr, dir string
	for lines.Scan() {
		if m := re.FindStringSubmatch(lines.Text()); m != nil {
			addr, dir = m[1], m[2]
			break
		}
	}
	if addr == "" {
		t.Fatal("with-postgres did not start a server")
	}
	go func() {
		for lines.Scan() {
		}
	}()
	url := "postgres://postgres@" + addr + "/postgres?sslmode=disable"
	pids := func() []int {
		b, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
		if err != nil {
			return nil
		}
		first, _, _ := strings.Cut(string(b), "\n")
		pm, err := strconv.Atoi(strings.TrimSpace(first))
		if err != nil {
			return nil
		}
		out := []int{pm}
		procs, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, p := range procs {
			st, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			// pid (comm) state ppid ...
			s := string(st)
			f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
			if len(f) > 1 && f[1] == strconv.Itoa(pm) {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
				out = append(out, pid)
			}
		}
		return out
	}
	return url, pids
}

// A write whose COMMIT reached the server but whose answer did not come
// back is ErrOutcomeUnknown (and the context's error that ended the wait),
// not the context's error alone: here the server
// waits at every commit for a synchronous standby that does not exist, so
// the write's context ends during COMMIT, and the write did commit (the
// server commits locally before it waits). A caller that retried on
// "deadline exceeded" would write twice. Then the server shuts down, and
// calls fail with ErrConnectionLost.
func TestPGUnknownCommitOutcome(t *testing.T) {
	pgOnly(t)
	if testing.Short() {
		t.Skip("starts a PostgreSQL server of its own; skipped with -short")
	}
	url, pids := startOwnPG(t)
	o := DefaultOptions()
	o.Synchronous = SyncFull // synchronous_commit=on: commits wait for the standby
	db, err := Open(rctx, url, &o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	admin, err := Open(rctx, url, nil) // synchronous_commit=off: does not wait
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	// ALTER SYSTEM cannot run in a transaction: on the session itself.
	c, release, err := admin.acquire(rctx, admin.writer)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`ALTER SYSTEM SET synchronous_standby_names = 'nobody'`, `SELECT pg_reload_conf()`} {
		if _, err := c.d.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	release()
	time.Sleep(500 * time.Millisecond) // the reload reaches every backend

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	err = db.Store().Put(ctx, []string{"ns"}, "once", map[string]any{"v": 1})
	cancel()
	if !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("a write whose COMMIT got no answer: %v, want ErrOutcomeUnknown", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the unknown outcome does not say the context ended: %v", err)
	}
	t.Logf("unknown outcome: %v", err)
	// It did commit: what a blind retry would have duplicated.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, gerr := admin.Store().Get(rctx, []string{"ns"}, "once")
		if gerr == nil {
			break
		}
		if !errors.Is(gerr, ErrNotFound) || time.Now().After(deadline) {
			t.Fatalf("the write of unknown outcome: %v (the server committed it before waiting for the standby)", gerr)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The server shuts down (SIGINT: a fast shutdown): calls say the
	// connection is lost.
	if ps := pids(); len(ps) > 0 {
		syscall.Kill(ps[0], syscall.SIGINT)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		_, err := admin.Runs().Get(rctx, "r1")
		if errors.Is(err, ErrConnectionLost) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a call to a server that shut down: %v, want ErrConnectionLost", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
