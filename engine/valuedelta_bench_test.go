package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
)

// growingList feeds n versions of a message list the way LangGraph's
// default messages channel hands them to a saver: the whole list at every
// step, one message longer each time. payload is the bytes of the
// messages themselves (each counted once).
type growingList struct {
	elems   [][]byte
	list    []byte
	payload int64
	msgpack bool
}

func newGrowingList(seed uint64, n int, msgpack bool) *growingList {
	rng := rand.New(rand.NewPCG(seed, 7))
	g := &growingList{msgpack: msgpack}
	for i := range n {
		m := chatMessage(rng, i)
		e := lcJSON(m)
		if msgpack {
			e = lcMsgpack(m)
		}
		g.elems = append(g.elems, e)
		g.payload += int64(len(e))
	}
	return g
}

// version returns the list of the first i+1 messages, i counting up from 0
// by one. It reuses one buffer (as a caller may), so the engine must not
// keep it.
func (g *growingList) version(i int) []byte {
	if g.msgpack {
		return msgpackList(g.elems[:i+1])
	}
	if i == 0 {
		g.list = append(append(append(g.list[:0], '['), g.elems[0]...), ']')
		return g.list
	}
	g.list = append(append(append(g.list[:len(g.list)-1], ','), g.elems[i]...), ']')
	return g.list
}

// putVersion stores version i of the list as checkpoint i+1 of thread,
// child of checkpoint i.
func putVersion(tb testing.TB, db *DB, thread string, i int, value []byte) Config {
	tb.Helper()
	return putStep(tb, db, thread, "messages", i, func(id string) Checkpoint {
		return Checkpoint{V: 4, ID: id, TS: "2026-01-01T00:00:00Z",
			ChannelVersions: map[string]string{"messages": id, "__start__": "00000001"},
			ChannelValues:   map[string]codec.Blob{"messages": {Type: "json", Data: value}},
			VersionsSeen:    map[string]map[string]string{"agent": {"messages": id}},
		}
	})
}

// putStep stores checkpoint i+1 of thread, child of checkpoint i, as cp
// makes it from its id, with a new version of channel ch.
func putStep(tb testing.TB, db *DB, thread, ch string, i int, cp func(id string) Checkpoint) Config {
	tb.Helper()
	id := fmt.Sprintf("%08d", i+1)
	parent := Config{ThreadID: thread}
	if i > 0 {
		parent.CheckpointID = fmt.Sprintf("%08d", i)
	}
	cfg, err := db.Put(bg, parent, cp(id), Metadata{"source": "loop", "step": int64(i), "parents": map[string]any{}}, map[string]string{ch: id})
	if err != nil {
		tb.Fatal(err)
	}
	return cfg
}

func fileBytes(tb testing.TB, db *DB) int64 {
	tb.Helper()
	if _, err := db.CheckpointWAL(bg); err != nil {
		tb.Fatal(err)
	}
	fi, err := os.Stat(db.Path())
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}

// withPolicy runs fn with the delta policy changed, restoring it after.
func withPolicy(minValue, maxChain int, share float64, fn func()) {
	defer withPolicyOn(minValue, maxChain, share)()
	fn()
}

// withPolicyOn changes the delta policy and returns what restores it.
func withPolicyOn(minValue, maxChain int, share float64) func() {
	old := deltaPolicy
	deltaPolicy.minValue, deltaPolicy.maxChain, deltaPolicy.share = minValue, maxChain, share
	return func() { deltaPolicy = old }
}

// BenchmarkPutGrowingList is 800 Puts of a growing message list
// (LangChain-shaped messages, the whole list at every step): file bytes
// against the bytes of the messages themselves, and time per Put. "whole"
// stores every version whole, as the engine did before version deltas;
// "chain=N,share=S" are other whole-value policies, for comparison.
func BenchmarkPutGrowingList(b *testing.B) {
	type policy struct {
		name     string
		min, max int
		share    float64
		retain   bool
		nocache  bool
	}
	def := deltaPolicy
	policies := []policy{
		{"default", def.minValue, def.maxChain, def.share, true, false},
		{"noretain", def.minValue, def.maxChain, def.share, false, false},
		{"whole", math.MaxInt, 0, 0, false, false},
		// Every base rebuilt from the file (a handle without caches).
		{"nocache", def.minValue, def.maxChain, def.share, false, true},
	}
	if os.Getenv("AGENTSTATE_DELTA_POLICIES") != "" {
		policies = append(policies,
			policy{"every10", def.minValue, 10, math.Inf(1), false, false},
			policy{"every10+retain", def.minValue, 10, math.Inf(1), true, false},
			policy{"chain=50,share=1", def.minValue, 50, 1, false, false},
			policy{"chain=200,share=1", def.minValue, 200, 1, false, false},
			policy{"chain=100,share=0.5", def.minValue, 100, 0.5, false, false},
			policy{"chain=100,share=2", def.minValue, 100, 2, false, false},
			policy{"chain=inf,share=1", def.minValue, math.MaxInt, 1, false, false},
		)
	}

	for _, serde := range []string{"json", "msgpack"} {
		g := newGrowingList(1, 800, serde == "msgpack")
		for _, p := range policies {
			b.Run(serde+"/"+p.name, func(b *testing.B) {
				withPolicy(p.min, p.max, p.share, func() {
					var file int64
					var elapsed time.Duration
					for range b.N {
						o := DefaultOptions()
						o.AutoRetain = p.retain
						if p.nocache {
							o.HistoryCacheBytes = 0
						}
						db, err := Open(bg, filepath.Join(b.TempDir(), "put.db"), &o)
						if err != nil {
							b.Fatal(err)
						}
						start := time.Now()
						for i := range len(g.elems) {
							putVersion(b, db, "t", i, g.version(i))
						}
						elapsed += time.Since(start)
						if p.retain {
							if _, err := db.Retain(bg, admin.RetainOptions{}); err != nil {
								b.Fatal(err)
							}
						}
						file = fileBytes(b, db)
						db.Close()
					}
					b.ReportMetric(float64(elapsed.Microseconds())/1000/float64(b.N*len(g.elems)), "ms/put")
					b.ReportMetric(float64(file)/float64(g.payload), "file/payload")
					b.ReportMetric(float64(file), "file-bytes")
					b.ReportMetric(float64(g.payload), "payload-bytes")
				})
			})
		}
	}
}

// BenchmarkGetTupleChain reads the head of a thread whose newest value is
// 100 versions past its whole value ("chain100"), against the same bytes
// stored whole ("whole": packed, as a chain's whole value is; "plain": as
// given, as the engine stored every value before version deltas), on a
// handle without caches (cold) and on one whose cache holds the head
// (warm). Each iteration reads all three in turn, so that the machine's
// noise falls on each alike; the metrics are the median time of each and
// the median ratio of the pairs.
func BenchmarkGetTupleChain(b *testing.B) {
	const n, tail = 800, 100
	g := newGrowingList(2, n, false)
	path := filepath.Join(b.TempDir(), "chain.db")
	db, err := Open(bg, path, nil)
	if err != nil {
		b.Fatal(err)
	}
	var want string
	for i := range n {
		v := g.version(i)
		want = string(v)
		switch {
		case i == n-tail-1:
			withPolicy(deltaPolicy.minValue, 0, 0, func() { putVersion(b, db, "chain100", i, v) })
		case i >= n-tail:
			withPolicy(deltaPolicy.minValue, math.MaxInt, math.Inf(1), func() { putVersion(b, db, "chain100", i, v) })
		default:
			putVersion(b, db, "chain100", i, v)
		}
		if i == n-1 {
			withPolicy(deltaPolicy.minValue, 0, 0, func() { putVersion(b, db, "whole", 0, v) })
			withPolicy(math.MaxInt, 0, 0, func() { putVersion(b, db, "plain", 0, v) })
		}
	}
	rows := map[string]int64{}
	err = db.read(bg, func(c *conn) error {
		return c.query(`SELECT thread_id, enc FROM blobs WHERE version = '00000800' OR thread_id != 'chain100'`, nil, func(st row) error {
			rows[st.Text(0)] = st.Int64(1)
			return nil
		})
	})
	if err != nil || rows["chain100"] != encDelta || rows["whole"] != encPacked || rows["plain"] != encPlain {
		b.Fatalf("the heads are stored as %v (%v)", rows, err)
	}
	db.Close()
	threads := []string{"chain100", "whole", "plain"}
	for _, cache := range []string{"cold", "warm"} {
		b.Run(cache, func(b *testing.B) {
			o := DefaultOptions()
			if cache == "cold" {
				o.HistoryCacheBytes = 0
			}
			db, err := Open(bg, path, &o)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			for _, th := range threads {
				t := mustGet(b, db, Config{ThreadID: th})
				if string(t.Checkpoint.ChannelValues["messages"].Data) != want {
					b.Fatalf("%s: the head reads back different bytes", th)
				}
			}
			times := make([][]float64, len(threads))
			b.ResetTimer()
			for i := range b.N {
				for j := range threads {
					k := (i + j) % len(threads)
					start := time.Now()
					if _, err := db.GetTuple(bg, Config{ThreadID: threads[k]}); err != nil {
						b.Fatal(err)
					}
					times[k] = append(times[k], float64(time.Since(start).Nanoseconds())/1e6)
				}
			}
			b.StopTimer()
			ratio := make([]float64, b.N)
			for i := range ratio {
				ratio[i] = times[0][i] / times[1][i]
			}
			for j, th := range threads {
				b.ReportMetric(median(times[j]), th+"-ms")
			}
			b.ReportMetric(median(ratio), "chain/whole")
		})
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
