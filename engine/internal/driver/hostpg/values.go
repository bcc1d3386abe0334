//go:build js || (wasip1 && hostsqlite)

package hostpg

// Binding the engine's Go values by the parameter types the server
// reported, and reading result rows, as the native driver does
// (engine/internal/driver/pg/values.go), in PostgreSQL's wire formats.

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/agentstate/agentstate/engine/internal/driver"
)

// Type OIDs the driver reads and writes in binary.
const (
	oidBool    = 16
	oidBytea   = 17
	oidName    = 19
	oidInt8    = 20
	oidInt2    = 21
	oidInt4    = 23
	oidText    = 25
	oidOID     = 26
	oidJSON    = 114
	oidFloat4  = 700
	oidFloat8  = 701
	oidUnknown = 705
	oidBPChar  = 1042
	oidVarchar = 1043
	oidNumeric = 1700
	oidJSONB   = 3802
)

func binaryResult(oid uint32) bool {
	switch oid {
	case oidBool, oidBytea, oidName, oidInt8, oidInt2, oidInt4, oidText, oidOID, oidFloat4, oidFloat8, oidBPChar, oidVarchar, oidJSONB:
		return true
	}
	return false
}

func encode(oid uint32, a any) ([]byte, int16, error) {
	switch oid {
	case oidInt8, oidInt4, oidInt2, oidOID:
		n, err := asInt(a)
		if err != nil {
			return nil, 0, err
		}
		switch oid {
		case oidInt8:
			return binary.BigEndian.AppendUint64(nil, uint64(n)), 1, nil
		case oidInt4, oidOID:
			if n < math.MinInt32 || n > math.MaxInt32 {
				return nil, 0, &driver.Error{Kind: driver.ErrValue, Err: fmt.Errorf("%d does not fit a 32-bit column", n)}
			}
			return binary.BigEndian.AppendUint32(nil, uint32(n)), 1, nil
		default:
			if n < math.MinInt16 || n > math.MaxInt16 {
				return nil, 0, &driver.Error{Kind: driver.ErrValue, Err: fmt.Errorf("%d does not fit a 16-bit column", n)}
			}
			return binary.BigEndian.AppendUint16(nil, uint16(n)), 1, nil
		}
	case oidBool:
		switch v := a.(type) {
		case bool:
			return []byte{b2b(v)}, 1, nil
		case int:
			return []byte{b2b(v != 0)}, 1, nil
		case int64:
			return []byte{b2b(v != 0)}, 1, nil
		}
	case oidFloat8, oidFloat4:
		var f float64
		switch v := a.(type) {
		case float64:
			f = v
		case int:
			f = float64(v)
		case int64:
			f = float64(v)
		default:
			return nil, 0, cannotBind(a, oid)
		}
		if oid == oidFloat4 {
			return binary.BigEndian.AppendUint32(nil, math.Float32bits(float32(f))), 1, nil
		}
		return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)), 1, nil
	case oidBytea:
		switch v := a.(type) {
		case []byte:
			return v, 1, nil
		case string:
			return []byte(v), 1, nil
		}
	case oidJSONB:
		b, err := textBytes(a)
		if err != nil {
			return nil, 0, err
		}
		return append([]byte{1}, b...), 1, nil
	case oidNumeric:
		b, err := textBytes(a)
		return b, 0, err
	default:
		// text, varchar, name, unknown, json and anything else in text form.
		b, err := textBytes(a)
		if err != nil {
			return nil, 0, err
		}
		if oid == oidText || oid == oidVarchar || oid == oidBPChar || oid == oidName || oid == oidUnknown {
			return b, 1, nil
		}
		return b, 0, nil
	}
	return nil, 0, cannotBind(a, oid)
}

func b2b(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func asInt(a any) (int64, error) {
	switch v := a.(type) {
	case int64:
		return v, nil
	case int:
		return int64(v), nil
	case bool:
		if v {
			return 1, nil
		}
		return 0, nil
	case float64:
		if v == math.Trunc(v) && v >= math.MinInt64 && v < math.MaxInt64 {
			return int64(v), nil
		}
	case string:
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n, nil
		}
	}
	return 0, cannotBind(a, oidInt8)
}

// textBytes renders a value as text the server accepts: valid UTF-8
// without NUL bytes (which no PostgreSQL text can hold).
func textBytes(a any) ([]byte, error) {
	var b []byte
	switch v := a.(type) {
	case string:
		b = []byte(v)
	case []byte:
		b = v
	case int64:
		return strconv.AppendInt(nil, v, 10), nil
	case int:
		return strconv.AppendInt(nil, int64(v), 10), nil
	case float64:
		return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
	case bool:
		if v {
			return []byte("true"), nil
		}
		return []byte("false"), nil
	default:
		return nil, fmt.Errorf("agentstate: internal: cannot bind %T", a)
	}
	if err := checkText(b); err != nil {
		return nil, err
	}
	return b, nil
}

// checkText refuses what PostgreSQL text cannot hold, with ErrValue.
func checkText(b []byte) error {
	if bytes.IndexByte(b, 0) >= 0 {
		return &driver.Error{Kind: driver.ErrValue, Err: errors.New("PostgreSQL text cannot hold a NUL byte")}
	}
	if !utf8.Valid(b) {
		return &driver.Error{Kind: driver.ErrValue, Err: errors.New("PostgreSQL text must be valid UTF-8")}
	}
	return nil
}

func cannotBind(a any, oid uint32) error {
	return fmt.Errorf("agentstate: internal: cannot bind %T to a parameter of type %d", a, oid)
}

// encodeArgs encodes the engine's Go values for the parameter types the
// server chose: a nil or nil *string is NULL.
func encodeArgs(oids []uint32, args []any) ([]arg, error) {
	if len(args) != len(oids) {
		return nil, fmt.Errorf("agentstate: internal: %d arguments for %d parameters", len(args), len(oids))
	}
	out := make([]arg, len(args))
	for i, a := range args {
		if p, ok := a.(*string); ok {
			if p == nil {
				a = nil
			} else {
				a = *p
			}
		}
		if a == nil {
			out[i].null = true
			continue
		}
		v, f, err := encode(oids[i], a)
		if err != nil {
			return nil, err
		}
		// A nil slice is NULL, as pgconn sends it (a nil []byte argument).
		out[i] = arg{v: v, binary: f == 1, null: v == nil}
	}
	return out, nil
}

// row reads a result row by column type, converting the way SQLite would
// (a boolean reads as 0 or 1, a number as its text). A result comes all in
// binary or all in text (a statement with a column of a type read only as
// text, numeric or a timestamp, asks for text).
type row struct {
	vals   [][]byte
	fields []uint32
	format byte
}

func (r *row) Columns() int    { return len(r.fields) }
func (r *row) Null(i int) bool { return r.vals[i] == nil }

func (r *row) Int64(i int) int64 {
	v := r.vals[i]
	if v == nil {
		return 0
	}
	if r.format == 1 {
		switch r.fields[i] {
		case oidInt8:
			return int64(binary.BigEndian.Uint64(v))
		case oidInt4:
			return int64(int32(binary.BigEndian.Uint32(v)))
		case oidOID:
			return int64(binary.BigEndian.Uint32(v))
		case oidInt2:
			return int64(int16(binary.BigEndian.Uint16(v)))
		case oidBool:
			return int64(v[0])
		case oidFloat8, oidFloat4:
			return int64(r.Float(i))
		}
	}
	s := string(r.text(i))
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return int64(f)
	}
	return 0
}

func (r *row) Float(i int) float64 {
	v := r.vals[i]
	if v == nil {
		return 0
	}
	if r.format == 1 {
		switch r.fields[i] {
		case oidFloat8:
			return math.Float64frombits(binary.BigEndian.Uint64(v))
		case oidFloat4:
			return float64(math.Float32frombits(binary.BigEndian.Uint32(v)))
		case oidInt8, oidInt4, oidInt2, oidOID, oidBool:
			return float64(r.Int64(i))
		}
	}
	f, _ := strconv.ParseFloat(string(r.text(i)), 64)
	return f
}

// text returns the column as text bytes (aliasing the row where it can).
func (r *row) text(i int) []byte {
	v := r.vals[i]
	if r.format != 1 {
		switch r.fields[i] {
		case oidBool:
			if len(v) > 0 && v[0] == 't' {
				return []byte("1")
			}
			return []byte("0")
		case oidBytea:
			if bytes.HasPrefix(v, []byte(`\x`)) {
				b, err := hex.AppendDecode(nil, v[2:])
				if err == nil {
					return b
				}
			}
		}
		return v
	}
	switch r.fields[i] {
	case oidInt8, oidInt4, oidInt2, oidOID:
		return strconv.AppendInt(nil, r.Int64(i), 10)
	case oidBool:
		return strconv.AppendInt(nil, int64(v[0]), 10)
	case oidFloat8, oidFloat4:
		return strconv.AppendFloat(nil, r.Float(i), 'g', -1, 64)
	case oidJSONB:
		if len(v) > 0 {
			return v[1:]
		}
	}
	return v
}

func (r *row) Text(i int) string {
	if r.vals[i] == nil {
		return ""
	}
	return string(r.text(i))
}

func (r *row) Blob(i int) []byte {
	if r.vals[i] == nil {
		return nil
	}
	b := r.text(i)
	if b == nil {
		return []byte{}
	}
	return b
}
