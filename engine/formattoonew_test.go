package engine

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// Bytes a newer build wrote (an envelope this build does not know yet)
// are said to be that, ErrFormatTooNew (and ErrSchemaTooNew), not damage:
// codec.ErrUnsupported was wrapped as ErrCorrupt, so an older handle called
// a newer build's rows corrupt. Damage is still ErrCorrupt.
func TestNewerFormatIsNotCorrupt(t *testing.T) {
	sqliteOnly(t, "rewrites stored bytes")
	for _, c := range []struct {
		envelope string
		want     error
		not      error
	}{
		{"x'05'", ErrFormatTooNew, ErrCorrupt},
		{"x'7f'", ErrCorrupt, ErrFormatTooNew},
	} {
		path := filepath.Join(t.TempDir(), "f.db")
		db := openTest(t, path, nil)
		if err := db.Store().Put(bg, []string{"ns"}, "k", map[string]any{"v": 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Put(bg, Config{ThreadID: "t"}, Checkpoint{V: 4, ID: "c1"}, Metadata{"step": 1}, nil); err != nil {
			t.Fatal(err)
		}
		db.Close()
		rawExec(t, path, `UPDATE store_items SET value = `+c.envelope+` || substr(value, 2)`)
		rawExec(t, path, `UPDATE checkpoints SET metadata = `+c.envelope+` || substr(metadata, 2)`)
		db = openTest(t, path, nil)
		_, err := db.Store().Get(bg, []string{"ns"}, "k")
		_, terr := db.GetTuple(bg, Config{ThreadID: "t"})
		for what, err := range map[string]error{"store Get": err, "GetTuple": terr} {
			if !errors.Is(err, c.want) || errors.Is(err, c.not) {
				t.Errorf("%s of envelope %s: %v, want %v and not %v", what, c.envelope, err, c.want, c.not)
			}
			if c.want == ErrFormatTooNew && (!errors.Is(err, ErrSchemaTooNew) || !strings.Contains(err.Error(), "newer agentstate")) {
				t.Errorf("%s: %v, want ErrSchemaTooNew too, saying a newer agentstate wrote it", what, err)
			}
		}
		db.Close()
	}
}
