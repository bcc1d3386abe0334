//go:build js || (wasip1 && hostsqlite)

package hostpg

// The driver's side of the protocol, without a host: responses decoded into
// rows as the engine reads them, errors classified, arguments bound by the
// parameter types the server reported. The Python package's tests
// (python/tests/test_postgres.py) run it against a server.

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/engine/internal/driver/pgwire"
)

// response builds a host response: status, then per statement the rows
// changed, the fields' OIDs and the rows (nil: NULL).
func response(status byte, stmts ...struct {
	changed int64
	fields  []uint32
	rows    [][][]byte
}) []byte {
	b := []byte{status}
	for _, s := range stmts {
		b = le.AppendUint64(b, uint64(s.changed))
		b = le.AppendUint32(b, uint32(len(s.fields)))
		for _, f := range s.fields {
			b = le.AppendUint32(b, f)
		}
		b = le.AppendUint32(b, uint32(len(s.rows)))
		for _, r := range s.rows {
			for _, v := range r {
				if v == nil {
					b = le.AppendUint32(b, math.MaxUint32)
					continue
				}
				b = append(le.AppendUint32(b, uint32(len(v))), v...)
			}
		}
	}
	return b
}

func TestDecodeRowsAsTheEngineReadsThem(t *testing.T) {
	be := binary.BigEndian
	bin := struct {
		changed int64
		fields  []uint32
		rows    [][][]byte
	}{2, []uint32{pgwire.OIDInt8, pgwire.OIDBytea, pgwire.OIDText, pgwire.OIDBool, pgwire.OIDJSONB}, [][][]byte{
		{be.AppendUint64(nil, 42), []byte{0, 1, 2}, []byte("héllo"), {1}, append([]byte{1}, `{"a":1}`...)},
		{nil, {}, nil, {0}, nil},
	}}
	text := struct {
		changed int64
		fields  []uint32
		rows    [][][]byte
	}{1, []uint32{pgwire.OIDNumeric, pgwire.OIDBytea, pgwire.OIDBool}, [][][]byte{{[]byte("123"), []byte(`\x00ff`), []byte("t")}}}
	resp := response('T', bin, text)
	calls := []call{{op: opRun, format: 1, rows: true}, {op: opRun, format: 0, rows: true}}
	var got []string
	res, err := decode(resp[1:], calls, func(r driver.Row) error {
		var s string
		for i := range r.Columns() {
			if r.Null(i) {
				s += "NULL "
				continue
			}
			s += r.Text(i) + "|" + string(rune('0'+r.Int64(i)%10)) + " "
		}
		if r.Columns() == 3 && string(r.Blob(1)) != "\x00\xff" {
			t.Errorf("a bytea in text form reads %q", r.Blob(1))
		}
		got = append(got, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"42|2 \x00\x01\x02|0 héllo|0 1|1 {\"a\":1}|0 ",
		"NULL |0 NULL 0|0 NULL ",
		"123|3 \x00\xff|0 1|1 ",
	}
	if len(got) != len(want) {
		t.Fatalf("rows %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: %q, want %q", i, got[i], want[i])
		}
	}
	if res[0].changed != 2 || res[1].changed != 1 {
		t.Errorf("changed %d %d", res[0].changed, res[1].changed)
	}
	if _, err := decode(resp[1:len(resp)-2], calls, nil); err == nil {
		t.Error("a short response decoded")
	}
}

func hostError(kind byte, code, msg string) []byte {
	b := append([]byte{kind, 'E'}, (code + "\x00\x00\x00\x00\x00")[:5]...)
	return append(le.AppendUint32(b, uint32(len(msg))), msg...)
}

func TestErrorsAreClassified(t *testing.T) {
	for _, tc := range []struct {
		kind byte
		code string
		want error
		gone bool
	}{
		{kindServer, "40001", driver.ErrBusy, false},
		{kindServer, "40P01", driver.ErrBusy, false},
		{kindServer, "55P03", driver.ErrBusy, false},
		{kindServer, "23505", driver.ErrUnique, false},
		{kindServer, "23503", driver.ErrConstraint, false},
		{kindServer, "57014", driver.ErrInterrupted, false},
		{kindServer, "42P01", driver.ErrSchema, false},
		{kindServer, "25006", driver.ErrReadOnly, false},
		{kindServer, "22021", driver.ErrValue, false},
		{kindLost, "57P01", driver.ErrConnLost, true},
		{kindLost, "", driver.ErrConnLost, true},
		{kindDeadline, "", driver.ErrInterrupted, true},
		{kindUnavailable, "", ErrUnavailable, false},
	} {
		c := &Conn{id: 3}
		err := c.hostErr(hostError(tc.kind, tc.code, "the server said no"))
		if !errors.Is(err, tc.want) {
			t.Errorf("kind %d %q: %v is not %v", tc.kind, tc.code, err, tc.want)
		}
		if c.Broken() != tc.gone {
			t.Errorf("kind %d %q: Broken() = %v", tc.kind, tc.code, c.Broken())
		}
	}
	if err := (&Conn{}).hostErr(hostError(kindServer, "XX000", "boom")); errors.Is(err, driver.ErrBusy) || err.Error() != "boom (SQLSTATE XX000)" {
		t.Errorf("an unknown SQLSTATE: %v", err)
	}
}

func TestArgumentsBindByParameterType(t *testing.T) {
	s := "text"
	args, err := encodeArgs([]uint32{pgwire.OIDInt8, pgwire.OIDInt4, pgwire.OIDBytea, pgwire.OIDText, pgwire.OIDBool, pgwire.OIDText, pgwire.OIDBytea, pgwire.OIDJSONB},
		[]any{int64(-2), 7, []byte("b"), &s, true, (*string)(nil), []byte(nil), `{"a":1}`})
	if err != nil {
		t.Fatal(err)
	}
	if len(args[0].v) != 8 || !args[0].binary || len(args[1].v) != 4 || string(args[2].v) != "b" || string(args[3].v) != "text" ||
		args[4].v[0] != 1 || !args[5].null || !args[6].null || args[7].v[0] != 1 {
		t.Errorf("bound %+v", args)
	}
	if _, err := encodeArgs([]uint32{pgwire.OIDText}, []any{"a\x00b"}); !errors.Is(err, driver.ErrValue) {
		t.Errorf("a NUL in text: %v", err)
	}
	if _, err := encodeArgs([]uint32{pgwire.OIDInt4}, []any{int64(1) << 40}); !errors.Is(err, driver.ErrValue) {
		t.Errorf("an int4 overflow: %v", err)
	}
}

// A host without PostgreSQL (the npm package today) refuses the dial with
// ErrUnavailable, and a lost session is dialled again only between
// transactions.
func TestNoSessionWithoutAHost(t *testing.T) {
	if hostAvailable() {
		t.Skip("this host provides PostgreSQL")
	}
	s, err := Open("postgres://u:secret@127.0.0.1:1/db?search_path=s1", driver.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.SearchPath() != "s1" {
		t.Errorf("search path %q", s.SearchPath())
	}
	if _, err := s.Dial(context.Background(), true); !errors.Is(err, ErrUnavailable) {
		t.Errorf("dial: %v", err)
	}
	c := &Conn{s: s.(*Server), id: -1, tx: txOpen, ctx: context.Background()}
	if err := c.ensure(); !errors.Is(err, driver.ErrConnLost) {
		t.Errorf("a session lost inside a transaction: %v", err)
	}
}
