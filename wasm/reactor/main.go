//go:build wasip1 && hostsqlite

// Command reactor is the agentstate engine as a WASI reactor for hosts that
// provide SQLite themselves: the Python package
// (python/src/langgraph/checkpoint/agentstate) instantiates it with
// wasmtime, gives it the imports of module "agentstate_sqlite" over the
// host's SQLite (engine/internal/driver/hostsqlite), calls _initialize
// once, then the exports below. Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -tags hostsqlite -o agentstate.wasm ./wasm/reactor
//
// The calls are those of package bridge, the same as the npm package's.
// Every export runs to its end before it returns (a host thread waits for
// it); the host serialises its calls.
//
//	agentstate_format() -> 2      the layout of results below (resultFormat)
//	agentstate_buffer(n) -> ptr   a buffer of at least n bytes for the
//	                              next request (kept until a larger one
//	                              is asked for, or a call takes it)
//	agentstate_call(h, n) -> r    runs the request of n bytes in that
//	                              buffer on handle h; r is ptr<<32|len of
//	                              the result, valid until the next call.
//	                              A request of more than 1 MiB takes the
//	                              buffer: the host asks for a new one
//	                              before its next request
//
// Memory. WebAssembly memory only grows, and Go's wasip1 runtime gives
// none back to the host, so what the process keeps after a call is what
// the Go heap needed at its peak. The reactor keeps that peak near what a
// call needs: a large request is not copied (its values and JSON are read
// where the host wrote them, and that buffer is dropped after the call),
// a large result is built once and dropped after the host has read it,
// and the collector has a soft memory limit (debug.SetMemoryLimit) of
// AGENTSTATE_MEMORY_LIMIT bytes, 256 MiB by default (GOMEMLIMIT, when set,
// wins), so that it collects before growing the memory past it
// (docs/memory.md, "The WebAssembly hosts").
//
// A request is: u32 op length, op ("open", "close" or a bridge call), u32
// JSON length, JSON, u32 count of byte arrays, then each as u32 length and
// bytes (lengths little-endian). A result is u32 status: 0, then u32 JSON
// length, JSON, u32 count and each byte array as u32 length and u32 address
// in this module's memory (the arrays are not copied into the result; they
// stay valid until the next call); 1 (an error), then u32 code length, the
// code (bridge.ErrorCode), u32 message length, the message.
package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"unsafe"

	"github.com/agentstate/agentstate/engine"
	_ "github.com/agentstate/agentstate/engine/postgres" // PostgreSQL through the host's imports of module "agentstate_pg"
	"github.com/agentstate/agentstate/wasm/bridge"
)

func main() {}

var (
	b      = bridge.New()
	inbox  []byte
	result []byte
	held   [][]byte // the last result's byte arrays, which the host reads in place
)

// keepBytes is the largest request buffer or result kept from one call to
// the next.
const keepBytes = 1 << 20

// defaultMemoryLimit is the collector's soft limit unless
// AGENTSTATE_MEMORY_LIMIT or GOMEMLIMIT says otherwise.
const defaultMemoryLimit = 256 << 20

func init() {
	if os.Getenv("AGENTSTATE_TEST_HOOKS") == "1" {
		bridge.AddTestHooks()
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		limit := int64(defaultMemoryLimit)
		if v, err := strconv.ParseInt(os.Getenv("AGENTSTATE_MEMORY_LIMIT"), 10, 64); err == nil && v > 0 {
			limit = v
		}
		debug.SetMemoryLimit(limit)
	}
}

// dropCycle is the collector's cycle count when the last large buffer was
// dropped: until the next cycle its memory is not free for reuse.
var dropCycle uint64 = 0

func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// worthCollecting reports whether a collection is worth its CPU for a
// buffer of n bytes: a cycle marks the live heap (the caches: up to 64
// MiB), so it runs only for buffers of at least a quarter of it, whose
// garbage (the request and the engine's copies, a few times n) it frees.
func worthCollecting(n int) bool {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Kind() != metrics.KindUint64 || uint64(n)*4 >= s[0].Value.Uint64()
}

// resultFormat is the layout of agentstate_call's results the host must
// read: 2 since byte arrays are given by address, not copied in. A host
// that finds another number (or no agentstate_format export: format 1)
// refuses the module instead of misreading its results.
const resultFormat = 2

//go:wasmexport agentstate_format
func format() int32 { return resultFormat }

//go:wasmexport agentstate_buffer
func buffer(n int32) unsafe.Pointer {
	if int(n) > len(inbox) {
		if int(n) > keepBytes && dropCycle > 0 && gcCycles() < dropCycle && worthCollecting(int(n)) {
			// The last call's large buffers are garbage no cycle has
			// collected yet: collect them, so that this buffer reuses
			// their memory instead of growing it (a refused 100 MB value
			// followed by another grew the module by 100 MB each).
			runtime.GC()
		}
		inbox = make([]byte, max(int(n), 64<<10))
	}
	return unsafe.Pointer(unsafe.SliceData(inbox))
}

// dropped notes that a large buffer was let go.
func dropped() { dropCycle = gcCycles() + 1 }

//go:wasmexport agentstate_call
func call(h int32, n int32) int64 {
	var le = binary.LittleEndian
	held = nil // the host has read the last result
	req := inbox[:n:n]
	own := cap(inbox) > keepBytes
	if own {
		// The call takes a large buffer: its values and JSON are used where
		// the host wrote them, not copied, and the buffer is not kept for
		// the next request (the host asks for a new one).
		inbox = nil
		dropped()
	}
	out := le.AppendUint32(result[:0], 0)
	out, err := run(int(h), req, own, out)
	if err != nil {
		code, msg := bridge.ErrorCode(err), err.Error()
		out = le.AppendUint32(out[:0], 1)
		out = append(le.AppendUint32(out, uint32(len(code))), code...)
		out = append(le.AppendUint32(out, uint32(len(msg))), msg...)
	}
	result = out
	if cap(result) > keepBytes {
		// Keep no large buffer for the next call. The host reads the result
		// before it calls again, and no Go code runs in between (the module
		// runs only inside its exports), so the collector cannot take it
		// first.
		defer func() { result = nil }()
		dropped()
	}
	if own && worthCollecting(int(n)) {
		// A large call leaves large garbage (its request, the engine's
		// copies): collected now, while the host reads the result, the
		// next call reuses that memory instead of growing the module.
		req = nil
		runtime.GC()
	}
	p := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(out))))
	return int64(p)<<32 | int64(len(out))
}

var errShort = fmt.Errorf("%w: short request", engine.ErrInvalidArgument)

// run decodes a request, runs it and appends its result to out (which
// holds the status). own says the request's bytes are the call's: values
// and JSON are used in place; else they are copied, as the buffer is
// reused by the next request.
func run(h int, req []byte, own bool, out []byte) (res []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("agentstate: internal error: %v\n%s", r, debug.Stack())
		}
	}()
	le := binary.LittleEndian
	take := func() ([]byte, error) {
		if len(req) < 4 {
			return nil, errShort
		}
		n := le.Uint32(req)
		if uint64(n) > uint64(len(req)-4) {
			return nil, errShort
		}
		v := req[4 : 4+n]
		req = req[4+n:]
		return v, nil
	}
	op, err := take()
	if err != nil {
		return nil, err
	}
	js, err := take()
	if err != nil {
		return nil, err
	}
	if len(req) < 4 {
		return nil, errShort
	}
	nb := le.Uint32(req)
	req = req[4:]
	if uint64(nb) > uint64(len(req))/4 {
		return nil, errShort
	}
	bufs := make([][]byte, nb)
	for i := range bufs {
		v, err := take()
		if err != nil {
			return nil, err
		}
		// The engine may keep a value (its caches): a copy, unless the
		// buffer is the call's.
		if own {
			bufs[i] = v[:len(v):len(v)]
		} else {
			bufs[i] = append(make([]byte, 0, len(v)), v...)
		}
	}
	jsonCopy := js[:len(js):len(js)]
	if !own {
		jsonCopy = append([]byte(nil), js...)
	}
	var v any
	var o *bridge.Out
	switch string(op) {
	case "open":
		v, o, err = b.Open(jsonCopy, bufs)
	case "close":
		err = b.Close(h)
	default:
		v, o, err = b.Call(h, string(op), jsonCopy, bufs)
	}
	if err != nil {
		return nil, err
	}
	text, err := bridge.Encode(v)
	if err != nil {
		return nil, err
	}
	outBufs := o.Bufs()
	out = slices.Grow(out, 8+len(text)+8*len(outBufs)) // the result allocated once, at its size
	out = append(le.AppendUint32(out, uint32(len(text))), text...)
	out = le.AppendUint32(out, uint32(len(outBufs)))
	for _, b := range outBufs {
		// Read where it is (a 50 MB value was copied into the result
		// first): kept alive by held until the next call.
		out = le.AppendUint32(out, uint32(len(b)))
		out = le.AppendUint32(out, uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))))
	}
	held = outBufs
	return out, nil
}
