package engine

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/codec"
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
	db, err := Open(bg, testPath(b, filepath.Join(b.TempDir(), "bench.db")), opts)
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
