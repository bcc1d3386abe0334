package langgraph

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/engine/admin"
)

var pyDir = filepath.Join("..", "testdata", "langgraph", "python")

// copyFile copies a fixture into a temporary directory: opening a WAL file,
// even read-only, leaves -wal and -shm files beside it.
func copyFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func openDst(t testing.TB, mode channels.Mode, every int) *engine.DB {
	t.Helper()
	o := engine.DefaultOptions()
	o.Mode, o.SnapshotEvery = mode, every
	db, err := engine.Open(context.Background(), filepath.Join(t.TempDir(), "dst.db"), &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

var pyOptions = Options{Into: IntoMessages, DeltaReducers: map[string]Reducer{"notes": Concat}}

func TestImportLangGraphPythonSqlite(t *testing.T) {
	ctx := context.Background()
	src := copyFile(t, filepath.Join(pyDir, "langgraph-py.sqlite"))
	exp := loadExpected(t, filepath.Join(pyDir, "expected-py-sqlite.json"))
	for _, mode := range []channels.Mode{channels.ModeFull, channels.ModeDelta} {
		t.Run(string(mode), func(t *testing.T) {
			db := openDst(t, mode, 3)
			rep, err := Import(ctx, db, src, pyOptions)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%+v", rep)
			vr, err := db.Verify(ctx, admin.VerifyOptions{})
			if err != nil || !vr.OK {
				t.Fatalf("verify: %v %v", err, vr.Problems)
			}
			checkExpected(t, db, exp)
		})
	}
}
