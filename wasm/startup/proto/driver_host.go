//go:build js && wasm && !ncruces

package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"syscall/js"
	"unsafe"
)

// hostDriver runs SQLite provided by the JavaScript host (host.mjs): one
// syscall/js call per statement. Arguments go out and rows come back
// through a scratch buffer in Go's memory that the host reads and writes
// directly (Go's heap does not move), so no other crossing is needed.
type hostDriver struct {
	host js.Value
	run_ js.Value
	db   int
	buf  []byte
	fns  []js.Func
}

func newDriver() driver {
	return &hostDriver{host: js.Global().Get("__sqlhost"), buf: make([]byte, 64<<10)}
}

func (d *hostDriver) open(name string) error {
	r := d.host.Call("open", name)
	if r.Type() != js.TypeNumber {
		return errors.New(r.String())
	}
	d.db = r.Int()
	d.run_ = d.host.Get("run")
	return nil
}

func (d *hostDriver) prepare(q string) (int, error) {
	r := d.host.Call("prepare", d.db, q)
	if r.Type() != js.TypeNumber {
		return 0, errors.New(r.String())
	}
	return r.Int(), nil
}

const (
	tNull = iota
	tInt
	tFloat
	tText
	tBlob
)

func (d *hostDriver) encodeArgs(args []any) ([]byte, error) {
	b := d.buf[:0]
	for _, a := range args {
		switch v := a.(type) {
		case nil:
			b = append(b, tNull)
		case int64:
			b = binary.LittleEndian.AppendUint64(append(b, tInt), uint64(v))
		case float64:
			b = binary.LittleEndian.AppendUint64(append(b, tFloat), math.Float64bits(v))
		case string:
			b = binary.LittleEndian.AppendUint32(append(b, tText), uint32(len(v)))
			b = append(b, v...)
		case []byte:
			b = binary.LittleEndian.AppendUint32(append(b, tBlob), uint32(len(v)))
			b = append(b, v...)
		default:
			return nil, fmt.Errorf("cannot bind %T", a)
		}
	}
	return b, nil
}

func (d *hostDriver) run(id int, args []any) ([][]any, error) {
	in, err := d.encodeArgs(args)
	if err != nil {
		return nil, err
	}
	if cap(in) > cap(d.buf) {
		d.buf = in[:cap(in)]
	}
	ptr := uintptr(unsafe.Pointer(unsafe.SliceData(d.buf)))
	n := d.run_.Invoke(id, float64(ptr), cap(d.buf), len(in), len(args)).Int()
	switch {
	case n == -1:
		return nil, errors.New(d.host.Get("lastError").String())
	case n < -1: // the rows need -n bytes: grow and take them
		d.buf = make([]byte, -n)
		ptr = uintptr(unsafe.Pointer(unsafe.SliceData(d.buf)))
		n = d.host.Call("take", float64(ptr)).Int()
	}
	return decodeRows(d.buf[:n])
}

func decodeRows(b []byte) ([][]any, error) {
	if len(b) < 8 {
		return nil, errors.New("short result")
	}
	nrows, ncols := int(binary.LittleEndian.Uint32(b)), int(binary.LittleEndian.Uint32(b[4:]))
	b = b[8:]
	rows := make([][]any, nrows)
	for r := range rows {
		rows[r], b = decodeValues(b, ncols)
	}
	return rows, nil
}

// decodeValues decodes n values from b and returns the rest of b.
func decodeValues(b []byte, n int) ([]any, []byte) {
	row := make([]any, n)
	for c := range row {
		t := b[0]
		b = b[1:]
		switch t {
		case tInt:
			row[c] = int64(binary.LittleEndian.Uint64(b))
			b = b[8:]
		case tFloat:
			row[c] = math.Float64frombits(binary.LittleEndian.Uint64(b))
			b = b[8:]
		case tText, tBlob:
			n := int(binary.LittleEndian.Uint32(b))
			v := b[4 : 4+n]
			if t == tText {
				row[c] = string(v)
			} else {
				row[c] = append([]byte(nil), v...)
			}
			b = b[4+n:]
		}
	}
	return row, b
}

func (d *hostDriver) close() error {
	d.host.Call("close", d.db)
	return nil
}

// function registers fn with the host. SQLite calls back into Go during a
// run (syscall/js runs the callback on the calling goroutine), with the
// arguments encoded as one row in a buffer of this function's own.
func (d *hostDriver) function(name string, nArg int, fn func(args []any) (any, error)) error {
	cb := make([]byte, 64<<10)
	f := js.FuncOf(func(_ js.Value, a []js.Value) any {
		args, _ := decodeValues(cb, a[0].Int())
		res, err := fn(args)
		if err != nil {
			return -1
		}
		out := cb[:0]
		switch v := res.(type) {
		case nil:
			out = append(out, tNull)
		case int64:
			out = binary.LittleEndian.AppendUint64(append(out, tInt), uint64(v))
		case float64:
			out = binary.LittleEndian.AppendUint64(append(out, tFloat), math.Float64bits(v))
		case string:
			out = append(binary.LittleEndian.AppendUint32(append(out, tText), uint32(len(v))), v...)
		case []byte:
			out = append(binary.LittleEndian.AppendUint32(append(out, tBlob), uint32(len(v))), v...)
		default:
			return -1
		}
		return len(out)
	})
	d.fns = append(d.fns, f)
	ptr := uintptr(unsafe.Pointer(unsafe.SliceData(cb)))
	r := d.host.Call("createFunction", d.db, name, nArg, f, float64(ptr), len(cb))
	if r.Type() != js.TypeNumber {
		return errors.New(r.String())
	}
	return nil
}
