package pg

import (
	"github.com/agentstate/agentstate/engine/internal/driver/pgwire"
	"github.com/jackc/pgx/v5/pgconn"
)

// row reads a result row by column type, converting the way SQLite would
// (pgwire's readers); each column comes in the format pgwire.BinaryResult
// chose for its type.
type row struct {
	vals [][]byte
	fds  []pgconn.FieldDescription
}

func (r *row) Columns() int    { return len(r.fds) }
func (r *row) Null(i int) bool { return r.vals[i] == nil }

func (r *row) Int64(i int) int64 {
	return pgwire.Int64(r.fds[i].DataTypeOID, r.fds[i].Format == pgwire.BinaryFormat, r.vals[i])
}

func (r *row) Float(i int) float64 {
	return pgwire.Float(r.fds[i].DataTypeOID, r.fds[i].Format == pgwire.BinaryFormat, r.vals[i])
}

func (r *row) Text(i int) string {
	if r.vals[i] == nil {
		return ""
	}
	return string(pgwire.Text(r.fds[i].DataTypeOID, r.fds[i].Format == pgwire.BinaryFormat, r.vals[i]))
}

func (r *row) Blob(i int) []byte {
	if r.vals[i] == nil {
		return nil
	}
	return pgwire.Blob(r.fds[i].DataTypeOID, r.fds[i].Format == pgwire.BinaryFormat, r.vals[i])
}
