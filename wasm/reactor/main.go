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
//	agentstate_buffer(n) -> ptr   a buffer of at least n bytes for the
//	                              next request (kept until a larger one
//	                              is asked for)
//	agentstate_call(h, n) -> r    runs the request of n bytes in that
//	                              buffer on handle h; r is ptr<<32|len of
//	                              the result, valid until the next call
//
// A request is: u32 op length, op ("open", "close" or a bridge call), u32
// JSON length, JSON, u32 count of byte arrays, then each as u32 length and
// bytes (lengths little-endian). A result is u32 status: 0, then u32 JSON
// length, JSON, u32 count and the byte arrays as in a request; 1 (an
// error), then u32 code length, the code (bridge.ErrorCode), u32 message
// length, the message.
package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
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
)

func init() {
	if os.Getenv("AGENTSTATE_TEST_HOOKS") == "1" {
		bridge.AddTestHooks()
	}
}

//go:wasmexport agentstate_buffer
func buffer(n int32) unsafe.Pointer {
	if int(n) > len(inbox) {
		inbox = make([]byte, max(int(n), 64<<10))
	}
	return unsafe.Pointer(unsafe.SliceData(inbox))
}

//go:wasmexport agentstate_call
func call(h int32, n int32) int64 {
	var le = binary.LittleEndian
	res, err := run(int(h), inbox[:n])
	out := result[:0]
	if err != nil {
		code, msg := bridge.ErrorCode(err), err.Error()
		out = le.AppendUint32(out, 1)
		out = append(le.AppendUint32(out, uint32(len(code))), code...)
		out = append(le.AppendUint32(out, uint32(len(msg))), msg...)
	} else {
		out = le.AppendUint32(out, 0)
		out = append(out, res...)
	}
	result = out
	if cap(result) > 1<<20 {
		// Keep no large buffer for the next call. The host reads the result
		// before it calls again, and no Go code runs in between (the module
		// runs only inside its exports), so the collector cannot take it
		// first.
		defer func() { result = nil }()
	}
	p := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(out))))
	return int64(p)<<32 | int64(len(out))
}

var errShort = fmt.Errorf("%w: short request", engine.ErrInvalidArgument)

// run decodes a request, runs it and encodes its result (after the status).
func run(h int, req []byte) (res []byte, err error) {
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
		// The engine may keep a value (its caches): a copy, as the
		// buffer is reused by the next request.
		bufs[i] = append(make([]byte, 0, len(v)), v...)
	}
	jsonCopy := append([]byte(nil), js...)
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
	out := append(le.AppendUint32(nil, uint32(len(text))), text...)
	out = le.AppendUint32(out, uint32(len(o.Bufs())))
	for _, b := range o.Bufs() {
		out = append(le.AppendUint32(out, uint32(len(b))), b...)
	}
	if out == nil {
		return nil, errors.New("agentstate: internal: empty result")
	}
	return out, nil
}
