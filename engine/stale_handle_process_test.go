//go:build !js

// Native only: it converts the file from a child process (GOOS=js starts
// none).

package engine

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine/admin"
)

// TestConvertUnderOpenHandle: a handle open while another process converts
// the file (both directions) must not create threads in its old mode: every
// call that creates a thread (Commit of a new thread, Import, a Batch's
// NewThread, which package langgraph's import uses)
// fails with ErrModeMismatch, and the file verifies with one mode.
func TestConvertUnderOpenHandle(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process; skipped with -short")
	}
	for _, c := range []struct {
		from channels.Mode
		op   string
		to   channels.Mode
	}{{channels.ModeDelta, "tofull", channels.ModeFull}, {channels.ModeFull, "todelta", channels.ModeDelta}} {
		t.Run(string(c.from)+"-to-"+string(c.to), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "conv.db")
			o := DefaultOptions()
			o.Mode, o.SnapshotEvery = c.from, 4
			a := openTest(t, path, &o)
			w := relWork{seed: 3}
			if _, err := a.Commit(rctx, "old", w.step("old", 1, "")); err != nil {
				t.Fatal(err)
			}
			// A dump in the handle's (old) mode, from another file.
			src := openTest(t, filepath.Join(dir, "src.db"), &o)
			if _, err := src.Commit(rctx, "dumped", w.step("dumped", 1, "")); err != nil {
				t.Fatal(err)
			}
			var dump bytes.Buffer
			if _, err := src.Export(rctx, &dump, admin.ExportOptions{}); err != nil {
				t.Fatal(err)
			}

			m := startProc(t, maintainEnv, fmt.Sprintf("%s|0|-|%s", path, c.op))
			m.wait(t, time.Minute)

			calls := map[string]error{}
			_, calls["Commit of a new thread"] = a.Commit(rctx, "new", w.step("new", 1, ""))
			_, calls["Commit of an old thread"] = a.Commit(rctx, "old", w.step("old", 2, ""))
			_, calls["Import"] = a.Import(rctx, bytes.NewReader(dump.Bytes()), admin.ImportOptions{})
			calls["Batch.NewThread"] = a.Batch(rctx, func(b *Batch) error { return b.NewThread("imported") })
			for call, err := range calls {
				if !errors.Is(err, ErrModeMismatch) {
					t.Errorf("%s on a %s handle after the file was converted to %s: %v, want ErrModeMismatch", call, c.from, c.to, err)
				}
			}
			a.Close()

			ro := readOnly(t, path)
			if ro.Options().Mode != c.to {
				t.Fatalf("file mode %s, want %s", ro.Options().Mode, c.to)
			}
			rep, err := ro.Verify(rctx, admin.VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK {
				t.Fatalf("the file does not verify: %v", rep.Problems)
			}
			var modes []string
			ro.read(rctx, func(c *conn) error {
				return c.query(`SELECT thread_id || ':' || mode FROM thread_modes ORDER BY thread_id`, nil, func(r row) error {
					modes = append(modes, r.Text(0))
					return nil
				})
			})
			if want := []string{"old:" + string(c.to)}; fmt.Sprint(modes) != fmt.Sprint(want) {
				t.Fatalf("thread modes %v, want %v", modes, want)
			}
		})
	}
}
