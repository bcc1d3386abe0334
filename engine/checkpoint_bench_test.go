//go:build !js

// Native only: it drives ncruces connections directly.

package engine

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/internal/driver/sqlite"
	"github.com/ncruces/go-sqlite3"
)

// Typical sizes of one agent step: a 1 KiB changed channel value, two task
// writes of 500 bytes, metadata with source/step/parents.
var (
	cpBenchValue = codec.Blob{Type: "json", Data: bytes.Repeat([]byte("v"), 1024)}
	cpBenchWrite = codec.Blob{Type: "json", Data: bytes.Repeat([]byte("w"), 500)}
)

func benchCheckpoint(i int) (Checkpoint, map[string]string) {
	v := fmt.Sprintf("%08d", i)
	c := Checkpoint{V: 4, ID: fmt.Sprintf("%012d", i), TS: "2026-11-29T00:00:00Z",
		ChannelVersions: map[string]string{"messages": v, "title": "00000001", "__start__": "00000001"},
		ChannelValues:   map[string]codec.Blob{"messages": cpBenchValue},
		VersionsSeen:    map[string]map[string]string{"agent": {"messages": v}, "__input__": {}},
	}
	return c, map[string]string{"messages": v}
}

func benchMetadata(i int) Metadata {
	return Metadata{"source": "loop", "step": int64(i), "parents": map[string]any{}, "run_id": "run-1"}
}

func benchDB(b *testing.B, opts *Options) *DB {
	db, err := Open(bg, filepath.Join(b.TempDir(), "bench.db"), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// BenchmarkStep is one agent step through the API: Put plus two PutWrites.
func BenchmarkStep(b *testing.B) {
	db := benchDB(b, nil)
	parent := Config{ThreadID: "bench"}
	b.ResetTimer()
	for i := range b.N {
		c, nv := benchCheckpoint(i + 1)
		var err error
		if parent, err = db.Put(bg, parent, c, benchMetadata(i), nv); err != nil {
			b.Fatal(err)
		}
		for _, task := range []string{"agent", "tools"} {
			if err := db.PutWrites(bg, parent, []Write{{Channel: "messages", Value: cpBenchWrite}}, task, "~"+task); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkStepRawSQL inserts the same rows as BenchmarkStep with plain
// ncruces statements in one transaction per step: the floor the API's cost
// is measured against.
func BenchmarkStepRawSQL(b *testing.B) {
	db := benchDB(b, nil)
	c, _ := db.acquireRaw()
	cpBytes, _ := codec.Marshal(storedCheckpoint{V: 4, TS: "2026-11-29T00:00:00Z", ChannelVersions: map[string]string{"messages": "1", "title": "1", "__start__": "1"},
		VersionsSeen: map[string]map[string]string{"agent": {"messages": "1"}, "__input__": {}}})
	md, _ := marshalMetadata(benchMetadata(0))
	ins := []string{
		`INSERT INTO checkpoints(thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, checkpoint, metadata) VALUES (?, '', ?, ?, 'run-1', ?, ?)`,
		`INSERT INTO blobs(thread_id, checkpoint_ns, channel, version, checkpoint_id, type, data) VALUES (?, '', 'messages', ?, ?, 'json', ?)`,
		`INSERT INTO writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, data, task_path) VALUES (?, '', ?, ?, 0, 'messages', 'json', ?, ?)`,
	}
	var stmts []*sqlite3.Stmt
	for _, q := range ins {
		st, _, err := c.Prepare(q)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		stmts = append(stmts, st)
	}
	exec := func(st *sqlite3.Stmt, args ...any) {
		st.ClearBindings()
		for i, a := range args {
			var err error
			switch v := a.(type) {
			case nil:
				err = st.BindNull(i + 1)
			case string:
				err = st.BindText(i+1, v)
			case []byte:
				err = st.BindBlob(i+1, v)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		if err := st.Exec(); err != nil {
			b.Fatal(err)
		}
		st.Reset()
	}
	parent := ""
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprintf("%012d", i+1)
		if err := c.Exec("BEGIN IMMEDIATE"); err != nil {
			b.Fatal(err)
		}
		var p any
		if parent != "" {
			p = parent
		}
		exec(stmts[0], "bench", id, p, cpBytes, md)
		exec(stmts[1], "bench", fmt.Sprintf("%08d", i+1), id, cpBenchValue.Data)
		exec(stmts[2], "bench", id, "agent", cpBenchWrite.Data, "~agent")
		exec(stmts[2], "bench", id, "tools", cpBenchWrite.Data, "~tools")
		if err := c.Exec("COMMIT"); err != nil {
			b.Fatal(err)
		}
		parent = id
	}
}

// acquireRaw hands the writer connection to a benchmark for direct use.
func (db *DB) acquireRaw() (*sqlite3.Conn, error) {
	c := <-db.writer
	db.onClose(func() { db.writer <- c })
	return c.d.(*sqlite.Conn).Raw(), nil
}

func buildThread(b *testing.B, db *DB, thread string, n int, every int) Config {
	b.Helper()
	parent := Config{ThreadID: thread}
	for i := range n {
		c, nv := benchCheckpoint(i + 1)
		if every > 0 && i%every != 0 {
			delete(c.ChannelValues, "messages")
		}
		var err error
		if parent, err = db.Put(bg, parent, c, benchMetadata(i), nv); err != nil {
			b.Fatal(err)
		}
		if err := db.PutWrites(bg, parent, []Write{{Channel: "messages", Value: cpBenchWrite}}, "agent", ""); err != nil {
			b.Fatal(err)
		}
	}
	return parent
}

// BenchmarkGetTupleHead reads the latest checkpoint of threads of growing
// length: the cost must stay flat.
func BenchmarkGetTupleHead(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("len=%d", n), func(b *testing.B) {
			db := benchDB(b, nil)
			buildThread(b, db, "t", n, 0)
			b.ResetTimer()
			for range b.N {
				if _, err := db.GetTuple(bg, Config{ThreadID: "t"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDeltaHistory reads a delta channel's history at distance K from
// its snapshot, with the cache cold (a walk every time) and warm.
func BenchmarkDeltaHistory(b *testing.B) {
	for _, k := range []int{10, 100} {
		for _, warm := range []bool{false, true} {
			b.Run(fmt.Sprintf("K=%d/warm=%v", k, warm), func(b *testing.B) {
				o := DefaultOptions()
				if !warm {
					o.HistoryCacheBytes = 0
				}
				db := benchDB(b, &o)
				// A snapshot at 0, then K-1 delta steps: the head is K-1 writes
				// away from the snapshot, the farthest a cadence of K allows.
				head := buildThread(b, db, "t", k, k)
				b.ResetTimer()
				for range b.N {
					h, err := db.DeltaChannelHistory(bg, head, []string{"messages"})
					if err != nil {
						b.Fatal(err)
					}
					if len(h["messages"].Writes) != k-1 {
						b.Fatalf("%d writes", len(h["messages"].Writes))
					}
				}
			})
		}
	}
}

// BenchmarkListPage lists a 50-item page in the middle of a 10,000
// checkpoint thread.
func BenchmarkListPage(b *testing.B) {
	db := benchDB(b, nil)
	buildThread(b, db, "t", 10000, 0)
	before := fmt.Sprintf("%012d", 5000)
	b.ResetTimer()
	for range b.N {
		n := 0
		for _, err := range db.List(bg, ListOptions{ThreadID: "t", Before: before, Limit: 50}) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 50 {
			b.Fatalf("%d items", n)
		}
	}
}
