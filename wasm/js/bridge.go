//go:build js && wasm

package main

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"runtime/debug"
	"syscall/js"
	"unsafe"

	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/wasm/bridge"
)

// The JavaScript constructors the transport uses, looked up once: each
// js.Global().Get makes a new reference, with a finalizer, on every call.
var (
	jsPromise    = js.Global().Get("Promise")
	jsObject     = js.Global().Get("Object")
	jsArray      = js.Global().Get("Array")
	jsUint8Array = js.Global().Get("Uint8Array")
	jsError      = js.Global().Get("Error")
)

// api returns the object handed to JavaScript. open and close return a
// Promise of {json, bufs}: a JSON text and the byte arrays it refers to by
// index ({"t": type, "b": index} for a typed blob).
//
//	open(json, bufs)          -> {"h": handle}
//	close(h)
//
// send(frame, done) runs op on handle h: the request in one byte array,
// the result handed to done(error, address, length) in the module's
// memory, no Promise made in Go (readFrame, writeFrame). Every JavaScript
// object Go makes or receives costs a reference with a finalizer, and a
// call made of strings, arrays and a Promise made a dozen.
func api(b *bridge.Bridge) js.Value {
	obj := jsObject.New()
	obj.Set("open", guarded(func(args []js.Value) any {
		req, bufs := argJSON(args, 0), argBufs(args, 1)
		return promise(func() (any, *bridge.Out, error) { return b.Open(req, bufs) })
	}))
	obj.Set("send", guarded(func(args []js.Value) any {
		if len(args) < 2 || args[1].Type() != js.TypeFunction {
			panic("send(frame, done)")
		}
		done := args[1]
		h, op, req, bufs, err := readFrame(args[0])
		if err != nil {
			done.Invoke(jsErr(err))
			return nil
		}
		dispatch(func() {
			v, o, err := run(func() (any, *bridge.Out, error) { return b.Call(h, op, req, bufs) })
			if err == nil {
				err = writeFrame(v, o, func(ptr, n int) { done.Invoke(js.Null(), ptr, n) })
			}
			if err != nil {
				done.Invoke(jsErr(err))
			}
		})
		return nil
	}))
	obj.Set("close", guarded(func(args []js.Value) any {
		h := -1
		if len(args) > 0 && args[0].Type() == js.TypeNumber {
			h = args[0].Int()
		}
		return promise(func() (any, *bridge.Out, error) { return nil, nil, b.Close(h) })
	}))
	obj.Set("version", "1")
	return obj
}

// guarded turns a panic while reading a call's arguments (a value of the
// wrong type from JavaScript) into a rejected Promise: a panic that escapes
// a js.Func stops the whole Go program, and with it every open database.
func guarded(fn func(args []js.Value) any) js.Func {
	return js.FuncOf(func(_ js.Value, args []js.Value) (res any) {
		defer func() {
			if r := recover(); r != nil {
				res = rejected(errArg("%v", r))
			}
		}()
		return fn(args)
	})
}

func rejected(err error) js.Value {
	return jsPromise.Call("reject", jsErr(err))
}

func argJSON(args []js.Value, i int) []byte {
	if len(args) <= i || args[i].Type() != js.TypeString {
		return nil
	}
	return []byte(args[i].String())
}

// argBufs copies the byte arrays of a call out of JavaScript before the
// call's goroutine starts, so the caller may reuse them at once.
func argBufs(args []js.Value, i int) [][]byte {
	if len(args) <= i || args[i].IsUndefined() || args[i].IsNull() {
		return nil
	}
	arr := args[i]
	n := arr.Length()
	out := make([][]byte, n)
	for j := range n {
		u8 := arr.Index(j)
		out[j] = make([]byte, u8.Length())
		js.CopyBytesToGo(out[j], u8)
	}
	return out
}

// run calls fn, turning a panic into an error.
func run(fn func() (any, *bridge.Out, error)) (v any, o *bridge.Out, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("agentstate: internal error: %v\n%s", r, debug.Stack())
		}
	}()
	return fn()
}

// promise runs fn on a goroutine and settles a Promise with its result: the
// JSON of the first value and the buffers collected in out.
func promise(fn func() (any, *bridge.Out, error)) js.Value {
	var resolve, reject js.Value
	executor := js.FuncOf(func(_ js.Value, args []js.Value) any {
		resolve, reject = args[0], args[1]
		return nil
	})
	p := jsPromise.New(executor)
	executor.Release()
	dispatch(func() {
		v, o, err := run(fn)
		if err != nil {
			reject.Invoke(jsErr(err))
			return
		}
		res, err := result(v, o)
		if err != nil {
			reject.Invoke(jsErr(err))
			return
		}
		resolve.Invoke(res)
	})
	return p
}

// Calls run on goroutines that stay: a new goroutine starts on a small
// stack and grows it, copying, in every call (the engine's calls are
// deep). An idle worker takes the next call; when none is idle, a new one
// starts, so a call that waits (a busy file, a list cursor) never holds up
// another. At most idleWorkers wait for work.
const idleWorkers = 4

var idle = make(chan chan func(), idleWorkers)

func dispatch(fn func()) {
	select {
	case w := <-idle:
		w <- fn
	default:
		go worker(fn)
	}
}

func worker(fn func()) {
	inbox := make(chan func())
	for {
		fn()
		select {
		case idle <- inbox:
		default:
			return
		}
		fn = <-inbox
	}
}

func jsErr(err error) js.Value {
	e := jsError.New(err.Error())
	e.Set("code", bridge.ErrorCode(err))
	return e
}

func errArg(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{engine.ErrInvalidArgument}, args...)...)
}

// result is a call's result as JavaScript receives it: {json, bufs}.
func result(v any, o *bridge.Out) (js.Value, error) {
	text, err := bridge.Encode(v)
	if err != nil {
		return js.Undefined(), err
	}
	res := jsObject.New()
	res.Set("json", string(text))
	arr := jsArray.New()
	for _, b := range o.Bufs() {
		a := jsUint8Array.New(len(b))
		js.CopyBytesToJS(a, b)
		arr.Call("push", a)
	}
	res.Set("bufs", arr)
	return res, nil
}

// readFrame reads a request of send: one byte array,
//
//	h u32, op length u32, JSON length u32, n u32, n buffer lengths u32,
//	then the op's name, the JSON and the n buffers, back to back
//
// (little-endian). The buffers are slices of one copy, capped so that
// appending to one cannot reach the next.
func readFrame(u8 js.Value) (h int, op string, req []byte, bufs [][]byte, err error) {
	if u8.Type() != js.TypeObject {
		return 0, "", nil, nil, errArg("send: the frame must be a Uint8Array")
	}
	b := make([]byte, u8.Length())
	js.CopyBytesToGo(b, u8)
	// The error is made only when it happens: fmt's printer on every call
	// made it one of the hottest (so tiered-up) functions of a start.
	bad := func() error { return errArg("send: malformed frame") }
	if len(b) < 16 {
		return 0, "", nil, nil, bad()
	}
	h = int(binary.LittleEndian.Uint32(b))
	opLen, jsonLen, n := int(binary.LittleEndian.Uint32(b[4:])), int(binary.LittleEndian.Uint32(b[8:])), int(binary.LittleEndian.Uint32(b[12:]))
	at := 16 + 4*n
	if n > len(b)/4 || at > len(b) || opLen > len(b)-at || jsonLen > len(b)-at-opLen {
		return 0, "", nil, nil, bad()
	}
	op = string(b[at : at+opLen])
	at += opLen
	req = b[at : at+jsonLen : at+jsonLen]
	at += jsonLen
	bufs = make([][]byte, n)
	for i := range n {
		l := int(binary.LittleEndian.Uint32(b[16+4*i:]))
		if l > len(b)-at {
			return 0, "", nil, nil, bad()
		}
		bufs[i] = b[at : at+l : at+l]
		at += l
	}
	if at != len(b) {
		return 0, "", nil, nil, bad()
	}
	return h, op, req, bufs, nil
}

// writeFrame hands a result of send to JavaScript without copying it into
// a JavaScript object here: give gets the address and length, in the
// module's memory, of
//
//	n u32, JSON length u32, n times (address u32, length u32), the JSON
//
// (little-endian), and copies what it needs out of that memory (the JSON
// and the n buffers it points to) before it returns.
func writeFrame(v any, o *bridge.Out, give func(ptr, n int)) error {
	text, err := bridge.Encode(v)
	if err != nil {
		return err
	}
	bufs := o.Bufs()
	head := 8 + 8*len(bufs)
	b := make([]byte, head, head+len(text))
	binary.LittleEndian.PutUint32(b, uint32(len(bufs)))
	binary.LittleEndian.PutUint32(b[4:], uint32(len(text)))
	for i, x := range bufs {
		binary.LittleEndian.PutUint32(b[8+8*i:], uint32(addr(x)))
		binary.LittleEndian.PutUint32(b[12+8*i:], uint32(len(x)))
	}
	b = append(b, text...)
	give(addr(b), len(b))
	runtime.KeepAlive(b)
	runtime.KeepAlive(bufs)
	return nil
}

// addr is where b's bytes are in the module's memory (0 for none). Go's
// heap does not move, and b stays reachable while JavaScript reads it.
func addr(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	return int(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}
