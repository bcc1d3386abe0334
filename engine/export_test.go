package engine

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func exportOf(t *testing.T, db *DB, thread string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := db.Export(context.Background(), &buf, ExportOptions{ThreadID: thread}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestExportImportRoundTripIsByteIdentical(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{ModeFull, ModeDelta} {
		t.Run(mode, func(t *testing.T) {
			path, cps := opsFixture(t, mode)
			src := openRW(t, path)
			first := exportOf(t, src, "")
			for _, table := range []string{"thread_modes", "checkpoints", "blobs", "writes", "threads", "runs", "event_seqs", "events", "store_items"} {
				if !bytes.Contains(first, []byte(`{"table":"`+table+`"`)) {
					t.Errorf("export has no %s row", table)
				}
			}
			dst := filepath.Join(t.TempDir(), "copy.db")
			rep, err := ImportFile(ctx, dst, bytes.NewReader(first), nil, ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Mode != mode || rep.Rows["checkpoints"] != int64(len(cps)+1) {
				t.Fatalf("import report %+v", rep)
			}
			copied := openRW(t, dst)
			second := exportOf(t, copied, "")
			if !bytes.Equal(first, second) {
				t.Fatalf("export -> import -> export differs:\n%s", firstDiff(first, second))
			}
			if rep := verifyPath(t, dst); !rep.OK {
				t.Fatalf("imported file: %v", rep.Problems)
			}
			// The copy reads the same state everywhere.
			for _, cfg := range cps {
				a, err1 := src.State(ctx, cfg)
				b, err2 := copied.State(ctx, cfg)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if diff := cmp.Diff(a.Values, b.Values); diff != "" {
					t.Fatalf("state of %s differs after import: %s", cfg.CheckpointID, diff)
				}
			}
			// One thread.
			one := exportOf(t, src, "other")
			if bytes.Contains(one, []byte(`"thread_id":"chat"`)) || bytes.Contains(one, []byte(`"store_items"`)) {
				t.Fatalf("export of thread other holds other rows:\n%s", one)
			}
			if !bytes.Contains(one, []byte(`"thread_id":"other"`)) {
				t.Fatalf("export of thread other misses it:\n%s", one)
			}
		})
	}
}

func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return "line " + string(rune('0'+i%10)) + ":\n" + la[i] + "\n" + lb[i]
		}
	}
	return "lengths differ"
}

func TestImportRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	path, _ := opsFixture(t, ModeDelta)
	dump := exportOf(t, openRW(t, path), "")
	lines := strings.SplitAfter(string(dump), "\n")

	t.Run("truncated", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "t.db")
		cut := strings.Join(lines[:len(lines)/2], "")
		_, err := ImportFile(ctx, dst, strings.NewReader(cut), nil, ImportOptions{})
		if !errors.Is(err, ErrBadExport) || !strings.Contains(err.Error(), "truncated") {
			t.Fatalf("truncated dump: %v", err)
		}
		db := openRW(t, dst)
		if in, _ := db.Info(ctx); in.Rows["checkpoints"] != 0 {
			t.Fatalf("a failed import left %d checkpoints", in.Rows["checkpoints"])
		}
	})
	t.Run("twice", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "t.db")
		if _, err := ImportFile(ctx, dst, bytes.NewReader(dump), nil, ImportOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := ImportFile(ctx, dst, bytes.NewReader(dump), nil, ImportOptions{})
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("second import: %v", err)
		}
	})
	t.Run("mode", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "t.db")
		o := DefaultOptions()
		db, err := Open(ctx, dst, &o) // full mode
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		_, err = ImportFile(ctx, dst, bytes.NewReader(dump), nil, ImportOptions{})
		if !errors.Is(err, ErrModeMismatch) {
			t.Fatalf("delta dump into a full file: %v", err)
		}
	})
	for name, input := range map[string]string{
		"empty":          "",
		"not a header":   `{"table":"checkpoints"}` + "\n",
		"unknown table":  lines[0] + `{"table":"nope"}` + "\n",
		"unknown column": lines[0] + `{"table":"thread_modes","thread_id":"a","mode":"full","every":1,"color":"red"}` + "\n",
		"missing column": lines[0] + `{"table":"thread_modes","thread_id":"a"}` + "\n",
		"bad value":      lines[0] + `{"table":"threads","thread_id":"a","assistant_id":"","user_id":"","display_name":"","status":"idle","metadata":{"$bin":"!!"},"pinned":0,"created_at":1,"updated_at":1}` + "\n",
		"wrong count":    lines[0] + `{"table":"end","rows":3}` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ImportFile(ctx, filepath.Join(t.TempDir(), "t.db"), strings.NewReader(input), nil, ImportOptions{})
			if !errors.Is(err, ErrBadExport) {
				t.Fatalf("got %v, want ErrBadExport", err)
			}
		})
	}
}
