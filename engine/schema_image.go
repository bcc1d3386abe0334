package engine

import (
	_ "embed"
	"encoding/binary"
	"errors"
)

// emptyImageRuns is an empty database of the current schema, as a fresh
// open leaves it before it records a mode (freshSchema and its history, the
// header fields, 4 KiB pages, incremental auto-vacuum), stored as runs of
// zeros and of bytes (zeroRuns): its 143,360 bytes of file, mostly the
// empty parts of pages, in a few KB. The builds on the host's SQLite (the
// npm package's GOOS=js module and the Python package's WASI reactor) open
// a fresh in-memory database from it, so that SQLite runs none of the
// schema's statements (in V8 they had SQLite's parser recompiled with the
// optimising tier while the first call waited; in Python an open took about
// 2 ms of CPU instead of under 1). Written by
// TestEmptyImageIsTheSchema (AGENTSTATE_UPDATE=1), which also holds it to
// the migrations.
//
//go:embed schema_empty.runs
var emptyImageRuns []byte

// emptyImage returns a copy of the empty database's bytes.
func emptyImage() ([]byte, error) {
	return expandRuns(emptyImageRuns)
}

var errImageRuns = errors.New("agentstate: the build's empty database image is malformed")

// expandRuns reads the image's form: the file's length, then pairs of
// (zeros, n) and n bytes, every number a uvarint (zeroRuns writes it, in
// the test). Expanding it is a few dozen copies into a zeroed slice: unlike a general decompressor, no loop of it runs long
// enough for V8 to recompile it with its optimising tier while the first
// call waits (S2's decoder did, for 16 ms of a core at start-up).
func expandRuns(r []byte) ([]byte, error) {
	n, k := binary.Uvarint(r)
	if k <= 0 || n > 1<<24 {
		return nil, errImageRuns
	}
	r = r[k:]
	out := make([]byte, n)
	pos := uint64(0)
	for len(r) > 0 {
		zeros, k1 := binary.Uvarint(r)
		if k1 <= 0 {
			return nil, errImageRuns
		}
		lit, k2 := binary.Uvarint(r[k1:])
		if k2 <= 0 {
			return nil, errImageRuns
		}
		r = r[k1+k2:]
		if zeros > n-pos || lit > n-pos-zeros || lit > uint64(len(r)) {
			return nil, errImageRuns
		}
		pos += zeros
		pos += uint64(copy(out[pos:], r[:lit]))
		r = r[lit:]
	}
	if pos != n {
		return nil, errImageRuns
	}
	return out, nil
}
