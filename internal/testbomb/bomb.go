// Package testbomb builds decompression bombs for tests: a few kilobytes
// of zstd that inflate to a msgpack list of many nils.
package testbomb

import (
	"bytes"
	"encoding/binary"
	"runtime"

	"github.com/klauspost/compress/zstd"
)

// Nils returns one zstd frame (no content size declared, as a streaming
// writer makes it) of a msgpack list of n nils (n+5 bytes), streamed into
// the encoder so the plain bytes are never held.
func Nils(n int) []byte { return nils(nil, n) }

func nils(prefix []byte, n int) []byte {
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
	if err != nil {
		panic(err)
	}
	w.Write(prefix)
	head := [5]byte{0xdd}
	binary.BigEndian.PutUint32(head[1:], uint32(n))
	w.Write(head[:])
	chunk := bytes.Repeat([]byte{0xc0}, 1<<20)
	for left := n; left > 0; left -= len(chunk) {
		w.Write(chunk[:min(left, len(chunk))])
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// Envelope is Nils inside codec's zstd envelope (0x03): what a reader
// inflates as one stored value.
func Envelope(n int) []byte { return append([]byte{0x03}, Nils(n)...) }

// Packed is a value of the engine's own type (a plain envelope, 0x01, of
// the list of n nils) packed as the engine packs a stored value (in a zstd
// envelope): what an export gives as a blob of enc 1.
func Packed(n int) []byte { return append([]byte{0x03}, nils([]byte{0x01}, n)...) }

// Allocated runs fn and returns the bytes it allocated (what refusing a
// bomb must keep small).
func Allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
