//go:build js || (wasip1 && hostsqlite)

// Runs under Node with the SQLite host:
//
//	GOOS=js GOARCH=wasm go test -c -o bridge.test.wasm ./wasm/bridge
//	node wasm/js/testhost/run.mjs bridge.test.wasm
package bridge

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/engine"
)

// A path with the bytes that end a URI's path or parameter reaches the
// VFS as it is: the file appears under its own name.
func TestFileURIKeepsThePath(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"plain.db", "a?b#c%d&e=f.db", "sp ace.db", "tab\tx.db"} {
		path := filepath.Join(dir, name)
		db, err := engine.Open(context.Background(), fileURI(path, "agentstate-test"), nil)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		db.Close()
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
	}
	if got := fileURI("/x/y.db", ""); got != "/x/y.db" {
		t.Fatalf("without a VFS: %q", got)
	}
}

// An image taken from a handle opens as a copy with the same content.
func TestImageRoundTrip(t *testing.T) {
	ctx := context.Background()
	db, err := engine.Open(ctx, engine.Memory, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Store().Put(ctx, []string{"ns"}, "k", map[string]any{"v": "kept"}); err != nil {
		t.Fatal(err)
	}
	img, err := takeImage(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := openImage(ctx, img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	it, err := cp.Store().Get(ctx, []string{"ns"}, "k")
	if err != nil || it.Value["v"] != "kept" {
		t.Fatalf("got %+v, %v", it, err)
	}
	if _, err := openImage(ctx, []byte("not a database"), nil); err == nil {
		t.Fatal("garbage opened as an image")
	}
}
