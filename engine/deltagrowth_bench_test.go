package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
)

// BenchmarkDeltaGrowth commits N messages of about 100 bytes to one delta
// thread (K=10) and reports the file's bytes per commit and the time per
// commit, with the default options (retention on) and with AutoRetain off:
// storage must stay linear (flat bytes per commit as N grows) by default.
//
//	go test ./engine -run '^$' -bench DeltaGrowth -benchtime 1x
func BenchmarkDeltaGrowth(b *testing.B) {
	for _, n := range []int{1000, 10000, 30000} {
		for _, retain := range []bool{true, false} {
			b.Run(fmt.Sprintf("n=%d/retain=%v", n, retain), func(b *testing.B) {
				for range b.N {
					path := filepath.Join(b.TempDir(), "g.db")
					o := DefaultOptions()
					o.Mode, o.SnapshotEvery = channels.ModeDelta, 10
					o.AutoRetain = retain
					db, err := Open(bg, path, &o)
					if err != nil {
						b.Fatal(err)
					}
					text := strings.Repeat("word ", 18)
					start := time.Now()
					for i := range n {
						m := codec.Message{ID: fmt.Sprintf("m%07d", i), Type: codec.AI, Content: text}
						if _, err := db.Commit(bg, "t", Step{Tasks: []TaskWrites{{TaskID: "x", Writes: []ChannelWrite{{Channel: MessagesChannel, Value: m}}}}}); err != nil {
							b.Fatal(err)
						}
					}
					elapsed := time.Since(start)
					if err := db.Close(); err != nil {
						b.Fatal(err)
					}
					fi, err := os.Stat(path)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(fi.Size())/float64(n), "file-bytes/commit")
					b.ReportMetric(float64(elapsed.Microseconds())/float64(n), "µs/commit")
				}
			})
		}
	}
}
