//go:build unix

package sqlite

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/engine/internal/driver"
)

func writeOwner(t *testing.T, db string, h Holder) {
	t.Helper()
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db+".owner", b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Skipf("cannot run a child process: %v", err)
	}
	return c.Process.Pid
}

func entries(t *testing.T, db string) []string {
	t.Helper()
	es, err := os.ReadDir(db + ".natives")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestRegisterAndRelease(t *testing.T) {
	db := filepath.Join(t.TempDir(), "x.db")
	r1, err := Register(db, 0)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Register(db, 0) // natives do not exclude each other
	if err != nil {
		t.Fatal(err)
	}
	names := entries(t, db)
	if len(names) != 2 {
		t.Fatalf("entries %v, want 2", names)
	}
	body, err := os.ReadFile(filepath.Join(db+".natives", names[0]))
	if err != nil {
		t.Fatal(err)
	}
	var h Holder
	if err := json.Unmarshal(body, &h); err != nil {
		t.Fatalf("entry %q: %v", body, err)
	}
	host, _ := os.Hostname()
	if h.Runtime != "native" || h.PID != os.Getpid() || h.Host != host || h.Since == "" {
		t.Fatalf("entry %+v", h)
	}
	r1()
	if n := entries(t, db); len(n) != 1 {
		t.Fatalf("after one release: %v", n)
	}
	r2()
	if _, err := os.Stat(db + ".natives"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("natives directory left behind: %v", err)
	}
}

func TestRegisterRefusesLiveOwner(t *testing.T) {
	db := filepath.Join(t.TempDir(), "x.db")
	host, _ := os.Hostname()
	// This test's own pid stands for a live Node process.
	writeOwner(t, db, Holder{Runtime: "node", PID: os.Getpid(), Host: host, Since: "2026-12-01T00:00:00Z"})
	t0 := time.Now()
	_, err := Register(db, 0)
	if !errors.Is(err, driver.ErrBusy) {
		t.Fatalf("err %v, want busy", err)
	}
	var held *HeldError
	if !errors.As(err, &held) || held.Holder.PID != os.Getpid() {
		t.Fatalf("err %#v", err)
	}
	for _, want := range []string{db, "node", "pid", host, "2026-12-01T00:00:00Z"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if time.Since(t0) > 500*time.Millisecond {
		t.Errorf("wait 0 took %v", time.Since(t0))
	}
	if n := entries(t, db); len(n) != 0 {
		t.Fatalf("a refused open left %v", n)
	}
	if _, err := os.Stat(db + ".owner"); err != nil {
		t.Fatalf("the live owner's file is gone: %v", err)
	}
}

func TestRegisterWaitsForOwnerToClose(t *testing.T) {
	db := filepath.Join(t.TempDir(), "x.db")
	host, _ := os.Hostname()
	writeOwner(t, db, Holder{Runtime: "node", PID: os.Getpid(), Host: host})
	go func() {
		time.Sleep(100 * time.Millisecond)
		os.Remove(db + ".owner")
	}()
	release, err := Register(db, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	release()
	// A holder that stays: the wait is bounded by shareGrace, not by the
	// busy timeout.
	writeOwner(t, db, Holder{Runtime: "node", PID: os.Getpid(), Host: host})
	t0 := time.Now()
	if _, err := Register(db, 30*time.Second); !errors.Is(err, driver.ErrBusy) {
		t.Fatalf("err %v", err)
	}
	if d := time.Since(t0); d < shareGrace || d > shareGrace+2*time.Second {
		t.Errorf("waited %v, want about %v", d, shareGrace)
	}
}

func TestRegisterClearsStaleOwner(t *testing.T) {
	db := filepath.Join(t.TempDir(), "x.db")
	host, _ := os.Hostname()
	writeOwner(t, db, Holder{Runtime: "node", PID: deadPID(t), Host: host})
	if err := os.Mkdir(db+"-shm", 0o755); err != nil { // an earlier npm build's switch
		t.Fatal(err)
	}
	release, err := Register(db, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for _, f := range []string{db + ".owner", db + "-shm"} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s not cleared: %v", f, err)
		}
	}
	left, _ := filepath.Glob(db + ".owner.*")
	if len(left) > 0 {
		t.Errorf("left %v", left)
	}
}

func TestRegisterUncheckableOwner(t *testing.T) {
	db := filepath.Join(t.TempDir(), "x.db")
	writeOwner(t, db, Holder{Runtime: "node", PID: 12345, Host: "elsewhere.example"})
	_, err := Register(db, 0)
	if !errors.Is(err, driver.ErrBusy) || !strings.Contains(err.Error(), "elsewhere.example") || !strings.Contains(err.Error(), "remove "+db+".owner") {
		t.Fatalf("err %v", err)
	}
	// Half-written: created, not yet filled.
	if err := os.WriteFile(db+".owner", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Register(db, 0); !errors.Is(err, driver.ErrBusy) {
		t.Fatalf("empty owner file: %v", err)
	}
}

func TestRegisterReadOnlyDirectory(t *testing.T) {
	db := filepath.Join(t.TempDir(), "x.db")
	// As in a read-only directory (running as root, chmod would not do).
	register = func(string, Holder) (string, error) {
		return "", &fs.PathError{Op: "mkdir", Path: db + ".natives", Err: fs.ErrPermission}
	}
	defer func() { register = writeEntry }()
	release, err := Register(db, 0)
	if err != nil {
		t.Fatalf("a read-only directory must not stop a native open: %v", err)
	}
	release()
	// It still sees a live owner, and leaves a dead one's file alone.
	host, _ := os.Hostname()
	writeOwner(t, db, Holder{Runtime: "node", PID: os.Getpid(), Host: host})
	if _, err := Register(db, 0); !errors.Is(err, driver.ErrBusy) {
		t.Fatalf("err %v", err)
	}
	writeOwner(t, db, Holder{Runtime: "node", PID: deadPID(t), Host: host})
	release, err = Register(db, 0)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if _, err := os.Stat(db + ".owner"); err != nil {
		t.Fatalf("owner file: %v", err)
	}
}

// What the sharing protocol adds to each native open and close of a file.
func BenchmarkRegister(b *testing.B) {
	db := filepath.Join(b.TempDir(), "x.db")
	for b.Loop() {
		release, err := Register(db, 0)
		if err != nil {
			b.Fatal(err)
		}
		release()
	}
}
