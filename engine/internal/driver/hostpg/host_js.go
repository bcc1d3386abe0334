//go:build js

package hostpg

import (
	"syscall/js"
	"unsafe"
)

// Under GOOS=js the protocol is the methods connect, exec, take and close
// of the object the JavaScript side sets as globalThis.__agentstate_pg_host
// before the Go program starts. A host without it (the npm package today,
// browsers, edge runtimes) has no PostgreSQL: connect fails with kind 3.
var host = js.Global().Get("__agentstate_pg_host")

func ptr(b []byte) float64 { return float64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

func available(buf []byte) bool {
	if host.Type() == js.TypeObject {
		return true
	}
	msg := "this JavaScript host has no PostgreSQL client: PostgreSQL URLs need the Python package or a native program for now (see docs/postgresql.md)"
	copy(buf, []byte{kindUnavailable, 'I', 0, 0, 0, 0, 0})
	le.PutUint32(buf[7:], uint32(len(msg)))
	copy(buf[11:], msg)
	return false
}

func hostConnect(url string, params, buf []byte, deadline float64) int {
	if !available(buf) {
		return -1
	}
	p := js.Global().Get("Uint8Array").New(len(params))
	js.CopyBytesToJS(p, params)
	return host.Call("connect", url, p, ptr(buf), len(buf), deadline).Int()
}

func hostExec(id int, buf []byte, reqLen int, deadline float64) int {
	return host.Call("exec", id, ptr(buf), len(buf), reqLen, deadline).Int()
}

func hostTake(id int, buf []byte) int { return host.Call("take", id, ptr(buf), len(buf)).Int() }

func hostClose(id int) { host.Call("close", id) }

func hostAvailable() bool { return host.Type() == js.TypeObject }
