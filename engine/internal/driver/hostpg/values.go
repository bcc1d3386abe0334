//go:build js || (wasip1 && hostsqlite)

package hostpg

// Binding the engine's Go values by the parameter types the server
// reported, and reading result rows, with the native driver's encoders and
// readers (engine/internal/driver/pgwire).

import "github.com/agentstate/agentstate/engine/internal/driver/pgwire"

// encodeArgs encodes the engine's Go values for the parameter types the
// server chose: a nil or nil *string is NULL, and so is a nil slice, as
// pgconn sends it (a nil []byte argument).
func encodeArgs(oids []uint32, args []any) ([]arg, error) {
	vals, fmts, err := pgwire.EncodeArgs(oids, args)
	if err != nil {
		return nil, err
	}
	out := make([]arg, len(vals))
	for i, v := range vals {
		out[i] = arg{v: v, binary: fmts[i] == pgwire.BinaryFormat, null: v == nil}
	}
	return out, nil
}

// row reads a result row by column type, converting the way SQLite would
// (pgwire's readers). A result comes all in binary or all in text (a
// statement with a column of a type read only as text, numeric or a
// timestamp, asks for text).
type row struct {
	vals   [][]byte
	fields []uint32
	format byte
}

func (r *row) Columns() int    { return len(r.fields) }
func (r *row) Null(i int) bool { return r.vals[i] == nil }

func (r *row) Int64(i int) int64 {
	return pgwire.Int64(r.fields[i], r.format == 1, r.vals[i])
}

func (r *row) Float(i int) float64 {
	return pgwire.Float(r.fields[i], r.format == 1, r.vals[i])
}

func (r *row) Text(i int) string {
	if r.vals[i] == nil {
		return ""
	}
	return string(pgwire.Text(r.fields[i], r.format == 1, r.vals[i]))
}

func (r *row) Blob(i int) []byte {
	if r.vals[i] == nil {
		return nil
	}
	return pgwire.Blob(r.fields[i], r.format == 1, r.vals[i])
}
