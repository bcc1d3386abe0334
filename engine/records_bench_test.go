package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/records"
)

// Benchmarks of the record surfaces. Fixtures are built in one transaction
// through the same SQL the surfaces use, so building them stays cheap.

const benchNS = "bench.items"

func benchValue(i int) map[string]any {
	return map[string]any{
		"i":     i,
		"group": i % 100,
		"name":  fmt.Sprintf("item-%05d", i),
		"doc": map[string]any{
			"text": strings.Repeat("lorem ipsum ", 20),
			"tags": []any{"alpha", "beta", i % 7},
		},
	}
}

// storeFixture fills benchNS with n items, item i updated at t0+i µs.
func storeFixture(b *testing.B, n int) *DB {
	db, clk := openRec(b, nil)
	t0 := clk.Now().UnixMicro()
	err := db.write(rctx, func(c *conn) error {
		for i := range n {
			v, err := codec.Marshal(benchValue(i))
			if err != nil {
				return err
			}
			if err := c.exec(sqlStorePut, benchNS, fmt.Sprintf("k%05d", i), v, t0+int64(i), nil, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	// A sibling namespace, so that searching "bench" spans two namespaces.
	if err := db.Store().Put(rctx, []string{"bench", "other"}, "x", map[string]any{"i": -1}); err != nil {
		b.Fatal(err)
	}
	return db
}

var benchFilters = []struct {
	name   string
	filter map[string]any
	want   int
}{
	{"none", map[string]any{}, 100},
	{"early_hits", map[string]any{"i": map[string]any{"$gte": 5000}}, 100}, // newest rows match: stops after 100
	{"one_percent", map[string]any{"group": 7}, 100},                       // 100 matches spread over 10,000
	{"late_hits", map[string]any{"i": map[string]any{"$lt": 100}}, 100},    // the 100 oldest rows
	{"nested", map[string]any{"doc": map[string]any{"tags": []any{"alpha", "beta", int64(3)}}}, 100},
}

// BenchmarkStoreSearchFilter compares the two places a search filter can
// run, on 100 results from a 10,000-item namespace: "go" steps rows out of
// SQLite and reads the filtered fields from the msgpack bytes in Go (what
// Store.Search does), "sql" calls the same matcher as an SQL function.
func BenchmarkStoreSearchFilter(b *testing.B) {
	db := storeFixture(b, 10_000)
	ns := strings.Split(benchNS, ".")
	for _, f := range benchFilters {
		for _, inSQL := range []bool{false, true} {
			for _, children := range []bool{false, true} {
				name := fmt.Sprintf("%s/sql=%v/children=%v", f.name, inSQL, children)
				b.Run(name, func(b *testing.B) {
					defer func(old bool) { storeSearchInSQL = old }(storeSearchInSQL)
					storeSearchInSQL = inSQL
					prefix := ns
					if children {
						prefix = ns[:1] // "bench" holds bench.items and bench.other
					}
					for b.Loop() {
						items, err := db.Store().Search(rctx, records.SearchOp{Prefix: prefix, Filter: f.filter, Limit: 100, Refresh: records.RefreshOff})
						if err != nil || len(items) != f.want {
							b.Fatalf("%d items, err %v", len(items), err)
						}
					}
				})
			}
		}
	}
}

func BenchmarkStorePut(b *testing.B) {
	db := storeFixture(b, 10_000)
	ns := strings.Split(benchNS, ".")
	v := benchValue(42)
	i := 0
	for b.Loop() {
		i++
		if err := db.Store().Put(rctx, ns, fmt.Sprintf("new%07d", i), v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStoreGet(b *testing.B) {
	db := storeFixture(b, 10_000)
	ns := strings.Split(benchNS, ".")
	i := 0
	for b.Loop() {
		i = (i + 7919) % 10_000
		if _, err := db.Store().Get(rctx, ns, fmt.Sprintf("k%05d", i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStoreSearch: the newest 100 items of a 10,000-item namespace,
// without a filter and with one matching 1% of the items.
func BenchmarkStoreSearch(b *testing.B) {
	db := storeFixture(b, 10_000)
	ns := strings.Split(benchNS, ".")
	for _, f := range []struct {
		name   string
		filter map[string]any
	}{{"nofilter", nil}, {"filter1pct", map[string]any{"group": 7}}} {
		b.Run(f.name, func(b *testing.B) {
			for b.Loop() {
				items, err := db.Store().Search(rctx, records.SearchOp{Prefix: ns, Filter: f.filter, Limit: 100})
				if err != nil || len(items) != 100 {
					b.Fatalf("%d items, %v", len(items), err)
				}
			}
		})
	}
}

func benchEvent(i int) records.Event {
	return records.Event{ThreadID: "bench", RunID: "run-1", EventType: "llm.ai.response", Category: records.CategoryMessage,
		Content:  map[string]any{"type": "ai", "content": fmt.Sprintf("answer %d: %s", i, strings.Repeat("words ", 30))},
		Metadata: map[string]any{"task_id": "task-1"}}
}

func BenchmarkEventPut(b *testing.B) {
	db, _ := openRec(b, nil)
	b.Run("single", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if _, err := db.Events().Put(rctx, benchEvent(i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("batch20", func(b *testing.B) {
		batch := make([]records.Event, 20)
		for i := range batch {
			batch[i] = benchEvent(i)
		}
		for b.Loop() {
			if _, err := db.Events().PutBatch(rctx, batch); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// messagesFixture writes a 100,000-event thread (every other event a
// message, the rest traces) in one transaction.
func messagesFixture(b *testing.B, n int) *DB {
	db, clk := openRec(b, nil)
	now := clk.Now().UnixMicro()
	msgContent, _ := codec.Marshal(benchEvent(0).Content)
	trace, _ := codec.Marshal(strings.Repeat("trace ", 40))
	md, _ := codec.Marshal(map[string]any{"task_id": "task-1"})
	err := db.write(rctx, func(c *conn) error {
		for seq := 1; seq <= n; seq++ {
			cat, typ, content := records.CategoryMessage, "llm.ai.response", msgContent
			if seq%2 == 0 {
				cat, typ, content = records.CategoryTrace, "llm.trace", trace
			}
			run := fmt.Sprintf("run-%d", seq/100)
			if err := c.exec(sqlEventInsert, "big", seq, run, typ, cat, content, md, "task-1", now); err != nil {
				return err
			}
		}
		return c.exec(`INSERT INTO event_seqs(thread_id, last_seq) VALUES ('big', ?)`, n)
	})
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkListMessages pages 50 messages out of a 100,000-event thread:
// the latest page, and a page in the middle (before_seq cursor).
func BenchmarkListMessages(b *testing.B) {
	db := messagesFixture(b, 100_000)
	for _, q := range []struct {
		name string
		q    records.MessageQuery
	}{
		{"latest", records.MessageQuery{Limit: 50}},
		{"before_mid", records.MessageQuery{Limit: 50, BeforeSeq: new(int64(50_001))}},
		{"after_start", records.MessageQuery{Limit: 50, AfterSeq: new(int64(0))}},
	} {
		b.Run(q.name, func(b *testing.B) {
			for b.Loop() {
				evs, err := db.Events().ListMessages(rctx, "big", q.q)
				if err != nil || len(evs) != 50 {
					b.Fatalf("%d events, %v", len(evs), err)
				}
			}
		})
	}
}

// BenchmarkTokenUsage aggregates 1,000 runs of one thread, each with a
// per-model record of two models (every tenth run an older row without one).
func BenchmarkTokenUsage(b *testing.B) {
	db, clk := openRec(b, nil)
	now := clk.Now().UnixMicro()
	byModel, _ := codec.Marshal(map[string]records.ModelTokens{"gpt-x": {Input: 100, Output: 50, Total: 150}, "mini": {Input: 10, Output: 5, Total: 15}})
	err := db.write(rctx, func(c *conn) error {
		for i := range 1000 {
			var bm any = byModel
			if i%10 == 0 {
				bm = nil
			}
			err := c.exec(`INSERT INTO runs(run_id, thread_id, status, model_name, created_at, updated_at,
				total_input_tokens, total_output_tokens, total_tokens, llm_call_count, lead_agent_tokens, subagent_tokens,
				middleware_tokens, token_usage_by_model) VALUES (?, 't', 'success', 'gpt-x', ?, ?, 110, 55, 165, 2, 150, 10, 5, ?)`,
				fmt.Sprint("run-", i), now, now, bm)
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		u, err := db.Runs().TokenUsage(rctx, "t", false)
		if err != nil || u.Runs != 1000 {
			b.Fatalf("%+v %v", u, err)
		}
	}
}
