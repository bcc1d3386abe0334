package engine

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
)

// BenchmarkCommit is one step of a chat thread that already holds 800
// messages, per mode.
func BenchmarkCommit(b *testing.B) {
	for _, mode := range []channels.Mode{channels.ModeFull, channels.ModeDelta} {
		b.Run(string(mode), func(b *testing.B) {
			o := DefaultOptions()
			o.Mode = mode
			db, err := Open(bg, testPath(b, filepath.Join(b.TempDir(), "c.db")), &o)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			text := strings.Repeat("word ", 100)
			commit := func(i int) {
				m := codec.Message{ID: fmt.Sprintf("m%07d", i), Type: codec.AI, Content: text}
				if _, err := db.Commit(bg, "t", Step{Tasks: []TaskWrites{{TaskID: "x", Writes: []ChannelWrite{{Channel: MessagesChannel, Value: m}}}}}); err != nil {
					b.Fatal(err)
				}
			}
			for i := range 800 {
				commit(i)
			}
			b.ResetTimer()
			for i := range b.N {
				commit(800 + i)
			}
		})
	}
}

// BenchmarkHeadState reads the head of delta threads of growing length:
// warm (state cache) it must stay flat; cold (history walk and fold on
// every read) it grows with the list it decodes, not with the history.
func BenchmarkHeadState(b *testing.B) {
	for _, n := range []int{100, 1000} {
		for _, cache := range []int64{64 << 20, 0} {
			b.Run(fmt.Sprintf("messages=%d/cache=%v", n, cache > 0), func(b *testing.B) {
				o := DefaultOptions()
				o.Mode, o.HistoryCacheBytes = channels.ModeDelta, cache
				db, err := Open(bg, testPath(b, filepath.Join(b.TempDir(), "h.db")), &o)
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				for i := range n {
					m := codec.Message{ID: fmt.Sprintf("m%07d", i), Type: codec.AI, Content: "some words of text"}
					if _, err := db.Commit(bg, "t", Step{Tasks: []TaskWrites{{TaskID: "x", Writes: []ChannelWrite{{Channel: MessagesChannel, Value: m}}}}}); err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
				for range b.N {
					if _, err := db.State(bg, Config{ThreadID: "t"}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkColdStateConcurrent is what a restarted server sees: several
// requests for the same thread's head at once, nothing cached. With the
// rebuilds shared (flight=true) one call walks and decodes the snapshot
// and the others wait for it; without, each does the same work.
func BenchmarkColdStateConcurrent(b *testing.B) {
	for _, flight := range []bool{true, false} {
		b.Run(fmt.Sprintf("readers=4/flight=%v", flight), func(b *testing.B) {
			o := DefaultOptions()
			o.Mode = channels.ModeDelta
			db, err := Open(bg, filepath.Join(b.TempDir(), "h.db"), &o)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			text := strings.Repeat("word ", 100)
			for i := range 1000 {
				m := codec.Message{ID: fmt.Sprintf("m%07d", i), Type: codec.AI, Content: text}
				if _, err := db.Commit(bg, "t", Step{Tasks: []TaskWrites{{TaskID: "x", Writes: []ChannelWrite{{Channel: MessagesChannel, Value: m}}}}}); err != nil {
					b.Fatal(err)
				}
			}
			defer func(old bool) { noFlight = old }(noFlight)
			noFlight = !flight
			cpu := processCPU()
			b.ResetTimer()
			for range b.N {
				db.purge("t")
				var wg sync.WaitGroup
				for range 4 {
					wg.Go(func() {
						if _, err := db.State(bg, Config{ThreadID: "t"}); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
			}
			b.StopTimer()
			// CPU time, not wall time: on a shared machine it is what the
			// sharing saves.
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
