package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/engine/records"
	"github.com/google/go-cmp/cmp"
)

func exportOf(t *testing.T, db *DB, thread string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := db.Export(context.Background(), &buf, admin.ExportOptions{ThreadID: thread}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestExportImportRoundTripIsByteIdentical(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []channels.Mode{channels.ModeFull, channels.ModeDelta} {
		t.Run(string(mode), func(t *testing.T) {
			path, cps := opsFixture(t, mode)
			src := openRW(t, path)
			first := exportOf(t, src, "")
			for _, table := range []string{"thread_modes", "checkpoints", "blobs", "writes", "threads", "runs", "event_seqs", "events", "store_items"} {
				if !bytes.Contains(first, []byte(`{"table":"`+table+`"`)) {
					t.Errorf("export has no %s row", table)
				}
			}
			dst := filepath.Join(t.TempDir(), "copy.db")
			rep, err := ImportFile(ctx, testPath(t, dst), bytes.NewReader(first), nil, admin.ImportOptions{})
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
	path, _ := opsFixture(t, channels.ModeDelta)
	dump := exportOf(t, openRW(t, path), "")
	lines := strings.SplitAfter(string(dump), "\n")

	t.Run("truncated", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "t.db")
		cut := strings.Join(lines[:len(lines)/2], "")
		_, err := ImportFile(ctx, testPath(t, dst), strings.NewReader(cut), nil, admin.ImportOptions{})
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
		if _, err := ImportFile(ctx, testPath(t, dst), bytes.NewReader(dump), nil, admin.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := ImportFile(ctx, testPath(t, dst), bytes.NewReader(dump), nil, admin.ImportOptions{})
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("second import: %v", err)
		}
	})
	t.Run("mode", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "t.db")
		o := DefaultOptions()
		db, err := Open(ctx, testPath(t, dst), &o) // full mode
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		_, err = ImportFile(ctx, testPath(t, dst), bytes.NewReader(dump), nil, admin.ImportOptions{})
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
			_, err := ImportFile(ctx, testPath(t, filepath.Join(t.TempDir(), "t.db")), strings.NewReader(input), nil, admin.ImportOptions{})
			if !errors.Is(err, ErrBadExport) {
				t.Fatalf("got %v, want ErrBadExport", err)
			}
		})
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestExportHonoursItsContext: an export cancelled part way returns the
// context's error at once, having written part of the file. The first item
// is nested 40 maps deep: the transcoder before took time that doubled with
// each level (24 levels: 23.6 s), never looked at the context, and never
// finished this one.
func TestExportHonoursItsContext(t *testing.T) {
	ctx := context.Background()
	db, _ := openRec(t, nil)
	if err := db.Store().Put(ctx, []string{"a"}, "deep", nestMaps(40).(map[string]any)); err != nil {
		t.Fatal(err)
	}
	var ops []records.StoreOp
	for i := range 3000 {
		ops = append(ops, records.PutOp{Namespace: []string{"b"}, Key: fmt.Sprint(i), Value: map[string]any{"text": strings.Repeat("w", 1000)}})
	}
	if _, err := db.Store().Batch(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	full, err := db.Export(ctx, &all, admin.ExportOptions{})
	if err != nil || full.Total != 3001 {
		t.Fatalf("export: %d rows, %v", full.Total, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var got int
	rep, err := db.Export(cctx, writerFunc(func(p []byte) (int, error) {
		cancel() // the first buffer out: the header and the first rows
		got += len(p)
		return len(p), nil
	}), admin.ExportOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled export: %v", err)
	}
	if rep.Total >= full.Total/2 || got >= all.Len()/2 {
		t.Fatalf("cancelled export went on: %d of %d rows, %d of %d bytes", rep.Total, full.Total, got, all.Len())
	}
}

// lazyDump is an export whose second line is n bytes long, made as it is
// read: no test allocates the line.
type lazyDump struct {
	head   string
	n      int64
	read   int64
	sentTo int
}

func (d *lazyDump) Read(p []byte) (int, error) {
	if d.sentTo < len(d.head) {
		k := copy(p, d.head[d.sentTo:])
		d.sentTo += k
		return k, nil
	}
	if d.read >= d.n {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), d.n-d.read))
	for i := range k {
		p[i] = 'x'
	}
	d.read += int64(k)
	return k, nil
}

// TestImportBoundsEachLine: a 2 GiB line is refused after the value bound,
// naming its line, with memory that does not grow with the line. Before,
// import read a line whole (a 2 GB line: 10.5 GB resident before a clean
// refusal).
func TestImportBoundsEachLine(t *testing.T) {
	ctx := context.Background()
	header := fmt.Sprintf(`{"table":"agentstate","format":%d,"schema_version":%d,"mode":"full","snapshot_every":10}`+"\n", ExportFormat, SchemaVersion)
	for name, row := range map[string]string{
		"a long string": `{"table":"store_items","namespace":"a","key":"k","created_at":1,"updated_at":1,"value":{"v":"`,
		"long spaces":   `{"table":"store_items",` + strings.Repeat(" ", 1000),
	} {
		t.Run(name, func(t *testing.T) {
			d := &lazyDump{head: header + row, n: 2 << 30}
			if name == "long spaces" {
				bigUnderRace(t)
				d.head = header + `{"table":"store_items","key":`
				// Spaces cost no memory: the line bound ends them.
				d.n = MaxImportLineBytes + 4<<20
			}
			path := testPath(t, filepath.Join(t.TempDir(), "i.db"))
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := ImportFile(ctx, path, &spaceOrX{d, name == "long spaces"}, nil, admin.ImportOptions{})
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrBadExport) || !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "line 2") {
				t.Fatalf("got %v, want ErrBadExport and ErrTooLarge naming line 2", err)
			}
			if d.read > MaxImportLineBytes+1<<20 {
				t.Fatalf("read %d bytes of the line", d.read)
			}
			t.Logf("read %d MiB, allocated %d MiB", d.read>>20, (after.TotalAlloc-before.TotalAlloc)>>20)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 8*MaxRowBytes {
				t.Fatalf("allocated %d bytes; the bound is a line's values (%d)", grew, MaxRowBytes)
			}
			db := openRW(t, path)
			if in, _ := db.Info(ctx); in.Rows["store_items"] != 0 {
				t.Fatal("a refused import stored rows")
			}
		})
	}
}

// spaceOrX makes lazyDump's filler spaces instead of x.
type spaceOrX struct {
	d      *lazyDump
	spaces bool
}

func (s *spaceOrX) Read(p []byte) (int, error) {
	inHead := s.d.sentTo < len(s.d.head)
	n, err := s.d.Read(p)
	if s.spaces && !inHead {
		for i := range n {
			p[i] = ' '
		}
	}
	return n, err
}
