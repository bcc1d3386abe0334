package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/codec"
	"github.com/google/go-cmp/cmp"
)

// model is a deliberately simple in-memory implementation of the checkpoint
// protocol (contract §1, §2.3, §2.4): maps and loops, no cleverness. The property
// test drives the engine and the model with the same random operations and
// compares every read.
type model struct {
	cps    map[cpKey]*mCP
	blobs  map[[4]string]codec.Blob // thread, ns, channel, version
	writes []*mWrite
}

type mCP struct {
	key    cpKey
	parent string
	cp     Checkpoint // without values
	md     Metadata
}

type mWrite struct {
	at         cpKey
	w          PendingWrite
	consumedBy string
}

func newModel() *model {
	return &model{cps: map[cpKey]*mCP{}, blobs: map[[4]string]codec.Blob{}}
}

func (m *model) put(parent Config, c Checkpoint, md Metadata, nv map[string]string) error {
	if parent.CheckpointID != "" {
		if _, ok := m.cps[cpKey{parent.ThreadID, parent.CheckpointNS, parent.CheckpointID}]; !ok {
			return ErrNotFound
		}
		if c.ID <= parent.CheckpointID {
			return ErrInvalidArgument
		}
	}
	k := cpKey{parent.ThreadID, parent.CheckpointNS, c.ID}
	stored := c
	stored.ChannelValues = nil
	m.cps[k] = &mCP{key: k, parent: parent.CheckpointID, cp: stored, md: md}
	for ch, v := range nv {
		if b, ok := c.ChannelValues[ch]; ok {
			m.blobs[[4]string{k.thread, k.ns, ch, v}] = b
		}
	}
	if parent.CheckpointID != "" {
		for _, w := range m.writes {
			if w.at == (cpKey{k.thread, k.ns, parent.CheckpointID}) && w.consumedBy == "" {
				w.consumedBy = c.ID
			}
		}
	}
	return nil
}

func (m *model) putWrites(at Config, ws []Write, task, path string) error {
	k := cpKey{at.ThreadID, at.CheckpointNS, at.CheckpointID}
	if _, ok := m.cps[k]; !ok {
		return ErrNotFound
	}
	allSpecial := len(ws) > 0
	for _, w := range ws {
		if _, ok := specialIdx[w.Channel]; !ok {
			allSpecial = false
		}
	}
	for i, w := range ws {
		idx, ok := specialIdx[w.Channel]
		if !ok {
			idx = i
		}
		pos := slices.IndexFunc(m.writes, func(x *mWrite) bool { return x.at == k && x.w.TaskID == task && x.w.Idx == idx })
		nw := &mWrite{at: k, w: PendingWrite{TaskID: task, Channel: w.Channel, Value: w.Value, TaskPath: path, Idx: idx}}
		switch {
		case pos < 0:
			m.writes = append(m.writes, nw)
		case allSpecial:
			m.writes[pos] = nw
		}
	}
	return nil
}

func (m *model) tuple(k cpKey) Tuple {
	c := m.cps[k]
	t := Tuple{Config: Config{k.thread, k.ns, k.id}, Checkpoint: c.cp, Metadata: c.md, PendingWrites: []PendingWrite{}}
	if t.Metadata == nil {
		t.Metadata = Metadata{}
	}
	t.Checkpoint.ChannelValues = map[string]codec.Blob{}
	for ch, v := range c.cp.ChannelVersions {
		if b, ok := m.blobs[[4]string{k.thread, k.ns, ch, v}]; ok {
			t.Checkpoint.ChannelValues[ch] = b
		}
	}
	if c.parent != "" {
		t.ParentConfig = &Config{k.thread, k.ns, c.parent}
	}
	for _, w := range m.writes {
		if w.at == k {
			t.PendingWrites = append(t.PendingWrites, w.w)
		}
	}
	sortWrites(t.PendingWrites)
	return t
}

func (m *model) latest(thread, ns string) (cpKey, bool) {
	var best cpKey
	found := false
	for k := range m.cps {
		if k.thread == thread && k.ns == ns && (!found || k.id > best.id) {
			best, found = k, true
		}
	}
	return best, found
}

func (m *model) history(k cpKey, ch string) History {
	h := History{Writes: []PendingWrite{}}
	var blocks [][]PendingWrite
	child := m.cps[k]
	for child.parent != "" {
		a := m.cps[cpKey{k.thread, k.ns, child.parent}]
		var block []PendingWrite
		for _, w := range m.writes {
			if w.at == a.key && w.consumedBy == child.key.id && w.w.Channel == ch {
				block = append(block, w.w)
			}
		}
		sortWrites(block)
		blocks = append(blocks, block)
		if v, ok := a.cp.ChannelVersions[ch]; ok {
			if b, ok := m.blobs[[4]string{k.thread, k.ns, ch, v}]; ok {
				h.Seed = &b
				break
			}
		}
		child = a
	}
	for i := len(blocks) - 1; i >= 0; i-- {
		h.Writes = append(h.Writes, blocks[i]...)
	}
	return h
}

func (m *model) list(o ListOptions) []Tuple {
	var keys []cpKey
	for k, c := range m.cps {
		if o.ThreadID != "" && k.thread != o.ThreadID || o.Namespace != nil && k.ns != *o.Namespace || o.Before != "" && k.id >= o.Before {
			continue
		}
		if len(o.Filter) > 0 {
			var terms []filterTerm
			for fk, fv := range o.Filter {
				terms = append(terms, filterTerm{Path: strings.Split(fk, "."), Value: fv})
			}
			md := map[string]any(c.md)
			if !matchTerms(md, terms) {
				continue
			}
		}
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.id != b.id {
			return a.id > b.id
		}
		if a.thread != b.thread {
			return a.thread > b.thread
		}
		return a.ns > b.ns
	})
	if o.Limit > 0 && len(keys) > o.Limit {
		keys = keys[:o.Limit]
	}
	var out []Tuple
	for _, k := range keys {
		out = append(out, m.tuple(k))
	}
	return out
}

func TestCheckpointProtocolMatchesModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (set AGENTSTATE_SEED to replay)", seed)
	if s := envSeed(); s != 0 {
		seed = s
	}
	for round := range 12 {
		rng := rand.New(rand.NewPCG(seed, uint64(round)))
		o := DefaultOptions()
		if round%3 == 0 {
			o.HistoryCacheBytes = 0
		}
		runModelRound(t, rng, &o, fmt.Sprintf("seed %d round %d", seed, round))
	}
}

func runModelRound(t *testing.T, rng *rand.Rand, o *Options, label string) {
	db := openTest(t, Memory, o)
	m := newModel()
	threads := []string{"t1", "t2"}
	nss := []string{"", "sub:1"}
	channels := []string{"a", "m", "x"}
	tasks := []string{"task-b", "task-a", "task-c"}
	next := 0
	newID := func() string { next++; return fmt.Sprintf("%06d", next) }
	var all []cpKey
	for step := range 80 {
		switch op := rng.IntN(10); {
		case op < 4 || len(all) == 0: // put
			th, ns := threads[rng.IntN(len(threads))], nss[rng.IntN(len(nss))]
			parent := Config{ThreadID: th, CheckpointNS: ns}
			var parentCP *mCP
			var cands []cpKey
			for _, k := range all {
				if k.thread == th && k.ns == ns {
					cands = append(cands, k)
				}
			}
			if len(cands) > 0 && rng.IntN(5) > 0 {
				pk := cands[rng.IntN(len(cands))]
				if rng.IntN(4) > 0 {
					pk, _ = m.latest(th, ns)
				}
				parent.CheckpointID = pk.id
				parentCP = m.cps[pk]
			}
			c := Checkpoint{V: 4, ID: newID(), TS: "ts", ChannelVersions: map[string]string{}, ChannelValues: map[string]codec.Blob{},
				VersionsSeen: map[string]map[string]string{}}
			if parentCP != nil {
				for ch, v := range parentCP.cp.ChannelVersions {
					c.ChannelVersions[ch] = v
				}
			}
			nv := map[string]string{}
			for _, ch := range channels {
				if rng.IntN(2) == 0 {
					v := c.ID + "." + ch
					c.ChannelVersions[ch] = v
					nv[ch] = v
					if rng.IntN(3) > 0 {
						c.ChannelValues[ch] = jb(fmt.Sprintf(`"%s@%s"`, ch, c.ID))
					}
				}
			}
			if rng.IntN(6) == 0 {
				delete(c.ChannelVersions, "x")
				delete(nv, "x")
			}
			md := Metadata{"step": int64(step), "source": []string{"input", "loop", "update"}[rng.IntN(3)]}
			_, err := db.Put(bg, parent, c, md, nv)
			merr := m.put(parent, c, md, nv)
			if (err == nil) != (merr == nil) {
				t.Fatalf("%s step %d: put err %v, model %v", label, step, err, merr)
			}
			if err == nil {
				all = append(all, cpKey{th, ns, c.ID})
			}
		case op < 8: // writes
			k := all[rng.IntN(len(all))]
			var ws []Write
			for i := range rng.IntN(3) + 1 {
				ch := channels[rng.IntN(len(channels))]
				if rng.IntN(6) == 0 {
					ch = []string{ChannelInterrupt, ChannelError}[rng.IntN(2)]
				}
				ws = append(ws, Write{Channel: ch, Value: jb(fmt.Sprintf(`"w%d.%d"`, step, i))})
			}
			task := tasks[rng.IntN(len(tasks))]
			path := []string{"", "~1", "~2"}[rng.IntN(3)]
			cfg := Config{k.thread, k.ns, k.id}
			err := db.PutWrites(bg, cfg, ws, task, path)
			merr := m.putWrites(cfg, ws, task, path)
			if (err == nil) != (merr == nil) {
				t.Fatalf("%s step %d: putWrites err %v, model %v", label, step, err, merr)
			}
		default: // a put with a bad parent must fail in both
			bad := Config{ThreadID: "t1", CheckpointID: "nope"}
			c := Checkpoint{ID: "zzzz"}
			_, err := db.Put(bg, bad, c, nil, nil)
			if !errors.Is(err, ErrNotFound) || m.put(bad, c, nil, nil) == nil {
				t.Fatalf("%s step %d: bad parent accepted: %v", label, step, err)
			}
		}
	}
	// Every read of every checkpoint agrees.
	for _, k := range all {
		cfg := Config{k.thread, k.ns, k.id}
		if diff := cmp.Diff(m.tuple(k), mustGet(t, db, cfg)); diff != "" {
			t.Fatalf("%s: GetTuple %v (-model +engine):\n%s", label, k, diff)
		}
		got, err := db.DeltaChannelHistory(bg, cfg, channels)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range channels {
			if diff := cmp.Diff(m.history(k, ch), got[ch]); diff != "" {
				t.Fatalf("%s: history of %s at %v (-model +engine):\n%s", label, ch, k, diff)
			}
		}
	}
	root := ""
	for _, lo := range []ListOptions{
		{}, {ThreadID: "t1"}, {ThreadID: "t2", Namespace: &root}, {Limit: 5}, {Before: fmt.Sprintf("%06d", next/2)},
		{Filter: map[string]any{"source": "loop"}}, {ThreadID: "t1", Filter: map[string]any{"source": "update"}, Limit: 3},
	} {
		got := collect(t, db, lo)
		if diff := cmp.Diff(m.list(lo), got, cmp.Comparer(func(a, b Tuple) bool {
			return cmp.Equal(a.Config, b.Config) && cmp.Equal(a.Checkpoint, b.Checkpoint) && cmp.Equal(a.PendingWrites, b.PendingWrites)
		})); diff != "" {
			t.Fatalf("%s: List %+v (-model +engine):\n%s", label, lo, diff)
		}
	}
}

// envSeed returns AGENTSTATE_SEED, for replaying a failed property test.
func envSeed() uint64 {
	var s uint64
	fmt.Sscan(os.Getenv("AGENTSTATE_SEED"), &s)
	return s
}
