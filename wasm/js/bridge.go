//go:build js && wasm

package main

import (
	"fmt"
	"runtime/debug"
	"syscall/js"

	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/wasm/bridge"
)

// api returns the object handed to JavaScript. Every method returns a
// Promise of {json, bufs}: a JSON text and the byte arrays it refers to by
// index ({"t": type, "b": index} for a typed blob).
//
//	open(json, bufs)          -> {"h": handle}
//	call(h, op, json, bufs)   -> op's result
//	close(h)
func api(b *bridge.Bridge) js.Value {
	obj := js.Global().Get("Object").New()
	obj.Set("open", guarded(func(args []js.Value) any {
		req, bufs := argJSON(args, 0), argBufs(args, 1)
		return promise(func() (any, *bridge.Out, error) { return b.Open(req, bufs) })
	}))
	obj.Set("call", guarded(func(args []js.Value) any {
		if len(args) < 2 || args[0].Type() != js.TypeNumber || args[1].Type() != js.TypeString {
			return rejected(errArg("call(h, op, json, bufs)"))
		}
		h, op, req, bufs := args[0].Int(), args[1].String(), argJSON(args, 2), argBufs(args, 3)
		return promise(func() (any, *bridge.Out, error) { return b.Call(h, op, req, bufs) })
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
	return js.Global().Get("Promise").Call("reject", jsError(err))
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

// promise runs fn in a goroutine and settles a Promise with its result: the
// JSON of the first value and the buffers collected in out.
func promise(fn func() (any, *bridge.Out, error)) js.Value {
	var resolve, reject js.Value
	executor := js.FuncOf(func(_ js.Value, args []js.Value) any {
		resolve, reject = args[0], args[1]
		return nil
	})
	p := js.Global().Get("Promise").New(executor)
	executor.Release()
	go func() {
		var v any
		var o *bridge.Out
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("agentstate: internal error: %v\n%s", r, debug.Stack())
				}
			}()
			v, o, err = fn()
		}()
		if err != nil {
			reject.Invoke(jsError(err))
			return
		}
		res, err := result(v, o)
		if err != nil {
			reject.Invoke(jsError(err))
			return
		}
		resolve.Invoke(res)
	}()
	return p
}

func jsError(err error) js.Value {
	e := js.Global().Get("Error").New(err.Error())
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
	res := js.Global().Get("Object").New()
	res.Set("json", string(text))
	arr := js.Global().Get("Array").New()
	u8 := js.Global().Get("Uint8Array")
	for _, b := range o.Bufs() {
		a := u8.New(len(b))
		js.CopyBytesToJS(a, b)
		arr.Call("push", a)
	}
	res.Set("bufs", arr)
	return res, nil
}
