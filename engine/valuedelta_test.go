package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/google/go-cmp/cmp"
)

// vModel is what the checkpoint protocol promises about stored values,
// with nothing stored as a delta: every checkpoint names a version of each
// of its channels, and a version holds the bytes that were put.
type vModel struct {
	cps  map[cpKey]*vCP
	vals map[[4]string]codec.Blob // thread, ns, channel, version
}

type vCP struct {
	parent   string
	versions map[string]string
	run      string
}

func (m *vModel) values(k cpKey) map[string]codec.Blob {
	out := map[string]codec.Blob{}
	for ch, v := range m.cps[k].versions {
		if b, ok := m.vals[[4]string{k.thread, k.ns, ch, v}]; ok {
			out[ch] = b
		}
	}
	return out
}

// value is what the parent's version of ch holds, or what its nearest
// ancestor that holds one does, as a writer would edit it.
func (m *vModel) value(k cpKey, ch string) []byte {
	for id := k.id; id != ""; {
		c, ok := m.cps[cpKey{k.thread, k.ns, id}]
		if !ok {
			return nil
		}
		if b, ok := m.vals[[4]string{k.thread, k.ns, ch, c.versions[ch]}]; ok {
			return b.Data
		}
		id = c.parent
	}
	return nil
}

// seed is the history walk's seed: the value of the nearest proper
// ancestor that stores one for its version.
func (m *vModel) seed(k cpKey, ch string) *codec.Blob {
	for id := m.cps[k].parent; id != ""; {
		c, ok := m.cps[cpKey{k.thread, k.ns, id}]
		if !ok {
			return nil
		}
		if b, ok := m.vals[[4]string{k.thread, k.ns, ch, c.versions[ch]}]; ok {
			return &b
		}
		id = c.parent
	}
	return nil
}

// sync drops from the model what the engine removed (prune, retention,
// delete for runs): the model only knows which checkpoints survive.
func (m *vModel) sync(t *testing.T, db *DB) {
	t.Helper()
	alive := map[cpKey]bool{}
	for tup, err := range db.List(bg, ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		alive[cpKey{tup.Config.ThreadID, tup.Config.CheckpointNS, tup.Config.CheckpointID}] = true
	}
	named := map[[4]string]bool{}
	for k, c := range m.cps {
		if !alive[k] {
			delete(m.cps, k)
			continue
		}
		for ch, v := range c.versions {
			named[[4]string{k.thread, k.ns, ch, v}] = true
		}
	}
	for k := range m.vals {
		if !named[k] {
			delete(m.vals, k)
		}
	}
}

// editValue returns the next version of a value: an append, an edit or a
// removal in the middle, a replacement of a range, or an unrelated value.
func editValue(rng *rand.Rand, prev []byte) []byte {
	record := func() []byte {
		return fmt.Appendf(nil, `{"id":"%x","text":%q},`, rng.Uint64(), lcText(rng, 20+rng.IntN(400)))
	}
	noise := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	next := bytes.Clone(prev)
	switch op := rng.IntN(20); {
	case op < 8 || len(next) == 0: // append
		for range 1 + rng.IntN(3) {
			next = append(next, record()...)
		}
	case op < 11: // insert in the middle
		at := rng.IntN(len(next) + 1)
		next = slices.Insert(next, at, record()...)
	case op < 13: // remove a range
		at := rng.IntN(len(next))
		next = slices.Delete(next, at, min(len(next), at+1+rng.IntN(600)))
	case op < 15: // replace a range with bytes of the same length
		at := rng.IntN(len(next))
		copy(next[at:], noise(min(len(next)-at, 1+rng.IntN(64))))
	case op < 16: // an unrelated value
		next = noise(rng.IntN(3000))
	case op < 17: // a large, compressible one
		next = append(next, bytes.Repeat(record(), 100+rng.IntN(300))...)
	case op < 18: // empty
		next = nil
	default: // a few bytes changed here and there
		for range 1 + rng.IntN(5) {
			if len(next) > 0 {
				next[rng.IntN(len(next))] ^= byte(1 + rng.IntN(255))
			}
		}
	}
	return next
}

// TestValueDeltasProperty drives random edit sequences of channel values
// through Put (children of the head, forks from older checkpoints, versions
// bumped without a value as DeltaChannel does, reads between writes that
// move the cache), with copies, prunes, deletions of runs and retention
// runs in between, under random whole-value policies, and checks that
// every version of every surviving checkpoint reads back byte-identical
// through GetTuple and List, on the writing handle and on a fresh handle
// without caches, and that the file verifies.
func TestValueDeltasProperty(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := envSeed(); s != 0 {
		seed = s
	}
	t.Logf("seed %d (set AGENTSTATE_SEED to replay)", seed)
	rounds := 10
	if testing.Short() || raceEnabled {
		rounds = 3
	}
	for round := range rounds {
		rng := rand.New(rand.NewPCG(seed, uint64(round)))
		label := fmt.Sprintf("seed %d round %d", seed, round)
		chain := []int{1, 2, 5, 100}[rng.IntN(4)]
		share := []float64{0.2, 1, math.Inf(1)}[rng.IntN(3)]
		withPolicy([]int{16, 256}[rng.IntN(2)], chain, share, func() {
			runValueRound(t, rng, round, label)
		})
	}
}

func runValueRound(t *testing.T, rng *rand.Rand, round int, label string) {
	path := filepath.Join(t.TempDir(), "values.db")
	o := DefaultOptions()
	o.AutoRetain = round%2 == 1
	if round%4 == 3 {
		o.HistoryCacheBytes = 0 // the writer rebuilds every base from the file
	}
	db := openTest(t, path, &o)
	m := &vModel{cps: map[cpKey]*vCP{}, vals: map[[4]string]codec.Blob{}}
	threads := []string{"t1", "t2", "t3"}
	nss := []string{"", "sub:1"}
	chans := []string{"messages", "state", "tiny"}
	runs := []string{"run-a", "run-b", "run-c"}
	next := 0
	newID := func() string { next++; return fmt.Sprintf("%06d", next) }
	version := func(id, ch string) string { return id + "." + ch }
	if round%3 == 2 {
		// Versions that sort against the order they were made in: a
		// chain's read cannot take the range of versions below it.
		version = func(id, ch string) string {
			n, _ := strconv.Atoi(id)
			return fmt.Sprintf("%d.%s", 1_000_000-n, ch)
		}
	}
	heads := func(th, ns string) []cpKey {
		var ks []cpKey
		for k := range m.cps {
			if k.thread == th && k.ns == ns {
				ks = append(ks, k)
			}
		}
		slices.SortFunc(ks, func(a, b cpKey) int { return strings.Compare(a.id, b.id) })
		return ks
	}
	for step := range 160 {
		switch op := rng.IntN(100); {
		case op < 80: // a put
			th, ns := threads[rng.IntN(2)], nss[rng.IntN(len(nss))]
			parent := Config{ThreadID: th, CheckpointNS: ns}
			if ks := heads(th, ns); len(ks) > 0 && rng.IntN(12) > 0 {
				pk := ks[len(ks)-1]
				if rng.IntN(5) == 0 { // a fork
					pk = ks[rng.IntN(len(ks))]
				}
				parent.CheckpointID = pk.id
			}
			c := Checkpoint{V: 4, ID: newID(), TS: "ts", ChannelVersions: map[string]string{}, ChannelValues: map[string]codec.Blob{},
				VersionsSeen: map[string]map[string]string{}}
			pk := cpKey{th, ns, parent.CheckpointID}
			if pc, ok := m.cps[pk]; ok {
				for ch, v := range pc.versions {
					c.ChannelVersions[ch] = v
				}
			}
			nv := map[string]string{}
			for _, ch := range chans {
				if rng.IntN(4) == 0 {
					continue // unchanged
				}
				v := version(c.ID, ch)
				c.ChannelVersions[ch] = v
				nv[ch] = v
				if rng.IntN(6) == 0 {
					continue // a new version without a value (DeltaChannel between snapshots)
				}
				var data []byte
				if ch == "tiny" {
					data = fmt.Appendf(nil, `"%s"`, c.ID)
				} else {
					data = editValue(rng, m.value(pk, ch))
				}
				c.ChannelValues[ch] = codec.Blob{Type: []string{"json", "msgpack", "bytes"}[rng.IntN(3)], Data: data}
			}
			md := Metadata{"step": int64(step), "run_id": runs[rng.IntN(len(runs))]}
			if _, err := db.Put(bg, parent, c, md, nv); err != nil {
				t.Fatalf("%s step %d: put: %v", label, step, err)
			}
			k := cpKey{th, ns, c.ID}
			m.cps[k] = &vCP{parent: parent.CheckpointID, versions: c.ChannelVersions, run: md["run_id"].(string)}
			for ch, v := range nv {
				if b, ok := c.ChannelValues[ch]; ok {
					m.vals[[4]string{th, ns, ch, v}] = codec.Blob{Type: b.Type, Data: bytes.Clone(b.Data)}
				}
			}
			// The caller may reuse its buffers: the engine must have copied.
			for _, b := range c.ChannelValues {
				for i := range b.Data {
					b.Data[i] = 'X'
				}
			}
		case op < 88: // a read, which moves the cache
			ks := heads(threads[rng.IntN(2)], nss[rng.IntN(len(nss))])
			if len(ks) == 0 {
				continue
			}
			k := ks[rng.IntN(len(ks))]
			checkValues(t, db, m, k, label)
			// A history read makes the next puts extend the history cache.
			checkHistory(t, db, m, k, chans, label)
		case op < 91: // a copy
			src, dst := threads[rng.IntN(2)], "t3"
			if len(heads(src, "")) == 0 && len(heads(src, "sub:1")) == 0 {
				continue
			}
			if err := db.DeleteThread(bg, dst); err != nil {
				t.Fatal(err)
			}
			if err := db.CopyThread(bg, src, dst); err != nil {
				t.Fatalf("%s step %d: copy: %v", label, step, err)
			}
			for k := range m.cps {
				if k.thread == dst {
					delete(m.cps, k)
				}
			}
			for k, c := range m.cps {
				if k.thread == src {
					m.cps[cpKey{dst, k.ns, k.id}] = &vCP{parent: c.parent, versions: c.versions, run: c.run}
				}
			}
			for k, b := range m.vals {
				if k[0] == src {
					m.vals[[4]string{dst, k[1], k[2], k[3]}] = b
				}
			}
			m.sync(t, db)
		case op < 94: // prune
			if _, err := db.Prune(bg, []string{threads[rng.IntN(3)]}, admin.PruneKeepLatest); err != nil {
				t.Fatalf("%s step %d: prune: %v", label, step, err)
			}
			m.sync(t, db)
		case op < 97: // delete a run's checkpoints
			err := db.DeleteForRuns(bg, []string{runs[rng.IntN(len(runs))]}, admin.DeleteRunsOptions{})
			if err != nil && !errors.Is(err, ErrConflict) {
				t.Fatalf("%s step %d: delete for runs: %v", label, step, err)
			}
			m.sync(t, db)
		default: // retention
			ro := admin.RetainOptions{ThreadID: threads[rng.IntN(3)]}
			if rng.IntN(2) == 0 {
				ro.KeepLatest = 5 + rng.IntN(20)
			}
			ro.DropBranches = rng.IntN(3) == 0
			if _, err := db.Retain(bg, ro); err != nil && !errors.Is(err, ErrNotFound) {
				t.Fatalf("%s step %d: retain: %v", label, step, err)
			}
			m.sync(t, db)
		}
	}
	if _, err := db.Retain(bg, admin.RetainOptions{}); err != nil {
		t.Fatalf("%s: retain: %v", label, err)
	}
	m.sync(t, db)
	cold := DefaultOptions()
	cold.HistoryCacheBytes = 0
	fresh := openTest(t, path, &cold)
	for _, h := range []*DB{db, fresh} {
		for k := range m.cps {
			checkValues(t, h, m, k, label)
			checkHistory(t, h, m, k, chans, label)
		}
		for _, th := range threads {
			for tup := range slices.Values(collect(t, h, ListOptions{ThreadID: th})) {
				k := cpKey{tup.Config.ThreadID, tup.Config.CheckpointNS, tup.Config.CheckpointID}
				if diff := diffValues(m.values(k), tup.Checkpoint.ChannelValues); diff != "" {
					t.Fatalf("%s: List %v: %s", label, k, diff)
				}
			}
		}
	}
	rep, err := fresh.Verify(bg, admin.VerifyOptions{})
	if err != nil || !rep.OK {
		t.Fatalf("%s: verify: %v %v", label, err, rep.Problems)
	}
	deltas, err := countDeltas(fresh)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d checkpoints, %d values, %d stored as deltas", label, len(m.cps), len(m.vals), deltas)
}

// checkHistory compares the delta history walk's seeds, which are rebuilt
// values too, with the model's.
func checkHistory(t *testing.T, db *DB, m *vModel, k cpKey, chans []string, label string) {
	t.Helper()
	hist, err := db.DeltaChannelHistory(bg, Config{k.thread, k.ns, k.id}, chans)
	if err != nil {
		t.Fatalf("%s: history of %v: %v", label, k, err)
	}
	for _, ch := range chans {
		want, got := m.seed(k, ch), hist[ch].Seed
		if (want == nil) != (got == nil) || want != nil && (want.Type != got.Type || !bytes.Equal(want.Data, got.Data)) {
			t.Fatalf("%s: history of %s at %v: seed %v, want %v", label, ch, k, got != nil, want != nil)
		}
	}
}

func checkValues(t *testing.T, db *DB, m *vModel, k cpKey, label string) {
	t.Helper()
	got := mustGet(t, db, Config{k.thread, k.ns, k.id})
	if diff := diffValues(m.values(k), got.Checkpoint.ChannelValues); diff != "" {
		t.Fatalf("%s: GetTuple %v: %s", label, k, diff)
	}
}

// diffValues compares channel values byte for byte (cmp.Diff walks large
// byte slices element by element), describing the first difference.
func diffValues(want, got map[string]codec.Blob) string {
	if len(want) != len(got) {
		return fmt.Sprintf("channels %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	for ch, w := range want {
		g, ok := got[ch]
		switch {
		case !ok:
			return fmt.Sprintf("channel %q missing", ch)
		case g.Type != w.Type:
			return fmt.Sprintf("channel %q has type %q, want %q", ch, g.Type, w.Type)
		case !bytes.Equal(g.Data, w.Data):
			return fmt.Sprintf("channel %q: %d bytes differ from the %d put (%s)", ch, len(g.Data), len(w.Data), cmp.Diff(w.Data[:min(len(w.Data), 64)], g.Data[:min(len(g.Data), 64)]))
		}
	}
	return ""
}

func countDeltas(db *DB) (int64, error) {
	var n int64
	err := db.read(bg, func(c *conn) error {
		var err error
		n, err = c.queryInt64(`SELECT count(*) FROM blobs WHERE enc = 2`)
		return err
	})
	return n, err
}

// storedRow is how one value is stored.
type storedRow struct {
	enc  int64
	base string
	size int
}

func storedRows(t *testing.T, db *DB, thread, ch string) map[string]storedRow {
	t.Helper()
	out := map[string]storedRow{}
	err := db.read(bg, func(c *conn) error {
		return c.query(`SELECT version, enc, coalesce(base, ''), length(data) FROM blobs WHERE thread_id = ? AND channel = ?`, []any{thread, ch}, func(st row) error {
			out[st.Text(0)] = storedRow{st.Int64(1), st.Text(2), int(st.Int64(3))}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A chain is read with one range of versions when its versions sort in the
// order they were made and the thread did not branch there, and by the walk
// otherwise (versions that sort another way, a fork, a range that stops
// half way): every read exact either way, on a handle without caches.
func TestValueChainReadPaths(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version func(i int) string
		fork    bool // a second branch from version 10, read after the first
		walks   bool // whether a read takes the walk
	}{
		{"sorted", func(i int) string { return fmt.Sprintf("%08d", i) }, false, false},
		// LangGraph.js numbers versions 1, 2, ... 10: "10" sorts before "9".
		{"integers", strconv.Itoa, false, true},
		{"descending", func(i int) string { return fmt.Sprintf("%08d", 1000-i) }, false, true},
		{"fork", func(i int) string { return fmt.Sprintf("%08d", i) }, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "v.db")
			db := openTest(t, path, nil)
			g := newGrowingList(5, 40, false)
			want := map[string][]byte{}
			put := func(parent, id, version string, v []byte) {
				t.Helper()
				c := Checkpoint{V: 4, ID: id, ChannelVersions: map[string]string{"messages": version},
					ChannelValues: map[string]codec.Blob{"messages": {Type: "json", Data: v}}}
				mustPut(t, db, Config{ThreadID: "t", CheckpointID: parent}, c, nil, map[string]string{"messages": version})
				want[id] = bytes.Clone(v)
			}
			for i := 1; i <= 30; i++ {
				parent := ""
				if i > 1 {
					parent = fmt.Sprintf("%04d", i-1)
				}
				put(parent, fmt.Sprintf("%04d", i), tc.version(i), g.version(i-1))
			}
			if tc.fork {
				// Versions of the fork sort between the first branch's.
				for i := 11; i <= 20; i++ {
					parent := fmt.Sprintf("%04d", i-1)
					if i > 11 {
						parent = fmt.Sprintf("f%03d", i-1)
					}
					put(parent, fmt.Sprintf("f%03d", i), tc.version(i)+"f", g.version(i+15))
				}
			}
			rows := storedRows(t, db, "t", "messages")
			deltas := 0
			for _, r := range rows {
				if r.enc == encDelta {
					deltas++
				}
			}
			if deltas < 20 {
				t.Fatalf("only %d of %d values are deltas", deltas, len(rows))
			}
			db.Close()
			o := DefaultOptions()
			o.HistoryCacheBytes = 0
			db = openTest(t, path, &o)
			before := chainWalks.Load()
			for _, id := range slices.Sorted(maps.Keys(want)) {
				got := mustGet(t, db, Config{ThreadID: "t", CheckpointID: id})
				if !bytes.Equal(got.Checkpoint.ChannelValues["messages"].Data, want[id]) {
					t.Fatalf("checkpoint %s reads back different bytes", id)
				}
			}
			// A page of List: versions of one chain together.
			n := 0
			for tup, err := range db.List(bg, ListOptions{ThreadID: "t"}) {
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(tup.Checkpoint.ChannelValues["messages"].Data, want[tup.Config.CheckpointID]) {
					t.Fatalf("List: checkpoint %s reads back different bytes", tup.Config.CheckpointID)
				}
				n++
			}
			if n != len(want) {
				t.Fatalf("List gave %d checkpoints, want %d", n, len(want))
			}
			if walked := chainWalks.Load() > before; walked != tc.walks {
				t.Fatalf("reads took the walk: %v, want %v", walked, tc.walks)
			}
		})
	}
}

func TestValueDeltasChainShape(t *testing.T) {
	withPolicy(256, 4, math.Inf(1), func() {
		db := openTest(t, filepath.Join(t.TempDir(), "v.db"), nil)
		g := newGrowingList(3, 20, false)
		for i := range 10 {
			putVersion(t, db, "t", i, g.version(i))
		}
		// A fork: two children of checkpoint 3 each diff against its value.
		v := g.version(10)
		fork := Checkpoint{V: 4, ID: "00000004.fork", ChannelVersions: map[string]string{"messages": "00000004.fork"},
			ChannelValues: map[string]codec.Blob{"messages": {Type: "json", Data: v}}}
		mustPut(t, db, Config{ThreadID: "t", CheckpointID: "00000003"}, fork, nil, map[string]string{"messages": "00000004.fork"})
		rows := storedRows(t, db, "t", "messages")
		// Version 1 is whole (no parent), then deltas; every fifth whole
		// again (at most 4 deltas after a whole value).
		for i := 1; i <= 10; i++ {
			r := rows[fmt.Sprintf("%08d", i)]
			wantDelta := (i-1)%5 != 0
			if (r.enc == encDelta) != wantDelta {
				t.Fatalf("version %d stored with enc %d (base %q)", i, r.enc, r.base)
			}
			if wantDelta && r.base != fmt.Sprintf("%08d", i-1) {
				t.Fatalf("version %d is a delta of %q, want its parent's version", i, r.base)
			}
		}
		if r := rows["00000004.fork"]; r.enc != encDelta || r.base != "00000003" {
			t.Fatalf("the fork's value is stored as %+v, want a delta of its parent's version", r)
		}
		if r := rows["00000004"]; r.base != "00000003" {
			t.Fatalf("the first child's value is stored as %+v", r)
		}
		got := mustGet(t, db, Config{ThreadID: "t", CheckpointID: "00000004.fork"})
		if !bytes.Equal(got.Checkpoint.ChannelValues["messages"].Data, v) {
			t.Fatal("the fork reads back different bytes")
		}
	})
}

// A version whose parent checkpoint stores no value (LangGraph's
// DeltaChannel between snapshots) diffs against the nearest ancestor's.
// The handle that put the checkpoints between knows that value (the
// cache's seed hint) and takes it without walking the chain; a handle
// without that knowledge (no cache, or another handle) walks, and both
// choose the same base. Between two values the channel's version moves
// each way a LangGraph saver sees: listed as new without a value (the
// channel emptied, or a DeltaChannel's update), or left as the parent's.
func TestValueDeltasSkipVersionsWithoutValue(t *testing.T) {
	defer withPolicyOn(256, 100, math.Inf(1))()
	for _, tc := range []struct {
		name      string
		noCache   bool  // Options.HistoryCacheBytes 0
		coldEvery bool  // each value put through a new handle
		walks     int64 // seed walks over the 9 values after the first
	}{
		{name: "warm", walks: 0},
		{name: "no cache", noCache: true, walks: 9},
		{name: "other handle", coldEvery: true, walks: 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "v.db")
			var opts *Options
			if tc.noCache {
				o := DefaultOptions()
				o.HistoryCacheBytes = 0
				opts = &o
			}
			db := openTest(t, path, opts)
			g := newGrowingList(4, 30, false)
			parent := Config{ThreadID: "t"}
			var want [][]byte
			var walks int64
			version := ""
			for i := range 30 {
				id := fmt.Sprintf("%08d", i+1)
				newVersions := map[string]string{}
				if i%3 != 2 { // every third checkpoint keeps its parent's version
					version = id
					newVersions["messages"] = id
				}
				c := Checkpoint{V: 4, ID: id, ChannelVersions: map[string]string{"messages": version}, ChannelValues: map[string]codec.Blob{}}
				v := g.version(i)
				if i%3 == 0 {
					c.ChannelValues["messages"] = codec.Blob{Type: "json", Data: v}
					want = append(want, bytes.Clone(v))
					if tc.coldEvery && i > 0 {
						db = openTest(t, path, opts)
					}
				}
				before := seedWalks.Load()
				parent = mustPut(t, db, parent, c, nil, newVersions)
				walks += seedWalks.Load() - before
			}
			if walks != tc.walks {
				t.Fatalf("%d seed walks, want %d", walks, tc.walks)
			}
			rows := storedRows(t, db, "t", "messages")
			if len(rows) != 10 {
				t.Fatalf("%d values stored, want 10", len(rows))
			}
			for i := 1; i < 10; i++ {
				v, base := fmt.Sprintf("%08d", 3*i+1), fmt.Sprintf("%08d", 3*i-2)
				if r := rows[v]; r.enc != encDelta || r.base != base {
					t.Fatalf("version %s stored as %+v, want a delta of %s", v, r, base)
				}
				got := mustGet(t, db, Config{ThreadID: "t", CheckpointID: v})
				if !bytes.Equal(got.Checkpoint.ChannelValues["messages"].Data, want[i]) {
					t.Fatalf("version %s reads back different bytes", v)
				}
			}
		})
	}
}

// The seed hint names the nearest stored value for the checkpoint the
// handle put last on the chain's line, not for other checkpoints: a fork
// from an older checkpoint walks, and so does a put on the line the fork
// left, each diffing against the nearest value of its own ancestors.
func TestValueDeltasSeedHintOnlyForItsCheckpoint(t *testing.T) {
	defer withPolicyOn(256, 100, math.Inf(1))()
	db := openTest(t, filepath.Join(t.TempDir(), "v.db"), nil)
	g := newGrowingList(7, 10, false)
	var values [][]byte
	put := func(parent Config, id string, value bool, walks int64) Config {
		t.Helper()
		c := Checkpoint{V: 4, ID: id, ChannelVersions: map[string]string{"messages": id}, ChannelValues: map[string]codec.Blob{}}
		if value {
			c.ChannelValues["messages"] = codec.Blob{Type: "json", Data: g.version(len(values))}
			values = append(values, bytes.Clone(c.ChannelValues["messages"].Data))
		}
		before := seedWalks.Load()
		cfg := mustPut(t, db, parent, c, nil, map[string]string{"messages": id})
		if n := seedWalks.Load() - before; n != walks {
			t.Fatalf("the put of %s ran %d seed walks, want %d", id, n, walks)
		}
		return cfg
	}
	c1 := put(Config{ThreadID: "t"}, "00000001", true, 0)
	c2 := put(c1, "00000002", false, 0)
	c3 := put(c2, "00000003", true, 0) // the hint: from 00000002, 00000001's value
	c4 := put(c3, "00000004", false, 0)
	put(c2, "00000005", true, 1)       // a fork of 00000002: the chain's last value was 00000003's
	c6 := put(c4, "00000006", true, 1) // the chain's last value is now the fork's
	c7 := put(c6, "00000007", false, 0)
	put(c7, "00000008", true, 0)
	rows := storedRows(t, db, "t", "messages")
	for v, base := range map[string]string{"00000003": "00000001", "00000005": "00000001", "00000006": "00000003", "00000008": "00000006"} {
		if r := rows[v]; r.enc != encDelta || r.base != base {
			t.Fatalf("version %s stored as %+v, want a delta of %s", v, r, base)
		}
	}
	for i, id := range []string{"00000001", "00000003", "00000005", "00000006", "00000008"} {
		got := mustGet(t, db, Config{ThreadID: "t", CheckpointID: id})
		if !bytes.Equal(got.Checkpoint.ChannelValues["messages"].Data, values[i]) {
			t.Fatalf("%s reads back different bytes", id)
		}
	}
}

// A handle's cached value is not used for a version another handle has
// deleted and stored again with other bytes under the same checkpoint ids.
func TestValueDeltasCacheSeesRewrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.db")
	a := openTest(t, path, nil)
	b := openTest(t, path, nil)
	g1, g2 := newGrowingList(5, 10, false), newGrowingList(6, 10, false)
	defer withPolicyOn(256, 100, math.Inf(1))()
	for i := range 5 {
		putVersion(t, a, "t", i, g1.version(i))
	}
	if err := b.DeleteThread(bg, "t"); err != nil {
		t.Fatal(err)
	}
	var v []byte
	for i := range 7 {
		v = g2.version(i)
		putVersion(t, b, "t", i, v)
	}
	// a's cached value of version 5 is not the file's any more: a chain
	// through it is rebuilt from the file.
	if got := mustGet(t, a, Config{ThreadID: "t", CheckpointID: "00000007"}); !bytes.Equal(got.Checkpoint.ChannelValues["messages"].Data, v) {
		t.Fatal("version 7 reads back different bytes")
	}
	v = g2.version(7)
	want := bytes.Clone(v)
	putVersion(t, a, "t", 7, v)
	for _, h := range []*DB{a, b} {
		got := mustGet(t, h, Config{ThreadID: "t"})
		if !bytes.Equal(got.Checkpoint.ChannelValues["messages"].Data, want) {
			t.Fatal("the head reads back different bytes")
		}
	}
	if rep, err := b.Verify(bg, admin.VerifyOptions{}); err != nil || !rep.OK {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
}

// deltaFile writes a file whose protocol values are stored every way: plain,
// packed, deltas, with a fork.
func deltaFile(t *testing.T) (string, map[Config][]byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "v.db")
	want := map[Config][]byte{}
	withPolicy(256, 6, math.Inf(1), func() {
		db, err := Open(bg, testPath(t, path), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		g := newGrowingList(7, 40, false)
		for i := range 40 {
			v := g.version(i)
			cfg := putVersion(t, db, "chat", i, v)
			want[cfg] = bytes.Clone(v)
		}
		m := newGrowingList(8, 20, true)
		for i := range 20 {
			v := m.version(i)
			cfg := putVersion(t, db, "py", i, v)
			want[cfg] = bytes.Clone(v)
		}
		// Values of the engine's own type (an importer's): export keeps a
		// delta's bytes rather than decoding them as a value.
		var list []map[string]any
		parent := Config{ThreadID: "own"}
		for i := range 12 {
			list = append(list, map[string]any{"id": fmt.Sprint(i), "text": strings.Repeat(fmt.Sprint(i), 300)})
			v, err := codec.Marshal(list)
			if err != nil {
				t.Fatal(err)
			}
			id := fmt.Sprintf("%08d", i+1)
			c := Checkpoint{V: 4, ID: id, ChannelVersions: map[string]string{"messages": id},
				ChannelValues: map[string]codec.Blob{"messages": {Type: codec.TypeMsgpack, Data: v}}}
			parent = mustPut(t, db, parent, c, nil, map[string]string{"messages": id})
			want[parent] = v
		}
	})
	return path, want
}

func TestValueDeltasExportImport(t *testing.T) {
	path, want := deltaFile(t)
	src := openRW(t, path)
	first := exportOf(t, src, "")
	for _, s := range []string{`"enc":2,"base":"`, `"enc":1,"data":"`, `"type":"agentstate/msgpack","enc":2,"base":"`} {
		if !bytes.Contains(first, []byte(s)) {
			t.Fatalf("the export holds no %s row", s)
		}
	}
	dst := filepath.Join(t.TempDir(), "copy.db")
	if _, err := ImportFile(bg, testPath(t, dst), bytes.NewReader(first), nil, admin.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	copied := openRW(t, dst)
	if second := exportOf(t, copied, ""); !bytes.Equal(first, second) {
		t.Fatalf("export -> import -> export differs:\n%s", firstDiff(first, second))
	}
	if rep := verifyPath(t, dst); !rep.OK {
		t.Fatalf("imported file: %v", rep.Problems)
	}
	for cfg, v := range want {
		got := mustGet(t, copied, cfg)
		if !bytes.Equal(got.Checkpoint.ChannelValues["messages"].Data, v) {
			t.Fatalf("%v reads back different bytes after import", cfg)
		}
	}
	// A dump whose delta lost its base is refused, and changes nothing.
	lines := strings.Split(strings.TrimSuffix(string(first), "\n"), "\n")
	var cut []string
	dropped := false
	for _, l := range lines {
		if !dropped && strings.Contains(l, `"table":"blobs"`) && strings.Contains(l, `"thread_id":"chat"`) && strings.Contains(l, `"version":"00000001"`) {
			dropped = true
			continue
		}
		if strings.HasPrefix(l, `{"table":"end"`) {
			l = fmt.Sprintf(`{"table":"end","rows":%d}`, len(lines)-3)
		}
		cut = append(cut, l)
	}
	if !dropped {
		t.Fatal("no row to drop")
	}
	bad := filepath.Join(t.TempDir(), "bad.db")
	_, err := ImportFile(bg, testPath(t, bad), strings.NewReader(strings.Join(cut, "\n")+"\n"), nil, admin.ImportOptions{})
	if !errors.Is(err, ErrBadExport) || !strings.Contains(err.Error(), "dangling base") || strings.Contains(err.Error(), "loops") {
		t.Fatalf("import of a dump with a dangling delta: %v", err)
	}
	if n := len(collect(t, openRW(t, bad), ListOptions{})); n != 0 {
		t.Fatalf("the refused import left %d checkpoints", n)
	}
}

// Exports of older schemas still import, and read as they did: schema 4
// (before version deltas: no enc, no base) and schema 5 (deltas, before the
// tables were rebuilt as rowid tables; every table, every encoding).
func TestImportOldDumps(t *testing.T) {
	for _, tc := range []struct {
		version int
		has     []string // what makes the fixture what it claims to be
		hasNot  []string
	}{
		{4, nil, []string{`"enc"`}},
		{5, []string{`"enc":1,"data":"`, `"enc":2,"base":"`, `"table":"events"`, `"table":"runs"`, `"table":"store_items"`}, nil},
	} {
		t.Run(fmt.Sprint(tc.version), func(t *testing.T) {
			dump, err := os.ReadFile(fmt.Sprintf("testdata/export_schema_v%d.jsonl", tc.version))
			if err != nil {
				t.Fatal(err)
			}
			header := fmt.Sprintf(`"schema_version":%d`, tc.version)
			if !bytes.Contains(dump, []byte(header)) {
				t.Fatalf("the fixture is not a schema %d export", tc.version)
			}
			for _, s := range tc.has {
				if !bytes.Contains(dump, []byte(s)) {
					t.Fatalf("the fixture holds no %s", s)
				}
			}
			for _, s := range tc.hasNot {
				if bytes.Contains(dump, []byte(s)) {
					t.Fatalf("the fixture holds %s", s)
				}
			}
			dst := filepath.Join(t.TempDir(), "old.db")
			rep, err := ImportFile(bg, testPath(t, dst), bytes.NewReader(dump), nil, admin.ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Rows["blobs"] == 0 {
				t.Fatalf("import report %+v", rep)
			}
			if v := verifyPath(t, dst); !v.OK {
				t.Fatalf("imported file: %v", v.Problems)
			}
			db := openRW(t, dst)
			again := exportOf(t, db, "")
			// The same rows; only the header's schema version moved on.
			old := bytes.Replace(dump, []byte(header), []byte(fmt.Sprintf(`"schema_version":%d`, SchemaVersion)), 1)
			if !bytes.Equal(old, again) {
				t.Fatalf("re-export differs:\n%s", firstDiff(old, again))
			}
			// Its protocol thread goes on with deltas.
			tup := mustGet(t, db, Config{ThreadID: "proto"})
			var list []byte
			if err := json.Unmarshal(tup.Checkpoint.ChannelValues["messages"].Data, new(any)); err != nil {
				t.Fatalf("the imported value is not JSON: %v", err)
			}
			list = append(bytes.TrimSuffix(tup.Checkpoint.ChannelValues["messages"].Data, []byte("]")), []byte(`,{"more":"`+strings.Repeat("x", 300)+`"}]`)...)
			id := tup.Checkpoint.ID + "z"
			next := Checkpoint{V: 4, ID: id, ChannelVersions: map[string]string{"messages": id}, ChannelValues: map[string]codec.Blob{"messages": {Type: "json", Data: list}}}
			mustPut(t, db, tup.Config, next, nil, map[string]string{"messages": id})
			if r := storedRows(t, db, "proto", "messages")[id]; r.enc != encDelta {
				t.Fatalf("the next value is stored as %+v, want a delta", r)
			}
			if got := mustGet(t, db, Config{ThreadID: "proto"}); !bytes.Equal(got.Checkpoint.ChannelValues["messages"].Data, list) {
				t.Fatal("the new head reads back different bytes")
			}
		})
	}
}

// Damaged chains: a missing base, a flipped byte in a delta, a loop, an
// unknown encoding. Reads fail with ErrCorrupt (never a wrong value or a
// panic) and verify names each.
func TestValueDeltasDamage(t *testing.T) {
	for _, tc := range []struct {
		name, sql, want string
	}{
		{"missing base", `DELETE FROM blobs WHERE thread_id = 'chat' AND version = '00000030'`, "dangling base"},
		{"flipped byte", "", "does not apply"},
		{"loop", `UPDATE blobs SET base = '00000032' WHERE thread_id = 'chat' AND version = '00000031'`, "loops"},
		{"bad encoding", `UPDATE blobs SET enc = 7 WHERE thread_id = 'chat' AND version = '00000031'`, "unknown encoding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, _ := deltaFile(t)
			rows := storedRows(t, openRW(t, path), "chat", "messages")
			if rows["00000031"].enc != encDelta || rows["00000032"].enc != encDelta || rows["00000031"].base != "00000030" {
				t.Fatalf("the fixture changed: %+v %+v", rows["00000031"], rows["00000032"])
			}
			if tc.sql != "" {
				rawExec(t, path, tc.sql)
			} else {
				// A byte of the message the delta inserts.
				db := openTest(t, path, nil)
				d, _, err := readStored(db, "chat", "00000031")
				if err != nil {
					t.Fatal(err)
				}
				d[len(d)-40] ^= 0x20
				rawExec(t, path, fmt.Sprintf(`UPDATE blobs SET data = x'%x' WHERE thread_id = 'chat' AND version = '00000031'`, d))
				db.Close()
			}
			o := DefaultOptions()
			o.HistoryCacheBytes = 0
			db := openTest(t, path, &o)
			_, err := db.GetTuple(bg, Config{ThreadID: "chat", CheckpointID: "00000031"})
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("GetTuple of a damaged chain: %v", err)
			}
			rep, err := db.Verify(bg, admin.VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, p := range rep.Problems {
				found = found || p.Kind == "blob" && strings.Contains(p.Message, tc.want)
			}
			if rep.OK || !found {
				t.Fatalf("verify does not report %q: %v", tc.want, rep.Problems)
			}
			// The other thread is intact.
			if _, err := db.GetTuple(bg, Config{ThreadID: "py"}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func readStored(db *DB, thread, version string) (data []byte, enc int64, err error) {
	err = db.read(bg, func(c *conn) error {
		_, err := c.queryRow(`SELECT data, enc FROM blobs WHERE thread_id = ? AND version = ?`, []any{thread, version}, func(st row) error {
			data, enc = copyBytes(st.Blob(0)), st.Int64(1)
			return nil
		})
		return err
	})
	return data, enc, err
}

// rawExec changes a file behind the engine's back.
func rawExec(t *testing.T, path, q string) {
	t.Helper()
	db := openTest(t, path, nil)
	if err := db.write(bg, func(c *conn) error { return c.exec(q) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
}

// valuesReadBack checks that every checkpoint in want reads back its value of
// channel ch, on a handle without caches, and that the file verifies.
func valuesReadBack(t *testing.T, path, ch string, want map[Config][]byte) {
	t.Helper()
	cold := DefaultOptions()
	cold.HistoryCacheBytes = 0
	fresh := openTest(t, path, &cold)
	for cfg, v := range want {
		if got := mustGet(t, fresh, cfg); !bytes.Equal(got.Checkpoint.ChannelValues[ch].Data, v) {
			t.Fatalf("%v reads back different bytes", cfg)
		}
	}
	if v := verifyPath(t, path); !v.OK {
		t.Fatal(v.Problems)
	}
}

// Retention thins a chain's whole values like delta snapshots: the tip's
// and a geometric series stay whole, the others become deltas, every
// version reads the same, and the file verifies.
func TestRetainThinsValueChains(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.db")
	want := map[Config][]byte{}
	withPolicy(256, 3, math.Inf(1), func() {
		o := DefaultOptions()
		o.AutoRetain = false // what the explicit Retain below thins
		db := openTest(t, path, &o)
		g := newGrowingList(9, 200, false)
		for i := range 200 {
			v := g.version(i)
			want[putVersion(t, db, "t", i, v)] = bytes.Clone(v)
		}
		db.Close()
	})
	db := openRW(t, path)
	before := storedRows(t, db, "t", "messages")
	rep, err := db.Retain(bg, admin.RetainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after := storedRows(t, db, "t", "messages")
	wholes := func(rows map[string]storedRow) (n, bytes int) {
		for _, r := range rows {
			if r.enc != encDelta {
				n++
			}
			bytes += r.size
		}
		return n, bytes
	}
	nb, sb := wholes(before)
	na, sa := wholes(after)
	if rep.ValuesThinned != nb-na || na > 8 || na < 3 || sa >= sb || rep.BytesFreed != int64(sb-sa) {
		t.Fatalf("retain thinned %d values (%d bytes): %d whole values (%d bytes) before, %d (%d) after", rep.ValuesThinned, rep.BytesFreed, nb, sb, na, sa)
	}
	if r := after["00000200"]; r.enc == encDelta && after[r.base].enc == encDelta {
		// The head's chain must start from a whole value within the cadence.
		n := 0
		for v := "00000200"; after[v].enc == encDelta; v = after[v].base {
			n++
		}
		if n > 3 {
			t.Fatalf("the head is %d deltas past a whole value", n)
		}
	}
	valuesReadBack(t, path, "messages", want)
	// Once thinned, a second run finds nothing more to do.
	if rep, err := db.Retain(bg, admin.RetainOptions{}); err != nil || rep.ValuesThinned != 0 {
		t.Fatalf("second retain: %+v %v", rep, err)
	}
}

// A thread of the thread API may also hold channels the protocol stored
// (an importer's, a caller's own): conversion and retention rewrite the
// schema's channels and leave those chains readable.
func TestConvertCarriesValueChains(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mix.db")
	o := DefaultOptions()
	o.Mode, o.SnapshotEvery = channels.ModeDelta, 3
	db := openTest(t, path, &o)
	g := newGrowingList(10, 30, false)
	want := map[Config][]byte{}
	for i := range 30 {
		rng := rand.New(rand.NewPCG(uint64(i), 1))
		head, err := db.Commit(bg, "mix", Step{Tasks: []TaskWrites{{TaskID: "a", Writes: []ChannelWrite{{Channel: "messages",
			Value: []codec.Message{{Type: codec.Human, ID: fmt.Sprintf("m%d", i), Content: lcText(rng, 300)}}}}}}})
		if err != nil {
			t.Fatal(err)
		}
		tup := mustGet(t, db, head)
		c := tup.Checkpoint
		c.ID = head.CheckpointID + "x"
		v := "extra." + c.ID
		c.ChannelVersions["extra"] = v
		val := g.version(i)
		c.ChannelValues = map[string]codec.Blob{"extra": {Type: "json", Data: val}}
		want[mustPut(t, db, head, c, tup.Metadata, map[string]string{"extra": v})] = bytes.Clone(val)
	}
	if d, err := countDeltas(db); err != nil || d < 20 {
		t.Fatalf("%d values stored as deltas (%v)", d, err)
	}
	check := func(h *DB, when string) {
		t.Helper()
		for cfg, v := range want {
			if got := mustGet(t, h, cfg); !bytes.Equal(got.Checkpoint.ChannelValues["extra"].Data, v) {
				t.Fatalf("%s: %v reads back different bytes", when, cfg)
			}
		}
		rep, err := h.Verify(bg, admin.VerifyOptions{})
		if err != nil || !rep.OK {
			t.Fatalf("%s: verify: %v %v", when, err, rep.Problems)
		}
	}
	check(db, "written")
	if _, err := db.Retain(bg, admin.RetainOptions{}); err != nil {
		t.Fatal(err)
	}
	check(db, "retained")
	db.Close()
	if _, err := ConvertFile(bg, testPath(t, path), nil, channels.ModeFull, 1); err != nil {
		t.Fatal(err)
	}
	full := openRW(t, path)
	check(full, "converted to full")
	if d, err := countDeltas(full); err != nil || d < 20 {
		t.Fatalf("after conversion %d values are deltas (%v)", d, err)
	}
	full.Close()
	if _, err := ConvertFile(bg, testPath(t, path), nil, channels.ModeDelta, 4); err != nil {
		t.Fatal(err)
	}
	check(openRW(t, path), "converted back to delta")
}

// A handle without caches rebuilds each base from the file and still
// stores deltas (a missing base from the cache must never mean a whole
// value).
func TestValueDeltasWithoutCache(t *testing.T) {
	for _, msgpack := range []bool{false, true} {
		o := DefaultOptions()
		o.HistoryCacheBytes = 0
		db := openTest(t, filepath.Join(t.TempDir(), "v.db"), &o)
		g := newGrowingList(11, 60, msgpack)
		for i := range 60 {
			putVersion(t, db, "t", i, g.version(i))
		}
		rows := storedRows(t, db, "t", "messages")
		wholes := 0
		for _, r := range rows {
			if r.enc != encDelta {
				wholes++
			}
		}
		// Whole values at versions 1, 2, 4, 8, 16 and 32 (share 1).
		if wholes > 7 {
			t.Fatalf("msgpack %v: %d of 60 values stored whole", msgpack, wholes)
		}
	}
}
