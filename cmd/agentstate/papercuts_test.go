package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/engine/records"
)

// protocolChain writes one thread of n checkpoints through the checkpoint
// protocol, each with a new version of one channel value that differs a
// little from the one before: the engine stores each as a delta against
// the last, and whole again every 100 deltas, whole values that an explicit
// retention can thin.
func protocolChain(t *testing.T, n int) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "chain.db")
	// Without AutoRetain (on by default), which would thin them as they come.
	o := engine.DefaultOptions()
	o.AutoRetain = false
	db, err := engine.Open(ctx, path, &o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	parent := engine.Config{ThreadID: "t"}
	var notes []string
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		// Pseudo-random words, so that a whole value does not compress
		// below the delta that replaces it.
		words := make([]string, 30)
		for j := range words {
			words[j] = strconv.FormatUint(rng.Uint64()%1e9, 36)
		}
		notes = append(notes, fmt.Sprintf("note %d: %s", i, strings.Join(words, " ")))
		value, _ := json.Marshal(notes)
		id := fmt.Sprintf("1f0c0000-0000-6000-8000-%012d", i+1)
		v := fmt.Sprintf("%08d", i+1)
		parent, err = db.Put(ctx, parent, engine.Checkpoint{V: 4, ID: id, TS: "2026-01-01T00:00:00Z",
			ChannelValues:   map[string]codec.Blob{"notes": {Type: "json", Data: value}},
			ChannelVersions: map[string]string{"notes": v},
			VersionsSeen:    map[string]map[string]string{}}, engine.Metadata{"source": "loop", "step": i, "parents": map[string]any{}},
			map[string]string{"notes": v})
		if err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// unsplitTokens writes a thread whose one run recorded totals but no split
// by caller.
func unsplitTokens(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tokens.db")
	db, err := engine.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := db.Runs().Create(ctx, records.NewRun{ThreadID: "t", ModelName: "gpt-x", Status: records.RunRunning})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Runs().Complete(ctx, c.Run.RunID, records.RunSuccess, "", records.RunTotals{TotalTokens: 15,
		TokenUsageByModel: map[string]records.ModelTokens{"gpt-x": {Input: 12, Output: 3, Total: 15}}}); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPaperCuts: output that once left a reader guessing (issue 22) now
// says why, in words that match the other commands.
func TestPaperCuts(t *testing.T) {
	full, _ := fixture(t, channels.ModeFull) // thread "chat" with checkpoints; "other" only a thread record
	imported := filepath.Join(t.TempDir(), "imported.db")
	want(t, agentstate(t, nil, "import-langgraph", langGraphFixture(t), imported), 0) // 4 threads, 5 namespaces
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		says   []string
		denies []string
	}{
		{"retain: bytes freed without a row removed say they are thinned values",
			[]string{"retain", protocolChain(t, 350)}, 0,
			[]string{"would remove 0 checkpoints (kept 350), 0 snapshots (kept 0) and 0 writes, and would store 4 whole values as version deltas, in 1 thread: 42650 bytes of stored data (42650 of them by thinning)"},
			[]string{"1 threads", "would store 0 "}},
		{"retain: --keep-latest says why more are kept",
			[]string{"retain", "--keep-latest", "3", imported}, 0,
			[]string{"kept 26 checkpoints, not 3: --keep-latest 3 keeps the newest 3 of each namespace of each thread (5 namespaces in 4 threads), and 11 older checkpoints stay because a kept checkpoint needs them to be rebuilt"},
			nil},
		{"retain: no explanation when the limit is what was kept",
			[]string{"retain", "--keep-latest", "5", full}, 0,
			[]string{"kept 5)"}, []string{"not 5"}},
		{"tokens: totals without a split by caller are shown as such",
			[]string{"tokens", unsplitTokens(t), "t"}, 0,
			[]string{"thread t: 1 run, 0 LLM calls, 15 tokens (12 input, 3 output)", "lead agent 0", "not recorded 15"}, []string{"1 runs"}},
		{"tokens: no such row when the callers add up",
			[]string{"tokens", full, "chat"}, 0,
			[]string{"lead agent 40", "middleware 2"}, []string{"not recorded"}},
		{"verify counts the threads it checks, as such",
			[]string{"verify", full}, 0,
			[]string{"ok: 1 thread with checkpoints, ", "1 run, 3 events, 2 thread records, 1 store item"}, []string{"1 threads"}},
		{"convert: one thread is a thread",
			[]string{"convert", copyFile(t, full), "--mode", "delta"}, 0,
			[]string{"converted 1 thread to delta"}, []string{"1 threads"}},
		{"help spells flags as the usage line does",
			[]string{"help", "retain"}, 0,
			[]string{"[--json]", "\n  --json\n", "\n  --keep-latest int\n"}, []string{"\n  -json"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := agentstate(t, nil, c.args...)
			want(t, r, c.code)
			out := r.stdout + r.stderr
			norm := strings.Join(strings.Fields(out), " ") // tables are aligned with runs of spaces
			for _, s := range c.says {
				if !strings.Contains(out, s) && !strings.Contains(norm, s) {
					t.Errorf("agentstate %v does not say %q:\n%s", c.args, s, out)
				}
			}
			for _, s := range c.denies {
				if strings.Contains(out, s) || strings.Contains(norm, s) {
					t.Errorf("agentstate %v says %q:\n%s", c.args, s, out)
				}
			}
		})
	}
	// threads lists what verify does not count: the thread only a record knows.
	contains(t, agentstate(t, nil, "threads", full).stdout, "chat", "other")
}
