// Package pgwire is what both PostgreSQL drivers share: the native one
// over pgx (engine/internal/driver/pg) and the one whose statements run
// through the host (engine/internal/driver/hostpg, the WebAssembly
// builds). It binds the engine's Go values by the parameter types the
// server reported, reads result columns in PostgreSQL's wire formats the
// way SQLite would give them, splits scripts, and holds the SQL of the
// owners' advisory locks. It imports no pgx and has no build tags.
package pgwire

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

// Type OIDs the drivers read and write in binary.
const (
	OIDBool    = 16
	OIDBytea   = 17
	OIDName    = 19
	OIDInt8    = 20
	OIDInt2    = 21
	OIDInt4    = 23
	OIDText    = 25
	OIDOID     = 26
	OIDJSON    = 114
	OIDFloat4  = 700
	OIDFloat8  = 701
	OIDUnknown = 705
	OIDBPChar  = 1042
	OIDVarchar = 1043
	OIDNumeric = 1700
	OIDJSONB   = 3802
)

// Wire format codes of parameters and result columns.
const (
	TextFormat   int16 = 0
	BinaryFormat int16 = 1
)

// BinaryResult reports whether a result column of type oid is read in
// binary (the others, numeric or a timestamp say, are read as text).
func BinaryResult(oid uint32) bool {
	switch oid {
	case OIDBool, OIDBytea, OIDName, OIDInt8, OIDInt2, OIDInt4, OIDText, OIDOID, OIDFloat4, OIDFloat8, OIDBPChar, OIDVarchar, OIDJSONB:
		return true
	}
	return false
}

// EncodeArgs encodes the engine's Go values for the parameter types the
// server chose: a nil or nil *string is NULL (a nil value, binary format).
func EncodeArgs(oids []uint32, args []any) ([][]byte, []int16, error) {
	if len(args) != len(oids) {
		return nil, nil, fmt.Errorf("agentstate: internal: %d arguments for %d parameters", len(args), len(oids))
	}
	vals := make([][]byte, len(args))
	fmts := make([]int16, len(args))
	for i, a := range args {
		if p, ok := a.(*string); ok {
			if p == nil {
				a = nil
			} else {
				a = *p
			}
		}
		if a == nil {
			fmts[i] = BinaryFormat
			continue
		}
		v, f, err := Encode(oids[i], a)
		if err != nil {
			return nil, nil, err
		}
		vals[i], fmts[i] = v, f
	}
	return vals, fmts, nil
}

// Encode encodes one non-nil value for a parameter of type oid, with the
// format it is in. A value that does not fit the type is ErrValue.
func Encode(oid uint32, a any) ([]byte, int16, error) {
	switch oid {
	case OIDInt8, OIDInt4, OIDInt2, OIDOID:
		n, err := asInt(a)
		if err != nil {
			return nil, 0, err
		}
		switch oid {
		case OIDInt8:
			return binary.BigEndian.AppendUint64(nil, uint64(n)), BinaryFormat, nil
		case OIDInt4, OIDOID:
			if n < math.MinInt32 || n > math.MaxInt32 {
				return nil, 0, &driver.Error{Kind: driver.ErrValue, Err: fmt.Errorf("%d does not fit a 32-bit column", n)}
			}
			return binary.BigEndian.AppendUint32(nil, uint32(n)), BinaryFormat, nil
		default:
			if n < math.MinInt16 || n > math.MaxInt16 {
				return nil, 0, &driver.Error{Kind: driver.ErrValue, Err: fmt.Errorf("%d does not fit a 16-bit column", n)}
			}
			return binary.BigEndian.AppendUint16(nil, uint16(n)), BinaryFormat, nil
		}
	case OIDBool:
		switch v := a.(type) {
		case bool:
			return []byte{b2b(v)}, BinaryFormat, nil
		case int:
			return []byte{b2b(v != 0)}, BinaryFormat, nil
		case int64:
			return []byte{b2b(v != 0)}, BinaryFormat, nil
		}
	case OIDFloat8, OIDFloat4:
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
		if oid == OIDFloat4 {
			return binary.BigEndian.AppendUint32(nil, math.Float32bits(float32(f))), BinaryFormat, nil
		}
		return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)), BinaryFormat, nil
	case OIDBytea:
		switch v := a.(type) {
		case []byte:
			return v, BinaryFormat, nil
		case string:
			return []byte(v), BinaryFormat, nil
		}
	case OIDJSONB:
		b, err := textBytes(a)
		if err != nil {
			return nil, 0, err
		}
		return append([]byte{1}, b...), BinaryFormat, nil
	case OIDNumeric:
		b, err := textBytes(a)
		return b, TextFormat, err
	default:
		// text, varchar, name, unknown, json and anything else in text form.
		b, err := textBytes(a)
		if err != nil {
			return nil, 0, err
		}
		if oid == OIDText || oid == OIDVarchar || oid == OIDBPChar || oid == OIDName || oid == OIDUnknown {
			return b, BinaryFormat, nil
		}
		return b, TextFormat, nil
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
	return 0, cannotBind(a, OIDInt8)
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
	if err := CheckText(b); err != nil {
		return nil, err
	}
	return b, nil
}

// CheckText refuses what PostgreSQL text cannot hold, with ErrValue.
func CheckText(b []byte) error {
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

// The column readers take a non-NULL column's type, whether it came in
// binary, and its bytes, and convert the way SQLite would (a boolean reads
// as 0 or 1, a number as its text). A driver's row checks for NULL first.

// Int64 reads a column as an integer.
func Int64(oid uint32, bin bool, v []byte) int64 {
	if v == nil {
		return 0
	}
	if bin {
		switch oid {
		case OIDInt8:
			return int64(binary.BigEndian.Uint64(v))
		case OIDInt4:
			return int64(int32(binary.BigEndian.Uint32(v)))
		case OIDOID:
			return int64(binary.BigEndian.Uint32(v))
		case OIDInt2:
			return int64(int16(binary.BigEndian.Uint16(v)))
		case OIDBool:
			return int64(v[0])
		case OIDFloat8, OIDFloat4:
			return int64(Float(oid, bin, v))
		}
	}
	s := string(Text(oid, bin, v))
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return int64(f)
	}
	return 0
}

// Float reads a column as a float.
func Float(oid uint32, bin bool, v []byte) float64 {
	if v == nil {
		return 0
	}
	if bin {
		switch oid {
		case OIDFloat8:
			return math.Float64frombits(binary.BigEndian.Uint64(v))
		case OIDFloat4:
			return float64(math.Float32frombits(binary.BigEndian.Uint32(v)))
		case OIDInt8, OIDInt4, OIDInt2, OIDOID, OIDBool:
			return float64(Int64(oid, bin, v))
		}
	}
	f, _ := strconv.ParseFloat(string(Text(oid, bin, v)), 64)
	return f
}

// Text reads a column as text bytes, aliasing v where it can. A boolean or
// bytea in text format (a result with a column read only as text comes all
// in text) reads as in binary: 0 or 1, the bytes.
func Text(oid uint32, bin bool, v []byte) []byte {
	if !bin {
		switch oid {
		case OIDBool:
			if len(v) > 0 && v[0] == 't' {
				return []byte("1")
			}
			return []byte("0")
		case OIDBytea:
			if bytes.HasPrefix(v, []byte(`\x`)) {
				b, err := hex.AppendDecode(nil, v[2:])
				if err == nil {
					return b
				}
			}
		}
		return v
	}
	switch oid {
	case OIDInt8, OIDInt4, OIDInt2, OIDOID:
		return strconv.AppendInt(nil, Int64(oid, bin, v), 10)
	case OIDBool:
		return strconv.AppendInt(nil, int64(v[0]), 10)
	case OIDFloat8, OIDFloat4:
		return strconv.AppendFloat(nil, Float(oid, bin, v), 'g', -1, 64)
	case OIDJSONB:
		if len(v) > 0 {
			return v[1:]
		}
	}
	return v
}

// Blob reads a column as bytes: never nil for a non-NULL column.
func Blob(oid uint32, bin bool, v []byte) []byte {
	b := Text(oid, bin, v)
	if b == nil {
		return []byte{}
	}
	return b
}
