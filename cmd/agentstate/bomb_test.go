package main

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/internal/testbomb"
)

// Issue 25, item 1, through the CLI: a dump of a few kilobytes whose one
// packed value inflates past MaxListBytes (128 MiB of msgpack nils) was
// imported at 6 GB RSS; one inflating to 63 MiB of nils would decode to a
// gigabyte. Each is refused, naming the limit, and leaves no file.
func TestImportRefusesABomb(t *testing.T) {
	path, _ := fixture(t, channels.ModeFull)
	for limit, n := range map[string]int{"MaxListBytes": 2 * engine.MaxListBytes, "MaxCost": engine.MaxListBytes - 1<<20} {
		t.Run(limit, func(t *testing.T) { importBomb(t, path, n, limit) })
	}
}

// importBomb imports an export of path whose first blobs line is a packed
// value inflating to a list of n nils, and wants it refused naming limit.
func importBomb(t *testing.T, path string, n int, limit string) {
	e := agentstate(t, nil, "export", path)
	want(t, e, 0)
	lines := strings.SplitAfter(e.stdout, "\n")
	done := false
	for i, l := range lines {
		var row map[string]any
		if json.Unmarshal([]byte(l), &row) != nil || row["table"] != "blobs" || done {
			continue
		}
		for k := range row {
			if k != "table" && k != "thread_id" && k != "checkpoint_ns" && k != "channel" && k != "version" && k != "checkpoint_id" {
				delete(row, k)
			}
		}
		row["type"], row["enc"] = "agentstate/msgpack", 1
		row["data"] = base64.StdEncoding.EncodeToString(testbomb.Packed(n))
		b, _ := json.Marshal(row)
		lines[i], done = string(b)+"\n", true
	}
	if !done {
		t.Fatal("the export has no blobs line")
	}
	dump := strings.Join(lines, "")
	t.Logf("dump of %d bytes", len(dump))
	dst := filepath.Join(t.TempDir(), "bomb.db")
	r := agentstate(t, []byte(dump), "import", dst)
	want(t, r, 1)
	contains(t, r.stderr, "too large", limit)
	if _, err := os.Stat(dst); err == nil {
		t.Fatal("the refused import left a file")
	}
}

// A file whose stored list is a bomb: state and verify each end at once,
// naming the file and the limit (state exited 2 with its usage before, the
// refusal being an ErrTooLarge, which matches ErrInvalidArgument).
func TestReadRefusesABomb(t *testing.T) {
	path, _ := fixture(t, channels.ModeFull)
	rawExec(t, path, `UPDATE blobs SET data = ? WHERE thread_id = 'chat' AND channel = 'messages'`, testbomb.Envelope(engine.MaxListBytes-1<<20))
	r := agentstate(t, nil, "state", path, "chat")
	want(t, r, 1)
	contains(t, r.stderr, path, "too large", "MaxCost")
	r = agentstate(t, nil, "verify", path)
	want(t, r, 1)
	contains(t, r.stdout+r.stderr, "MaxCost")
}
