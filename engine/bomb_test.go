package engine

import (
	"bytes"
	"encoding/base64"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/internal/testbomb"
)

// packedBlobDump is an export of deltaFile with its first packed value
// (a blobs row of enc 1) replaced by packed, of type typ.
func packedBlobDump(t *testing.T, typ string, packed []byte) []byte {
	t.Helper()
	path, _ := deltaFile(t)
	dump := exportOf(t, openRW(t, path), "")
	re := regexp.MustCompile(`"type":"[^"]*","enc":1,"data":"[^"]*"`)
	done := false
	out := re.ReplaceAllFunc(dump, func(m []byte) []byte {
		if done {
			return m
		}
		done = true
		return []byte(`"type":"` + typ + `","enc":1,"data":"` + base64.StdEncoding.EncodeToString(packed) + `"`)
	})
	if !done {
		t.Fatal("the export holds no packed value")
	}
	return out
}

// Issue 25, item 1: a dump of a few kilobytes holding one packed value
// that inflates past MaxListBytes (128 MiB of msgpack nils) was imported at
// 6 GB RSS; one within it whose msgpack would decode to a gigabyte of
// interfaces too. Both are refused with ErrTooLarge naming the limit, and
// the destination holds nothing of them.
func TestImportRefusesDecompressionBombs(t *testing.T) {
	inner := testbomb.Envelope(MaxListBytes - 1<<20) // 63 MiB of nils, ~7 KB
	cases := map[string]struct {
		typ    string
		packed []byte
		limit  string
	}{
		// The caller's bytes (any type) inflate past the limit.
		"inflates past MaxListBytes": {"json", testbomb.Envelope(2 * MaxListBytes), "MaxListBytes"},
		// The engine's own msgpack, small packed and inflated, whose
		// decoded form would pass codec.MaxCost.
		"decodes past MaxCost": {codec.TypeMsgpack, append([]byte{codec.FormatV1}, inner...), "MaxCost"},
		// The engine's own msgpack whose envelope, inside the packed one,
		// inflates past the limit.
		"inner envelope past MaxListBytes": {codec.TypeMsgpack, append([]byte{codec.FormatV1}, testbomb.Envelope(2*MaxListBytes)...), "MaxListBytes"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dump := packedBlobDump(t, tc.typ, tc.packed)
			t.Logf("dump of %d bytes", len(dump))
			dst := filepath.Join(t.TempDir(), "t.db")
			_, err := ImportFile(bg, testPath(t, dst), bytes.NewReader(dump), nil, admin.ImportOptions{})
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), tc.limit) {
				t.Fatalf("import: %v, want ErrTooLarge naming %s", err, tc.limit)
			}
			db := openRW(t, dst)
			if in, err := db.Info(bg); err != nil || in.Rows["checkpoints"] != 0 || in.Rows["blobs"] != 0 {
				t.Fatalf("a refused import left %v (%v)", in.Rows, err)
			}
		})
	}
}

// A file whose stored message list is a bomb (written behind the engine's
// back) is refused on read with ErrTooLarge: State, and verify reporting
// it, each without allocating the list.
func TestReadRefusesDecompressionBombs(t *testing.T) {
	for name, bomb := range map[string][]byte{
		"inflates past MaxListBytes": testbomb.Envelope(2 * MaxListBytes),
		"decodes past MaxCost":       testbomb.Envelope(MaxListBytes - 1<<20),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "b.db")
			db := openTest(t, path, nil)
			cfg := mustCommit(t, db, "th", Step{Tasks: []TaskWrites{say("t", codec.Message{Type: codec.Human, Content: "hi"})}})
			// The bomb as a bound parameter: an X'..' literal is a bit
			// string to PostgreSQL.
			if err := db.write(bg, func(c *conn) error {
				return c.exec(`UPDATE blobs SET data = ? WHERE thread_id = 'th' AND channel = 'messages'`, bomb)
			}); err != nil {
				t.Fatal(err)
			}
			db.Close()
			db = openTest(t, path, nil)
			var err error
			a := testbomb.Allocated(func() { _, err = db.State(bg, cfg) })
			t.Logf("refusing it allocated %d MiB", a>>20)
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "MaxListBytes") {
				t.Fatalf("State: %v, want ErrTooLarge naming MaxListBytes", err)
			}
			if a > 2*MaxListBytes {
				t.Errorf("refusing it allocated %d MiB", a>>20)
			}
			rep, err := db.Verify(bg, admin.VerifyOptions{})
			if err != nil || rep.OK {
				t.Fatalf("verify: %+v, %v; want the value reported", rep, err)
			}
		})
	}
}
