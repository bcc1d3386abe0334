//go:build !js

// Native only: it opens files through the ncruces VFS of corrupt_test.go.

package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkPageChecksums measures what page checksums would cost (see
// corrupt_test.go for why they are not an option yet): commits of the
// reliability workload (writes and a checkpoint per step, values of 0.1..9
// KB) and reads of old states with every cache off, so each read goes to
// the file's pages. Both variants open through the same VFS.
func BenchmarkPageChecksums(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := map[bool]string{false: "off", true: "on"}[on]
		o := DefaultOptions()
		o.HistoryCacheBytes = 0
		open := func(b *testing.B) *DB {
			path := filepath.Join(b.TempDir(), "b.db")
			if on {
				createChecksummed(b, path)
			}
			return openTest(b, nommapURI(path), &o)
		}
		b.Run("commit/"+name, func(b *testing.B) {
			db := open(b)
			w := relWork{seed: 1}
			b.ResetTimer()
			for i := range b.N {
				// A new thread every 16 steps keeps the message list short.
				th := fmt.Sprintf("t%d", i/16)
				if _, err := db.Commit(context.Background(), th, w.step(th, i%16+1, "")); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("read/"+name, func(b *testing.B) {
			db := open(b)
			w := relWork{seed: 1}
			var cfgs []Config
			for i := range 15 {
				cfg, err := db.Commit(context.Background(), "t", w.step("t", i+1, ""))
				if err != nil {
					b.Fatal(err)
				}
				cfgs = append(cfgs, cfg)
			}
			if _, err := db.CheckpointWAL(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := db.State(context.Background(), cfgs[i%len(cfgs)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
