package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/engine/records"
)

func vput(t testing.TB, s Store, ns []string, key string, value map[string]any, vs map[string][]float32, opts ...records.PutOption) {
	t.Helper()
	op := records.PutOp{Namespace: ns, Key: key, Value: value, Vectors: vs, TTL: records.NoExpiry}
	for _, o := range opts {
		o(&op)
	}
	if _, err := s.Batch(rctx, op); err != nil {
		t.Fatal(err)
	}
}

func vsearch(t testing.TB, s Store, op records.SearchOp) ([]string, []float64) {
	t.Helper()
	items, err := s.Search(rctx, op)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	var scores []float64
	for _, it := range items {
		keys = append(keys, it.Key)
		if it.Score == nil {
			t.Fatalf("item %s has no score", it.Key)
		}
		scores = append(scores, *it.Score)
	}
	return keys, scores
}

func TestStoreVectorSearchRanksByDistance(t *testing.T) {
	db, _ := openRec(t, nil)
	s := db.Store()
	ns := []string{"mem", "u1"}
	// Two dimensions make every ordering easy to check by hand.
	vput(t, s, ns, "east", map[string]any{"kind": "a"}, map[string][]float32{"$": {1, 0}})
	vput(t, s, ns, "far-east", map[string]any{"kind": "b"}, map[string][]float32{"$": {10, 0}})
	vput(t, s, ns, "north", map[string]any{"kind": "a"}, map[string][]float32{"$": {0, 1}})
	vput(t, s, ns, "north-east", map[string]any{"kind": "a"}, map[string][]float32{"$": {1, 1}})
	vput(t, s, ns, "plain", map[string]any{"kind": "a"}, nil) // no vectors: not ranked
	vput(t, s, []string{"mem", "u2"}, "other", map[string]any{"kind": "a"}, map[string][]float32{"$": {1, 0}})

	q := []float32{2, 0}
	for _, c := range []struct {
		dist string
		want []string
	}{
		// cosine: direction only; ties in the order the items were put
		{"", []string{"east", "far-east", "north-east", "north"}},
		{"cosine", []string{"east", "far-east", "north-east", "north"}},
		// inner product: longest along the query first
		{"inner_product", []string{"far-east", "east", "north-east", "north"}},
		// l2: nearest first (east is 1 away, north-east 1.41, north 2.24, far-east 8)
		{"l2", []string{"east", "north-east", "north", "far-east"}},
	} {
		keys, scores := vsearch(t, s, records.SearchOp{Prefix: ns, Query: q, Distance: c.dist})
		if !slices.Equal(keys, c.want) {
			t.Errorf("%q: got %v, want %v", c.dist, keys, c.want)
		}
		if !slices.IsSortedFunc(scores, func(a, b float64) int { return -cmpF(a, b) }) {
			t.Errorf("%q: scores not descending: %v", c.dist, scores)
		}
		if c.dist == "l2" && math.Abs(scores[0]+1) > 1e-6 {
			t.Errorf("l2 score of east = %v, want -1 (minus the distance)", scores[0])
		}
	}
	// The filter applies before the ranking, offset and limit after it.
	keys, _ := vsearch(t, s, records.SearchOp{Prefix: ns, Query: q, Filter: map[string]any{"kind": "a"}, Offset: 1, Limit: 1})
	if !slices.Equal(keys, []string{"north-east"}) {
		t.Errorf("filtered page: got %v", keys)
	}
	// The prefix takes children too; without one, every namespace.
	if keys, _ := vsearch(t, s, records.SearchOp{Prefix: []string{"mem"}, Query: q, Limit: 3}); !slices.Equal(keys, []string{"east", "far-east", "other"}) {
		t.Errorf("prefix mem: got %v", keys)
	}
	if keys, _ := vsearch(t, s, records.SearchOp{Query: q, Limit: 100}); len(keys) != 5 {
		t.Errorf("every namespace: got %v", keys)
	}
	// A query of other dimensions matches nothing; a zero query scores 0.
	if keys, _ := vsearch(t, s, records.SearchOp{Prefix: ns, Query: []float32{1, 0, 0}}); len(keys) != 0 {
		t.Errorf("3-d query: got %v", keys)
	}
	if _, scores := vsearch(t, s, records.SearchOp{Prefix: ns, Query: []float32{0, 0}}); len(scores) != 4 || scores[0] != 0 {
		t.Errorf("zero query: scores %v", scores)
	}
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestStoreVectorsFollowTheirItem(t *testing.T) {
	db, clk := openRec(t, nil)
	s := db.Store()
	ns := []string{"docs"}
	q := []float32{1, 0}
	// An item scores as its best field.
	vput(t, s, ns, "two", map[string]any{}, map[string][]float32{"title": {0, 1}, "body": {1, 0.1}})
	vput(t, s, ns, "one", map[string]any{}, map[string][]float32{"$": {1, 0.5}})
	if keys, _ := vsearch(t, s, records.SearchOp{Prefix: ns, Query: q}); !slices.Equal(keys, []string{"two", "one"}) {
		t.Fatalf("best field: got %v", keys)
	}
	// A put replaces the vectors; a put without any leaves the item out.
	vput(t, s, ns, "two", map[string]any{}, map[string][]float32{"title": {0, 1}})
	if keys, _ := vsearch(t, s, records.SearchOp{Prefix: ns, Query: q}); !slices.Equal(keys, []string{"one", "two"}) {
		t.Fatalf("after replacing: got %v", keys)
	}
	vput(t, s, ns, "two", map[string]any{}, nil)
	if keys, _ := vsearch(t, s, records.SearchOp{Prefix: ns, Query: q}); !slices.Equal(keys, []string{"one"}) {
		t.Fatalf("after a put without vectors: got %v", keys)
	}
	if n := countVectors(t, db); n != 1 {
		t.Fatalf("%d vector rows, want 1", n)
	}
	// Deleted with the item.
	if err := s.Delete(rctx, ns, "one"); err != nil {
		t.Fatal(err)
	}
	if n := countVectors(t, db); n != 0 {
		t.Fatalf("%d vector rows after delete, want 0", n)
	}
	// Expired with it: invisible at once, swept with it.
	vput(t, s, ns, "brief", map[string]any{}, map[string][]float32{"$": {1, 0}}, records.WithTTL(time.Minute))
	vput(t, s, ns, "lasting", map[string]any{}, map[string][]float32{"$": {0, 1}})
	clk.Add(2 * time.Minute)
	if keys, _ := vsearch(t, s, records.SearchOp{Prefix: ns, Query: q}); !slices.Equal(keys, []string{"lasting"}) {
		t.Fatalf("after expiry: got %v", keys)
	}
	if n, err := s.Sweep(rctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	if n := countVectors(t, db); n != 1 {
		t.Fatalf("%d vector rows after sweep, want 1", n)
	}
}

func countVectors(t testing.TB, db *DB) int64 {
	t.Helper()
	var n int64
	err := db.read(rctx, func(c *conn) (err error) {
		n, err = c.queryInt64(`SELECT count(*) FROM store_vectors`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestStoreVectorsAreExportedAndImported(t *testing.T) {
	src, _ := openRec(t, nil)
	vput(t, src.Store(), []string{"docs"}, "a", map[string]any{"t": "x"}, map[string][]float32{"$": {0.25, -1.5, 3}})
	vput(t, src.Store(), []string{"docs"}, "b", map[string]any{"t": "y"}, map[string][]float32{"t": {1, 2, 3}, "u": {3, 2, 1}})
	var dump bytes.Buffer
	if _, err := src.Export(rctx, &dump, admin.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	dst := openTest(t, filepath.Join(t.TempDir(), "copy.db"), nil)
	rep, err := dst.Import(rctx, bytes.NewReader(dump.Bytes()), admin.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rows["store_vectors"] != 3 {
		t.Fatalf("imported %v", rep.Rows)
	}
	q := records.SearchOp{Prefix: []string{"docs"}, Query: []float32{0.25, -1.5, 3}}
	k1, s1 := vsearch(t, src.Store(), q)
	k2, s2 := vsearch(t, dst.Store(), q)
	if !slices.Equal(k1, k2) || !slices.Equal(s1, s2) {
		t.Fatalf("search after import: %v %v, before: %v %v", k2, s2, k1, s1)
	}
	var again bytes.Buffer
	if _, err := dst.Export(rctx, &again, admin.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dump.Bytes(), again.Bytes()) {
		t.Fatalf("export of the import differs")
	}
	// A vector whose item is not in the dump is refused, and nothing is imported.
	orphan := bytes.Replace(dump.Bytes(), []byte(`"table":"store_vectors","namespace":"docs","key":"a"`), []byte(`"table":"store_vectors","namespace":"docs","key":"z"`), 1)
	other := openTest(t, filepath.Join(t.TempDir(), "other.db"), nil)
	if _, err := other.Import(rctx, bytes.NewReader(orphan), admin.ImportOptions{}); !errors.Is(err, ErrBadExport) {
		t.Fatalf("orphan vector: %v, want ErrBadExport", err)
	}
}

func TestStoreVectorsBadInputIsRefused(t *testing.T) {
	db, _ := openRec(t, nil)
	s := db.Store()
	vput(t, s, []string{"docs"}, "a", map[string]any{}, map[string][]float32{"$": {1, 0}})
	before := dumpRecords(t, db)
	nan := float32(math.NaN())
	for name, op := range map[string]records.StoreOp{
		"NaN":        records.PutOp{Namespace: []string{"docs"}, Key: "a", Value: map[string]any{}, Vectors: map[string][]float32{"$": {nan, 0}}},
		"empty":      records.PutOp{Namespace: []string{"docs"}, Key: "a", Value: map[string]any{}, Vectors: map[string][]float32{"$": {}}},
		"no path":    records.PutOp{Namespace: []string{"docs"}, Key: "a", Value: map[string]any{}, Vectors: map[string][]float32{"": {1}}},
		"too long":   records.PutOp{Namespace: []string{"docs"}, Key: "a", Value: map[string]any{}, Vectors: map[string][]float32{"$": make([]float32, maxVectorDims+1)}},
		"inf query":  records.SearchOp{Query: []float32{float32(math.Inf(1))}},
		"empty q":    records.SearchOp{Query: []float32{}},
		"distance":   records.SearchOp{Query: []float32{1, 0}, Distance: "hamming"},
		"second bad": nil,
	} {
		ops := []records.StoreOp{records.PutOp{Namespace: []string{"docs"}, Key: "b", Value: map[string]any{}}, op}
		if _, err := s.Batch(rctx, ops...); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if after := dumpRecords(t, db); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("a refused batch changed the file")
	}
}

// TestStoreVectorTopKIsTheSort holds the heap to a full sort on random data,
// items with several vectors, ties and pages.
func TestStoreVectorTopKIsTheSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		n := r.IntN(60)
		k := r.IntN(12)
		best := map[int64]float64{}
		top := newTopK(k)
		for range n * 2 {
			item := int64(r.IntN(n + 1))
			sc := float64(r.IntN(8)) // many ties
			top.add(item, sc)
			if b, ok := best[item]; !ok || sc > b {
				best[item] = sc
			}
		}
		var want []scored
		for it, sc := range best {
			want = append(want, scored{sc, it})
		}
		sort.Slice(want, func(i, j int) bool { return want[j].worse(want[i]) })
		want = want[:min(k, len(want))]
		if got := top.best(); !slices.Equal(got, want) {
			t.Fatalf("round %d: got %v, want %v", round, got, want)
		}
	}
}

// BenchmarkStoreVectorSearch: 50,000 items of 384 dimensions in one
// namespace, a filter matching half of them, top 10 by cosine (issue 41's
// target natively: 50 ms). first-ms: the first search, which reads the
// vectors into the handle's copy; cpu-ms/op: the CPU time of a search.
func BenchmarkStoreVectorSearch(b *testing.B) {
	const n, dims = 50000, 384
	db, _ := openRec(b, nil)
	s := db.Store()
	r := rand.New(rand.NewPCG(3, 4))
	vec := func() []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	ns := []string{"mem", "u1"}
	var ops []records.StoreOp
	for i := range n {
		ops = append(ops, records.PutOp{Namespace: ns, Key: fmt.Sprintf("k%05d", i), Value: map[string]any{"kind": []string{"a", "b"}[i%2], "n": i},
			Vectors: map[string][]float32{"$": vec()}, TTL: records.NoExpiry})
		if len(ops) == 1000 {
			if _, err := s.Batch(rctx, ops...); err != nil {
				b.Fatal(err)
			}
			ops = ops[:0]
		}
	}
	q := vec()
	// The first search reads the vectors into the handle's copy; the loop
	// measures the searches after it.
	t0 := time.Now()
	if _, err := s.Search(rctx, records.SearchOp{Prefix: ns, Query: q, Filter: map[string]any{"kind": "a"}, Limit: 10}); err != nil {
		b.Fatal(err)
	}
	first := time.Since(t0)
	runs, cpu := 0, processCPU()
	for b.Loop() {
		items, err := s.Search(rctx, records.SearchOp{Prefix: ns, Query: q, Filter: map[string]any{"kind": "a"}, Limit: 10})
		if err != nil || len(items) != 10 {
			b.Fatal(len(items), err)
		}
		runs++
	}
	b.ReportMetric(float64(first.Microseconds())/1000, "first-ms")
	// The process's CPU time a search (at GOMAXPROCS=1, the search's own):
	// on a loaded machine the wall time also counts the waits for a core.
	b.ReportMetric(float64(processCPU()-cpu)/1e6/float64(runs), "cpu-ms/op")
}

// TestStoreVectorCopyFollowsOtherWriters: a handle's copy of the vectors
// follows what another handle (another process, say) writes to the file,
// and a search inside a write batch sees the batch's own puts.
func TestStoreVectorCopyFollowsOtherWriters(t *testing.T) {
	sqliteOnly(t, "two handles on one file")
	path := filepath.Join(t.TempDir(), "two.db")
	a := openTest(t, path, nil)
	b := openTest(t, path, nil)
	ns := []string{"n"}
	q := records.SearchOp{Prefix: ns, Query: []float32{1, 0}}
	vput(t, a.Store(), ns, "x", map[string]any{}, map[string][]float32{"$": {1, 0}})
	vput(t, a.Store(), ns, "y", map[string]any{}, map[string][]float32{"$": {0, 1}})
	if keys, _ := vsearch(t, a.Store(), q); !slices.Equal(keys, []string{"x", "y"}) {
		t.Fatalf("a: %v", keys)
	}
	vput(t, b.Store(), ns, "y", map[string]any{}, map[string][]float32{"$": {1, 0.01}}) // replaced
	vput(t, b.Store(), ns, "z", map[string]any{}, map[string][]float32{"$": {-1, 0}})   // added
	if err := b.Store().Delete(rctx, ns, "x"); err != nil {                             // deleted
		t.Fatal(err)
	}
	keys, scores := vsearch(t, a.Store(), q)
	if !slices.Equal(keys, []string{"y", "z"}) || scores[1] != -1 {
		t.Fatalf("a after b's writes: %v %v", keys, scores)
	}
	res, err := a.Store().Batch(rctx, records.PutOp{Namespace: ns, Key: "w", Value: map[string]any{}, Vectors: map[string][]float32{"$": {1, 0}}}, q)
	if err != nil || len(res[1].Items) != 3 || res[1].Items[0].Key != "w" {
		t.Fatalf("search in a write batch: %v %v", res, err)
	}
}

// BenchmarkStoreVectorPut: puts with a 384-dimension vector against the
// same puts without one, on two files, alternated so that the machine's
// load falls on both alike (issue 41's goal: with / without <= 1.1, the
// embedding aside). ratio: with / without.
func BenchmarkStoreVectorPut(b *testing.B) {
	const dims = 384
	r := rand.New(rand.NewPCG(5, 6))
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			with, _ := openRec(b, nil)
			without, _ := openRec(b, nil)
			ns := []string{"mem", "u1"}
			ops := func(n int, vecs bool) []records.StoreOp {
				out := make([]records.StoreOp, batch)
				for j := range out {
					op := records.PutOp{Namespace: ns, Key: fmt.Sprintf("k%07d", n*batch+j), Value: map[string]any{"text": "item", "n": n}, TTL: records.NoExpiry}
					if vecs {
						op.Vectors = map[string][]float32{"text": v}
					}
					out[j] = op
				}
				return out
			}
			var tWith, tWithout time.Duration
			n := 0
			for b.Loop() {
				for k, s := range []Store{without.Store(), with.Store()} {
					batchOps := ops(n, k == 1)
					t0 := time.Now()
					if _, err := s.Batch(rctx, batchOps...); err != nil {
						b.Fatal(err)
					}
					if k == 1 {
						tWith += time.Since(t0)
					} else {
						tWithout += time.Since(t0)
					}
				}
				n++
			}
			b.ReportMetric(float64(tWith)/float64(tWithout), "ratio")
			b.ReportMetric(float64(tWith.Microseconds())/float64(n*batch), "with-us/put")
			b.ReportMetric(float64(tWithout.Microseconds())/float64(n*batch), "without-us/put")
		})
	}
}

// TestVerifyChecksStoreVectors: verify reads store_vectors against the
// items: a clean file passes, and each kind of damage (an orphan row, a row
// naming another item, a blob of a broken length, a non-finite value, an
// item's vectors of two sizes) is a "vector" problem.
func TestVerifyChecksStoreVectors(t *testing.T) {
	fixture := func(t *testing.T) string {
		path := filepath.Join(t.TempDir(), "vec.db")
		db := openTest(t, path, nil)
		ns := []string{"mem", "u1"}
		vput(t, db.Store(), ns, "a", map[string]any{"t": "x"}, map[string][]float32{"t": {1, 0, 0}, "u": {0, 1, 0}})
		vput(t, db.Store(), ns, "b", map[string]any{"t": "y"}, map[string][]float32{"t": {0, 0, 1}})
		db.Close()
		return path
	}
	if rep := verifyPath(t, fixture(t)); !rep.OK {
		t.Fatalf("clean file: %v", rep.Problems)
	}
	for _, c := range []struct{ name, sql, want string }{
		{"orphan", `INSERT INTO store_vectors(item, namespace, key, path, vec) VALUES (NULL, 'mem.u1', 'gone', 't', x'0000803f')`, "its item does not exist"},
		{"wrong item", `UPDATE store_vectors SET item = (SELECT rowid FROM store_items WHERE key = 'a') WHERE key = 'b'`, "a search would rank the wrong item"},
		{"unlinked", `UPDATE store_vectors SET item = NULL WHERE key = 'b'`, "not linked to its item"},
		{"short blob", `UPDATE store_vectors SET vec = x'0000803f00' WHERE key = 'b'`, "5 bytes are not"},
		{"not finite", `UPDATE store_vectors SET vec = x'0000803f0000c07f0000803f' WHERE key = 'b'`, "value 1 is not finite"},
		{"two sizes", `UPDATE store_vectors SET vec = x'0000803f0000803f' WHERE key = 'a' AND path = 'u'`, "has 2 dimensions, the item's other vectors 3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := fixture(t)
			tamper(t, path, c.sql)
			wantProblem(t, verifyPath(t, path), "vector", c.want)
		})
	}
}

// TestStoreVectorBatchPutsInOrder: a batch's vector rows are inserted a
// few statements at a time, and each op still sees the ops before it: a
// second put of an item replaces the first one's vectors, a delete takes
// them, a search ranks them, and a batch of more rows than one statement
// holds stores them all.
func TestStoreVectorBatchPutsInOrder(t *testing.T) {
	db, _ := openRec(t, nil)
	s := db.Store()
	ns := []string{"n"}
	put := func(key string, v ...float32) records.PutOp {
		return records.PutOp{Namespace: ns, Key: key, Value: map[string]any{}, Vectors: map[string][]float32{"$": v}, TTL: records.NoExpiry}
	}
	q := records.SearchOp{Prefix: ns, Query: []float32{1, 0}}
	res, err := s.Batch(rctx, put("a", 0, 1), put("b", 1, 1), put("a", 1, 0), put("c", 1, 0),
		records.PutOp{Namespace: ns, Key: "c"}, q)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, it := range res[5].Items {
		keys = append(keys, it.Key)
	}
	if !slices.Equal(keys, []string{"a", "b"}) || *res[5].Items[0].Score != 1 {
		t.Fatalf("search in the batch: %v", res[5].Items)
	}
	if n := countVectors(t, db); n != 2 {
		t.Fatalf("%d vector rows, want 2 (a's second put, b)", n)
	}
	var ops []records.StoreOp
	for i := range 150 {
		ops = append(ops, put(fmt.Sprintf("k%03d", i), float32(i), 1))
	}
	if _, err := s.Batch(rctx, ops...); err != nil {
		t.Fatal(err)
	}
	if n := countVectors(t, db); n != 152 {
		t.Fatalf("%d vector rows, want 152", n)
	}
	if keys, _ := vsearch(t, s, records.SearchOp{Prefix: ns, Query: []float32{149, 1}, Limit: 1}); !slices.Equal(keys, []string{"k149"}) {
		t.Fatalf("top of the 150: %v", keys)
	}
}
