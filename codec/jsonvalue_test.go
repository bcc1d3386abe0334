package codec

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeJSON(t *testing.T) {
	got, err := DecodeJSON([]byte(`{"i":-3,"u":18446744073709551615,"big":9223372036854775808,"f":1.5,"e":1e3,"l":[1,{"n":2}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"i": int64(-3), "u": uint64(math.MaxUint64), "big": uint64(1 << 63), "f": 1.5, "e": 1000.0,
		"l": []any{int64(1), map[string]any{"n": int64(2)}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatal(diff)
	}
	for _, bad := range []string{`1e999`, `{"a":1} {}`, `{"a":`, `[-1e400]`} {
		if v, err := DecodeJSON([]byte(bad)); err == nil {
			t.Errorf("%s decoded to %v", bad, v)
		}
	}
}
