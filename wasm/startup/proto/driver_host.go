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
		row := make([]any, ncols)
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
		rows[r] = row
	}
	return rows, nil
}

func (d *hostDriver) close() error {
	d.host.Call("close", d.db)
	return nil
}
