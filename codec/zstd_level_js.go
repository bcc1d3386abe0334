//go:build js

package codec

import "github.com/klauspost/compress/zstd"

// smallZstdLevel is the zstd level of effort Small. In the GOOS=js build
// it is zstd's fastest level: the same format (every build reads it; only
// the frames' bytes differ), about 5% larger on the delta workload's
// message lists, for much less compression work. There the compressor is
// Go compiled to WebAssembly, which V8 runs as baseline code until it has
// optimised it in the background: with the default level's larger match
// finder, the first 400 turns of that workload in a fresh Node process
// (wasm/bench/engine.bench.mjs) took 2.3-3.4 ms of main-thread CPU per
// turn against 1.95-2.3 ms with this level, and 1.4-1.7 against 1.3-1.55
// once warm.
const smallZstdLevel = zstd.SpeedFastest
