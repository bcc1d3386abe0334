//go:build js || (wasip1 && hostsqlite)

package bridge

import (
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine"
)

// The results of open and of a LangGraph turn's calls are written here,
// without reflection: json.Marshal builds its encoders per type through
// reflect on first use (typeFields, its sort of the fields, the folded
// names), and those functions were among the largest compile jobs of a
// fresh process. appendJSON writes exactly what json.Marshal writes for the
// same value (map keys sorted, the same escapes: <, >, & and U+2028/U+2029
// as \u escapes, invalid UTF-8 as U+FFFD; floats formatted as
// encoding/json does) for the types it knows; for any other type it
// reports false and Encode falls back to json.Marshal for the whole value.

func appendJSON(b []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		return appendJSONString(b, x), true
	case bool:
		return strconv.AppendBool(b, x), true
	case int:
		return strconv.AppendInt(b, int64(x), 10), true
	case int64:
		return strconv.AppendInt(b, x, 10), true
	case int32:
		return strconv.AppendInt(b, int64(x), 10), true
	case uint64:
		return strconv.AppendUint(b, x, 10), true
	case float64:
		return appendJSONFloat(b, x)
	case channels.Mode:
		return appendJSONString(b, string(x)), true
	case struct{}:
		return append(b, "{}"...), true
	case map[string]any:
		if x == nil {
			return append(b, "null"...), true
		}
		return appendJSONMap(b, x, appendJSON)
	case map[string]string:
		if x == nil {
			return append(b, "null"...), true
		}
		return appendJSONMap(b, x, func(b []byte, s string) ([]byte, bool) { return appendJSONString(b, s), true })
	case map[string]int:
		if x == nil {
			return append(b, "null"...), true
		}
		return appendJSONMap(b, x, func(b []byte, n int) ([]byte, bool) { return strconv.AppendInt(b, int64(n), 10), true })
	case []any:
		if x == nil {
			return append(b, "null"...), true
		}
		return appendJSONSlice(b, x, appendJSON)
	case []string:
		return appendJSONStrings(b, x), true
	case engine.Config:
		return appendJSONConfig(b, x), true
	case *engine.Config:
		if x == nil {
			return append(b, "null"...), true
		}
		return appendJSONConfig(b, *x), true
	case wTuple:
		return appendJSONTuple(b, x)
	case []wTuple:
		if x == nil {
			return append(b, "null"...), true
		}
		return appendJSONSlice(b, x, appendJSONTuple)
	case wBlob:
		return appendJSONBlob(b, x), true
	case []wWrite:
		return appendJSONWrites(b, x), true
	case map[string]wHistory:
		if x == nil {
			return append(b, "null"...), true
		}
		return appendJSONMap(b, x, func(b []byte, h wHistory) ([]byte, bool) {
			b = append(b, '{')
			if h.Seed != nil {
				b = append(b, `"seed":`...)
				b = appendJSONBlob(b, *h.Seed)
				b = append(b, ',')
			}
			b = append(b, `"writes":`...)
			return append(appendJSONWrites(b, h.Writes), '}'), true
		})
	}
	return b, false
}

func appendJSONConfig(b []byte, c engine.Config) []byte {
	b = append(b, `{"thread_id":`...)
	b = appendJSONString(b, c.ThreadID)
	b = append(b, `,"checkpoint_ns":`...)
	b = appendJSONString(b, c.CheckpointNS)
	if c.CheckpointID != "" {
		b = append(b, `,"checkpoint_id":`...)
		b = appendJSONString(b, c.CheckpointID)
	}
	return append(b, '}')
}

func appendJSONBlob(b []byte, w wBlob) []byte {
	b = append(b, `{"t":`...)
	b = appendJSONString(b, w.T)
	b = append(b, `,"b":`...)
	b = strconv.AppendInt(b, int64(w.B), 10)
	return append(b, '}')
}

func appendJSONWrites(b []byte, ws []wWrite) []byte {
	if ws == nil {
		return append(b, "null"...)
	}
	b, _ = appendJSONSlice(b, ws, func(b []byte, w wWrite) ([]byte, bool) {
		b = append(b, `{"taskId":`...)
		b = appendJSONString(b, w.TaskID)
		b = append(b, `,"channel":`...)
		b = appendJSONString(b, w.Channel)
		b = append(b, `,"value":`...)
		b = appendJSONBlob(b, w.Value)
		b = append(b, `,"taskPath":`...)
		b = appendJSONString(b, w.TaskPath)
		b = append(b, `,"idx":`...)
		b = strconv.AppendInt(b, int64(w.Idx), 10)
		return append(b, '}'), true
	})
	return b
}

func appendJSONStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b, _ = appendJSONSlice(b, ss, func(b []byte, s string) ([]byte, bool) { return appendJSONString(b, s), true })
	return b
}

func appendJSONStrMap(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	b, _ = appendJSONMap(b, m, func(b []byte, s string) ([]byte, bool) { return appendJSONString(b, s), true })
	return b
}

func appendJSONTuple(b []byte, t wTuple) ([]byte, bool) {
	b = append(b, `{"config":`...)
	b = appendJSONConfig(b, t.Config)
	cp := t.Checkpoint
	b = append(b, `,"checkpoint":{"v":`...)
	b = strconv.AppendInt(b, int64(cp.V), 10)
	b = append(b, `,"id":`...)
	b = appendJSONString(b, cp.ID)
	b = append(b, `,"ts":`...)
	b = appendJSONString(b, cp.TS)
	b = append(b, `,"values":`...)
	if cp.Values == nil {
		b = append(b, "null"...)
	} else {
		b, _ = appendJSONMap(b, cp.Values, func(b []byte, w wBlob) ([]byte, bool) { return appendJSONBlob(b, w), true })
	}
	b = append(b, `,"versions":`...)
	b = appendJSONStrMap(b, cp.Versions)
	b = append(b, `,"seen":`...)
	if cp.Seen == nil {
		b = append(b, "null"...)
	} else {
		b, _ = appendJSONMap(b, cp.Seen, func(b []byte, m map[string]string) ([]byte, bool) { return appendJSONStrMap(b, m), true })
	}
	if cp.Updated != nil {
		b = append(b, `,"updated":`...)
		b = appendJSONStrings(b, *cp.Updated)
	}
	b = append(b, `},"metadata":`...)
	var ok bool
	if t.Metadata == nil {
		b = append(b, "null"...)
	} else if b, ok = appendJSONMap(b, t.Metadata, appendJSON); !ok {
		return b, false
	}
	if t.Parent != nil {
		b = append(b, `,"parent":`...)
		b = appendJSONConfig(b, *t.Parent)
	}
	b = append(b, `,"writes":`...)
	b = appendJSONWrites(b, t.Writes)
	return append(b, '}'), true
}

// appendJSONMap writes a non-nil map with its keys sorted, as json.Marshal does.
func appendJSONMap[V any](b []byte, m map[string]V, elem func([]byte, V) ([]byte, bool)) ([]byte, bool) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		var ok bool
		if b, ok = elem(b, m[k]); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendJSONSlice writes a non-nil slice.
func appendJSONSlice[V any](b []byte, s []V, elem func([]byte, V) ([]byte, bool)) ([]byte, bool) {
	b = append(b, '[')
	for i, e := range s {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = elem(b, e); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

// appendJSONFloat formats f as encoding/json does (float64); NaN and the
// infinities are json.Marshal's to refuse.
func appendJSONFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as json.Marshal does (with HTML escaping).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
