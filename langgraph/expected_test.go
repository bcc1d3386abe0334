package langgraph

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
	"github.com/google/go-cmp/cmp"
)

// The oracle of the Python fixtures: every checkpoint of an imported file
// compared with what LangGraph Python itself read back from the saver
// (expected-py-*.json, written by the fixture generator). Values the import
// kept as the source's bytes are decoded here into that file's JSON mapping
// (FORMATS.md, "Expected-state JSON"), a port of check_formats.py's.

// expectedFile is expected-py-<saver>.json.
type expectedFile struct {
	Checkpoints int                                        `json:"checkpoints"`
	Threads     map[string]map[string][]expectedCheckpoint `json:"threads"`
}

type expectedCheckpoint struct {
	CheckpointID string         `json:"checkpoint_id"`
	Parent       *string        `json:"parent_checkpoint_id"`
	Metadata     map[string]any `json:"metadata"`
	Pending      [][3]any       `json:"pending_writes"`
	State        struct {
		Values    map[string]any `json:"values"`
		NotInFile []string       `json:"values_not_in_file"`
	} `json:"state"`
}

func loadExpected(t *testing.T, path string) expectedFile {
	t.Helper()
	out := readJSONNumbers[expectedFile](t, path)
	for _, nss := range out.Threads {
		for _, cps := range nss {
			for i := range cps {
				cps[i].Metadata = jsonMap(t, cps[i].Metadata)
				cps[i].State.Values = jsonMap(t, cps[i].State.Values)
			}
		}
	}
	return out
}

func isInternal(ch string) bool {
	return strings.HasPrefix(ch, "__") || strings.HasPrefix(ch, "branch:to:")
}

// checkExpected compares every checkpoint of db with the expected file:
// parent, metadata, pending writes (task and channel, in order) and the state
// values LangGraph showed.
func checkExpected(t *testing.T, db *engine.DB, exp expectedFile) {
	t.Helper()
	ctx := context.Background()
	delta := db.Options().Mode == engine.ModeDelta
	n, failures := 0, 0
	fail := func(format string, args ...any) {
		failures++
		if failures <= 15 {
			t.Errorf(format, args...)
		}
	}
	for thread, nss := range exp.Threads {
		for ns, cps := range nss {
			for _, e := range cps {
				n++
				where := fmt.Sprintf("%s/%s/%s", thread, ns, e.CheckpointID)
				tup, err := db.GetTuple(ctx, engine.Config{ThreadID: thread, CheckpointNS: ns, CheckpointID: e.CheckpointID})
				if err != nil {
					fail("%s: %v", where, err)
					continue
				}
				compareTuple(fail, where, tup, e.Parent, e.Metadata, e.Pending, delta)
				view, err := db.ReadState(ctx, engine.Config{ThreadID: thread, CheckpointNS: ns, CheckpointID: e.CheckpointID})
				if err != nil {
					fail("%s: %v", where, err)
					continue
				}
				wantV := map[string]any{}
				for k, v := range e.State.Values {
					if !slices.Contains(e.State.NotInFile, k) {
						wantV[k] = v
					}
				}
				gotV := map[string]any{}
				for k, v := range view.Values {
					if !isInternal(k) {
						gotV[k] = v
					}
				}
				for _, k := range slices.Sorted(func(yield func(string) bool) {
					for k := range wantV {
						if !yield(k) {
							return
						}
					}
					for k := range gotV {
						if _, dup := wantV[k]; !dup && !yield(k) {
							return
						}
					}
				}) {
					w, inWant := wantV[k]
					g, inGot := gotV[k]
					if !inWant || !inGot {
						fail("%s: channel %q: expected %v, imported %v", where, k, inWant, inGot)
						continue
					}
					if ms, ok := g.([]codec.Message); ok {
						wm, err := expectedMessages(w)
						if err != nil {
							fail("%s: channel %q: expected value: %v", where, k, err)
							continue
						}
						if d := cmp.Diff(wm, ms); d != "" {
							fail("%s: channel %q (-want +got):\n%s", where, k, d)
						}
						continue
					}
					gj, err := importedJSON(g)
					if err != nil {
						fail("%s: channel %q: %v", where, k, err)
						continue
					}
					if d := cmp.Diff(normalizeSets(w), normalizeSets(gj)); d != "" {
						fail("%s: channel %q (-want +got):\n%s", where, k, d)
					}
				}
			}
		}
	}
	if n != exp.Checkpoints {
		t.Errorf("the expected file lists %d checkpoints, its header says %d", n, exp.Checkpoints)
	}
	if failures > 0 {
		t.Fatalf("%d differences from LangGraph's reading in %d checkpoints", failures, n)
	}
}

func withoutCounters(md map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range md {
		if k != channels.CountersKey {
			out[k] = v
		}
	}
	return out
}

// expectedMessages maps LangGraph's messages ({"$type": "message", "class",
// "fields": model_dump()}) as codec.Message the way the import maps them.
func expectedMessages(v any) ([]codec.Message, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%T is not a list", v)
	}
	out := []codec.Message{}
	for _, x := range list {
		m, _ := x.(map[string]any)
		class, _ := m["class"].(string)
		name := class[strings.LastIndex(class, ".")+1:]
		fields, _ := m["fields"].(map[string]any)
		if m["$type"] != "message" || messageClasses[name] == "" {
			return nil, fmt.Errorf("not a message: %v", x)
		}
		msg, err := messageFields(name, messageClasses[name], fields, map[string]int{})
		if err != nil {
			return nil, err
		}
		out = append(out, msg)
	}
	return out, nil
}

// importedJSON maps a value as ReadState shows it into the expected JSON:
// engine values as themselves (a map with a "$type" key, or a non-finite
// float, has its own form), blobs of Python serde bytes decoded.
func importedJSON(v any) (any, error) {
	switch x := v.(type) {
	case codec.Blob:
		switch x.Type {
		case "bytes", "bytearray":
			return map[string]any{"$type": x.Type, "b64": base64.StdEncoding.EncodeToString(x.Data)}, nil
		case "msgpack":
			d, err := decodePy(x.Data)
			if err != nil {
				return nil, err
			}
			return pyJSON(d)
		}
		return nil, fmt.Errorf("a blob of type %q", x.Type)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = importedJSON(e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			var err error
			if out[k], err = importedJSON(e); err != nil {
				return nil, err
			}
		}
		if _, tagged := x["$type"]; tagged {
			return dictItems(out), nil
		}
		return out, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("a non-finite float stored as an engine value")
		}
	}
	return v, nil
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
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = pyJSON(e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			var err error
			if out[k], err = pyJSON(e); err != nil {
				return nil, err
			}
		}
		if _, tagged := x["$type"]; tagged {
			return dictItems(out), nil
		}
		return out, nil
	case *pyRaw:
		return rawJSON(x)
	}
	return nil, fmt.Errorf("unexpected decoded value %T", v)
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
		case cls == "langgraph.types.Send":
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

// jsonMap is codec.JSONNumbers for a decoded map of the expected states.
func jsonMap(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	v, err := codec.JSONNumbers(m)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := v.(map[string]any)
	return out
}

// compareTuple compares what GetTuple read of an imported checkpoint with
// what the source's own LangGraph read: the parent, the metadata (without
// the engine's own snapshot counters in delta mode) and the pending
// writes' tasks and channels (the import's own task left out).
func compareTuple(fail func(string, ...any), where string, tup engine.Tuple, parent *string, metadata map[string]any, pending [][3]any, delta bool) {
	var got *string
	if tup.ParentConfig != nil {
		got = &tup.ParentConfig.CheckpointID
	}
	if d := cmp.Diff(parent, got); d != "" {
		fail("%s: parent (-want +got):\n%s", where, d)
	}
	md, want := map[string]any(tup.Metadata), metadata
	if delta {
		md, want = withoutCounters(md), withoutCounters(want)
	}
	if d := cmp.Diff(want, md); d != "" {
		fail("%s: metadata (-want +got):\n%s", where, d)
	}
	var gotW, wantW [][2]string
	for _, w := range tup.PendingWrites {
		if w.TaskID != importTaskID {
			gotW = append(gotW, [2]string{w.TaskID, w.Channel})
		}
	}
	for _, w := range pending {
		wantW = append(wantW, [2]string{w[0].(string), w[1].(string)})
	}
	if d := cmp.Diff(wantW, gotW); d != "" {
		fail("%s: pending writes (-want +got):\n%s", where, d)
	}
}

// readJSONNumbers decodes the JSON file at path into a T, keeping its
// numbers as json.Number for jsonMap to turn into what the imported values
// hold (integers int64, others float64: "3.0" stays a float).
func readJSONNumbers[T any](t *testing.T, path string) T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}
