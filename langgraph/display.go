package langgraph

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/agentstate/agentstate/codec"
)

// SerdeJSON decodes a value as LangGraph's serde stored it (the type and
// bytes a saver keeps) into JSON-like values a person can read: "json" as
// itself; "msgpack" (LangGraph Python's) in the mapping of
// testdata/langgraph/python/FORMATS.md, section "Expected-state JSON"
// (LangChain messages as {"$type": "message", "class", "fields"},
// datetimes, UUIDs, sets, Sends, ... as objects with a "$type"); "bytes"
// and "bytearray" as {"$type", "b64"}; "null" as nil. ok is false for a type
// that is not LangGraph's serde's.
func SerdeJSON(b codec.Blob) (v any, ok bool, err error) {
	switch b.Type {
	case "json":
		v, err := codec.DecodeJSON(b.Data)
		return v, true, err
	case "msgpack":
		d, err := decodePy(b.Data)
		if err != nil {
			return nil, true, err
		}
		v, err := pyJSON(d)
		return v, true, err
	case "bytes", "bytearray":
		return map[string]any{"$type": b.Type, "b64": base64.StdEncoding.EncodeToString(b.Data)}, true, nil
	case "null":
		return nil, true, nil
	}
	return nil, false, nil
}

func dictItems(m map[string]any) map[string]any {
	var items []any
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}) {
		items = append(items, []any{k, m[k]})
	}
	return map[string]any{"$type": "dict", "items": items}
}

// pyJSON maps a decoded Python msgpack value (decodePy's result) into the
// expected JSON, as check_formats.py's js() does.
func pyJSON(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string, int64, uint64, float64:
		return v, nil
	case *pyRaw:
		return rawJSON(x)
	}
	if out, ok, err := mapJSON(v, pyJSON); ok {
		return out, err
	}
	return nil, fmt.Errorf("unexpected decoded value %T", v)
}

// mapJSON maps the elements of a list or a map with f, as the expected JSON
// has them: a map with a "$type" key becomes {"$type": "dict", "items"}
// (dictItems), so that it does not read as a tagged value. ok is false when
// v is neither.
func mapJSON(v any, f func(any) (any, error)) (_ any, ok bool, err error) {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			if out[i], err = f(e); err != nil {
				return nil, true, err
			}
		}
		return out, true, nil
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if out[k], err = f(e); err != nil {
				return nil, true, err
			}
		}
		if _, tagged := x["$type"]; tagged {
			return dictItems(out), true, nil
		}
		return out, true, nil
	}
	return nil, false, nil
}

func rawJSON(x *pyRaw) (any, error) {
	switch {
	case x.ext != nil:
		return extJSON(x.ext)
	case x.items != nil:
		return pyJSON(x.items)
	case x.why == "bytes":
		// bin: the data after the header.
		n := len(x.data)
		var body []byte
		switch x.data[0] {
		case 0xc4:
			body = x.data[2:n]
		case 0xc5:
			body = x.data[3:n]
		default:
			body = x.data[5:n]
		}
		return map[string]any{"$type": "bytes", "b64": base64.StdEncoding.EncodeToString(body)}, nil
	case x.why == "a non-finite float":
		var f float64
		if x.data[0] == 0xcb {
			f = math.Float64frombits(beUint(x.data[1:9]))
		} else {
			f = float64(math.Float32frombits(uint32(beUint(x.data[1:5]))))
		}
		s := "nan"
		if math.IsInf(f, 1) {
			s = "inf"
		} else if math.IsInf(f, -1) {
			s = "-inf"
		}
		return map[string]any{"$type": "float", "value": s}, nil
	}
	// A map: with a non-string key or a tagged value; decode its entries.
	var items []any
	r := &pyReader{b: x.data}
	n, p, err := r.mapLen(0)
	if err != nil {
		return nil, err
	}
	for range n {
		k, next, err := r.value(p, 1)
		if err != nil {
			return nil, err
		}
		v, next2, err := r.value(next, 1)
		if err != nil {
			return nil, err
		}
		kj, err := keyJSON(k)
		if err != nil {
			return nil, err
		}
		vj, err := pyJSON(v)
		if err != nil {
			return nil, err
		}
		items = append(items, []any{kj, vj})
		p = next2
	}
	if x.fields != nil {
		if _, tagged := x.fields["$type"]; !tagged {
			out := map[string]any{}
			for _, it := range items {
				kv := it.([]any)
				out[kv[0].(string)] = kv[1]
			}
			return out, nil
		}
	}
	return map[string]any{"$type": "dict", "items": items}, nil
}

// keyJSON maps a map key: an array key reads back as a tuple.
func keyJSON(k any) (any, error) {
	if items, ok := listItems(k); ok {
		inner, err := pyJSON(items)
		if err != nil {
			return nil, err
		}
		return map[string]any{"$type": "tuple", "items": inner}, nil
	}
	return pyJSON(k)
}

func beUint(b []byte) uint64 {
	var u uint64
	for _, c := range b {
		u = u<<8 | uint64(c)
	}
	return u
}

func extJSON(e *pyExt) (any, error) {
	arg := func() (any, error) { return pyJSON(e.arg) }
	cls := e.module + "." + e.name
	switch e.code {
	case extDeltaSnapshot:
		v, err := arg()
		return map[string]any{"$type": "delta_snapshot", "value": v}, err
	case extNumpyArray:
		dtype, _ := e.rest[0].(string)
		shape, _ := listItems(e.rest[1])
		order, _ := e.rest[2].(string)
		buf := binBody(e.rest[3])
		if order == "F" {
			buf = fortranToC(buf, dtype, shape)
		}
		return map[string]any{"$type": "ndarray", "dtype": dtype, "shape": shape, "c_order_b64": base64.StdEncoding.EncodeToString(buf)}, nil
	case extPydanticV2:
		tag := "pydantic"
		if strings.HasPrefix(e.module, "langchain_core.messages.") {
			tag = "message"
		}
		v, err := arg()
		return map[string]any{"$type": tag, "class": cls, "fields": v}, err
	case extPydanticV1:
		v, err := arg()
		return map[string]any{"$type": "pydantic_v1", "class": cls, "fields": v}, err
	case extMethodSingleArg:
		if e.module == "datetime" && e.name == "datetime" && e.rest[0] == "fromisoformat" {
			return map[string]any{"$type": "datetime", "iso": e.arg}, nil
		}
		return arg()
	case extConstructorSingleArg:
		switch {
		case cls == "uuid.UUID":
			h := e.arg.(string)
			return map[string]any{"$type": "uuid", "value": h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]}, nil
		case cls == "decimal.Decimal":
			return map[string]any{"$type": "decimal", "value": e.arg}, nil
		case cls == "builtins.set" || cls == "builtins.frozenset":
			v, err := arg()
			return map[string]any{"$type": e.name, "items": v}, err
		case cls == "collections.deque":
			v, err := arg()
			return map[string]any{"$type": "deque", "items": v}, err
		case e.module == "ipaddress":
			return map[string]any{"$type": "ip", "class": cls, "value": e.arg}, nil
		case cls == "zoneinfo.ZoneInfo":
			return map[string]any{"$type": "zoneinfo", "key": e.arg}, nil
		case e.module == "pydantic.types" && strings.HasPrefix(e.name, "Secret"):
			return map[string]any{"$type": "secret", "class": cls, "value": e.arg}, nil
		}
		v, err := arg()
		return map[string]any{"$type": "enum", "class": cls, "value": v}, err
	case extConstructorPosArgs:
		args, _ := listItems(e.arg)
		switch {
		case cls == "datetime.timedelta":
			return timedeltaJSON(args), nil
		case cls == "datetime.date":
			return map[string]any{"$type": "date", "iso": fmt.Sprintf("%04d-%02d-%02d", args[0], args[1], args[2])}, nil
		case cls == "datetime.timezone":
			var name any
			if len(args) > 1 {
				name = args[1]
			}
			return map[string]any{"$type": "timezone", "offset": timedeltaJSON(tdArgs(args[0])), "name": name}, nil
		case e.module == "pathlib" || e.module == "pathlib._local":
			parts, err := pyJSON(args)
			return map[string]any{"$type": "path", "class": "pathlib." + e.name, "parts": parts}, err
		case cls == "re.compile":
			return map[string]any{"$type": "regex", "pattern": args[0], "flags": args[1]}, nil
		case cls == "langgraph.types.Send" || cls == "langgraph.constants.Send": // the latter before 0.3
			a, err := pyJSON(args[1])
			out := map[string]any{"$type": "send", "node": args[0], "arg": a}
			if len(args) > 2 {
				out["timeout"], _ = pyJSON(args[2])
			}
			return out, err
		}
		return nil, fmt.Errorf("extension 1 of unknown class %s", cls)
	case extConstructorKwArgs:
		if cls == "datetime.time" {
			f := fieldsOf(e.arg)
			iso := fmt.Sprintf("%02d:%02d:%02d", f["hour"], f["minute"], f["second"])
			if us := f["microsecond"].(int64); us != 0 {
				iso += fmt.Sprintf(".%06d", us)
			}
			if tz, ok := f["tzinfo"].(*pyRaw); ok {
				targs, _ := listItems(tz.ext.arg)
				iso += offsetISO(timedeltaJSON(tdArgs(targs[0])))
			}
			return map[string]any{"$type": "time", "iso": iso}, nil
		}
		v, err := arg()
		return map[string]any{"$type": "object", "class": cls, "fields": v}, err
	}
	return nil, fmt.Errorf("unknown extension %d", e.code)
}

func binBody(v any) []byte {
	raw := v.(*pyRaw)
	switch raw.data[0] {
	case 0xc4:
		return raw.data[2:]
	case 0xc5:
		return raw.data[3:]
	}
	return raw.data[5:]
}

func tdArgs(v any) []any {
	raw := v.(*pyRaw)
	args, _ := listItems(raw.ext.arg)
	return args
}

func timedeltaJSON(args []any) map[string]any {
	return map[string]any{"$type": "timedelta", "days": args[0], "seconds": args[1], "microseconds": args[2]}
}

func offsetISO(td map[string]any) string {
	total := (td["days"].(int64)*86400+td["seconds"].(int64))*1_000_000 + td["microseconds"].(int64)
	sign := "+"
	if total < 0 {
		sign, total = "-", -total
	}
	hh, rest := total/3_600_000_000, total%3_600_000_000
	mm, rest := rest/60_000_000, rest%60_000_000
	ss, us := rest/1_000_000, rest%1_000_000
	out := fmt.Sprintf("%s%02d:%02d", sign, hh, mm)
	if ss != 0 || us != 0 {
		out += fmt.Sprintf(":%02d", ss)
	}
	if us != 0 {
		out += fmt.Sprintf(".%06d", us)
	}
	return out
}

// fortranToC reorders a Fortran-order buffer into C order.
func fortranToC(buf []byte, dtype string, shape []any) []byte {
	item := 0
	fmt.Sscanf(dtype[2:], "%d", &item)
	dims := make([]int, len(shape))
	n := 1
	for i, d := range shape {
		dims[i] = int(d.(int64))
		n *= dims[i]
	}
	out := make([]byte, len(buf))
	for ci := range n {
		rem := ci
		idx := make([]int, len(dims))
		for j := len(dims) - 1; j >= 0; j-- {
			idx[j], rem = rem%dims[j], rem/dims[j]
		}
		fi, stride := 0, 1
		for j, d := range dims {
			fi += idx[j] * stride
			stride *= d
		}
		copy(out[ci*item:(ci+1)*item], buf[fi*item:(fi+1)*item])
	}
	return out
}

// normalizeSets sorts the items of sets by their JSON text, on both sides:
// a set has no order.
func normalizeSets(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeSets(e)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = normalizeSets(e)
		}
		if t := x["$type"]; t == "set" || t == "frozenset" {
			items, _ := out["items"].([]any)
			items = slices.Clone(items)
			slices.SortFunc(items, func(a, b any) int {
				ja, _ := json.Marshal(a)
				jb, _ := json.Marshal(b)
				return bytes.Compare(ja, jb)
			})
			out["items"] = items
		}
		return out
	}
	return v
}
