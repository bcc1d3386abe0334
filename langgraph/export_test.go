package langgraph

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine"
)

// The way back, checked in Go: a fixture imported and exported reads, with
// the import's own reader, as the imported file does (Compare, byte for
// byte), so source -> agentstate -> SqliteSaver keeps every checkpoint;
// the exported file imports again. roundtrip.sh checks the same files with
// real LangGraph (and resumes them).
func TestExportLangGraph(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		fixture, layout string
		o               Options
	}{
		{filepath.Join(pyDir, "langgraph-py.sqlite"), LayoutPython, Options{}},
		{jsFixture, LayoutJS, Options{}},
		{filepath.Join(pyDir, "langgraph-py-0.2.sqlite"), LayoutPython, Options{}},
		{filepath.Join(pyDir, "langgraph-py-0.3.sqlite"), LayoutPython, Options{}},
		{filepath.Join(pyDir, "langgraph-py-encrypted.sqlite"), LayoutPython, Options{Key: []byte(compatKey)}},
	} {
		t.Run(filepath.Base(c.fixture), func(t *testing.T) {
			db := importProtocolFixture(t, c.fixture, c.o)
			want, _ := sourceCounts(t, copyFile(t, c.fixture))
			out := filepath.Join(t.TempDir(), "out.sqlite")
			rep, err := Export(ctx, db, out, ExportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Layout != c.layout || rep.Checkpoints != want {
				t.Fatalf("report %+v, want layout %s and %d checkpoints", rep, c.layout, want)
			}
			n, diffs, err := Compare(ctx, db, out, Options{})
			if err != nil || n != want || len(diffs) > 0 {
				t.Fatalf("the exported file against the imported one: %d of %d, %v, %v", n, want, err, diffs)
			}
			again := openDst(t, channels.ModeDelta, 10)
			if _, err := Import(ctx, again, out, Options{}); err != nil {
				t.Fatal(err)
			}
			if _, err := Export(ctx, db, out, ExportOptions{}); !errors.Is(err, engine.ErrConflict) {
				t.Fatalf("into an existing file: %v", err)
			}
		})
	}
	t.Run("a thread of the thread API", func(t *testing.T) {
		db := openDst(t, channels.ModeDelta, 10)
		if _, err := Import(ctx, db, copyFile(t, jsFixture), Options{Into: IntoMessages}); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if _, err := Export(ctx, db, filepath.Join(dir, "out.sqlite"), ExportOptions{}); !errors.Is(err, ErrNotExportable) {
			t.Fatalf("%v", err)
		}
		if es, _ := os.ReadDir(dir); len(es) != 0 {
			t.Fatalf("a refused export left %d files", len(es))
		}
		if _, err := Export(ctx, db, filepath.Join(dir, "out.sqlite"), ExportOptions{Layout: "yaml"}); !errors.Is(err, engine.ErrInvalidArgument) {
			t.Fatalf("%v", err)
		}
	})
}
