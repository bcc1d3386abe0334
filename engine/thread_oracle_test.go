package engine

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/google/go-cmp/cmp"
)

// oracleSchema has a message channel and two non-message channels, so the
// oracle covers every kind of reducer in delta mode.
func oracleSchema() Schema {
	return Schema{
		MessagesChannel: channels.Messages{},
		"title":         channels.LastValue{},
		"count": channels.Reducer(func(state, update any) (any, error) {
			s, _ := state.(int64)
			u, ok := update.(int64)
			if !ok {
				return nil, fmt.Errorf("count takes integers, not %T", update)
			}
			return s + u, nil
		}),
	}
}

// op is one operation of a generated sequence; ref names an earlier op's
// checkpoint (-1: the head).
type op struct {
	kind  string // commit, fork, rollback, compact, retain
	ref   int
	run   string
	tasks []TaskWrites
}

// genOps makes a random sequence of thread operations. Message ids come from
// a small pool so that replacements, removals of present and absent ids and
// re-adds all happen.
func genOps(rng *rand.Rand, n int) []op {
	var ops []op
	nextID := 0
	var known []string
	msg := func() codec.Message {
		if len(known) > 0 && rng.IntN(4) == 0 {
			id := known[rng.IntN(len(known))]
			return ai(id, fmt.Sprintf("replaced %d", rng.IntN(1000)))
		}
		nextID++
		id := fmt.Sprintf("m%d", nextID)
		known = append(known, id)
		if rng.IntN(2) == 0 {
			return human(id, fmt.Sprintf("question %d", nextID))
		}
		return ai(id, fmt.Sprintf("answer %d", nextID))
	}
	write := func() ChannelWrite {
		switch r := rng.IntN(20); {
		case r < 12:
			var ms []codec.Message
			for range rng.IntN(3) + 1 {
				ms = append(ms, msg())
			}
			return ChannelWrite{MessagesChannel, ms}
		case r < 14:
			id := fmt.Sprintf("ghost%d", rng.IntN(3))
			if len(known) > 0 && rng.IntN(3) > 0 {
				id = known[rng.IntN(len(known))]
			}
			return ChannelWrite{MessagesChannel, []codec.Message{{ID: id, Type: codec.Remove}}}
		case r < 15:
			return ChannelWrite{MessagesChannel, []codec.Message{{ID: codec.RemoveAll, Type: codec.Remove}, msg()}}
		case r < 16:
			return ChannelWrite{MessagesChannel, channels.MessageUpdate{Overwrite: true, Messages: []codec.Message{msg()}}}
		case r < 18:
			return ChannelWrite{"count", int64(rng.IntN(5))}
		default:
			return ChannelWrite{"title", fmt.Sprintf("title %d", rng.IntN(100))}
		}
	}
	run := 0
	for i := range n {
		if rng.IntN(8) == 0 {
			run++
		}
		ref := -1
		if i > 0 && rng.IntN(6) == 0 {
			ref = rng.IntN(i)
		}
		o := op{kind: "commit", ref: ref, run: fmt.Sprintf("r%d", run)}
		switch r := rng.IntN(30); {
		case r < 2 && i > 0:
			o.kind = "fork"
			o.ref = rng.IntN(i)
		case r < 3 && i > 0:
			o.kind = "rollback"
			o.run = fmt.Sprintf("r%d", rng.IntN(run+1))
		case r < 4:
			o.kind = "compact"
		case r < 6:
			o.kind = "retain"
		default:
			for t := range rng.IntN(3) + 1 {
				tw := TaskWrites{TaskID: fmt.Sprintf("task-%c", 'c'-t)}
				for range rng.IntN(2) + 1 {
					tw.Writes = append(tw.Writes, write())
				}
				o.tasks = append(o.tasks, tw)
			}
		}
		ops = append(ops, o)
	}
	return ops
}

// runOps applies ops to a fresh file in the given mode and returns, per op,
// the checkpoint it made (or the empty config) and whether it failed.
func runOps(t *testing.T, ops []op, mode channels.Mode, k int) (path string, cfgs []Config, failed []bool) {
	o := DefaultOptions()
	o.Mode, o.SnapshotEvery, o.Schema = mode, k, oracleSchema()
	path = filepath.Join(t.TempDir(), fmt.Sprintf("%s-%d.db", mode, k))
	db := openTest(t, path, &o)
	const thread = "oracle"
	refCfg := func(ref int) Config {
		if ref < 0 || cfgs[ref].CheckpointID == "" {
			return Config{ThreadID: thread}
		}
		return cfgs[ref]
	}
	for _, x := range ops {
		var cfg Config
		var err error
		switch x.kind {
		case "commit":
			cfg, err = db.Commit(bg, thread, Step{Parent: refCfg(x.ref).CheckpointID, Tasks: x.tasks, RunID: x.run})
		case "fork":
			cfg, err = db.Fork(bg, refCfg(x.ref))
		case "rollback":
			cfg, err = db.Rollback(bg, thread, x.run)
		case "compact":
			cfg, err = db.Compact(bg, Config{ThreadID: thread}, MessagesChannel, []codec.Message{{ID: "summary", Type: codec.System, Content: "so far"}})
		case "retain":
			_, err = db.Retain(bg, admin.RetainOptions{ThreadID: thread})
		}
		cfgs = append(cfgs, cfg)
		failed = append(failed, err != nil)
	}
	db.Close()
	return path, cfgs, failed
}

// TestDeltaEqualsFull is the oracle of contract §2.4: for random sequences of
// commits (several tasks, appends, replacements, removals, remove-all,
// overwrites), forks from random ancestors, rollbacks, compactions and
// retention runs, every checkpoint's state in delta mode (K = 1, 3, 10)
// equals its state in full mode, read back by a handle without caches, and
// no operation fails in one mode and succeeds in the other.
func TestDeltaEqualsFull(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := envSeed(); s != 0 {
		seed = s
	}
	t.Logf("seed %d (set AGENTSTATE_SEED to replay)", seed)
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	for round := range rounds {
		rng := rand.New(rand.NewPCG(seed, uint64(round)))
		ops := genOps(rng, 70)
		fullPath, fullCfgs, fullFailed := runOps(t, ops, channels.ModeFull, 10)
		want := readStates(t, fullPath, fullCfgs)
		for _, k := range []int{1, 3, 10} {
			path, cfgs, failed := runOps(t, ops, channels.ModeDelta, k)
			if diff := cmp.Diff(fullFailed, failed); diff != "" {
				t.Fatalf("seed %d round %d K=%d: ops failing differ (-full +delta):\n%s", seed, round, k, diff)
			}
			got := readStates(t, path, cfgs)
			for i := range want {
				if diff := cmp.Diff(want[i], got[i]); diff != "" {
					t.Fatalf("seed %d round %d K=%d: state after op %d (%s) differs (-full +delta):\n%s", seed, round, k, i, ops[i].kind, diff)
				}
			}
		}
	}
}

// readStates opens path without caches and reads the state of every config.
func readStates(t *testing.T, path string, cfgs []Config) []map[string]any {
	o := DefaultOptions()
	o.Mode, o.HistoryCacheBytes, o.Schema = channels.ModeAuto, 0, oracleSchema()
	db := openTest(t, path, &o)
	var out []map[string]any
	for _, c := range cfgs {
		if c.CheckpointID == "" {
			out = append(out, nil)
			continue
		}
		s, err := db.State(bg, c)
		if err != nil {
			t.Fatalf("%s: State %s: %v", path, c.CheckpointID, err)
		}
		out = append(out, s.Values)
	}
	return out
}
