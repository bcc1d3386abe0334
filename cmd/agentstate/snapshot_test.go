package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
)

// TestReadWhileNodeHoldsTheFile: while a Node process owns a file (its
// record in FILE.owner), read-only commands read a consistent copy instead
// of failing. The writer here is a process that writes checkpoints as fast
// as it can and every few puts copies its log into the file and starts it
// again (engine.CheckpointWAL), the two events a copy can race; every read
// must succeed, verify clean, and see no fewer checkpoints than the one
// before; the writer loses nothing. Before, every command failed with the
// holder's name.
func TestReadWhileNodeHoldsTheFile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the copy needs inotify (Linux); elsewhere the refusal is tested by TestReadWhileNodeHoldsTheFileRefusals")
	}
	ctx := context.Background()
	path := t.TempDir() + "/node.db"
	db, err := engine.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	put := func(i int, parent string) (string, error) {
		id := fmt.Sprintf("1f0c0000-0000-6000-8000-%012d", i)
		msgs, _ := json.Marshal([]map[string]any{{"type": "human", "content": strings.Repeat("x", 3000), "id": fmt.Sprint(i)}})
		cfg := engine.Config{ThreadID: "t1", CheckpointID: parent}
		_, err := db.Put(ctx, cfg, engine.Checkpoint{V: 4, ID: id, TS: "2026-01-01T00:00:00Z",
			ChannelValues:   map[string]codec.Blob{"messages": {Type: "json", Data: msgs}},
			ChannelVersions: map[string]string{"messages": fmt.Sprint(i)},
			VersionsSeen:    map[string]map[string]string{}}, engine.Metadata{"source": "loop", "step": i},
			map[string]string{"messages": fmt.Sprint(i)})
		return id, err
	}
	parent, err := put(1, "")
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	owner, _ := json.Marshal(map[string]any{"runtime": "node", "pid": os.Getpid(), "host": host, "since": "2026-12-07T00:00:00Z", "program": "app.js"})
	if err := os.WriteFile(path+".owner", owner, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path + ".owner")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var written int
	var werr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 2; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id, err := put(i, parent)
			if err != nil {
				werr = err
				return
			}
			parent, written = id, i
			time.Sleep(time.Millisecond)
			if i%7 == 0 {
				if _, err := db.CheckpointWAL(ctx); err != nil {
					werr = err
					return
				}
			}
		}
	}()
	reads, last := 0, 0
	retries := snapshotRetries
	for reads < 4 {
		var out, errs bytes.Buffer
		if code := run(ctx, []string{"verify", path}, &out, &errs); code != 0 {
			t.Fatalf("verify of a copy: exit %d\n%s%s", code, out.String(), errs.String())
		}
		if !strings.Contains(errs.String(), "consistent copy") || !strings.Contains(errs.String(), "node (app.js)") {
			t.Fatalf("no note naming the holder and the copy: %q", errs.String())
		}
		out.Reset()
		errs.Reset()
		if code := run(ctx, []string{"history", "--json", path, "t1"}, &out, &errs); code != 0 {
			t.Fatalf("history of a copy: exit %d: %s", code, errs.String())
		}
		n := strings.Count(out.String(), "\n")
		if n < last {
			t.Fatalf("a later copy holds %d checkpoints, an earlier one %d", n, last)
		}
		last = n
		reads++
	}
	close(stop)
	wg.Wait()
	if werr != nil {
		t.Fatalf("the writer failed: %v", werr)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	os.Remove(path + ".owner")
	var out, errs bytes.Buffer
	if code := run(ctx, []string{"history", "--json", path, "t1"}, &out, &errs); code != 0 {
		t.Fatal(errs.String())
	}
	if n := strings.Count(out.String(), "\n"); n != written {
		t.Fatalf("the file holds %d checkpoints, the writer wrote %d", n, written)
	}
	if entries, _ := os.ReadDir(os.TempDir()); len(entries) > 0 {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "agentstate-snapshot-") {
				t.Errorf("a copy was left behind: %s", e.Name())
			}
		}
	}
	t.Logf("%d consistent reads (%d copies thrown away for a race) while %d checkpoints were written (last read saw %d)", reads, snapshotRetries-retries, written, last)
}

// TestReadWhileNodeHoldsTheFileRefusals: a holder that cannot be checked
// (another host) is still refused, naming it; a command that writes is
// refused as before.
func TestReadWhileNodeHoldsTheFileRefusals(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/node.db"
	db, err := engine.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	owner, _ := json.Marshal(map[string]any{"runtime": "node", "pid": os.Getpid(), "host": "elsewhere.example", "since": "2026-12-07T00:00:00Z"})
	if err := os.WriteFile(path+".owner", owner, 0o644); err != nil {
		t.Fatal(err)
	}
	r := agentstate(t, nil, "info", path)
	want(t, r, 1)
	contains(t, r.stderr, "elsewhere.example", ".owner")
	host, _ := os.Hostname()
	owner, _ = json.Marshal(map[string]any{"runtime": "node", "pid": os.Getpid(), "host": host, "since": "2026-12-07T00:00:00Z"})
	if err := os.WriteFile(path+".owner", owner, 0o644); err != nil {
		t.Fatal(err)
	}
	r = agentstate(t, nil, "info", path)
	want(t, r, 0)
	r = agentstate(t, nil, "vacuum", path)
	want(t, r, 1)
	contains(t, r.stderr, "node")
}

// TestSnapshotSeesTheRaces: a copy during which the database file is
// written (a checkpoint) or the log starts again (its header changes) is
// thrown away, and the next attempt's copy is used.
func TestSnapshotSeesTheRaces(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("inotify")
	}
	dir := t.TempDir()
	path := dir + "/f.db"
	if err := os.WriteFile(path, bytes.Repeat([]byte{1}, 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	wal := append(bytes.Repeat([]byte{7}, 32), bytes.Repeat([]byte{2}, 100)...)
	if err := os.WriteFile(path+"-wal", wal, 0o644); err != nil {
		t.Fatal(err)
	}
	defer func() { copyHook = nil }()
	for _, c := range []struct {
		name, reason string
		race         func()
	}{
		{"checkpoint", "write into the database file", func() {
			f, _ := os.OpenFile(path, os.O_WRONLY, 0)
			f.WriteAt([]byte{9}, 4096)
			f.Close()
		}},
		{"restart", "start its log again", func() {
			f, _ := os.OpenFile(path+"-wal", os.O_WRONLY, 0)
			f.WriteAt([]byte{8}, 12) // salt-1
			f.Close()
		}},
		{"truncate", "start its log again", func() { os.Truncate(path+"-wal", 0) }},
		{"journal", "rollback journal", func() {
			os.WriteFile(path+"-journal", append([]byte{0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7}, make([]byte, 512)...), 0o644)
		}},
	} {
		copyHook = c.race
		ok, reason, err := copyConsistent(path, dir+"/copy.db")
		if err != nil || ok || !strings.Contains(reason, c.reason) {
			t.Errorf("%s: ok %v, reason %q, err %v; want a copy thrown away for %q", c.name, ok, reason, err, c.reason)
		}
		os.WriteFile(path+"-wal", wal, 0o644)
		os.Remove(path + "-journal")
	}
	copyHook = nil
	if ok, reason, err := copyConsistent(path, dir+"/copy.db"); !ok || err != nil {
		t.Fatalf("a quiet file: ok %v, %q, %v", ok, reason, err)
	}
	got, _ := os.ReadFile(dir + "/copy.db-wal")
	if !bytes.Equal(got, wal) {
		t.Fatal("the log was not copied")
	}
}
