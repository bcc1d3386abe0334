package pgwire

import (
	"errors"
	"math"
	"testing"

	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/google/go-cmp/cmp"
)

// Each value the engine binds reads back, by the readers, as SQLite would
// give it: integers and booleans as integers, numbers as their text, text
// and bytes as themselves.
func TestEncodeReadsBack(t *testing.T) {
	for _, c := range []struct {
		oid    uint32
		in     any
		format int16
		i      int64
		f      float64
		text   string
	}{
		{OIDInt8, int64(math.MinInt64), BinaryFormat, math.MinInt64, math.MinInt64, "-9223372036854775808"},
		{OIDInt8, "42", BinaryFormat, 42, 42, "42"},
		{OIDInt4, -7, BinaryFormat, -7, -7, "-7"},
		{OIDInt2, true, BinaryFormat, 1, 1, "1"},
		{OIDOID, float64(4000), BinaryFormat, 4000, 4000, "4000"},
		{OIDBool, true, BinaryFormat, 1, 1, "1"},
		{OIDBool, int64(0), BinaryFormat, 0, 0, "0"},
		{OIDFloat8, 2.5, BinaryFormat, 2, 2.5, "2.5"},
		{OIDFloat4, 3, BinaryFormat, 3, 3, "3"},
		{OIDBytea, []byte("a\x00b"), BinaryFormat, 0, 0, "a\x00b"},
		{OIDText, "héllo", BinaryFormat, 0, 0, "héllo"},
		{OIDVarchar, int64(12), BinaryFormat, 12, 12, "12"},
		{OIDJSONB, `{"a":1}`, BinaryFormat, 0, 0, `{"a":1}`},
		{OIDNumeric, 1.5, TextFormat, 1, 1.5, "1.5"},
		{OIDJSON, false, TextFormat, 0, 0, "false"},
	} {
		b, f, err := Encode(c.oid, c.in)
		if err != nil || f != c.format {
			t.Errorf("Encode(%d, %#v): format %d, %v; want format %d", c.oid, c.in, f, err, c.format)
			continue
		}
		bin := f == BinaryFormat && BinaryResult(c.oid)
		if got := Int64(c.oid, bin, b); got != c.i {
			t.Errorf("%d %#v: Int64 %d, want %d", c.oid, c.in, got, c.i)
		}
		if got := Float(c.oid, bin, b); got != c.f {
			t.Errorf("%d %#v: Float %v, want %v", c.oid, c.in, got, c.f)
		}
		if got := string(Text(c.oid, bin, b)); got != c.text {
			t.Errorf("%d %#v: Text %q, want %q", c.oid, c.in, got, c.text)
		}
	}
}

// A result with a column read only as text comes all in text: booleans
// and bytes read as they do in binary.
func TestTextFormatReadsAsBinary(t *testing.T) {
	if got := Int64(OIDBool, false, []byte("t")); got != 1 {
		t.Errorf("text true: %d", got)
	}
	if got := string(Text(OIDBool, false, []byte("f"))); got != "0" {
		t.Errorf("text false: %q", got)
	}
	if got := Blob(OIDBytea, false, []byte(`\x00ff`)); string(got) != "\x00\xff" {
		t.Errorf("text bytea: %q", got)
	}
	if got := Blob(OIDBytea, true, []byte{}); got == nil || len(got) != 0 {
		t.Errorf("empty bytea: %#v, want empty, not nil", got)
	}
	if got := Float(OIDNumeric, false, []byte("1e3")); got != 1000 {
		t.Errorf("numeric: %v", got)
	}
	if got := Int64(OIDNumeric, false, []byte("12.9")); got != 12 {
		t.Errorf("numeric as integer: %d", got)
	}
}

func TestEncodeRefuses(t *testing.T) {
	for _, c := range []struct {
		oid   uint32
		in    any
		value bool // ErrValue, the caller's; otherwise an internal error
	}{
		{OIDInt4, int64(1) << 40, true},
		{OIDInt2, 40000, true},
		{OIDText, "a\x00b", true},
		{OIDJSONB, []byte{0xff}, true},
		{OIDInt8, 1.5, false},
		{OIDBool, "yes", false},
		{OIDBytea, 1, false},
	} {
		_, _, err := Encode(c.oid, c.in)
		if err == nil || errors.Is(err, driver.ErrValue) != c.value {
			t.Errorf("Encode(%d, %#v): %v, want ErrValue %v", c.oid, c.in, err, c.value)
		}
	}
	if _, _, err := EncodeArgs([]uint32{OIDText}, nil); err == nil {
		t.Error("EncodeArgs with too few arguments")
	}
}

func TestEncodeArgsNulls(t *testing.T) {
	s := "x"
	vals, fmts, err := EncodeArgs([]uint32{OIDText, OIDText, OIDText, OIDBytea}, []any{nil, (*string)(nil), &s, []byte(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if vals[0] != nil || vals[1] != nil || string(vals[2]) != "x" || vals[3] != nil || fmts[2] != BinaryFormat {
		t.Errorf("bound %q %v", vals, fmts)
	}
}

func TestSplitScript(t *testing.T) {
	got := SplitScript(`-- a comment; not a statement
CREATE TABLE a (s TEXT DEFAULT ';');
CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $body$ BEGIN RETURN 1; END $body$;
/* ; */ SELECT "x;y" FROM a;
-- trailing`)
	want := []string{
		"-- a comment; not a statement\nCREATE TABLE a (s TEXT DEFAULT ';')",
		"CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $body$ BEGIN RETURN 1; END $body$",
		`/* ; */ SELECT "x;y" FROM a`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}
