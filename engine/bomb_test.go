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
	}{
		// The caller's bytes (any type) inflate past the limit.
		"inflates past MaxListBytes": {"json", testbomb.Envelope(2 * MaxListBytes)},
		// The engine's own msgpack, small packed and inflated, whose
		// decoded form would pass codec.MaxCost.
		"decodes past MaxCost": {codec.TypeMsgpack, append([]byte{codec.FormatV1}, inner...)},
		// The engine's own msgpack whose envelope, inside the packed one,
		// inflates past the limit.
		"inner envelope past MaxListBytes": {codec.TypeMsgpack, append([]byte{codec.FormatV1}, testbomb.Envelope(2*MaxListBytes)...)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dump := packedBlobDump(t, tc.typ, tc.packed)
			t.Logf("dump of %d bytes", len(dump))
			dst := filepath.Join(t.TempDir(), "t.db")
			_, err := ImportFile(bg, testPath(t, dst), bytes.NewReader(dump), nil, ImportOptions{})
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "MaxListBytes") {
				t.Fatalf("import: %v, want ErrTooLarge naming MaxListBytes", err)
			}
			db := openRW(t, dst)
			if in, err := db.Info(bg); err != nil || in.Rows["checkpoints"] != 0 || in.Rows["blobs"] != 0 {
				t.Fatalf("a refused import left %v (%v)", in.Rows, err)
			}
		})
	}
}
