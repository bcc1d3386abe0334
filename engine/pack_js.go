//go:build js

package engine

import (
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// In the GOOS=js build, pack's encoder is codec's Small level there
// (zstd's fastest, codec/zstd_level_js.go) with a 256 KiB window: an
// encoder keeps a history buffer of its window plus a block for the life
// of the instance, and the default level's 8 MiB window was the largest
// object in the Go heap of a Durable Object (docs/js-performance.md). A
// WebAssembly memory never shrinks, so every megabyte the heap reaches
// stays the isolate's. The frames are the same format; every build reads
// them.
func init() {
	packEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
		return zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(256<<10),
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithLowerEncoderMem(true))
	})
}
