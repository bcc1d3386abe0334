//go:build js

package hostsqlite

import (
	"errors"
	"fmt"
	"sync"
	"syscall/js"
	"unsafe"
)

// HostGlobal is the global the host object is read from at start.
const HostGlobal = "__agentstate_sqlite_host"

// The host, captured during package initialisation: the JavaScript side
// removes the global once go.run returns, so that a second Go instance in
// the same realm gets its own.
var host = js.Global().Get(HostGlobal)

type hostFns struct {
	open, close, prepare, run, runBatch, next, reset, finalize, autocommit, shm js.Value
	createFunction, serialize, deserialize                                      js.Value
}

var fns = sync.OnceValue(func() *hostFns {
	m := func(name string) js.Value {
		f := host.Get(name)
		if f.Type() != js.TypeFunction {
			panic(fmt.Sprintf("agentstate: the SQLite host has no method %s", name))
		}
		return f
	}
	return &hostFns{
		open: m("open"), close: m("close"), prepare: m("prepare"), run: m("run"), runBatch: m("runBatch"), next: m("next"),
		reset: m("reset"), finalize: m("finalize"), autocommit: m("autocommit"), shm: m("shm"),
		createFunction: m("createFunction"), serialize: m("serialize"), deserialize: m("deserialize"),
	}
})

// Available reports whether the JavaScript host provided SQLite.
func Available() error {
	if host.Type() != js.TypeObject {
		return errors.New("agentstate: no SQLite host: the JavaScript side must set " + HostGlobal + " before the Go program starts (the npm package does)")
	}
	return nil
}

func ptr(b []byte) float64 { return float64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

func hostOpen(name string, flags int, vfs string, buf []byte) int {
	return fns().open.Invoke(name, flags, vfs, ptr(buf), len(buf)).Int()
}
func hostClose(conn int)    { fns().close.Invoke(conn) }
func hostReset(stmt int)    { fns().reset.Invoke(stmt) }
func hostFinalize(stmt int) { fns().finalize.Invoke(stmt) }
func hostPrepare(conn int, buf []byte, sqlLen int) int {
	return fns().prepare.Invoke(conn, ptr(buf), len(buf), sqlLen).Int()
}
func hostRun(stmt int, buf []byte, argLen, flags int, deadline float64) int {
	return fns().run.Invoke(stmt, ptr(buf), len(buf), argLen, flags, deadline).Int()
}
func hostRunBatch(data, out []byte, flags int, deadline float64) int {
	return fns().runBatch.Invoke(ptr(data), len(data), ptr(out), len(out), flags, deadline).Int()
}
func hostNext(stmt int, buf []byte, deadline float64) int {
	return fns().next.Invoke(stmt, ptr(buf), len(buf), deadline).Int()
}
func hostAutocommit(conn int) int { return fns().autocommit.Invoke(conn).Int() }
func hostShm(conn int) int        { return fns().shm.Invoke(conn).Int() }
func hostCreateFunction(conn int, name string, nArg, fnID int, buf []byte) int {
	return fns().createFunction.Invoke(conn, name, nArg, fnID, ptr(buf), len(buf)).Int()
}

func hostSerialize(conn int, schema string, buf []byte) ([]byte, bool) {
	v := fns().serialize.Invoke(conn, schema, ptr(buf), len(buf))
	if v.Type() == js.TypeNumber {
		return nil, false
	}
	out := make([]byte, v.Length())
	js.CopyBytesToGo(out, v)
	return out, true
}

func hostDeserialize(conn int, schema string, data []byte, readOnly bool, buf []byte) int {
	u8 := js.Global().Get("Uint8Array").New(len(data))
	js.CopyBytesToJS(u8, data)
	return fns().deserialize.Invoke(conn, schema, u8, readOnly, ptr(buf), len(buf)).Int()
}

// The host reaches Go's functions (funcs.go) through one JavaScript
// function: (0, fnId, argc, aux) calls one, (1, n) grows the argument
// buffer, (2, aux) frees a function's per-statement state.
var dispatchFunc js.Func

func hostSetCallback() {
	dispatchFunc = js.FuncOf(func(_ js.Value, a []js.Value) any {
		arg := func(i int) int {
			if i < len(a) {
				return a[i].Int()
			}
			return 0
		}
		return dispatch(arg(0), arg(1), arg(2), arg(3))
	})
	host.Call("setCallback", dispatchFunc)
}

func hostCallbackBuffer(arg, res []byte) {
	host.Call("callbackBuffer", ptr(arg), len(arg), ptr(res))
}
