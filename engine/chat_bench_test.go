package engine

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentstate/agentstate/codec"
)

// BenchmarkChatGraph is the protocol traffic of LangGraph's chat graph, 400
// turns of a human and an AI message: each message arrives first as a
// pending write under the checkpoint before it, then in the messages
// channel of the next checkpoint. "default" is LangGraph's default messages
// channel (the whole list at every step); "delta10" is a DeltaChannel with
// K=10 (a {"lc":2,"type":"delta_snapshot"} list every 10 steps and no value
// in between, the writes carrying the rest). Metrics: file bytes, their
// ratio to the messages' own bytes, time per step (write and put).
func BenchmarkChatGraph(b *testing.B) {
	const steps = 800
	g := newGrowingList(3, steps, false)
	for _, kind := range []string{"default", "delta10"} {
		b.Run(kind, func(b *testing.B) {
			var file int64
			var elapsed time.Duration
			for range b.N {
				db, err := Open(bg, filepath.Join(b.TempDir(), "chat.db"), nil)
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				parent := Config{ThreadID: "chat"}
				last := ""
				for i := range steps {
					id := fmt.Sprintf("%08d", i+1)
					if i > 0 {
						w := []Write{{Channel: "messages", Value: codec.Blob{Type: "json", Data: g.elems[i]}}}
						if err := db.PutWrites(bg, parent, w, fmt.Sprintf("task-%d", i), ""); err != nil {
							b.Fatal(err)
						}
					}
					cp := Checkpoint{V: 4, ID: id, TS: "2026-01-01T00:00:00Z",
						ChannelVersions: map[string]string{"__start__": "00000001"},
						ChannelValues:   map[string]codec.Blob{},
						VersionsSeen:    map[string]map[string]string{"agent": {"messages": id}},
					}
					nv := map[string]string{}
					if kind == "default" || i%10 == 0 {
						v := g.version(i)
						if kind == "delta10" {
							v = append(append([]byte(`{"lc":2,"type":"delta_snapshot","value":`), v...), '}')
						}
						cp.ChannelValues["messages"] = codec.Blob{Type: "json", Data: v}
						nv["messages"] = id
						last = id
					}
					cp.ChannelVersions["messages"] = last
					parent, err = db.Put(bg, parent, cp, Metadata{"source": "loop", "step": int64(i), "parents": map[string]any{}}, nv)
					if err != nil {
						b.Fatal(err)
					}
				}
				elapsed += time.Since(start)
				file = fileBytes(b, db)
				db.Close()
			}
			b.ReportMetric(float64(elapsed.Microseconds())/1000/float64(b.N*steps), "ms/step")
			b.ReportMetric(float64(file)/float64(g.payload), "file/payload")
			b.ReportMetric(float64(file), "file-bytes")
		})
	}
}
