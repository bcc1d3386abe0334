//go:build !js

package codec

import "github.com/klauspost/compress/zstd"

// smallZstdLevel is the zstd level of effort Small.
const smallZstdLevel = zstd.SpeedDefault
