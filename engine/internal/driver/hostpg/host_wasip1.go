//go:build wasip1 && hostsqlite

package hostpg

import "unsafe"

// Under WASI the protocol is imported functions of module "agentstate_pg"
// (the Python package's _pg_host.py implements them); strings and buffers
// are (pointer, length) in this module's memory.

//go:wasmimport agentstate_pg connect
func wConnect(url unsafe.Pointer, urlLen int32, params unsafe.Pointer, paramsLen int32, buf unsafe.Pointer, bufCap int32, deadline float64) int32

//go:wasmimport agentstate_pg exec
func wExec(id int32, buf unsafe.Pointer, bufCap int32, reqLen int32, deadline float64) int32

//go:wasmimport agentstate_pg take
func wTake(id int32, buf unsafe.Pointer, bufCap int32) int32

//go:wasmimport agentstate_pg close
func wClose(id int32)

func bp(b []byte) (unsafe.Pointer, int32) { return unsafe.Pointer(unsafe.SliceData(b)), int32(len(b)) }

func hostConnect(url string, params, buf []byte, deadline float64) int {
	p, pl := bp(params)
	b, bl := bp(buf)
	return int(wConnect(unsafe.Pointer(unsafe.StringData(url)), int32(len(url)), p, pl, b, bl, deadline))
}

func hostExec(id int, buf []byte, reqLen int, deadline float64) int {
	b, bl := bp(buf)
	return int(wExec(int32(id), b, bl, int32(reqLen), deadline))
}

func hostTake(id int, buf []byte) int {
	b, bl := bp(buf)
	return int(wTake(int32(id), b, bl))
}

func hostClose(id int) { wClose(int32(id)) }

// hostAvailable: a module that instantiated has every import.
func hostAvailable() bool { return true }
