//go:build !js

// Tests that run several processes on one file. GOOS=js builds start no
// processes (the js test runner runs one Go program), so they are native
// only; the crash, power-loss, corruption and two-process concurrency
// tests are too (crash_test.go, powerloss_test.go, corrupt_test.go,
// concurrency_test.go).

package engine

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/engine/records"
	"github.com/google/go-cmp/cmp"
)

func init() {
	childProcesses[openChildEnv] = openChild
	childProcesses[eventsChildEnv] = eventsChild
}

// TestTwoProcessesCreateOnce starts two processes that open the same fresh
// file at the same moment: both must succeed and every migration must be
// recorded exactly once.
func TestTwoProcessesCreateOnce(t *testing.T) {
	for round := range 3 {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("race%d.db", round))
		start := time.Now().Add(300 * time.Millisecond).UnixNano()
		arg := fmt.Sprintf("%s|%d", path, start)
		runChildren(t, openChildEnv, []string{arg, arg}, "opened at version")
		db := openTest(t, path, nil)
		want := make([]int64, SchemaVersion)
		for i := range want {
			want[i] = int64(i + 1)
		}
		if diff := cmp.Diff(want, history(t, db)); diff != "" {
			t.Fatalf("schema_history (-want +got):\n%s", diff)
		}
	}
}

const openChildEnv = "AGENTSTATE_OPEN_CHILD"

// runChildren runs this test binary once per arg, each a child process
// that TestMain hands to the function registered for env (env=arg), and
// waits for all: each must exit 0 and print done.
func runChildren(t *testing.T, env string, args []string, done string) {
	t.Helper()
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for _, arg := range args {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), env+"="+arg)
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, outs[i])
		}
		if !strings.Contains(outs[i].String(), done) {
			t.Fatalf("child %d did not run:\n%s", i, outs[i])
		}
	}
}

// openChild is the body of a child process of TestTwoProcessesCreateOnce:
// arg is "path|unix-nanos to open at".
func openChild(arg string) error {
	path, atText, _ := strings.Cut(arg, "|")
	at, err := strconv.ParseInt(atText, 10, 64)
	if err != nil {
		return fmt.Errorf("bad %s %q", openChildEnv, arg)
	}
	time.Sleep(time.Until(time.Unix(0, at)))
	db, err := Open(context.Background(), testPath(nil, path), nil)
	if err != nil {
		return err
	}
	defer db.Close()
	in, err := db.Info(context.Background())
	if err != nil {
		return err
	}
	fmt.Printf("opened at version %d\n", in.SchemaVersion)
	return nil
}

const (
	eventsChildEnv  = "AGENTSTATE_EVENTS_CHILD"
	eventsProcs     = 2
	eventsGoroutine = 4
	eventsEach      = 500
)

// TestEventSeqTwoProcesses: two processes with four goroutines each put 500
// events to one thread of one file; afterwards seqs are exactly 1..4000 and
// every event is there once.
func TestEventSeqTwoProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "procs.db")
	openTest(t, path, nil).Close() // create the schema once, up front
	start := time.Now().Add(300 * time.Millisecond).UnixNano()
	var args []string
	for p := range eventsProcs {
		args = append(args, fmt.Sprintf("%s|%d|%d", path, p, start))
	}
	runChildren(t, eventsChildEnv, args, "events child done")
	db := openTest(t, path, nil)
	switches, prev := 0, ""
	checkSeqs(t, db, "shared", eventsProcs*eventsGoroutine*eventsEach, func(ev records.Event) (string, int64) {
		if ev.RunID != prev {
			switches, prev = switches+1, ev.RunID
		}
		m := ev.Content.(map[string]any)
		return fmt.Sprint(m["p"], ".", m["g"]), asInt64(m["i"])
	})
	t.Logf("the stream switched between the processes %d times", switches-1)
}

// eventsChild is the body of a child process of TestEventSeqTwoProcesses
// (TestMain runs it when AGENTSTATE_EVENTS_CHILD is set to path|proc|start).
func eventsChild(arg string) error {
	parts := strings.Split(arg, "|")
	if len(parts) != 3 {
		return fmt.Errorf("bad %s %q", eventsChildEnv, arg)
	}
	var proc, at int64
	fmt.Sscan(parts[1], &proc)
	fmt.Sscan(parts[2], &at)
	db, err := Open(rctx, testPath(nil, parts[0]), nil)
	if err != nil {
		return err
	}
	defer db.Close()
	time.Sleep(time.Until(time.Unix(0, at)))
	var wg sync.WaitGroup
	errs := make(chan error, eventsGoroutine)
	for g := range eventsGoroutine {
		wg.Go(func() {
			for i := range eventsEach {
				ev := msg("shared", fmt.Sprint("p", proc), map[string]any{"p": proc, "g": g, "i": i})
				if _, err := db.Events().Put(rctx, ev); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	fmt.Println("events child done")
	return nil
}
