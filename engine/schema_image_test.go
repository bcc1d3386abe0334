//go:build !js && !(wasip1 && hostsqlite)

package engine

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/klauspost/compress/s2"
)

// renderEmptyImage makes schema_empty.s2 as emptyImageS2 documents it: an
// empty database given freshSchema (its history stamped at the epoch, which
// an open replaces), in an S2 envelope.
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
	return append([]byte{codec.FormatV1S2}, s2.EncodeBest(nil, img)...)
}

// TestEmptyImageIsTheSchema holds schema_empty.s2 to what freshSchema
// makes (and so, through TestFreshSchemaIsTheMigrations, to the
// migrations), and checks what the image holds.
func TestEmptyImageIsTheSchema(t *testing.T) {
	want := renderEmptyImage(t)
	if os.Getenv("AGENTSTATE_UPDATE") == "1" {
		if err := os.WriteFile("schema_empty.s2", want, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote schema_empty.s2 (%d bytes)", len(want))
		return
	}
	got, err := emptyImage()
	if err != nil {
		t.Fatal(err)
	}
	wantImg, _, err := codec.Body(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, wantImg) {
		t.Fatal("schema_empty.s2 is not the empty database of this schema: run AGENTSTATE_UPDATE=1 go test ./engine -run TestEmptyImageIsTheSchema")
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
