//go:build !js

// Native only: these tests run child processes (GOOS=js starts none).

package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/engine/records"
	"github.com/ncruces/go-sqlite3/util/vfsutil"
	"github.com/ncruces/go-sqlite3/vfs"
)

// Live runs under a busy operator: processes that own runs (holders) keep
// them through maintenance that holds the write lock for five leases, and
// through CPU starvation (low priority, busy loops, SIGSTOP) at the minimum
// lease, while another process reconciles as often as it can. A holder
// that is SIGKILLed is the control: its runs must be reconciled, so a
// reconciler that does nothing cannot pass.

const (
	holderEnv     = "AGENTSTATE_HOLDER_CHILD"
	reconcilerEnv = "AGENTSTATE_RECONCILER_CHILD"
	maintainEnv   = "AGENTSTATE_MAINTAIN_CHILD"
	spinEnv       = "AGENTSTATE_SPIN_CHILD"
	// leasesOnlyEnv makes a child rely on leases alone, as on a platform
	// without file locks.
	leasesOnlyEnv = "AGENTSTATE_LEASES_ONLY"
)

// proc is a child process whose output the parent can wait on.
type proc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	err  error
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// startProc starts this test binary as a child that TestMain hands to the
// function registered for env.
func startProc(t *testing.T, env, arg string, extraEnv ...string) *proc {
	t.Helper()
	p := &proc{done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(append(os.Environ(), env+"="+arg), extraEnv...)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// waitFor waits until the child printed s, and fails if it exits first.
func (p *proc) waitFor(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(p.output(), s) {
		select {
		case <-p.done:
			if strings.Contains(p.output(), s) {
				return
			}
			t.Fatalf("child exited (%v) before printing %q:\n%s", p.err, s, p.output())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("child did not print %q within %v:\n%s", s, timeout, p.output())
		}
	}
}

// wait waits for the child to exit 0.
func (p *proc) wait(t *testing.T, timeout time.Duration) string {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("child did not finish within %v:\n%s", timeout, p.output())
	}
	if p.err != nil {
		t.Fatalf("child: %v\n%s", p.err, p.output())
	}
	return p.output()
}

// lines returns the child's lines that start with prefix, without it.
func lines(out, prefix string) []string {
	var ls []string
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, prefix); ok {
			ls = append(ls, rest)
		}
	}
	return ls
}

func waitForFile(path string) {
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func childSetup() {
	if os.Getenv(leasesOnlyEnv) != "" {
		noLiveness = true
	}
}

// spin keeps n goroutines busy until stop is set.
func spin(n int, stop *atomic.Bool) {
	for range n {
		go func() {
			x := 0
			for !stop.Load() {
				x++
			}
		}()
	}
}

// holderChild (path|name|runs|lease ms|nice|stop file) creates runs that
// it then owns, prints "ready", keeps its CPUs busy (at low priority when
// nice) until the stop file appears, and completes every run.
func holderChild(arg string) error {
	childSetup()
	f := strings.Split(arg, "|")
	if len(f) != 6 {
		return fmt.Errorf("bad %s %q", holderEnv, arg)
	}
	path, name, stopFile := f[0], f[1], f[5]
	n, _ := strconv.Atoi(f[2])
	leaseMS, _ := strconv.Atoi(f[3])
	if f[4] == "1" {
		if err := lowestPriority(); err != nil {
			return fmt.Errorf("setpriority: %v", err)
		}
	}
	o := DefaultOptions()
	o.Mode, o.RunLease = channels.ModeAuto, time.Duration(leaseMS)*time.Millisecond
	db, err := Open(rctx, path, &o)
	if err != nil {
		return err
	}
	defer db.Close()
	for i := range n {
		id := fmt.Sprintf("%s-%d", name, i)
		if _, err := db.Runs().Create(rctx, records.NewRun{RunID: id, ThreadID: id, Status: records.RunRunning}); err != nil {
			return err
		}
	}
	fmt.Println("ready")
	var stop atomic.Bool
	if f[4] == "1" {
		spin(2*runtime.GOMAXPROCS(0), &stop)
	}
	waitForFile(stopFile)
	stop.Store(true)
	for i := range n {
		id := fmt.Sprintf("%s-%d", name, i)
		err := db.Runs().Complete(rctx, id, records.RunSuccess, "", records.RunTotals{MessageCount: 1})
		if err != nil {
			fmt.Printf("complete %s failed: %v\n", id, err)
		} else {
			fmt.Printf("complete %s ok\n", id)
		}
	}
	fmt.Println("holder done")
	return nil
}

// reconcilerChild (path|lease ms|stop file) reconciles every 20 ms until
// the stop file appears, and reports what it changed and every error.
func reconcilerChild(arg string) error {
	childSetup()
	f := strings.Split(arg, "|")
	if len(f) != 3 {
		return fmt.Errorf("bad %s %q", reconcilerEnv, arg)
	}
	leaseMS, _ := strconv.Atoi(f[1])
	o := DefaultOptions()
	o.Mode, o.RunLease = channels.ModeAuto, time.Duration(leaseMS)*time.Millisecond
	o.BusyTimeout = 2 * time.Second
	db, err := Open(rctx, f[0], &o)
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Println("ready")
	var total int64
	busy, lost := 0, 0
	for {
		if _, err := os.Stat(f[2]); err == nil {
			break
		}
		n, err := db.Runs().Reconcile(rctx)
		switch {
		case errors.Is(err, ErrBusy):
			busy++
		case errors.Is(err, ErrConnectionLost):
			// The test ends every session (PostgreSQL): a call in
			// flight may lose its own, with this typed error.
			lost++
		case err != nil:
			fmt.Printf("reconcile error: %v\n", err)
		}
		total += n
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Printf("reconciled %d busy %d lost %d\n", total, busy, lost)
	fmt.Println("reconciler done")
	return nil
}

// spinChild keeps every CPU busy until the stop file appears.
func spinChild(stopFile string) error {
	var stop atomic.Bool
	spin(runtime.GOMAXPROCS(0), &stop)
	fmt.Println("ready")
	waitForFile(stopFile)
	stop.Store(true)
	return nil
}

// slowVFS is the operating system's VFS on a disk whose WAL fsync takes
// delay when a transaction wrote to the WAL since the last one: a commit
// then holds the write lock for at least delay. Checkpoints (a sync with
// nothing written since) are not slowed.
type slowVFS struct {
	vfs.VFS
	delay time.Duration
}

func (v *slowVFS) OpenFilename(name *vfs.Filename, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	f, flags, err := vfsutil.WrapOpenFilename(v.VFS, name, flags)
	if err != nil || flags&vfs.OPEN_WAL == 0 {
		return f, flags, err
	}
	return &slowFile{File: f, delay: v.delay}, flags, nil
}

type slowFile struct {
	vfs.File
	delay   time.Duration
	written atomic.Bool
}

func (f *slowFile) WriteAt(p []byte, off int64) (int, error) {
	f.written.Store(true)
	return f.File.WriteAt(p, off)
}

func (f *slowFile) Sync(flags vfs.SyncFlag) error {
	if f.written.Swap(false) {
		time.Sleep(f.delay)
	}
	return f.File.Sync(flags)
}

func (f *slowFile) Unwrap() vfs.File                     { return f.File }
func (f *slowFile) SharedMemory() vfs.SharedMemory       { return vfsutil.WrapSharedMemory(f.File) }
func (f *slowFile) LockState() vfs.LockLevel             { return vfsutil.WrapLockState(f.File) }
func (f *slowFile) PersistWAL() bool                     { return vfsutil.WrapPersistWAL(f.File) }
func (f *slowFile) SetPersistWAL(keepWAL bool)           { vfsutil.WrapSetPersistWAL(f.File, keepWAL) }
func (f *slowFile) PowersafeOverwrite() bool             { return vfsutil.WrapPowersafeOverwrite(f.File) }
func (f *slowFile) SetPowersafeOverwrite(psow bool)      { vfsutil.WrapSetPowersafeOverwrite(f.File, psow) }
func (f *slowFile) HasMoved() (bool, error)              { return vfsutil.WrapHasMoved(f.File) }
func (f *slowFile) BusyHandler(handler func() bool)      { vfsutil.WrapBusyHandler(f.File, handler) }
func (f *slowFile) CheckpointStart()                     { vfsutil.WrapCheckpointStart(f.File) }
func (f *slowFile) CheckpointDone()                      { vfsutil.WrapCheckpointDone(f.File) }
func (f *slowFile) Pragma(n, val string) (string, error) { return vfsutil.WrapPragma(f.File, n, val) }

// maintainChild (path|hold ms|dump|ops) runs maintenance on a disk whose
// commits take hold ms, so that each operation keeps the write lock that
// long, and prints each operation's time.
func maintainChild(arg string) error {
	childSetup()
	f := strings.Split(arg, "|")
	if len(f) != 4 {
		return fmt.Errorf("bad %s %q", maintainEnv, arg)
	}
	path, dump := f[0], f[2]
	holdMS, _ := strconv.Atoi(f[1])
	vfs.Register("agentstate-slow", &slowVFS{VFS: vfs.Find(""), delay: time.Duration(holdMS) * time.Millisecond})
	uri := "file:" + path + "?vfs=agentstate-slow"
	if onPG() { // no VFS to slow down: the server's own pace
		path = testPath(nil, path)
		uri = path
	}
	// What the CLI's maintenance commands do: the default lease, no
	// reconcile at open; every commit synced, so each is slow.
	o := DefaultOptions()
	o.Mode, o.ReconcileOnOpen, o.Synchronous = channels.ModeAuto, false, SyncFull
	open := func() (*DB, error) { return Open(rctx, uri, &o) }
	for _, op := range strings.Split(f[3], ",") {
		start := time.Now()
		var err error
		switch op {
		case "convert":
			_, err = ConvertFile(rctx, uri, &o, channels.ModeDelta, 4)
		case "tofull":
			_, err = ConvertFile(rctx, uri, &o, channels.ModeFull, 4)
		case "todelta":
			_, err = ConvertFile(rctx, uri, &o, channels.ModeDelta, 4)
		case "import":
			var in *os.File
			if in, err = os.Open(dump); err == nil {
				_, err = ImportFile(rctx, uri, in, &o, admin.ImportOptions{})
				in.Close()
			}
		case "slowimport":
			// The dump arrives slowly (a pipe from a slow source): the
			// transaction lasts hold, its commit is fast.
			var b []byte
			if b, err = os.ReadFile(dump); err == nil {
				in := &slowReader{b: b, chunk: 4096, delay: time.Duration(holdMS) * time.Millisecond * 4096 / time.Duration(len(b))}
				_, err = ImportFile(rctx, path, in, &o, admin.ImportOptions{})
			}
		case "retain":
			var db *DB
			if db, err = open(); err == nil {
				_, err = db.Retain(rctx, admin.RetainOptions{KeepLatest: 3})
				db.Close()
			}
		case "vacuum":
			var db *DB
			if db, err = open(); err == nil {
				err = db.Vacuum(rctx)
				db.Close()
			}
		default:
			err = fmt.Errorf("unknown op %q", op)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		fmt.Printf("op %s %d\n", op, time.Since(start).Milliseconds())
	}
	fmt.Println("maintain done")
	return nil
}

// slowReader hands out b chunk bytes at a time, waiting delay before each
// chunk but the first.
type slowReader struct {
	b     []byte
	chunk int
	delay time.Duration
	reads int
}

func (r *slowReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	if r.reads > 0 {
		time.Sleep(r.delay)
	}
	r.reads++
	n := copy(p[:min(len(p), r.chunk)], r.b)
	r.b = r.b[n:]
	return n, nil
}

// liveFixture makes a file in mode with threads to convert and retain, and
// a dump of other threads (delta, K=4, as the file is after the convert).
func liveFixture(t *testing.T, dir string, mode channels.Mode) (path, dump string) {
	t.Helper()
	path = filepath.Join(dir, "live.db")
	fo := DefaultOptions()
	fo.Mode, fo.SnapshotEvery = mode, 4
	db := openTest(t, path, &fo)
	w := relWork{seed: 7}
	for i := range 4 {
		if err := runWorkload(rctx, db, w, fmt.Sprintf("t%d", i), 12, func(string, ...any) {}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	src := filepath.Join(dir, "src.db")
	o := DefaultOptions()
	o.Mode, o.SnapshotEvery = channels.ModeDelta, 4
	sdb := openTest(t, src, &o)
	for i := range 2 {
		if err := runWorkload(rctx, sdb, w, fmt.Sprintf("imported%d", i), 12, func(string, ...any) {}); err != nil {
			t.Fatal(err)
		}
	}
	dump = filepath.Join(dir, "dump.jsonl")
	out, err := os.Create(dump)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sdb.Export(rctx, out, admin.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	out.Close()
	sdb.Close()
	return path, dump
}

// liveScenario runs holders, a reconciler and a disturbance, then checks
// that every live holder completed every run and that the killed holder's
// runs were reconciled.
type liveScenario struct {
	lease      time.Duration
	holders    int  // live holders
	runs       int  // runs per holder
	nice       bool // holders at low priority with busy loops, beside spinning processes
	leasesOnly bool
	// disturb runs while the holders hold their runs; it may stop and
	// continue holder processes.
	disturb func(t *testing.T, holders []*proc)
	// dir, when set, holds the stop file (for a path that is a URL).
	dir string
}

func (s liveScenario) run(t *testing.T, path string) {
	dir := filepath.Dir(path)
	if s.dir != "" {
		dir = s.dir
	}
	stop := filepath.Join(dir, "stop")
	os.Remove(stop)
	var env []string
	if s.leasesOnly {
		env = append(env, leasesOnlyEnv+"=1")
	}
	nice := "0"
	if s.nice {
		nice = "1"
		for range 2 {
			startProc(t, spinEnv, stop).waitFor(t, "ready", 30*time.Second)
		}
	}
	leaseMS := s.lease.Milliseconds()
	var holders []*proc
	for i := range s.holders {
		p := startProc(t, holderEnv, fmt.Sprintf("%s|live%d|%d|%d|%s|%s", path, i, s.runs, leaseMS, nice, stop), env...)
		holders = append(holders, p)
	}
	// The control: a holder that dies without closing.
	dead := startProc(t, holderEnv, fmt.Sprintf("%s|dead|%d|%d|0|%s", path, s.runs, leaseMS, stop), env...)
	for _, p := range append(holders, dead) {
		p.waitFor(t, "ready", 60*time.Second)
	}
	dead.cmd.Process.Kill()
	<-dead.done
	rec := startProc(t, reconcilerEnv, fmt.Sprintf("%s|%d|%s", path, leaseMS, stop), env...)
	rec.waitFor(t, "ready", 30*time.Second)

	s.disturb(t, holders)

	// The dead holder's runs go once its lease lapsed: give the reconciler
	// that long and a little more before stopping everything.
	deadline := time.Now().Add(5 * s.lease)
	check := readOnly(t, path)
	for time.Now().Before(deadline) {
		run, err := check.Runs().Get(rctx, fmt.Sprintf("dead-%d", s.runs-1))
		if err == nil && run.Status == records.RunError {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	check.Close()
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	stolen := 0
	for i, p := range holders {
		out := p.wait(t, 60*time.Second)
		if fails := lines(out, "complete "); len(fails) != s.runs {
			t.Fatalf("holder %d completed %d of %d runs:\n%s", i, len(fails), s.runs, out)
		}
		for _, l := range lines(out, "complete ") {
			if !strings.HasSuffix(l, " ok") {
				stolen++
				t.Errorf("holder %d: %s", i, l)
			}
		}
	}
	out := rec.wait(t, 30*time.Second)
	for _, l := range lines(out, "reconcile error: ") {
		t.Errorf("reconcile failed with an untyped error: %s", l)
	}

	db := readOnly(t, path)
	live, orphaned := 0, 0
	for i := range s.holders {
		for r := range s.runs {
			run, err := db.Runs().Get(rctx, fmt.Sprintf("live%d-%d", i, r))
			if err != nil {
				t.Fatal(err)
			}
			if run.Status != records.RunSuccess {
				t.Errorf("live run %s ended %s (%q)", run.RunID, run.Status, run.Error)
			} else {
				live++
			}
		}
	}
	for r := range s.runs {
		run, err := db.Runs().Get(rctx, fmt.Sprintf("dead-%d", r))
		if err != nil {
			t.Fatal(err)
		}
		if run.Status == records.RunError && run.Error == records.OrphanReason {
			orphaned++
		}
	}
	t.Logf("%d live runs completed, %d stolen; %d of %d runs of the killed holder reconciled; reconciler: %s",
		live, stolen, orphaned, s.runs, strings.Join(lines(out, "reconciled "), " "))
	if orphaned != s.runs {
		t.Errorf("the killed holder's runs: %d of %d reconciled (the reconciler must still work)", orphaned, s.runs)
	}
	// Every handle closed, or was found dead: no lock file is left behind.
	if left, _ := filepath.Glob(path + "-owner-*"); len(left) > 0 {
		t.Errorf("lock files left after every owner ended: %v", left)
	}
}

// TestLiveRunsSurviveMaintenance: two processes own runs with a one-second
// lease while convert, import, retain and vacuum each hold the write lock
// for five and a half leases (a disk whose fsync is that slow), and a third
// process reconciles every 20 ms. No live run may be reconciled: with
// liveness locks (the default here) and with leases alone.
func TestLiveRunsSurviveMaintenance(t *testing.T) {
	sqliteOnly(t, "holders, reconcilers and maintenance on an SQLite file through a slow VFS; lock files beside it")
	if testing.Short() {
		t.Skip("runs child processes for half a minute; skipped with -short")
	}
	const lease = time.Second
	hold := lease*5 + lease/2
	// With leases alone, a long transaction gives its time back to the
	// leases at commit, which covers work inside it (a slow import) but not
	// a slow commit (the slow disk of the other operations): those need
	// liveness locks.
	ops := map[bool]string{false: "convert,import,retain,vacuum", true: "slowimport"}
	for _, leasesOnly := range []bool{false, true} {
		name := map[bool]string{false: "liveness", true: "leases-only"}[leasesOnly]
		t.Run(name, func(t *testing.T) {
			if !leasesOnly && noFileLocks() {
				t.Skip("no file locks on " + runtime.GOOS)
			}
			// Full, so that convert has work; delta when it will not run,
			// so that the dump imports.
			mode := map[bool]channels.Mode{false: channels.ModeFull, true: channels.ModeDelta}[leasesOnly]
			path, dump := liveFixture(t, t.TempDir(), mode)
			liveScenario{lease: lease, holders: 2, runs: 3, leasesOnly: leasesOnly,
				disturb: func(t *testing.T, _ []*proc) {
					env := []string{}
					if leasesOnly {
						env = append(env, leasesOnlyEnv+"=1")
					}
					m := startProc(t, maintainEnv, fmt.Sprintf("%s|%d|%s|%s", path, hold.Milliseconds(), dump, ops[leasesOnly]), env...)
					out := m.wait(t, 5*time.Minute)
					for _, l := range lines(out, "op ") {
						var op string
						var ms int64
						fmt.Sscan(l, &op, &ms)
						t.Logf("%s held the write lock for at least %v and took %v", op, hold, time.Duration(ms)*time.Millisecond)
						if time.Duration(ms)*time.Millisecond < 5*lease {
							t.Fatalf("%s took %d ms, less than five leases: the test proves nothing", op, ms)
						}
					}
				}}.run(t, path)
		})
	}
}

// TestLiveRunsSurviveStarvation: two holders at the minimum lease run at
// the lowest priority with busy loops of their own, beside two processes
// that keep every CPU busy, while a reconciler at normal priority runs
// every 20 ms; then each holder is stopped (SIGSTOP, the limit of
// starvation: a paused VM, a debugger, a laptop lid) for three leases.
// None of their runs may be reconciled.
func TestLiveRunsSurviveStarvation(t *testing.T) {
	sqliteOnly(t, "lock files beside an SQLite file; TestLiveOwnerIsNotReconciled covers both backends")
	if testing.Short() {
		t.Skip("runs child processes for several seconds; skipped with -short")
	}
	if noFileLocks() {
		t.Skip("no file locks on " + runtime.GOOS + ": a starved owner relies on its lease")
	}
	const lease = time.Second
	path, _ := liveFixture(t, t.TempDir(), channels.ModeFull)
	liveScenario{lease: lease, holders: 2, runs: 3, nice: true,
		disturb: func(t *testing.T, holders []*proc) {
			time.Sleep(3 * lease)
			for _, h := range holders {
				if err := pause(h.cmd.Process, true); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(3 * lease)
			for _, h := range holders {
				pause(h.cmd.Process, false)
			}
			time.Sleep(lease)
		}}.run(t, path)
}

func noFileLocks() bool {
	return (&sqliteBackend{name: filepath.Join(os.TempDir(), "probe.db")}).liveness() == nil
}

func init() {
	childProcesses[holderEnv] = holderChild
	childProcesses[reconcilerEnv] = reconcilerChild
	childProcesses[maintainEnv] = maintainChild
	childProcesses[spinEnv] = spinChild
}
