//go:build js || (wasip1 && hostsqlite)

package hostsqlite

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/agentstate/agentstate/engine/internal/driver"
)

// Go functions called from SQL. SQLite reaches them through the host's
// one xFunc, which writes the arguments into argBuf and calls dispatch;
// the result goes back through resBuf. The engine's functions run no SQL,
// so calls never nest and one pair of buffers serves every connection.
var fn struct {
	once    sync.Once
	byName  map[string]int // function id by name (ids index list, from 1)
	list    []driver.Func
	aux     map[uint32]any // per-statement state (a compiled filter), by id
	nextAux uint32
	argBuf  []byte
	resBuf  []byte
}

func setupFuncs() {
	fn.byName = map[string]int{}
	fn.list = []driver.Func{{}}
	fn.aux = map[uint32]any{}
	fn.argBuf = make([]byte, 4<<10)
	fn.resBuf = make([]byte, 4<<10)
	hostSetCallback()
	registerBuffers()
}

func registerBuffers() {
	hostCallbackBuffer(fn.argBuf, fn.resBuf)
}

func (c *Conn) createFunction(f driver.Func, buf []byte) error {
	fn.once.Do(setupFuncs)
	id, ok := fn.byName[f.Name]
	if !ok {
		fn.list = append(fn.list, f)
		id = len(fn.list) - 1
		fn.byName[f.Name] = id
	} else {
		fn.list[id] = f
	}
	if hostCreateFunction(c.id, f.Name, f.NArg, id, buf) < 0 {
		return classify(decodeError(buf))
	}
	return nil
}

// dispatch is the host's way into Go: (0, fnId, argc, aux) calls a
// function, (1, n) grows the argument buffer, (2, aux) frees a function's
// per-statement state. A panic must not escape: it would stop the program.
func dispatch(op, a1, a2, a3 int) (res int) {
	switch op {
	case 1:
		fn.argBuf = make([]byte, a1+1024)
		registerBuffers()
		return 0
	case 2:
		delete(fn.aux, uint32(a1))
		return 0
	}
	id, argc, auxID := a1, a2, uint32(a3)
	defer func() {
		if r := recover(); r != nil {
			res = fail(fmt.Errorf("agentstate: internal: function panicked: %v", r))
		}
	}()
	if id <= 0 || id >= len(fn.list) {
		return fail(fmt.Errorf("agentstate: internal: no function %d", id))
	}
	f := fn.list[id]
	r := &row{}
	r.reset(fn.argBuf, argc)
	if err := r.scan(); err != nil {
		return fail(err)
	}
	vals := make([]driver.Value, argc)
	for i := range vals {
		vals[i] = value{r.cols[i]}
	}
	var aux any
	if auxID != 0 {
		aux = fn.aux[auxID]
	}
	v, err := f.Call(&aux, vals)
	if err != nil {
		return fail(err)
	}
	newAux := uint32(0)
	if auxID == 0 && aux != nil && argc > 0 {
		fn.nextAux++
		if fn.nextAux == 0 {
			fn.nextAux = 1
		}
		newAux = fn.nextAux
		fn.aux[newAux] = aux
	}
	out, err := encodeResult(fn.resBuf[:0], newAux, v, f.Name)
	if err != nil {
		return fail(err)
	}
	if cap(out) > cap(fn.resBuf) {
		fn.resBuf = out[:cap(out)]
		registerBuffers()
	}
	return len(out) - 4
}

func fail(err error) int {
	msg := err.Error()
	b := binary.LittleEndian.AppendUint32(fn.resBuf[:0], 0)
	b = append(b, msg...)
	if cap(b) > cap(fn.resBuf) {
		fn.resBuf = b[:cap(b)]
		registerBuffers()
	}
	return -1 - len(msg)
}

func encodeResult(b []byte, aux uint32, v any, name string) ([]byte, error) {
	le := binary.LittleEndian
	b = le.AppendUint32(b, aux)
	switch v := v.(type) {
	case nil:
		b = append(b, tagNull)
	case bool:
		i := uint64(0)
		if v {
			i = 1
		}
		b = le.AppendUint64(append(b, tagInt), i)
	case int64:
		b = le.AppendUint64(append(b, tagInt), uint64(v))
	case int:
		b = le.AppendUint64(append(b, tagInt), uint64(v))
	case float64:
		b = le.AppendUint64(append(b, tagFloat), math.Float64bits(v))
	case string:
		b = append(le.AppendUint32(append(b, tagText), uint32(len(v))), v...)
	case []byte:
		if v == nil {
			b = append(b, tagNull)
		} else {
			b = append(le.AppendUint32(append(b, tagBlob), uint32(len(v))), v...)
		}
	default:
		return nil, fmt.Errorf("agentstate: internal: function %s returned %T", name, v)
	}
	return b, nil
}

// value is an argument of a function call.
type value struct{ c col }

func (v value) Null() bool   { return v.c.tag == tagNull }
func (v value) Int64() int64 { return v.c.int64() }
func (v value) Text() string { return v.c.text() }
func (v value) Blob() []byte { return v.c.blob() }
