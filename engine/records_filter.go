package engine

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/internal/driver"
)

// Value filters of the store (search) and of threads (metadata search).
// A filter is compiled once per call into conditions (a path, an operator,
// a normalised operand) and evaluated against the stored msgpack bytes of
// each candidate. Keys are checked against an allow-list and never reach SQL
// text, so a filter cannot change a query's shape (LangGraph's
// CVE-2025-67644 and CVE-2025-8709 were filter keys pasted into SQL).

// Filter operators (LangGraph BaseStore). A plain value means $eq.
const (
	opEq    = "$eq"
	opNe    = "$ne"
	opGt    = "$gt"
	opGte   = "$gte"
	opLt    = "$lt"
	opLte   = "$lte"
	opIsMap = "is-map" // internal (no "$", so no caller can name it): {"a": {}}
)

const (
	maxFilterConds   = 64
	maxFilterPath    = 256 // bytes of a dotted key
	maxFilterSegment = 64  // bytes of one key segment
)

// recCond is one compiled condition: the value at path compared with val.
type recCond struct {
	path []string
	op   string
	val  any // normalised by codec: nil, bool, int64, uint64, float64, string, []any, map[string]any
}

// recFilter is a compiled filter. strict selects type-exact equality (thread
// metadata); otherwise numbers compare by value, as in Python (store).
type recFilter struct {
	conds  []recCond
	strict bool
	// encoded is the filter as the caller gave it (codec bytes): the bound
	// parameter the SQL match functions compile once per statement.
	encoded []byte
}

// validFilterSegment reports whether s may name a field in a filter path:
// ASCII letters, digits, "_" and "-".
func validFilterSegment(s string) bool {
	if s == "" || len(s) > maxFilterSegment {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// splitFilterKey validates a dotted key and returns its segments.
func splitFilterKey(key string) ([]string, error) {
	if len(key) > maxFilterPath {
		return nil, fmt.Errorf("%w: filter key %s is longer than %d bytes", ErrInvalidArgument, quoteCut(key), maxFilterPath)
	}
	segs := strings.Split(key, ".")
	for _, s := range segs {
		if !validFilterSegment(s) {
			return nil, fmt.Errorf("%w: filter key %s is not allowed: use letters, digits, _ and -, with dots between nested fields", ErrInvalidArgument, quoteCut(key))
		}
	}
	return segs, nil
}

// quoteCut quotes s for an error message, cut to a readable length.
func quoteCut[S ~string](v S) string {
	s := string(v)
	const n = 80
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return fmt.Sprintf("%q...", s[:cut])
	}
	return fmt.Sprintf("%q", s)
}

// normalise turns a caller's value into the shapes stored values decode to,
// so comparisons see the same types on both sides.
func normalise(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string, int64, float64:
		return v, nil
	case int:
		return int64(x), nil
	}
	b, err := codec.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := codec.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// compileStoreFilter compiles a LangGraph store filter: keys are dotted
// paths; a value is an operator map ({"$gt": 3}), a nested filter map
// (matched field by field, as LangGraph's InMemoryStore does) or a plain
// value compared for equality.
func compileStoreFilter(f map[string]any) (*recFilter, error) {
	if len(f) == 0 {
		return nil, nil
	}
	norm, encoded, err := normaliseFilter(f)
	if err != nil {
		return nil, err
	}
	out := &recFilter{encoded: encoded}
	if err := out.add(nil, norm, 0); err != nil {
		return nil, err
	}
	return out, nil
}

// normaliseFilter round-trips a filter through the codec, so that Go and
// the SQL functions (which receive the encoded bytes) compile the very same
// map: a map[string]int operand, say, is an operator map on both sides.
func normaliseFilter(f map[string]any) (map[string]any, []byte, error) {
	b, err := codec.Marshal(f)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: filter: %v", ErrInvalidArgument, err)
	}
	var norm map[string]any
	if err := codec.Unmarshal(b, &norm); err != nil {
		return nil, nil, fmt.Errorf("%w: filter: %v", ErrInvalidArgument, err)
	}
	return norm, b, nil
}

// matchFunc makes the SQL function f(value, filter): 1 when the stored value
// meets the filter, given as the caller's filter map in codec bytes. The
// filter is compiled once per statement (SQLite keeps it as auxiliary data
// of the constant argument); a filter that does not compile fails the query,
// a value that does not decode matches nothing.
func matchFunc(compile func(map[string]any) (*recFilter, error)) func(*any, []driver.Value) (any, error) {
	return func(aux *any, arg []driver.Value) (any, error) {
		f, _ := (*aux).(*recFilter)
		if f == nil {
			var m map[string]any
			if err := codec.Unmarshal(arg[1].Blob(), &m); err != nil {
				return nil, fmt.Errorf("agentstate: bad filter: %w", err)
			}
			var err error
			if f, err = compile(m); err != nil {
				return nil, err
			}
			if f == nil {
				f = &recFilter{}
			}
			*aux = f
		}
		return f.match(arg[0].Blob()), nil
	}
}

func (rf *recFilter) add(prefix []string, f map[string]any, depth int) error {
	if depth > 8 {
		return fmt.Errorf("%w: filter nests deeper than 8 levels", ErrInvalidArgument)
	}
	for _, key := range slices.Sorted(maps.Keys(f)) {
		segs, err := splitFilterKey(key)
		if err != nil {
			return err
		}
		path := append(slices.Clip(prefix), segs...)
		if len(path) > 32 {
			return fmt.Errorf("%w: filter path %s is deeper than 32 fields", ErrInvalidArgument, quoteCut(strings.Join(path, ".")))
		}
		val := f[key]
		sub, isMap := val.(map[string]any)
		if !isMap {
			if err := rf.cond(path, opEq, val); err != nil {
				return err
			}
			continue
		}
		ops, fields := 0, 0
		for k := range sub {
			if strings.HasPrefix(k, "$") {
				ops++
			} else {
				fields++
			}
		}
		switch {
		case ops > 0 && fields > 0:
			return fmt.Errorf("%w: filter %s mixes operators and fields", ErrInvalidArgument, quoteCut(strings.Join(path, ".")))
		case ops > 0:
			for _, op := range slices.Sorted(maps.Keys(sub)) {
				if err := rf.cond(path, op, sub[op]); err != nil {
					return err
				}
			}
		case fields == 0:
			if err := rf.cond(path, opIsMap, nil); err != nil {
				return err
			}
		default:
			if err := rf.add(path, sub, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

func (rf *recFilter) cond(path []string, op string, val any) error {
	if len(rf.conds) >= maxFilterConds {
		return fmt.Errorf("%w: filter has more than %d conditions", ErrInvalidArgument, maxFilterConds)
	}
	name := strings.Join(path, ".")
	switch op {
	case opEq, opNe, opIsMap:
	case opGt, opGte, opLt, opLte:
		switch val.(type) {
		case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64, string:
		default:
			return fmt.Errorf("%w: filter %s: %s needs a number or a string, not %T", ErrInvalidArgument, quoteCut(name), op, val)
		}
	default:
		return fmt.Errorf("%w: filter %s: unknown operator %s (use $eq $ne $gt $gte $lt $lte)", ErrInvalidArgument, quoteCut(name), quoteCut(op))
	}
	n, err := normalise(val)
	if err != nil {
		return fmt.Errorf("%w: filter %s: value %T cannot be stored: %v", ErrInvalidArgument, quoteCut(name), val, err)
	}
	if f, ok := n.(float64); ok && math.IsNaN(f) {
		return fmt.Errorf("%w: filter %s: NaN never compares", ErrInvalidArgument, quoteCut(name))
	}
	rf.conds = append(rf.conds, recCond{path: path, op: op, val: n})
	return nil
}

// compileMetadataFilter compiles a thread metadata filter: dotted keys,
// plain values, type-exact equality.
func compileMetadataFilter(f map[string]any) (*recFilter, error) {
	if len(f) == 0 {
		return nil, nil
	}
	norm, encoded, err := normaliseFilter(f)
	if err != nil {
		return nil, err
	}
	out := &recFilter{strict: true, encoded: encoded}
	for _, key := range slices.Sorted(maps.Keys(norm)) {
		path, err := splitFilterKey(key)
		if err != nil {
			return nil, err
		}
		if err := out.cond(path, opEq, norm[key]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// match reports whether the stored value (codec envelope + msgpack map)
// meets every condition. Bytes that do not decode match nothing.
func (rf *recFilter) match(stored []byte) bool {
	if rf == nil || len(rf.conds) == 0 {
		return true
	}
	body, err := mpBody(stored)
	if err != nil {
		// Another envelope (a compressed value, say): re-encode it plainly.
		var v any
		if codec.Unmarshal(stored, &v) != nil {
			return false
		}
		plain, err := codec.Marshal(v)
		if err != nil {
			return false
		}
		body = plain[1:]
	}
	for i := range rf.conds {
		c := &rf.conds[i]
		raw, found, err := mpLookup(body, c.path)
		if err != nil {
			return false
		}
		if !found {
			// A missing field equals nothing and differs from everything
			// but null (Python: None != x).
			if c.op == opNe && c.val != nil {
				continue
			}
			return false
		}
		v, err := mpRead(raw)
		if err != nil || !rf.test(c, v) {
			return false
		}
	}
	return true
}

func (rf *recFilter) test(c *recCond, v mpScalar) bool {
	switch c.op {
	case opIsMap:
		return v.kind == mpMap
	case opEq:
		return rf.equal(v, c.val)
	case opNe:
		return !rf.equal(v, c.val)
	}
	cmp, ok := order(v, c.val)
	if !ok {
		return false
	}
	switch c.op {
	case opGt:
		return cmp > 0
	case opGte:
		return cmp >= 0
	case opLt:
		return cmp < 0
	default: // opLte
		return cmp <= 0
	}
}

// equal compares a stored value with a normalised operand.
func (rf *recFilter) equal(v mpScalar, want any) bool {
	switch w := want.(type) {
	case nil:
		return v.kind == mpNil
	case bool:
		return v.kind == mpBool && v.b == w
	case string:
		return v.kind == mpStr && string(v.s) == w
	case int64, uint64, float64, float32:
		if rf.strict {
			_, wantFloat := want.(float64)
			if _, f32 := want.(float32); f32 {
				wantFloat = true
			}
			if (v.kind == mpFloat) != wantFloat {
				return false
			}
		}
		c, ok := order(v, want)
		return ok && c == 0
	case []any, map[string]any:
		if v.kind != mpMap && v.kind != mpArray {
			return false
		}
		got, err := mpDecode(v.raw)
		return err == nil && deepEqualValues(got, want, rf.strict)
	}
	return false
}

// order compares a stored number or string with an operand of the same
// family: -1, 0 or 1, and ok=false when they cannot be ordered.
func order(v mpScalar, want any) (int, bool) {
	switch w := want.(type) {
	case string:
		if v.kind != mpStr {
			return 0, false
		}
		return strings.Compare(string(v.s), w), true
	case int64:
		switch v.kind {
		case mpInt:
			return cmp.Compare(v.i, w), true
		case mpUint:
			return 1, true
		case mpFloat:
			return cmpFloat(v.f, float64(w))
		}
	case uint64:
		if w <= math.MaxInt64 {
			return order(v, int64(w))
		}
		switch v.kind {
		case mpInt:
			return -1, true
		case mpUint:
			return cmp.Compare(v.u, w), true
		case mpFloat:
			return cmpFloat(v.f, float64(w))
		}
	case float64:
		return orderFloat(v, w)
	case float32:
		return orderFloat(v, float64(w))
	}
	return 0, false
}

func orderFloat(v mpScalar, w float64) (int, bool) {
	switch v.kind {
	case mpInt:
		return cmpFloat(float64(v.i), w)
	case mpUint:
		return cmpFloat(float64(v.u), w)
	case mpFloat:
		return cmpFloat(v.f, w)
	}
	return 0, false
}

func cmpFloat(a, b float64) (int, bool) {
	switch {
	case a < b:
		return -1, true
	case a > b:
		return 1, true
	case a == b:
		return 0, true
	}
	return 0, false // NaN
}

// deepEqualValues compares decoded values; numbers by value unless strict,
// where an integer never equals a float.
func deepEqualValues(a, b any, strict bool) bool {
	switch av := a.(type) {
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !deepEqualValues(av[i], bv[i], strict) {
				return false
			}
		}
		return true
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for k, x := range av {
			y, ok := bv[k]
			if !ok || !deepEqualValues(x, y, strict) {
				return false
			}
		}
		return true
	}
	an, aNum := numberKind(a)
	bn, bNum := numberKind(b)
	if aNum || bNum {
		if !aNum || !bNum || (strict && an.isFloat != bn.isFloat) {
			return false
		}
		return an.eq(bn)
	}
	return reflect.DeepEqual(a, b)
}

type numVal struct {
	isFloat bool
	neg     bool
	u       uint64 // magnitude of an integer
	f       float64
}

func numberKind(v any) (numVal, bool) {
	switch n := v.(type) {
	case int64:
		if n < 0 {
			return numVal{neg: true, u: uint64(-n), f: float64(n)}, true
		}
		return numVal{u: uint64(n), f: float64(n)}, true
	case uint64:
		return numVal{u: n, f: float64(n)}, true
	case float64:
		return numVal{isFloat: true, f: n}, true
	case float32:
		return numVal{isFloat: true, f: float64(n)}, true
	}
	return numVal{}, false
}

func (a numVal) eq(b numVal) bool {
	if !a.isFloat && !b.isFloat {
		return a.neg == b.neg && a.u == b.u
	}
	return a.f == b.f
}
