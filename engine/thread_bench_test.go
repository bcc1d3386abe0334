package engine

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/codec"
)

// BenchmarkCommit is one step of a chat thread that already holds 800
// messages, per mode.
func BenchmarkCommit(b *testing.B) {
	for _, mode := range []string{ModeFull, ModeDelta} {
		b.Run(mode, func(b *testing.B) {
			o := DefaultOptions()
			o.Mode = mode
			db, err := Open(bg, filepath.Join(b.TempDir(), "c.db"), &o)
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
				o.Mode, o.HistoryCacheBytes = ModeDelta, cache
				db, err := Open(bg, filepath.Join(b.TempDir(), "h.db"), &o)
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
