package codec

import (
	"errors"
	"fmt"
	"testing"
)

// TestRefinesIsErrorf: the package's error variables made without fmt read
// and match as fmt.Errorf("%w: msg", err) would make them.
func TestRefinesIsErrorf(t *testing.T) {
	for _, c := range []struct {
		got  error
		base error
		msg  string
	}{
		{ErrLineTooLong, ErrTooLarge, "line too long"},
		{errHead, ErrCorrupt, "malformed msgpack header"},
		{ErrDeltaBase, ErrCorrupt, "delta applied to another base"},
		{errDeltaOp, ErrCorrupt, "malformed delta op"},
	} {
		want := fmt.Errorf("%w: "+c.msg, c.base)
		if c.got.Error() != want.Error() {
			t.Errorf("%q, want %q", c.got, want)
		}
		if !errors.Is(c.got, c.base) || errors.Unwrap(c.got) != c.base {
			t.Errorf("%q does not unwrap to %q", c.got, c.base)
		}
		if wrapped := fmt.Errorf("%w: more", c.got); !errors.Is(wrapped, c.got) || !errors.Is(wrapped, c.base) {
			t.Errorf("%q wrapped again loses its chain", c.got)
		}
	}
}
