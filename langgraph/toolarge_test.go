package langgraph

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine"
	"github.com/ncruces/go-sqlite3"
)

// hugeSource writes a SqliteSaver file of one checkpoint and one pending
// write in which column col (of either table) is a zeroblob of n bytes.
// That column is the last of its table, so that SQLite writes the zeros
// page by page instead of building them in its heap.
func hugeSource(t *testing.T, col string, n int64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "huge.sqlite")
	c, err := sqlite3.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	vals := map[string]string{"thread_id": "'t'", "checkpoint_ns": "''", "checkpoint_id": "'c1'", "parent_checkpoint_id": "NULL",
		"type": "'json'", "checkpoint": `'{"v":4,"channel_values":{}}'`, "metadata": "'{}'", "task_id": "'task'", "idx": "0",
		"channel": "'x'", "value": "'1'"}
	vals[col] = "zeroblob(" + strconv.FormatInt(n, 10) + ")"
	for _, table := range []struct{ name, cols string }{
		{"checkpoints", "thread_id checkpoint_ns checkpoint_id parent_checkpoint_id type checkpoint metadata"},
		{"writes", "thread_id checkpoint_ns checkpoint_id task_id idx channel type value"},
	} {
		var cols, values []string
		for _, c := range strings.Fields(table.cols) {
			if c != col {
				cols, values = append(cols, c), append(values, vals[c])
			}
		}
		if len(cols) < len(strings.Fields(table.cols)) {
			cols, values = append(cols, col), append(values, vals[col])
		}
		list := strings.Join(cols, ", ")
		if err := c.Exec(`CREATE TABLE ` + table.name + ` (` + list + `); INSERT INTO ` + table.name + ` (` + list + `) VALUES (` + strings.Join(values, ", ") + `)`); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// A source row larger than what the engine stores makes its thread
// unsupported, ErrTooLarge naming the row and the limit, before the row is
// read (a 300 MB checkpoint made ncruces panic, "sqlite3: out of memory",
// and the CLI die with a Go stack); ids too large to list the threads make
// the source unreadable (Probe says so). The destination is left as it was.
func TestImportRefusesHugeRows(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		col   string
		n     int64
		limit string
	}{
		{"checkpoint", 300 << 20, "MaxCallBytes"},
		{"metadata", engine.MaxValueBytes + 1, "MaxValueBytes"},
		{"value", engine.MaxValueBytes + 1, "MaxValueBytes"},
		{"checkpoint_id", maxSourceKeyBytes + 1, "more than 1048576"},
	} {
		t.Run(c.col, func(t *testing.T) {
			src := hugeSource(t, c.col, c.n)
			for _, into := range []Into{IntoProtocol, IntoMessages} {
				db, before := seededDst(t)
				_, err := Import(ctx, db, src, Options{Into: into})
				if !errors.Is(err, engine.ErrTooLarge) || !strings.Contains(err.Error(), c.limit) || (c.col != "checkpoint_id" && !strings.Contains(err.Error(), strconv.FormatInt(c.n, 10))) {
					t.Fatalf("%s: import of a %d-byte %s: %v, want ErrTooLarge naming %s and the size", into, c.n, c.col, err, c.limit)
				}
				if fingerprint(t, db) != before {
					t.Fatal("a refused import changed the destination")
				}
			}
			if c.col != "checkpoint_id" {
				var ue *UnsupportedError
				if _, err := Import(ctx, openDst(t, channels.ModeDelta, 3), src, Options{}); !errors.As(err, &ue) || len(ue.Problems) != 1 || ue.Problems[0].ThreadID != "t" || ue.Problems[0].CheckpointID != "c1" {
					t.Fatalf("import: %v, want the thread unsupported", err)
				}
				return
			}
			if err := Probe(ctx, src); !errors.Is(err, engine.ErrTooLarge) {
				t.Fatalf("Probe: %v, want ErrTooLarge", err)
			}
		})
	}
}

// A panic of ncruces is an error, any other panic goes on.
func TestRecoverSQLite(t *testing.T) {
	run := func(p any) (err error) {
		defer recoverSQLite(&err)
		panic(p)
	}
	if err := run(errors.New("sqlite3: out of memory")); !errors.Is(err, engine.ErrTooLarge) {
		t.Fatalf("out of memory: %v, want ErrTooLarge", err)
	}
	if err := run(errors.New("sqlite3: assertion failed")); err == nil || errors.Is(err, engine.ErrTooLarge) {
		t.Fatalf("an assertion: %v, want a plain error", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a panic that is not the driver's was hidden")
		}
	}()
	run("mine")
}
