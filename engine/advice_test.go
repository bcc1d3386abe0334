package engine

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine/admin"
)

// The advice in an error must work as printed: these tests read the call an
// error suggests out of its text, make it, and retry what failed.

var (
	adviceConvertFile   = regexp.MustCompile(`engine\.ConvertFile\(ctx, "((?:[^"\\]|\\.)*)", nil, "(\w+)", (\d+)\)`)
	adviceConvertThread = regexp.MustCompile(`db\.ConvertThread\(ctx, "((?:[^"\\]|\\.)*)", "(\w+)"\)`)
)

// followConvertFile runs the engine.ConvertFile call err suggests.
func followConvertFile(t *testing.T, err error) {
	t.Helper()
	m := adviceConvertFile.FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("no engine.ConvertFile call in %q", err)
	}
	path, uerr := strconv.Unquote(`"` + m[1] + `"`)
	k, _ := strconv.Atoi(m[3])
	if uerr != nil {
		t.Fatal(uerr)
	}
	if _, err := ConvertFile(bg, path, nil, channels.Mode(m[2]), k); err != nil {
		t.Fatalf("the suggested %s failed: %v", m[0], err)
	}
}

func TestModeMismatchAdviceWorks(t *testing.T) {
	full := func() *Options {
		o := DefaultOptions()
		o.Mode = channels.ModeFull
		return &o
	}
	delta := func(k int) *Options {
		o := DefaultOptions()
		o.Mode, o.SnapshotEvery = channels.ModeDelta, k
		return &o
	}
	writeFile := func(t *testing.T, o *Options) string {
		path := testPath(t, filepath.Join(t.TempDir(), "a file.db")) // a space: the path must be quoted
		db := openTest(t, path, o)
		mustCommit(t, db, "th", Step{Tasks: []TaskWrites{say("t", human("h1", "hi"))}})
		db.Close()
		return path
	}

	t.Run("open: delta file, full handle", func(t *testing.T) {
		path := writeFile(t, delta(4))
		_, err := Open(bg, path, full())
		var mm *ModeMismatchError
		if !errors.As(err, &mm) || !errors.Is(err, ErrModeMismatch) || mm.Op != "open" || mm.Mode != channels.ModeDelta || mm.Every != 4 || mm.WantMode != channels.ModeFull {
			t.Fatalf("err = %#v", err)
		}
		for _, s := range []string{"delta mode with K=4", "not full mode", "channels.ModeAuto", `Mode "delta" and SnapshotEvery 4`} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%q does not say %q", err, s)
			}
		}
		// The first advice: ModeAuto opens it.
		o := DefaultOptions()
		o.Mode = channels.ModeAuto
		openTest(t, path, &o).Close()
		// The second: the conversion, after which the same Open works.
		followConvertFile(t, err)
		openTest(t, path, full()).Close()
	})

	t.Run("open: other K", func(t *testing.T) {
		path := writeFile(t, delta(4))
		_, err := Open(bg, path, delta(10))
		if !strings.Contains(err.Error(), "not delta mode with K=10") {
			t.Fatalf("err = %v", err)
		}
		followConvertFile(t, err)
		openTest(t, path, delta(10)).Close()
	})

	t.Run("import: the export's K is not the file's", func(t *testing.T) {
		src := writeFile(t, delta(4))
		var dump bytes.Buffer
		db := openTest(t, src, delta(4))
		if _, err := db.Export(bg, &dump, admin.ExportOptions{}); err != nil {
			t.Fatal(err)
		}
		db.Close()
		dst := testPath(t, filepath.Join(t.TempDir(), "dst.db"))
		openTest(t, dst, delta(10)).Close()
		_, err := ImportFile(bg, dst, bytes.NewReader(dump.Bytes()), nil, admin.ImportOptions{})
		var mm *ModeMismatchError
		if !errors.As(err, &mm) || mm.Op != "import" || mm.Every != 10 || mm.WantEvery != 4 {
			t.Fatalf("err = %#v", err)
		}
		if !strings.Contains(err.Error(), "the export is in delta mode with K=4 and "+dst+" is in delta mode with K=10") {
			t.Fatalf("err = %v", err)
		}
		followConvertFile(t, err)
		if _, err := ImportFile(bg, dst, bytes.NewReader(dump.Bytes()), nil, admin.ImportOptions{}); err != nil {
			t.Fatalf("import after the suggested conversion: %v", err)
		}
	})

	t.Run("thread: a delta handle writes into a full thread", func(t *testing.T) {
		db := openTest(t, filepath.Join(t.TempDir(), "d.db"), delta(3))
		mustCommit(t, db, "th", Step{Tasks: []TaskWrites{say("t", human("h1", "hi"))}})
		if _, err := db.ConvertThread(bg, "th", channels.ModeFull); err != nil {
			t.Fatal(err)
		}
		_, err := db.Commit(bg, "th", Step{Tasks: []TaskWrites{say("t", human("h2", "again"))}})
		var mm *ModeMismatchError
		if !errors.As(err, &mm) || mm.Op != "thread" || mm.Thread != "th" || mm.Mode != channels.ModeFull {
			t.Fatalf("err = %#v", err)
		}
		m := adviceConvertThread.FindStringSubmatch(err.Error())
		if m == nil || m[1] != "th" {
			t.Fatalf("no db.ConvertThread call in %q", err)
		}
		if _, err := db.ConvertThread(bg, m[1], channels.Mode(m[2])); err != nil {
			t.Fatalf("the suggested %s failed: %v", m[0], err)
		}
		mustCommit(t, db, "th", Step{Tasks: []TaskWrites{say("t", human("h2", "again"))}})
	})

	t.Run("converted: another handle converted the file", func(t *testing.T) {
		// The thread's mode no longer matches this handle's because the
		// whole file was converted: the advice is to open it again, not to
		// convert the thread back (undoing the other handle's conversion).
		path := filepath.Join(t.TempDir(), "c.db")
		db := openTest(t, path, delta(3))
		mustCommit(t, db, "th", Step{Tasks: []TaskWrites{say("t", human("h1", "hi"))}})
		if _, err := ConvertFile(bg, testPath(t, path), nil, channels.ModeFull, 3); err != nil {
			t.Fatal(err)
		}
		for _, call := range []func() error{
			func() error {
				_, err := db.Commit(bg, "th", Step{Tasks: []TaskWrites{say("t", human("h2", "again"))}})
				return err
			},
			func() error { _, err := db.ConvertThread(bg, "th", channels.ModeDelta); return err },
		} {
			err := call()
			var mm *ModeMismatchError
			if !errors.As(err, &mm) || mm.Op != "converted" || mm.Mode != channels.ModeFull || mm.WantMode != channels.ModeDelta {
				t.Fatalf("err = %v", err)
			}
			if adviceConvertThread.MatchString(err.Error()) {
				t.Fatalf("the advice converts the thread back: %v", err)
			}
		}
	})

	t.Run("convert: a thread to delta in a full file", func(t *testing.T) {
		path := writeFile(t, nil)
		db := openTest(t, path, nil)
		_, err := db.ConvertThread(bg, "th", channels.ModeDelta)
		var mm *ModeMismatchError
		if !errors.As(err, &mm) || mm.Op != "convert" || mm.WantMode != channels.ModeDelta {
			t.Fatalf("err = %#v", err)
		}
		db.Close()
		followConvertFile(t, err)
		o := DefaultOptions()
		o.Mode = channels.ModeAuto
		db = openTest(t, path, &o)
		if got := db.Options().Mode; got != channels.ModeDelta {
			t.Fatalf("after the suggested conversion the file is in %s mode", got)
		}
	})
}

func TestReadOnlyUpgradeAdvice(t *testing.T) {
	sqliteOnly(t, "opens an SQLite file of schema version 1 and an empty file")
	ro := DefaultOptions()
	ro.ReadOnly, ro.Mode = true, channels.ModeAuto
	t.Run("schema v1", func(t *testing.T) {
		data, err := os.ReadFile(v1Fixture)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "old.db")
		os.WriteFile(path, data, 0o644)
		_, err = Open(bg, path, &ro)
		if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "schema version 1 and this build needs") || !strings.Contains(err.Error(), "without Options.ReadOnly") {
			t.Fatalf("err = %v", err)
		}
		rw := ro
		rw.ReadOnly = false
		openTest(t, path, &rw).Close()
		openTest(t, path, &ro).Close()
	})
	t.Run("empty file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "empty.db")
		os.WriteFile(path, nil, 0o644)
		_, err := Open(bg, path, &ro)
		if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "is empty") {
			t.Fatalf("err = %v", err)
		}
		if fi, _ := os.Stat(path); fi.Size() != 0 {
			t.Fatal("a read-only open wrote to the empty file")
		}
	})
}
