package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/engine/records"
	"github.com/google/go-cmp/cmp"
)

func TestStorePutGetDelete(t *testing.T) {
	db, clk := openRec(t, nil)
	s := db.Store()
	ns := []string{"users", "u1", "memories"}
	t0 := clk.Now()
	if err := s.Put(rctx, ns, "k1", map[string]any{"text": "likes tea", "n": 1, "tags": []any{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(rctx, ns, "k1")
	if err != nil {
		t.Fatal(err)
	}
	want := records.Item{Namespace: ns, Key: "k1", Value: map[string]any{"text": "likes tea", "n": int64(1), "tags": []any{"a", "b"}}, CreatedAt: t0, UpdatedAt: t0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("get (-want +got):\n%s", diff)
	}

	// An update keeps created_at and moves updated_at.
	clk.Add(time.Minute)
	if err := s.Put(rctx, ns, "k1", map[string]any{"text": "likes coffee"}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Get(rctx, ns, "k1")
	want = records.Item{Namespace: ns, Key: "k1", Value: map[string]any{"text": "likes coffee"}, CreatedAt: t0, UpdatedAt: t0.Add(time.Minute)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("after update (-want +got):\n%s", diff)
	}

	// A nil value deletes; so does Delete; deleting twice is fine.
	if err := s.Put(rctx, ns, "k1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(rctx, ns, "k1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get after nil put: %v, want ErrNotFound", err)
	}
	s.Put(rctx, ns, "k2", map[string]any{})
	if err := s.Delete(rctx, ns, "k2"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(rctx, ns, "k2"); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := s.Get(rctx, ns, "k2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	// The same key in another namespace is another item.
	s.Put(rctx, []string{"users", "u2", "memories"}, "k1", map[string]any{"x": true})
	if _, err := s.Get(rctx, ns, "k1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("key leaked across namespaces: %v", err)
	}
}

func keys(items []records.Item) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, strings.Join(it.Namespace, ".")+"/"+it.Key)
	}
	return out
}

func TestStoreSearch(t *testing.T) {
	db, clk := openRec(t, nil)
	s := db.Store()
	put := func(ns, key string, v map[string]any) {
		t.Helper()
		clk.Add(time.Second)
		if err := s.Put(rctx, strings.Split(ns, "."), key, v); err != nil {
			t.Fatal(err)
		}
	}
	put("a.b", "1", map[string]any{"score": 10, "kind": "note", "meta": map[string]any{"lang": "en", "rank": 2.5}})
	put("a.b", "2", map[string]any{"score": 20, "kind": "todo", "meta": map[string]any{"lang": "fr", "rank": 1}})
	put("a.b.c", "3", map[string]any{"score": 30, "kind": "note"})
	put("a.bc", "4", map[string]any{"score": 40, "kind": "note"})
	put("a-b", "5", map[string]any{"score": 50, "kind": "note"})
	put("x", "6", map[string]any{"score": 60.5, "kind": "note", "meta": "flat"})

	for _, tc := range []struct {
		name string
		op   records.SearchOp
		want []string
	}{
		{"whole segments", records.SearchOp{Prefix: []string{"a", "b"}}, []string{"a.b.c/3", "a.b/2", "a.b/1"}},
		{"one namespace", records.SearchOp{Prefix: []string{"a", "b", "c"}}, []string{"a.b.c/3"}},
		{"parent", records.SearchOp{Prefix: []string{"a"}}, []string{"a.bc/4", "a.b.c/3", "a.b/2", "a.b/1"}},
		{"everything", records.SearchOp{}, []string{"x/6", "a-b/5", "a.bc/4", "a.b.c/3", "a.b/2", "a.b/1"}},
		{"limit offset", records.SearchOp{Limit: 2, Offset: 1}, []string{"a-b/5", "a.bc/4"}},
		{"offset past end", records.SearchOp{Prefix: []string{"a", "b"}, Offset: 5}, []string{}},
		{"plain equality", records.SearchOp{Filter: map[string]any{"kind": "todo"}}, []string{"a.b/2"}},
		{"$eq int vs float", records.SearchOp{Filter: map[string]any{"score": map[string]any{"$eq": 20.0}}}, []string{"a.b/2"}},
		{"$ne includes missing", records.SearchOp{Filter: map[string]any{"meta.lang": map[string]any{"$ne": "en"}}}, []string{"x/6", "a-b/5", "a.bc/4", "a.b.c/3", "a.b/2"}},
		{"$gt", records.SearchOp{Filter: map[string]any{"score": map[string]any{"$gt": 30}}}, []string{"x/6", "a-b/5", "a.bc/4"}},
		{"$gte $lt range", records.SearchOp{Filter: map[string]any{"score": map[string]any{"$gte": 20, "$lt": 50}}}, []string{"a.bc/4", "a.b.c/3", "a.b/2"}},
		{"$lte float", records.SearchOp{Filter: map[string]any{"score": map[string]any{"$lte": 10.5}}}, []string{"a.b/1"}},
		{"$gt string", records.SearchOp{Filter: map[string]any{"kind": map[string]any{"$gt": "nots"}}}, []string{"a.b/2"}},
		{"dotted nested", records.SearchOp{Filter: map[string]any{"meta.lang": "fr"}}, []string{"a.b/2"}},
		{"nested map", records.SearchOp{Filter: map[string]any{"meta": map[string]any{"rank": map[string]any{"$gt": 2}}}}, []string{"a.b/1"}},
		{"empty nested map needs a map", records.SearchOp{Filter: map[string]any{"meta": map[string]any{}}}, []string{"a.b/2", "a.b/1"}},
		{"number vs string never equal", records.SearchOp{Filter: map[string]any{"score": "10"}}, []string{}},
		{"filter and prefix and limit", records.SearchOp{Prefix: []string{"a"}, Filter: map[string]any{"kind": "note"}, Limit: 2}, []string{"a.bc/4", "a.b.c/3"}},
		{"filter and offset", records.SearchOp{Filter: map[string]any{"kind": "note"}, Offset: 3}, []string{"a.b.c/3", "a.b/1"}},
	} {
		got, err := s.Search(rctx, tc.op)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, keys(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestStoreSearchFilterPlacement checks that evaluating filters in Go and
// in SQL give the same pages, so the benchmark compares like with like.
func TestStoreSearchFilterPlacement(t *testing.T) {
	db, clk := openRec(t, nil)
	s := db.Store()
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		clk.Add(time.Millisecond)
		ns := []string{"p", fmt.Sprint(r.IntN(3))}
		if r.IntN(4) == 0 {
			ns = append(ns, "deep")
		}
		s.Put(rctx, ns, fmt.Sprint(i), map[string]any{"n": r.IntN(50), "f": r.Float64() * 50, "s": fmt.Sprint(r.IntN(9)), "m": map[string]any{"k": r.IntN(3)}})
	}
	defer func(old bool) { storeSearchInSQL = old }(storeSearchInSQL)
	for _, op := range []records.SearchOp{
		{Prefix: []string{"p"}, Filter: map[string]any{"n": map[string]any{"$gte": 10, "$lt": 30}}, Limit: 17, Offset: 3},
		{Prefix: []string{"p", "1"}, Filter: map[string]any{"f": map[string]any{"$gt": 25}}, Limit: 50},
		{Filter: map[string]any{"s": map[string]any{"$ne": "3"}, "m.k": 1}, Limit: 1000},
		{Prefix: []string{"p", "2", "deep"}, Filter: map[string]any{"m": map[string]any{"k": 2}}, Offset: 2},
	} {
		storeSearchInSQL = false
		inGo, err := s.Search(rctx, op)
		if err != nil {
			t.Fatal(err)
		}
		storeSearchInSQL = true
		inSQL, err := s.Search(rctx, op)
		if err != nil {
			t.Fatal(err)
		}
		if len(inGo) == 0 {
			t.Fatalf("%+v: no results, the case proves nothing", op)
		}
		if diff := cmp.Diff(inGo, inSQL); diff != "" {
			t.Fatalf("%+v: Go vs SQL (-go +sql):\n%s", op, diff)
		}
	}
}

func TestStoreListNamespaces(t *testing.T) {
	db, clk := openRec(t, nil)
	s := db.Store()
	for _, ns := range []string{"a.b.c", "a.b.d", "a.x.c", "a.x", "b.b.c", "c", "a.b.c.e"} {
		if err := s.Put(rctx, strings.Split(ns, "."), "k", map[string]any{}); err != nil {
			t.Fatal(err)
		}
	}
	// An expired namespace is not listed.
	s.Put(rctx, []string{"a", "gone"}, "k", map[string]any{}, records.WithTTL(time.Second))
	clk.Add(2 * time.Second)
	split := func(list ...string) [][]string {
		out := [][]string{}
		for _, ns := range list {
			out = append(out, strings.Split(ns, "."))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		op   records.ListNamespacesOp
		want [][]string
	}{
		{"all", records.ListNamespacesOp{}, split("a.b.c", "a.b.c.e", "a.b.d", "a.x", "a.x.c", "b.b.c", "c")},
		{"prefix", records.ListNamespacesOp{Prefix: []string{"a", "b"}}, split("a.b.c", "a.b.c.e", "a.b.d")},
		{"prefix wildcard", records.ListNamespacesOp{Prefix: []string{"*", "b"}}, split("a.b.c", "a.b.c.e", "a.b.d", "b.b.c")},
		{"suffix", records.ListNamespacesOp{Suffix: []string{"c"}}, split("a.b.c", "a.x.c", "b.b.c", "c")},
		{"suffix wildcard", records.ListNamespacesOp{Suffix: []string{"b", "*"}}, split("a.b.c", "a.b.d", "b.b.c")},
		{"prefix and suffix", records.ListNamespacesOp{Prefix: []string{"a"}, Suffix: []string{"c"}}, split("a.b.c", "a.x.c")},
		{"max depth", records.ListNamespacesOp{MaxDepth: 2}, split("a.b", "a.x", "b.b", "c")},
		{"max depth with prefix", records.ListNamespacesOp{Prefix: []string{"a", "b"}, MaxDepth: 3}, split("a.b.c", "a.b.d")},
		{"limit offset", records.ListNamespacesOp{Limit: 2, Offset: 1}, split("a.b.c.e", "a.b.d")},
		{"offset past end", records.ListNamespacesOp{Offset: 100}, split()},
		{"no match", records.ListNamespacesOp{Prefix: []string{"zzz"}}, split()},
	} {
		got, err := s.ListNamespaces(rctx, tc.op)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestStoreBatch(t *testing.T) {
	db, clk := openRec(t, nil)
	s := db.Store()
	ns := []string{"batch"}
	res, err := s.Batch(rctx,
		records.PutOp{Namespace: ns, Key: "a", Value: map[string]any{"v": 1}},
		records.GetOp{Namespace: ns, Key: "a"},
		records.PutOp{Namespace: ns, Key: "b", Value: map[string]any{"v": 2}},
		records.SearchOp{Prefix: ns},
		records.PutOp{Namespace: ns, Key: "a"},
		records.GetOp{Namespace: ns, Key: "a"},
		records.ListNamespacesOp{},
	)
	if err != nil {
		t.Fatal(err)
	}
	now := clk.Now()
	item := func(k string, v int64) records.Item {
		return records.Item{Namespace: ns, Key: k, Value: map[string]any{"v": v}, CreatedAt: now, UpdatedAt: now}
	}
	a := item("a", 1)
	want := []records.StoreResult{
		{}, {Item: &a}, {}, {Items: []records.Item{item("b", 2), item("a", 1)}}, {}, {}, {Namespaces: [][]string{ns}},
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Fatalf("batch results (-want +got):\n%s", diff)
	}

	// One bad op refuses the whole batch before anything is written.
	before := dumpRecords(t, db)
	_, err = s.Batch(rctx,
		records.PutOp{Namespace: ns, Key: "c", Value: map[string]any{"v": 3}},
		records.SearchOp{Filter: map[string]any{"x') OR '1'='1": 1}},
	)
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "op 1") {
		t.Fatalf("bad batch: %v, want ErrInvalidArgument naming op 1", err)
	}
	if diff := cmp.Diff(before, dumpRecords(t, db)); diff != "" {
		t.Fatalf("a refused batch changed the file:\n%s", diff)
	}
	if _, err := s.Batch(rctx, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("nil op: %v", err)
	}
}

// TestStoreBatchMatchesOneByOne is the batch oracle: a random sequence of
// operations gives the same results and the same final state whether it
// runs as one batch or one call at a time.
func TestStoreBatchMatchesOneByOne(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	var ops []records.StoreOp
	nss := [][]string{{"a"}, {"a", "b"}, {"c"}}
	for range 200 {
		ns := nss[r.IntN(len(nss))]
		key := fmt.Sprint(r.IntN(8))
		switch r.IntN(5) {
		case 0, 1:
			ops = append(ops, records.PutOp{Namespace: ns, Key: key, Value: map[string]any{"n": r.IntN(10)}})
		case 2:
			ops = append(ops, records.PutOp{Namespace: ns, Key: key})
		case 3:
			ops = append(ops, records.GetOp{Namespace: ns, Key: key})
		case 4:
			ops = append(ops, records.SearchOp{Prefix: ns[:1], Filter: map[string]any{"n": map[string]any{"$gte": r.IntN(10)}}, Limit: 5})
		}
	}
	run := func(batch bool) ([]records.StoreResult, []records.Item) {
		db, _ := openRec(t, nil)
		var res []records.StoreResult
		if batch {
			var err error
			if res, err = db.Store().Batch(rctx, ops...); err != nil {
				t.Fatal(err)
			}
		} else {
			for _, op := range ops {
				one, err := db.Store().Batch(rctx, op)
				if err != nil {
					t.Fatal(err)
				}
				res = append(res, one[0])
			}
		}
		all, err := db.Store().Search(rctx, records.SearchOp{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return res, all
	}
	res1, state1 := run(true)
	res2, state2 := run(false)
	if diff := cmp.Diff(res1, res2); diff != "" {
		t.Fatalf("results differ (-batch +one by one):\n%s", diff)
	}
	if diff := cmp.Diff(state1, state2); diff != "" {
		t.Fatalf("final state differs (-batch +one by one):\n%s", diff)
	}
	if len(state1) == 0 {
		t.Fatal("empty final state proves nothing")
	}
}

func TestStoreTTL(t *testing.T) {
	db, clk := openRec(t, func(o *Options) { o.StoreDefaultTTL = time.Hour })
	s := db.Store()
	ns := []string{"ttl"}
	t0 := clk.Now()
	s.Put(rctx, ns, "minute", map[string]any{"v": 1}, records.WithTTL(time.Minute))
	s.Put(rctx, ns, "default", map[string]any{"v": 2})
	s.Put(rctx, ns, "forever", map[string]any{"v": 3}, records.WithTTL(records.NoExpiry))

	it, _ := s.Get(rctx, ns, "default", records.WithRefresh(records.RefreshOff))
	if !it.ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("default TTL: expires %v, want %v", it.ExpiresAt, t0.Add(time.Hour))
	}
	it, _ = s.Get(rctx, ns, "forever")
	if !it.ExpiresAt.IsZero() {
		t.Fatalf("NoExpiry item expires at %v", it.ExpiresAt)
	}

	// A read refreshes: 59s later the minute item lives another minute.
	clk.Add(59 * time.Second)
	it, err := s.Get(rctx, ns, "minute")
	if err != nil {
		t.Fatal(err)
	}
	if want := clk.Now().Add(time.Minute); !it.ExpiresAt.Equal(want) {
		t.Fatalf("refreshed expiry %v, want %v", it.ExpiresAt, want)
	}
	clk.Add(59 * time.Second)
	// A read that asks not to refresh leaves the expiry alone...
	it, err = s.Get(rctx, ns, "minute", records.WithRefresh(records.RefreshOff))
	if err != nil {
		t.Fatalf("item expired although refreshed 59s ago: %v", err)
	}
	// ...so two seconds later it is gone, for every read, before any sweep.
	clk.Add(2 * time.Second)
	if _, err := s.Get(rctx, ns, "minute"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("expired item returned by Get: %v", err)
	}
	items, _ := s.Search(rctx, records.SearchOp{Prefix: ns})
	if diff := cmp.Diff([]string{"ttl/forever", "ttl/default"}, keys(items)); diff != "" {
		t.Fatalf("search after expiry (-want +got):\n%s", diff)
	}
	// Search refreshes what it returns (the default item), not the others.
	if want := clk.Now().Add(time.Hour); !items[1].ExpiresAt.Equal(want) {
		t.Fatalf("search did not refresh: %v, want %v", items[1].ExpiresAt, want)
	}
	it, _ = s.Get(rctx, ns, "default", records.WithRefresh(records.RefreshOff))
	if want := clk.Now().Add(time.Hour); !it.ExpiresAt.Equal(want) {
		t.Fatalf("stored expiry after search %v, want %v", it.ExpiresAt, want)
	}
	// The expired row is still in the file until a sweep deletes it.
	if n := countRowsRec(t, db, "store_items"); n != 3 {
		t.Fatalf("%d rows before sweep, want 3", n)
	}
	n, err := s.Sweep(rctx)
	if err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v; want 1", n, err)
	}
	if n := countRowsRec(t, db, "store_items"); n != 2 {
		t.Fatalf("%d rows after sweep, want 2", n)
	}
	// Putting over an expired, unswept item makes a new item.
	s.Put(rctx, ns, "short", map[string]any{}, records.WithTTL(time.Second))
	clk.Add(time.Hour)
	s.Put(rctx, ns, "short", map[string]any{})
	it, _ = s.Get(rctx, ns, "short")
	if !it.CreatedAt.Equal(clk.Now()) {
		t.Fatalf("re-put of an expired item kept created_at %v", it.CreatedAt)
	}
	if _, err := s.Get(rctx, ns, "x", records.WithRefresh(records.TTLRefresh(9))); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("bad refresh mode: %v", err)
	}
	if err := s.Put(rctx, ns, "x", map[string]any{}, records.WithTTL(-2*time.Second)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("negative TTL: %v", err)
	}
}

func TestStoreRefreshOnReadOption(t *testing.T) {
	db, clk := openRec(t, func(o *Options) { o.StoreRefreshOnRead = false })
	s := db.Store()
	ns := []string{"r"}
	s.Put(rctx, ns, "k", map[string]any{}, records.WithTTL(time.Minute))
	t0 := clk.Now()
	clk.Add(30 * time.Second)
	if it, _ := s.Get(rctx, ns, "k"); !it.ExpiresAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("refreshed although the option is off: %v", it.ExpiresAt)
	}
	if it, _ := s.Get(rctx, ns, "k", records.WithRefresh(records.RefreshOn)); !it.ExpiresAt.Equal(clk.Now().Add(time.Minute)) {
		t.Fatalf("RefreshOn did not refresh: %v", it.ExpiresAt)
	}
}

func countRowsRec(t testing.TB, db *DB, table string) int64 {
	t.Helper()
	in, err := db.Info(rctx)
	if err != nil {
		t.Fatal(err)
	}
	return in.Rows[table]
}

func TestStoreBackgroundSweeper(t *testing.T) {
	db, clk := openRec(t, func(o *Options) { o.StoreSweepInterval = 10 * time.Millisecond })
	db.Store().Put(rctx, []string{"s"}, "k", map[string]any{}, records.WithTTL(time.Second))
	db.Store().Put(rctx, []string{"s"}, "keep", map[string]any{})
	clk.Add(time.Minute)
	deadline := time.Now().Add(10 * time.Second)
	for countRowsRec(t, db, "store_items") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the background sweeper did not delete the expired item")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Close stops the sweeper (it would fail with ErrClosed otherwise, and
	// the race detector would see it touch a closed handle).
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestStoreRejectsHostileInput(t *testing.T) {
	db, _ := openRec(t, nil)
	s := db.Store()
	s.Put(rctx, []string{"ok"}, "k", map[string]any{"a": 1})
	before := dumpRecords(t, db)
	hostile := []string{
		"x') OR '1'='1",
		`a"]'); DROP TABLE x; --`,
		"a.b",
		"",
		"*",
		"semi;colon",
		"with space",
		"new\nline",
		"nul\x00byte",
		"$.a",
		"bad\xffutf8",
		strings.Repeat("a", 129),
	}
	for _, h := range hostile {
		for name, call := range map[string]func() error{
			"put":    func() error { return s.Put(rctx, []string{"ok", h}, "k", map[string]any{"v": 1}) },
			"get":    func() error { _, err := s.Get(rctx, []string{h}, "k"); return err },
			"delete": func() error { return s.Delete(rctx, []string{"ok", h}, "k") },
			"search": func() error { _, err := s.Search(rctx, records.SearchOp{Prefix: []string{h}}); return err },
			"list": func() error {
				_, err := s.ListNamespaces(rctx, records.ListNamespacesOp{Suffix: []string{h}})
				return err
			},
			"filterkey": func() error { _, err := s.Search(rctx, records.SearchOp{Filter: map[string]any{h: 1}}); return err },
			"nestedkey": func() error {
				_, err := s.Search(rctx, records.SearchOp{Filter: map[string]any{"a": map[string]any{h: 1}}})
				return err
			},
		} {
			if h == "*" && name == "list" {
				continue // the wildcard is legal in list patterns
			}
			if h == "a.b" && (name == "filterkey" || name == "nestedkey") {
				continue // dots reach nested fields in filter keys
			}
			err := call()
			if !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("%s with %q: err = %v, want ErrInvalidArgument", name, h, err)
			}
		}
	}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"empty namespace", func() error { return s.Put(rctx, nil, "k", map[string]any{}) }},
		{"empty key", func() error { return s.Put(rctx, []string{"ok"}, "", map[string]any{}) }},
		{"control char key", func() error { return s.Put(rctx, []string{"ok"}, "a\x01", map[string]any{}) }},
		{"unknown operator", func() error {
			_, err := s.Search(rctx, records.SearchOp{Filter: map[string]any{"a": map[string]any{"$where": "1"}}})
			return err
		}},
		{"operator and field mixed", func() error {
			_, err := s.Search(rctx, records.SearchOp{Filter: map[string]any{"a": map[string]any{"$gt": 1, "b": 2}}})
			return err
		}},
		{"$gt on a list", func() error {
			_, err := s.Search(rctx, records.SearchOp{Filter: map[string]any{"a": map[string]any{"$gt": []any{1}}}})
			return err
		}},
		{"limit too big", func() error { _, err := s.Search(rctx, records.SearchOp{Limit: 1001}); return err }},
		{"negative offset", func() error { _, err := s.Search(rctx, records.SearchOp{Offset: -1}); return err }},
		{"negative max depth", func() error { _, err := s.ListNamespaces(rctx, records.ListNamespacesOp{MaxDepth: -1}); return err }},
		{"value that cannot be stored", func() error {
			return s.Put(rctx, []string{"ok"}, "k", map[string]any{"f": func() {}})
		}},
	} {
		if err := tc.call(); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want ErrInvalidArgument", tc.name, err)
		}
	}
	if diff := cmp.Diff(before, dumpRecords(t, db)); diff != "" {
		t.Fatalf("refused calls changed the file:\n%s", diff)
	}
	// Legal but unusual namespaces and keys round-trip.
	odd := []string{"ünïcødé", "user@example:com", "a-b_c+d=e~f#g/h|i%j"}
	key := `it's "quoted"; DROP TABLE store_items; --`
	if err := s.Put(rctx, odd, key, map[string]any{"ok": true}); err != nil {
		t.Fatal(err)
	}
	it, err := s.Get(rctx, odd, key)
	if err != nil || !slices.Equal(it.Namespace, odd) || it.Key != key {
		t.Fatalf("odd item: %+v, %v", it, err)
	}
}
