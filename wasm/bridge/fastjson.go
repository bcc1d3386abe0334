//go:build js || (wasip1 && hostsqlite)

package bridge

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
)

// The requests of a LangGraph turn (put, putWrites, writes.batch, getTuple)
// are parsed here, without reflection: encoding/json's decoder was the
// largest single cost of a call in the engine's module (it scans each
// request twice and fills the structs through reflect), and its functions
// the largest compile jobs at start-up. The parser gives what decodeJSON
// with UseNumber gives for the same text (objects as map[string]any,
// numbers as json.Number, the last of duplicate keys); the request readers
// below take the fields as encoding/json would fill the structs (null
// leaves a field as it was; a value of the wrong type is an error). Field
// names match exactly (the hosts write them so), not case-insensitively.

type jsonParser struct {
	b []byte
	i int
}

// parseRequest parses a request's JSON text (empty: {}) into an object.
func parseRequest(b []byte) (map[string]any, error) {
	if len(b) == 0 {
		return map[string]any{}, nil
	}
	p := jsonParser{b: b}
	v, err := p.value() // what follows the value is not read, as json.Decoder does not
	if err != nil {
		return nil, errArg("request: %v", err)
	}
	switch m := v.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return m, nil
	}
	return nil, errArg("request: must be a JSON object, not a JSON %s", valueKind(v))
}

func (p *jsonParser) fail(what string) error {
	if p.i >= len(p.b) {
		return fmt.Errorf("unexpected end of JSON input")
	}
	return fmt.Errorf("invalid character %q %s (offset %d)", p.b[p.i], what, p.i)
}

func (p *jsonParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value() (any, error) {
	p.space()
	if p.i >= len(p.b) {
		return nil, p.fail("")
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.string()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	default:
		for _, lit := range [...]struct {
			s string
			v any
		}{{"true", true}, {"false", false}, {"null", nil}} {
			if len(p.b)-p.i >= len(lit.s) && string(p.b[p.i:p.i+len(lit.s)]) == lit.s {
				p.i += len(lit.s)
				return lit.v, nil
			}
		}
		return nil, p.fail("looking for beginning of value")
	}
}

func (p *jsonParser) object() (any, error) {
	m := map[string]any{}
	err := p.elements('}', "after object key:value pair", func() error {
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return p.fail("looking for beginning of object key string")
		}
		k, err := p.string()
		if err != nil {
			return err
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return p.fail("after object key")
		}
		p.i++
		v, err := p.value()
		m[k] = v
		return err
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

func (p *jsonParser) array() (any, error) {
	a := []any{}
	err := p.elements(']', "after array element", func() error {
		v, err := p.value()
		a = append(a, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// elements reads the elements of the object or array whose opening byte
// is at p.i, each by one call of read, up to its closing byte: empty, or
// elements separated by commas (after says where a wrong byte was).
func (p *jsonParser) elements(closing byte, after string, read func() error) error {
	p.i++ // { or [
	p.space()
	if p.i < len(p.b) && p.b[p.i] == closing {
		p.i++
		return nil
	}
	for {
		if err := read(); err != nil {
			return err
		}
		p.space()
		if p.i >= len(p.b) {
			return p.fail("")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case closing:
			p.i++
			return nil
		default:
			return p.fail(after)
		}
	}
}

// string reads a string as encoding/json does: escapes decoded, invalid
// UTF-8 and lone surrogates replaced by U+FFFD.
func (p *jsonParser) string() (string, error) {
	p.i++ // "
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			s := string(p.b[start:p.i])
			p.i++
			return s, nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		p.i++
	}
	out := append([]byte(nil), p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return string(out), nil
		case c < 0x20:
			return "", p.fail("in string literal")
		case c == '\\':
			if p.i+1 >= len(p.b) {
				return "", p.fail("")
			}
			e := p.b[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", p.fail("in \\u hexadecimal character escape")
				}
				if utf16.IsSurrogate(r) {
					r2 := utf8.RuneError
					if save := p.i; p.i+1 < len(p.b) && p.b[p.i] == '\\' && p.b[p.i+1] == 'u' {
						p.i += 2
						if lo, ok := p.hex4(); ok {
							if d := utf16.DecodeRune(r, lo); d != utf8.RuneError {
								r2 = d
							} else {
								p.i = save
							}
						} else {
							p.i = save
						}
					}
					r = r2
				}
				out = utf8.AppendRune(out, r)
			default:
				p.i -= 1
				return "", p.fail("in string escape code")
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			p.i++
		default:
			r, n := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError && n == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, p.b[p.i:p.i+n]...)
			}
			p.i += n
		}
	}
	return "", p.fail("")
}

func (p *jsonParser) hex4() (rune, bool) {
	if len(p.b)-p.i < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(p.b[p.i:p.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.i += 4
	return rune(n), true
}

// number reads a JSON number (the grammar's, strictly) as a json.Number.
func (p *jsonParser) number() (any, error) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.b[p.i] == '-' {
		p.i++
	}
	if p.i < len(p.b) && p.b[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return nil, p.fail("in numeric literal")
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, p.fail("after decimal point in numeric literal")
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, p.fail("in exponent of numeric literal")
		}
	}
	return json.Number(p.b[start:p.i]), nil
}

// Reading fields of a parsed request. Each takes the field's value (nil
// when absent or null: the field keeps its zero value) and the field's
// path for the error message.

// typeErr says which field of a request has the wrong kind of value, in
// the request's own names, as decodeJSON does.
func typeErr(path string, v any, want string) error {
	return errArg("request: %s must be %s, not a JSON %s", path, want, valueKind(v))
}

// valueKind names the kind of a parsed JSON value.
func valueKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "bool"
	}
	return "null"
}

func fStr(v any, path string) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	}
	return "", typeErr(path, v, "a string")
}

func fInt(v any, path string) (int, error) {
	n, err := fIntBits(v, path, 0, "int")
	return int(n), err
}

func fBool(v any, path string) (bool, error) {
	switch x := v.(type) {
	case nil:
		return false, nil
	case bool:
		return x, nil
	}
	return false, typeErr(path, v, "a boolean")
}

func fObj(v any, path string) (map[string]any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return x, nil
	}
	return nil, typeErr(path, v, "an object")
}

func fArr(v any, path string) ([]any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case []any:
		return x, nil
	}
	return nil, typeErr(path, v, "an array")
}

func fStrMap(v any, path string) (map[string]string, error) {
	m, err := fObj(v, path)
	if m == nil {
		return nil, err
	}
	res := make(map[string]string, len(m))
	for k, e := range m {
		if e == nil {
			res[k] = ""
			continue
		}
		s, ok := e.(string)
		if !ok {
			return nil, typeErr(path+"."+k, e, "a string")
		}
		res[k] = s
	}
	return res, nil
}

func fStrs(v any, path string) ([]string, error) {
	a, err := fArr(v, path)
	if a == nil {
		return nil, err
	}
	res := make([]string, len(a))
	for i, e := range a {
		if res[i], err = fStr(e, path); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// fFree is a free-form value (metadata): numbers as int64 or float64.
func fFree(v any, path string) (map[string]any, error) {
	m, err := fObj(v, path)
	if m == nil {
		return nil, err
	}
	if _, err := codec.JSONNumbers(m); err != nil {
		return nil, errArg("%v", err)
	}
	return m, nil
}

func fConfig(v any, path string) (c engine.Config, err error) {
	m, err := fObj(v, path)
	if m == nil {
		return c, err
	}
	if c.ThreadID, err = fStr(m["thread_id"], path+".thread_id"); err != nil {
		return c, err
	}
	if c.CheckpointNS, err = fStr(m["checkpoint_ns"], path+".checkpoint_ns"); err != nil {
		return c, err
	}
	c.CheckpointID, err = fStr(m["checkpoint_id"], path+".checkpoint_id")
	return c, err
}

func fBlob(v any, path string) (b wBlob, err error) {
	m, err := fObj(v, path)
	if m == nil {
		return b, err
	}
	if b.T, err = fStr(m["t"], path+".t"); err != nil {
		return b, err
	}
	b.B, err = fInt(m["b"], path+".b")
	return b, err
}

func fCheckpoint(v any, path string) (c wCheckpoint, err error) {
	m, err := fObj(v, path)
	if m == nil {
		return c, err
	}
	if c.V, err = fInt(m["v"], path+".v"); err != nil {
		return c, err
	}
	if c.ID, err = fStr(m["id"], path+".id"); err != nil {
		return c, err
	}
	if c.TS, err = fStr(m["ts"], path+".ts"); err != nil {
		return c, err
	}
	values, err := fObj(m["values"], path+".values")
	if err != nil {
		return c, err
	}
	if values != nil {
		c.Values = make(map[string]wBlob, len(values))
		for ch, e := range values {
			if c.Values[ch], err = fBlob(e, path+".values"); err != nil {
				return c, err
			}
		}
	}
	if c.Versions, err = fStrMap(m["versions"], path+".versions"); err != nil {
		return c, err
	}
	seen, err := fObj(m["seen"], path+".seen")
	if err != nil {
		return c, err
	}
	if seen != nil {
		c.Seen = make(map[string]map[string]string, len(seen))
		for node, e := range seen {
			if c.Seen[node], err = fStrMap(e, path+".seen"); err != nil {
				return c, err
			}
		}
	}
	if u, ok := m["updated"]; ok && u != nil {
		us, err := fStrs(u, path+".updated")
		if err != nil {
			return c, err
		}
		c.Updated = &us
	}
	return c, nil
}

// putRequest is what put takes.
type putRequest struct {
	Config      engine.Config
	Checkpoint  wCheckpoint
	Metadata    map[string]any
	NewVersions map[string]string
}

func readPut(m map[string]any) (r putRequest, err error) {
	if r.Config, err = fConfig(m["config"], "config"); err != nil {
		return r, err
	}
	if r.Checkpoint, err = fCheckpoint(m["checkpoint"], "checkpoint"); err != nil {
		return r, err
	}
	if r.Metadata, err = fFree(m["metadata"], "metadata"); err != nil {
		return r, err
	}
	r.NewVersions, err = fStrMap(m["newVersions"], "newVersions")
	return r, err
}

// putWritesRequest is what putWrites takes.
type putWritesRequest struct {
	Config   engine.Config
	Writes   []wWriteIn
	TaskID   string
	TaskPath string
}

type wWriteIn struct {
	Channel string
	Value   wBlob
}

func readPutWrites(m map[string]any) (r putWritesRequest, err error) {
	if r.Config, err = fConfig(m["config"], "config"); err != nil {
		return r, err
	}
	ws, err := fArr(m["writes"], "writes")
	if err != nil {
		return r, err
	}
	r.Writes = make([]wWriteIn, len(ws))
	for k, e := range ws {
		w, err := fObj(e, "writes")
		if err != nil {
			return r, err
		}
		if r.Writes[k].Channel, err = fStr(w["channel"], "writes.channel"); err != nil {
			return r, err
		}
		if r.Writes[k].Value, err = fBlob(w["value"], "writes.value"); err != nil {
			return r, err
		}
	}
	if r.TaskID, err = fStr(m["taskId"], "taskId"); err != nil {
		return r, err
	}
	r.TaskPath, err = fStr(m["taskPath"], "taskPath")
	return r, err
}

func fInt64(v any, path string) (int64, error) { return fIntBits(v, path, 64, "int64") }

// fIntBits reads an integer field of Go type typ (bits wide, 0 for int)
// with encoding/json's errors.
func fIntBits(v any, path string, bits int, typ string) (int64, error) {
	switch x := v.(type) {
	case nil:
		return 0, nil
	case json.Number:
		n, err := strconv.ParseInt(string(x), 10, bits)
		if err != nil {
			return 0, errArg("request: json: cannot unmarshal number %s into field %s of type %s", x, path, typ)
		}
		return n, nil
	}
	return 0, typeErr(path, v, "an integer")
}

func fFloat(v any, path string) (float64, error) {
	switch x := v.(type) {
	case nil:
		return 0, nil
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return 0, errArg("request: json: cannot unmarshal number %s into field %s of type float64", x, path)
		}
		return f, nil
	}
	return 0, typeErr(path, v, "a number")
}

// readOpen reads open's request (openRequest's fields, by their JSON
// names): open is the first call of every process, and encoding/json's
// decoder is a large function to compile for one request.
func readOpen(m map[string]any) (r openRequest, err error) {
	str := func(dst *string, key string) {
		if err == nil {
			*dst, err = fStr(m[key], key)
		}
	}
	boolean := func(dst *bool, key string) {
		if err == nil {
			*dst, err = fBool(m[key], key)
		}
	}
	optBool := func(dst **bool, key string) {
		if err == nil && m[key] != nil {
			var x bool
			x, err = fBool(m[key], key)
			*dst = &x
		}
	}
	optInt64 := func(dst **int64, key string) {
		if err == nil && m[key] != nil {
			var x int64
			x, err = fInt64(m[key], key)
			*dst = &x
		}
	}
	integer := func(dst *int, key string) {
		if err == nil {
			*dst, err = fInt(m[key], key)
		}
	}
	number := func(dst *float64, key string) {
		if err == nil {
			*dst, err = fFloat(m[key], key)
		}
	}
	str(&r.Path, "path")
	str(&r.VFS, "vfs")
	boolean(&r.Disk, "disk")
	str(&r.Name, "name")
	if err == nil && m["image"] != nil {
		var x int
		x, err = fInt(m["image"], "image")
		r.Image = &x
	}
	str(&r.Mode, "mode")
	integer(&r.Every, "every")
	optInt64(&r.CacheBytes, "cacheBytes")
	integer(&r.ReadConns, "readConns")
	integer(&r.WriteConns, "writeConns")
	integer(&r.TimeoutMs, "timeoutMs")
	boolean(&r.ReadOnly, "readOnly")
	boolean(&r.Shared, "shared")
	optInt64(&r.BusyMs, "busyTimeoutMs")
	str(&r.Sync, "synchronous")
	number(&r.StoreTTL, "storeDefaultTtlMs")
	optBool(&r.RefreshTTL, "storeRefreshOnRead")
	number(&r.SweepMs, "storeSweepIntervalMs")
	optBool(&r.AutoRetain, "autoRetain")
	str(&r.Host, "host")
	return r, err
}
