//go:build wasip1 && hostsqlite

package hostsqlite

import "unsafe"

// Under WASI the protocol of host.js is a set of functions the host
// provides as imports of module "agentstate_sqlite" (the Python package's
// _host.py implements them): the same calls with the same buffers, each
// string passed as (pointer, length) and each buffer as (pointer,
// capacity) in this module's memory (run_batch is runBatch: the batch and
// the result buffer, then flags and deadline). serialize writes the image
// into the buffer and returns its length, or -(2 + n) when it needs n
// bytes.

//go:wasmimport agentstate_sqlite open
func wOpen(name unsafe.Pointer, nameLen int32, flags int32, vfs unsafe.Pointer, vfsLen int32, buf unsafe.Pointer, bufCap int32) int32

//go:wasmimport agentstate_sqlite close
func wClose(conn int32)

//go:wasmimport agentstate_sqlite prepare
func wPrepare(conn int32, buf unsafe.Pointer, bufCap int32, sqlLen int32) int32

//go:wasmimport agentstate_sqlite run
func wRun(stmt int32, buf unsafe.Pointer, bufCap int32, argLen int32, flags int32, deadline float64) int32

//go:wasmimport agentstate_sqlite run_batch
func wRunBatch(data unsafe.Pointer, dataLen int32, out unsafe.Pointer, outCap int32, flags int32, deadline float64) int32

//go:wasmimport agentstate_sqlite next
func wNext(stmt int32, buf unsafe.Pointer, bufCap int32, deadline float64) int32

//go:wasmimport agentstate_sqlite reset
func wReset(stmt int32)

//go:wasmimport agentstate_sqlite finalize
func wFinalize(stmt int32)

//go:wasmimport agentstate_sqlite autocommit
func wAutocommit(conn int32) int32

//go:wasmimport agentstate_sqlite shm
func wShm(conn int32) int32

//go:wasmimport agentstate_sqlite create_function
func wCreateFunction(conn int32, name unsafe.Pointer, nameLen int32, nArg int32, fnID int32, buf unsafe.Pointer, bufCap int32) int32

//go:wasmimport agentstate_sqlite callback_buffer
func wCallbackBuffer(arg unsafe.Pointer, argCap int32, res unsafe.Pointer)

//go:wasmimport agentstate_sqlite serialize
func wSerialize(conn int32, schema unsafe.Pointer, schemaLen int32, buf unsafe.Pointer, bufCap int32) int32

//go:wasmimport agentstate_sqlite deserialize
func wDeserialize(conn int32, schema unsafe.Pointer, schemaLen int32, data unsafe.Pointer, dataLen int32, readOnly int32, buf unsafe.Pointer, bufCap int32) int32

// Available reports whether the host provided SQLite: a module that
// instantiated has every import.
func Available() error { return nil }

func sp(s string) (unsafe.Pointer, int32) { return unsafe.Pointer(unsafe.StringData(s)), int32(len(s)) }
func bp(b []byte) (unsafe.Pointer, int32) { return unsafe.Pointer(unsafe.SliceData(b)), int32(len(b)) }

func hostOpen(name string, flags int, vfs string, buf []byte) int {
	n, nl := sp(name)
	v, vl := sp(vfs)
	b, bl := bp(buf)
	return int(wOpen(n, nl, int32(flags), v, vl, b, bl))
}
func hostClose(conn int)    { wClose(int32(conn)) }
func hostReset(stmt int)    { wReset(int32(stmt)) }
func hostFinalize(stmt int) { wFinalize(int32(stmt)) }
func hostPrepare(conn int, buf []byte, sqlLen int) int {
	b, bl := bp(buf)
	return int(wPrepare(int32(conn), b, bl, int32(sqlLen)))
}
func hostRun(stmt int, buf []byte, argLen, flags int, deadline float64) int {
	b, bl := bp(buf)
	return int(wRun(int32(stmt), b, bl, int32(argLen), int32(flags), deadline))
}
func hostRunBatch(data, out []byte, flags int, deadline float64) int {
	d, dl := bp(data)
	o, ol := bp(out)
	return int(wRunBatch(d, dl, o, ol, int32(flags), deadline))
}
func hostNext(stmt int, buf []byte, deadline float64) int {
	b, bl := bp(buf)
	return int(wNext(int32(stmt), b, bl, deadline))
}
func hostAutocommit(conn int) int { return int(wAutocommit(int32(conn))) }
func hostShm(conn int) int        { return int(wShm(int32(conn))) }
func hostCreateFunction(conn int, name string, nArg, fnID int, buf []byte) int {
	n, nl := sp(name)
	b, bl := bp(buf)
	return int(wCreateFunction(int32(conn), n, nl, int32(nArg), int32(fnID), b, bl))
}

func hostSerialize(conn int, schema string, buf []byte) ([]byte, bool) {
	s, sl := sp(schema)
	for {
		b, bl := bp(buf)
		r := int(wSerialize(int32(conn), s, sl, b, bl))
		switch {
		case r >= 0:
			return append([]byte(nil), buf[:r]...), true
		case r <= -2:
			buf = make([]byte, -r-2)
		default:
			return nil, false
		}
	}
}

func hostDeserialize(conn int, schema string, data []byte, readOnly bool, buf []byte) int {
	s, sl := sp(schema)
	d, dl := bp(data)
	b, bl := bp(buf)
	ro := int32(0)
	if readOnly {
		ro = 1
	}
	return int(wDeserialize(int32(conn), s, sl, d, dl, ro, b, bl))
}

// The host calls Go's functions (funcs.go) through this export: (0, fnId,
// argc, aux) calls one, (1, n) grows the argument buffer, (2, aux) frees a
// function's per-statement state.
//
//go:wasmexport agentstate_sql_function
func sqlFunction(op, a1, a2, a3 int32) int32 {
	return int32(dispatch(int(op), int(a1), int(a2), int(a3)))
}

func hostSetCallback() {}

func hostCallbackBuffer(arg, res []byte) {
	a, al := bp(arg)
	r, _ := bp(res)
	wCallbackBuffer(a, al, r)
}
