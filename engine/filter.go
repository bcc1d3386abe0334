package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"

	"github.com/agentstate/agentstate/codec"
	"github.com/ncruces/go-sqlite3"
)

// filterKeyRE is the allow-list for metadata filter keys: identifiers
// (letters, digits, "_" and "-") joined by dots for nested fields. Keys never
// reach SQL text; the pattern keeps them meaningful and refuses payloads early.
var filterKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

const maxFilterKeyLen = 256

// filterTerm is one condition of an encoded filter: a path into the
// metadata map and the value found there must equal.
type filterTerm struct {
	Path  []string `msgpack:"p"`
	Value any      `msgpack:"v"`
}

// ValidateFilterKey reports whether key may be used in a metadata filter.
func ValidateFilterKey(key string) error {
	if len(key) > maxFilterKeyLen || !filterKeyRE.MatchString(key) {
		return fmt.Errorf("%w: filter key %q is not allowed (letters, digits, _ and -, dots for nested fields, at most %d bytes)", ErrInvalidArgument, truncate(key, 80), maxFilterKeyLen)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// encodeFilter validates every key and encodes the filter as one bound
// parameter for agentstate_meta_match.
func encodeFilter(f map[string]any) ([]byte, error) {
	terms := make([]filterTerm, 0, len(f))
	for k, v := range f {
		if err := ValidateFilterKey(k); err != nil {
			return nil, err
		}
		terms = append(terms, filterTerm{Path: strings.Split(k, "."), Value: v})
	}
	b, err := codec.Marshal(terms)
	if err != nil {
		return nil, fmt.Errorf("%w: filter value: %w", ErrInvalidArgument, err)
	}
	return b, nil
}

func init() {
	sqlFunctions["agentstate_meta_match"] = sqlFunction{nArg: 2, fn: metaMatchFunc}
	sqlFunctions["agentstate_version"] = sqlFunction{nArg: 2, fn: versionFunc}
}

// metaMatchFunc(metadata, filter) is 1 when every term of the encoded filter
// equals the metadata value at its path, 0 otherwise (also for metadata
// that does not decode: it matches nothing rather than failing the query).
func metaMatchFunc(ctx sqlite3.Context, arg ...sqlite3.Value) {
	var terms []filterTerm
	if err := codec.Unmarshal(arg[1].RawBlob(), &terms); err != nil {
		ctx.ResultError(fmt.Errorf("agentstate: bad filter: %w", err))
		return
	}
	var md map[string]any
	if err := codec.Unmarshal(arg[0].RawBlob(), &md); err != nil {
		ctx.ResultBool(false)
		return
	}
	ctx.ResultBool(matchTerms(md, terms))
}

func matchTerms(md map[string]any, terms []filterTerm) bool {
	for _, t := range terms {
		v, ok := lookupPath(md, t.Path)
		if !ok || !typedEqual(v, t.Value) {
			return false
		}
	}
	return true
}

func lookupPath(m map[string]any, path []string) (any, bool) {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// typedEqual compares decoded values with their type: numbers by value
// (JSON has one number type), and never a number with a boolean, a string
// with a number, or null with anything but null.
func typedEqual(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	switch av := a.(type) {
	case nil:
		return b == nil
	case bool, string:
		return a == b
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !typedEqual(av[i], bv[i]) {
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
			if !ok || !typedEqual(x, y) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, !math.IsNaN(n)
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// versionFunc(checkpoint, channel) is the version of channel recorded in a
// stored checkpoint, or NULL. The history walk uses it to decide whether an
// ancestor holds a value for the channel.
func versionFunc(ctx sqlite3.Context, arg ...sqlite3.Value) {
	var sc struct {
		ChannelVersions map[string]string `msgpack:"cv"`
	}
	if err := codec.Unmarshal(arg[0].RawBlob(), &sc); err != nil {
		ctx.ResultNull()
		return
	}
	v, ok := sc.ChannelVersions[arg[1].Text()]
	if !ok {
		ctx.ResultNull()
		return
	}
	ctx.ResultText(v)
}

// jsonArg encodes a list of keys as one JSON text parameter for json_each.
func jsonArg(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
