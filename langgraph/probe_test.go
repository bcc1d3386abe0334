package langgraph

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/engine"
	"github.com/ncruces/go-sqlite3"
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

// forever is a recursive query that never ends.
const forever = `WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM r)`

// notTables are SqliteSaver files' tables replaced by what the import does
// not read: views shaped like them whose rows never end, and a generated
// column (an expression evaluated as it is read), each with what the
// refusal says.
var notTables = []struct{ name, sql, says string }{
	{"checkpoints", `DROP TABLE checkpoints; CREATE VIEW checkpoints(thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata) AS ` +
		forever + ` SELECT 'chat', '', x, NULL, 'msgpack', NULL, NULL FROM r`, `"checkpoints" is a view, not a table`},
	{"writes", `DROP TABLE writes; CREATE VIEW writes(thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value) AS ` +
		forever + ` SELECT 'chat', '', x, 't', '', 0, 'c', 'json', NULL FROM r`, `"writes" is a view, not a table`},
	{"generated", `DROP TABLE writes; CREATE TABLE writes(thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value AS (zeroblob(100000000)))`,
		"column value of table writes is computed (a generated column)"},
}

// within runs fn, and fails the test if it has not returned after d (a
// call that never ends is left running).
func within(t *testing.T, d time.Duration, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("%s had not returned after %v", what, d)
		return nil
	}
}

// TestSourceViewsAreRefused: a SqliteSaver file whose checkpoints or
// writes table is a view (here one whose rows never end), or has a
// generated column, is refused at once, naming it, by Probe, Import in both
// forms and Compare. Before, each read the view for ever, deaf to its
// context.
func TestSourceViewsAreRefused(t *testing.T) {
	for _, c := range notTables {
		t.Run(c.name, func(t *testing.T) {
			src := copyFile(t, filepath.Join(pyDir, "langgraph-py.sqlite"))
			db, err := sqlite3.Open(src)
			if err != nil {
				t.Fatal(err)
			}
			err = db.Exec(c.sql)
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			dst, before := seededDst(t)
			calls := map[string]func() error{
				"Probe": func() error { return Probe(ctx, src) },
				"Import": func() error {
					_, err := Import(ctx, dst, src, Options{SkipUnsupported: true})
					return err
				},
				"Import into messages": func() error {
					_, err := Import(ctx, dst, src, Options{Into: IntoMessages, SkipUnsupported: true})
					return err
				},
				"Compare": func() error {
					_, _, err := Compare(ctx, dst, src, Options{})
					return err
				},
			}
			for name, call := range calls {
				err := within(t, 20*time.Second, name, call)
				if !errors.Is(err, ErrUnsupportedSource) || !strings.Contains(err.Error(), c.says) {
					t.Errorf("%s: %v, want ErrUnsupportedSource saying %s", name, err, c.says)
				}
			}
			if fingerprint(t, dst) != before {
				t.Fatal("a refused import changed the destination")
			}
		})
	}
}

// TestSourceReadsEndWithTheirContext: a read of a source ends when its
// context does, wherever SQLite is (here in a query whose one row never
// comes), with the context's error.
func TestSourceReadsEndWithTheirContext(t *testing.T) {
	s, err := openSQLite(context.Background(), copyFile(t, filepath.Join(pyDir, "langgraph-py.sqlite")))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = within(t, 20*time.Second, "the query", func() error {
		return s.query(ctx, forever+` SELECT count(*) FROM r`, nil, func(*sqlite3.Stmt) error { return nil })
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("query: %v, want the context's error", err)
	}
	// The source is usable after.
	if _, err := s.threads(context.Background()); err != nil {
		t.Fatalf("threads after an interrupted query: %v", err)
	}
}
