//go:build !js && !(wasip1 && hostsqlite)

package engine

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"
	"time"

	"github.com/agentstate/agentstate/engine/internal/driver"
)

// renderEmptyImage makes schema_empty.runs as emptyImageRuns documents it:
// an empty database given freshSchema (its history stamped at the epoch,
// which an open replaces), as zeroRuns.
func renderEmptyImage(t *testing.T) []byte {
	t.Helper()
	c := scratchTest(t)
	d := c.d
	for _, p := range []string{"PRAGMA page_size=4096", "PRAGMA auto_vacuum=INCREMENTAL"} {
		if err := c.exec(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Begin(driver.TxWrite); err != nil {
		t.Fatal(err)
	}
	if err := writeFreshSchema(c, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	img, err := d.(serializer).Serialize("main")
	if err != nil {
		t.Fatal(err)
	}
	return zeroRuns(img)
}

// zeroRuns writes b in the form expandRuns reads.
func zeroRuns(b []byte) []byte {
	out := binary.AppendUvarint(nil, uint64(len(b)))
	for i := 0; i < len(b); {
		z := i
		for z < len(b) && b[z] == 0 {
			z++
		}
		// A literal run ends at the next 16 zeros (shorter gaps cost less
		// kept than split).
		e, zeros := z, 0
		for ; e < len(b) && zeros < 16; e++ {
			if b[e] == 0 {
				zeros++
			} else {
				zeros = 0
			}
		}
		e -= zeros
		out = binary.AppendUvarint(out, uint64(z-i))
		out = binary.AppendUvarint(out, uint64(e-z))
		out = append(out, b[z:e]...)
		i = e
	}
	return out
}

// TestEmptyImageIsTheSchema holds schema_empty.runs to what freshSchema
// makes (and so, through TestFreshSchemaIsTheMigrations, to the
// migrations), and checks what the image holds.
func TestEmptyImageIsTheSchema(t *testing.T) {
	want := renderEmptyImage(t)
	if os.Getenv("AGENTSTATE_UPDATE") == "1" {
		if err := os.WriteFile("schema_empty.runs", want, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote schema_empty.runs (%d bytes)", len(want))
		return
	}
	got, err := emptyImage()
	if err != nil {
		t.Fatal(err)
	}
	wantImg, err := expandRuns(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, wantImg) {
		t.Fatal("schema_empty.runs is not the empty database of this schema: run AGENTSTATE_UPDATE=1 go test ./engine -run TestEmptyImageIsTheSchema")
	}
	db, err := OpenImage(rctx, got, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var autoVacuum, pageSize int64
	err = db.read(rctx, func(c *conn) error {
		if _, err := c.queryRow("PRAGMA auto_vacuum", nil, func(r row) error { autoVacuum = r.Int64(0); return nil }); err != nil {
			return err
		}
		_, err := c.queryRow("PRAGMA page_size", nil, func(r row) error { pageSize = r.Int64(0); return nil })
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if autoVacuum != 2 || pageSize != 4096 {
		t.Fatalf("the image has auto_vacuum %d and page_size %d; a fresh file has 2 (incremental) and 4096", autoVacuum, pageSize)
	}
}

// TestZeroRuns round-trips zeroRuns on shapes the image has and has not,
// and holds expandRuns to refusing every truncation and damaged length of
// the image's encoding with errImageRuns, never a panic.
func TestZeroRuns(t *testing.T) {
	shapes := [][]byte{
		{},
		{0, 0, 0},
		{1, 2, 3},
		append(append(bytes.Repeat([]byte{0}, 40), 7), bytes.Repeat([]byte{0}, 40)...),
		append([]byte{9, 0, 0, 0, 9}, bytes.Repeat([]byte{0}, 5000)...),
	}
	for i, b := range shapes {
		got, err := expandRuns(zeroRuns(b))
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("shape %d: round trip gave %d bytes, %v; want %d bytes", i, len(got), err, len(b))
		}
	}
	img, err := emptyImage()
	if err != nil {
		t.Fatal(err)
	}
	enc := zeroRuns(img)
	if len(enc) > len(img)/8 {
		t.Errorf("the image's runs take %d bytes of its %d", len(enc), len(img))
	}
	for n := 0; n < len(enc); n += 1 + n/64 {
		if _, err := expandRuns(enc[:n]); err != errImageRuns {
			t.Fatalf("%d of %d bytes: %v, want errImageRuns", n, len(enc), err)
		}
	}
	for _, bad := range [][]byte{
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, // a length past any image
		{4, 5, 0},       // zeros past the end
		{4, 0, 5, 1, 2}, // a literal past the end
		{4, 0, 2, 1},    // a literal longer than what follows
	} {
		if _, err := expandRuns(bad); err != errImageRuns {
			t.Errorf("% x: %v, want errImageRuns", bad, err)
		}
	}
}
