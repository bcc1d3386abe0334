package langgraph

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/engine"
)

// TestProbe: a SqliteSaver file is a source; an agentstate file, a text
// file and a missing one are ErrUnsupportedSource, naming the path.
func TestProbe(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "lg.sqlite")
	b, err := os.ReadFile(jsFixture)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Probe(ctx, src); err != nil {
		t.Fatalf("a SqliteSaver file: %v", err)
	}
	ours := filepath.Join(dir, "agent.db")
	db, err := engine.Open(ctx, ours, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("hello\n"), 0o644)
	for _, p := range []string{ours, text, filepath.Join(dir, "missing.sqlite")} {
		if err := Probe(ctx, p); !errors.Is(err, ErrUnsupportedSource) {
			t.Errorf("%s: %v, want ErrUnsupportedSource", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.sqlite")); err == nil {
		t.Error("Probe created the missing file")
	}
}
