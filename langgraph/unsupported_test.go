package langgraph

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/ncruces/go-sqlite3"
)

// editBlob rewrites one BLOB of a SQLite file through fn.
func editBlob(t *testing.T, path, table, column, where string, fn func([]byte) []byte) {
	t.Helper()
	c, err := sqlite3.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, _, err := c.Prepare(`SELECT rowid, ` + column + ` FROM ` + table + ` WHERE ` + where)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		id   int64
		data []byte
	}
	var rows []row
	for st.Step() {
		rows = append(rows, row{st.ColumnInt64(0), st.ColumnBlob(1, nil)})
	}
	st.Close()
	if len(rows) == 0 {
		t.Fatalf("no row of %s where %s", table, where)
	}
	for _, r := range rows {
		up, _, err := c.Prepare(`UPDATE ` + table + ` SET ` + column + ` = ? WHERE rowid = ?`)
		if err != nil {
			t.Fatal(err)
		}
		up.BindBlob(1, fn(r.data))
		up.BindInt64(2, r.id)
		if err := up.Exec(); err != nil {
			t.Fatal(err)
		}
		up.Close()
	}
}

// seededDst is a destination that already holds a thread, so that a failed
// import has something to leave alone.
func seededDst(t *testing.T) (*engine.DB, string) {
	t.Helper()
	db := openDst(t, channels.ModeDelta, 3)
	if _, err := db.Commit(context.Background(), "mine", engine.Step{Tasks: []engine.TaskWrites{{TaskID: "t", Writes: []engine.ChannelWrite{
		{Channel: engine.MessagesChannel, Value: codec.Message{ID: "m1", Type: codec.Human, Content: "keep me"}}}}}}); err != nil {
		t.Fatal(err)
	}
	return db, fingerprint(t, db)
}

// wantUnsupported checks that the import failed naming each problem, and
// left the destination as it was.
func wantUnsupported(t *testing.T, db *engine.DB, before string, err error, want ...Problem) {
	t.Helper()
	var ue *UnsupportedError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnsupportedSource) {
		t.Fatalf("import: %v, want an UnsupportedError", err)
	}
	if len(ue.Problems) != len(want) {
		t.Fatalf("problems %v, want %d", ue.Problems, len(want))
	}
	for i, w := range want {
		p := ue.Problems[i]
		if p.ThreadID != w.ThreadID || p.CheckpointNS != w.CheckpointNS || p.CheckpointID != w.CheckpointID || p.Channel != w.Channel || !strings.Contains(p.Reason, w.Reason) {
			t.Errorf("problem %d: %+v, want %+v", i, p, w)
		}
		if !strings.Contains(err.Error(), p.String()) {
			t.Errorf("the error does not list %s:\n%v", p, err)
		}
	}
	if fingerprint(t, db) != before {
		t.Fatal("a failed import changed the destination")
	}
}

const (
	typesCheckpoint = "1f1ed183-c0e4-6b65-8001-d4a5306ffdee" // the first checkpoint of thread types holding datetimes
	chatCheckpoint  = "1f1ed183-baa1-68b8-bfff-4093cb657e51" // thread chat's input checkpoint
	// The first checkpoints of threads delta and delta-exit that show their
	// DeltaChannel "notes" (a snapshot, or snapshot counters).
	deltaFirst     = "1f1ed183-be5f-6730-bfff-ce3d946d2d9d"
	deltaExitFirst = "1f1ed183-c087-6f47-8001-8601a74c54bf"
)

func TestLangGraphUnsupportedInput(t *testing.T) {
	ctx := context.Background()
	datetime := []byte{0xc7, 0x43, 0x03, 0x94, 0xa8}
	t.Run("unknown extension type", func(t *testing.T) {
		src := copyFile(t, filepath.Join(pyDir, "langgraph-py.sqlite"))
		editBlob(t, src, "checkpoints", "checkpoint", "checkpoint_id = '"+typesCheckpoint+"'", func(b []byte) []byte {
			i := bytes.Index(b, datetime)
			b[i+2] = 0x2a // extension 42
			return b
		})
		db, before := seededDst(t)
		_, err := Import(ctx, db, src, pyOptions)
		wantUnsupported(t, db, before, err, Problem{ThreadID: "types", CheckpointID: typesCheckpoint, Channel: "payload", Reason: "unknown msgpack extension type 42"})
	})
	t.Run("truncated checkpoint", func(t *testing.T) {
		src := copyFile(t, filepath.Join(pyDir, "langgraph-py.sqlite"))
		editBlob(t, src, "checkpoints", "checkpoint", "checkpoint_id = '"+typesCheckpoint+"'", func(b []byte) []byte {
			return b[:bytes.Index(b, datetime)+20]
		})
		db, before := seededDst(t)
		_, err := Import(ctx, db, src, pyOptions)
		wantUnsupported(t, db, before, err, Problem{ThreadID: "types", CheckpointID: typesCheckpoint, Channel: "payload", Reason: "truncated"})
	})
	t.Run("truncated write", func(t *testing.T) {
		src := copyFile(t, filepath.Join(pyDir, "langgraph-py.sqlite"))
		editBlob(t, src, "writes", "value", "checkpoint_id = '"+chatCheckpoint+"' AND channel = 'messages'", func(b []byte) []byte {
			return b[:len(b)-7]
		})
		db, before := seededDst(t)
		_, err := Import(ctx, db, src, pyOptions)
		wantUnsupported(t, db, before, err, Problem{ThreadID: "chat", CheckpointID: chatCheckpoint, Channel: "messages", Reason: "truncated"})
	})
	t.Run("foreign table layout", func(t *testing.T) {
		src := copyFile(t, filepath.Join(pyDir, "langgraph-py.sqlite"))
		c, err := sqlite3.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Exec(`ALTER TABLE writes RENAME COLUMN channel TO chan`); err != nil {
			t.Fatal(err)
		}
		c.Close()
		db, before := seededDst(t)
		_, err = Import(ctx, db, src, pyOptions)
		if !errors.Is(err, ErrUnsupportedSource) || !strings.Contains(err.Error(), "table writes has no column channel") || !strings.Contains(err.Error(), src) {
			t.Fatalf("import: %v", err)
		}
		if fingerprint(t, db) != before {
			t.Fatal("a failed import changed the destination")
		}
		// An agentstate file is no LangGraph file either.
		if _, err := Import(ctx, db, db.Path(), Options{Into: IntoMessages}); !errors.Is(err, ErrUnsupportedSource) || !strings.Contains(err.Error(), "not a LangGraph SqliteSaver file") {
			t.Fatalf("an agentstate file as source: %v", err)
		}
	})
	t.Run("serde type", func(t *testing.T) {
		src := copyFile(t, jsFixture)
		c, err := sqlite3.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Exec(`UPDATE writes SET type = 'pickle' WHERE thread_id = 'fork' AND channel = 'messages'`); err != nil {
			t.Fatal(err)
		}
		c.Close()
		db, before := seededDst(t)
		_, err = Import(ctx, db, src, Options{Into: IntoMessages})
		var ue *UnsupportedError
		if !errors.As(err, &ue) || len(ue.Problems) != 1 || ue.Problems[0].ThreadID != "fork" || !strings.Contains(ue.Problems[0].Reason, `serde type "pickle"`) {
			t.Fatalf("import: %v", err)
		}
		if fingerprint(t, db) != before {
			t.Fatal("a failed import changed the destination")
		}
	})
}

// Every unsupported thread is listed, not only the first; with
// SkipUnsupported the others import and the skipped ones are reported.
func TestLangGraphSkipUnsupported(t *testing.T) {
	ctx := context.Background()
	src := copyFile(t, filepath.Join(pyDir, "langgraph-py.sqlite"))
	editBlob(t, src, "writes", "value", "checkpoint_id = '"+chatCheckpoint+"' AND channel = 'messages'", func(b []byte) []byte {
		return b[:len(b)-7]
	})
	db, before := seededDst(t)
	// Without a reducer for its DeltaChannel "notes", thread delta is
	// unsupported too.
	_, err := Import(ctx, db, src, Options{Into: IntoMessages})
	wantUnsupported(t, db, before, err,
		Problem{ThreadID: "chat", CheckpointID: chatCheckpoint, Channel: "messages", Reason: "truncated"},
		Problem{ThreadID: "delta", CheckpointID: deltaFirst, Channel: "notes", Reason: "--delta-reducer notes=concat"},
		Problem{ThreadID: "delta-exit", CheckpointID: deltaExitFirst, Channel: "notes", Reason: "--delta-reducer notes=concat"})
	var ue *UnsupportedError
	errors.As(err, &ue)
	if ue.Importable != 5 || !strings.Contains(err.Error(), "3 of 8 threads") {
		t.Fatalf("importable %d: %v", ue.Importable, err)
	}

	rep, err := Import(ctx, db, src, Options{Into: IntoMessages, SkipUnsupported: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Threads != 5 || len(rep.Skipped) != 3 || rep.Skipped[0].ThreadID != "chat" || rep.Skipped[1].ThreadID != "delta" {
		t.Fatalf("report %+v", rep)
	}
	var threads []string
	ts, err := db.ListThreads(ctx, admin.ThreadListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ts {
		threads = append(threads, s.ThreadID)
	}
	slices.Sort(threads)
	if want := []string{"fanout", "fanout-pending", "fork", "mine", "sub", "types"}; !slices.Equal(threads, want) {
		t.Fatalf("threads %v, want %v", threads, want)
	}
	vr, err := db.Verify(ctx, admin.VerifyOptions{})
	if err != nil || !vr.OK {
		t.Fatalf("verify: %v %v", err, vr.Problems)
	}
	checked, diffs, err := Compare(ctx, db, src, Options{Into: IntoMessages})
	if err != nil || len(diffs) > 0 || checked != 101-19-29-4 {
		t.Fatalf("compare: %d %v %v", checked, err, diffs)
	}
}

func TestLangGraphOptions(t *testing.T) {
	db := openDst(t, channels.ModeFull, 3)
	for _, o := range []Options{
		{DeltaReducers: map[string]Reducer{"notes": "sum"}},
		{DeltaReducers: map[string]Reducer{engine.MessagesChannel: Concat}},
	} {
		if _, err := Import(context.Background(), db, jsFixture, o); !errors.Is(err, engine.ErrInvalidArgument) {
			t.Errorf("%v: %v", o.DeltaReducers, err)
		}
	}
}

// Writes of a checkpoint the source lacks belong to nothing: counted, not
// imported, and the rest imports.
func TestLangGraphOrphanWrites(t *testing.T) {
	src := copyFile(t, jsFixture)
	c, err := sqlite3.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Exec(`INSERT INTO writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value)
		VALUES ('chat', '', 'gone', 't', 0, 'x', 'json', '1'), ('chat', '', 'gone', 't', 1, 'y', 'json', '2')`); err != nil {
		t.Fatal(err)
	}
	c.Close()
	db := openDst(t, channels.ModeFull, 3)
	rep, err := Import(context.Background(), db, src, Options{Into: IntoMessages})
	if err != nil || rep.OrphanWrites != 2 || rep.Writes != 93 {
		t.Fatalf("import: %v %+v", err, rep)
	}
}

// A parent that does not sort before its child cannot be represented; a
// parent the source lacks makes its thread unsupported, naming the
// checkpoint and the parent (it was made a root silently, and the CLI said
// every checkpoint read as in the source), unless OrphansAsRoots: then the
// child is a root, listed in the report.
func TestLangGraphParents(t *testing.T) {
	ctx := context.Background()
	src := copyFile(t, jsFixture)
	c, err := sqlite3.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	// In thread fork, the first checkpoint's child names a parent that is
	// not in the file; in thread chat, the last checkpoint becomes the
	// parent of the second.
	err = c.Exec(`UPDATE checkpoints SET parent_checkpoint_id = 'zz-missing' WHERE thread_id = 'fork' AND checkpoint_id =
		(SELECT checkpoint_id FROM checkpoints WHERE thread_id = 'fork' ORDER BY checkpoint_id LIMIT 1 OFFSET 1);
	UPDATE checkpoints SET parent_checkpoint_id = (SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = 'chat')
		WHERE thread_id = 'chat' AND checkpoint_id = (SELECT checkpoint_id FROM checkpoints WHERE thread_id = 'chat' ORDER BY checkpoint_id LIMIT 1 OFFSET 1)`)
	if err != nil {
		t.Fatal(err)
	}
	var orphan string
	st, _, err := c.Prepare(`SELECT checkpoint_id FROM checkpoints WHERE thread_id = 'fork' AND parent_checkpoint_id = 'zz-missing'`)
	if err != nil {
		t.Fatal(err)
	}
	for st.Step() {
		orphan = st.ColumnText(0)
	}
	st.Close()
	c.Close()
	for _, into := range []Into{IntoMessages, IntoProtocol} {
		t.Run(string(into), func(t *testing.T) {
			db, before := seededDst(t)
			_, err := Import(ctx, db, src, Options{Into: into})
			var ue *UnsupportedError
			if !errors.As(err, &ue) {
				t.Fatalf("import without OrphansAsRoots: %v, want an UnsupportedError", err)
			}
			var found bool
			for _, p := range ue.Problems {
				if p.ThreadID == "fork" && p.CheckpointID == orphan && strings.Contains(p.Reason, `parent "zz-missing" is not in the source`) {
					found = true
				}
			}
			if !found {
				t.Fatalf("the problems do not name checkpoint %s and its missing parent: %v", orphan, err)
			}
			if fingerprint(t, db) != before {
				t.Fatal("a refused import changed the destination")
			}

			db = openDst(t, channels.ModeDelta, 3)
			o := Options{Into: into, SkipUnsupported: true, OrphansAsRoots: true}
			rep, err := Import(ctx, db, src, o)
			if err != nil {
				t.Fatal(err)
			}
			want := []Orphan{{ThreadID: "fork", CheckpointID: orphan, Parent: "zz-missing"}}
			if rep.ParentsMissing != 1 || !slices.Equal(rep.Orphans, want) || len(rep.Skipped) != 1 || rep.Skipped[0].ThreadID != "chat" || !strings.Contains(rep.Skipped[0].Reason, "does not sort after its parent") {
				t.Fatalf("report %+v", rep)
			}
			if vr, err := db.Verify(ctx, admin.VerifyOptions{}); err != nil || !vr.OK {
				t.Fatalf("verify: %v %v", err, vr.Problems)
			}
			if _, diffs, err := Compare(ctx, db, src, o); err != nil || len(diffs) > 0 {
				t.Fatalf("compare: %v %v", err, diffs)
			}
		})
	}
}

// Names the engine refuses make the thread unsupported before any of it is
// written.
func TestLangGraphNames(t *testing.T) {
	src := copyFile(t, jsFixture)
	c, err := sqlite3.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Exec(`UPDATE writes SET channel = 'bad' || char(10) || 'name' WHERE thread_id = 'sub' AND channel = 'messages'`); err != nil {
		t.Fatal(err)
	}
	c.Close()
	db, before := seededDst(t)
	_, err = Import(context.Background(), db, src, Options{Into: IntoMessages})
	var ue *UnsupportedError
	if !errors.As(err, &ue) || len(ue.Problems) != 1 || ue.Problems[0].ThreadID != "sub" || !strings.Contains(ue.Problems[0].Reason, "control characters") {
		t.Fatalf("import: %v", err)
	}
	if fingerprint(t, db) != before {
		t.Fatal("a failed import changed the destination")
	}
}

// TestLangGraphThreadIDs: a thread id the engine cannot store (not UTF-8,
// or empty) makes its own thread unsupported, named in an escaped form, in
// both forms: without SkipUnsupported the import lists it and writes
// nothing; with it the other threads import, verify and compare clean,
// and the report lists it as skipped. (Before, one such id failed the whole
// import, with the flag too.)
func TestLangGraphThreadIDs(t *testing.T) {
	ctx := context.Background()
	src := copyFile(t, filepath.Join(pyDir, "langgraph-py.sqlite"))
	c, err := sqlite3.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Exec(`UPDATE checkpoints SET thread_id = CAST(x'6368ff61' AS TEXT) WHERE thread_id = 'chat';
		UPDATE writes SET thread_id = CAST(x'6368ff61' AS TEXT) WHERE thread_id = 'chat';
		UPDATE checkpoints SET thread_id = '' WHERE thread_id = 'fork';
		UPDATE writes SET thread_id = '' WHERE thread_id = 'fork'`)
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	const bad = "ch\xffa"
	for _, into := range []Into{IntoProtocol, IntoMessages} {
		t.Run(string(into), func(t *testing.T) {
			o := Options{Into: into}
			if into == IntoMessages {
				o.DeltaReducers = pyOptions.DeltaReducers
			}
			db, before := seededDst(t)
			_, err := Import(ctx, db, src, o)
			wantUnsupported(t, db, before, err,
				Problem{ThreadID: "", Reason: "the thread id is empty"},
				Problem{ThreadID: bad, Reason: `the thread id "ch\xffa" is not valid UTF-8`})
			if !utf8.ValidString(err.Error()) {
				t.Errorf("the error holds the id's raw bytes: %q", err.Error())
			}

			o.SkipUnsupported = true
			db, _ = seededDst(t)
			rep, err := Import(ctx, db, src, o)
			if err != nil {
				t.Fatalf("import with SkipUnsupported: %v", err)
			}
			if len(rep.Imported) != 6 || len(rep.Skipped) != 2 || rep.Skipped[0].ThreadID != "" || rep.Skipped[1].ThreadID != bad {
				t.Fatalf("imported %q, skipped %v", rep.Imported, rep.Skipped)
			}
			for _, p := range rep.Skipped {
				if !utf8.ValidString(p.String()) || !utf8.ValidString(p.Reason) {
					t.Errorf("a skipped thread is named by its raw bytes: %q", p.String())
				}
			}
			if vr, err := db.Verify(ctx, admin.VerifyOptions{}); err != nil || !vr.OK {
				t.Fatalf("verify: %v %v", err, vr.Problems)
			}
			n, diffs, err := Compare(ctx, db, src, o)
			if err != nil || len(diffs) > 0 || n == 0 {
				t.Fatalf("compare: %d checked, %v %v", n, err, diffs)
			}
		})
	}
}

// A cancelled import writes nothing, wherever it stops.
func TestLangGraphCancelled(t *testing.T) {
	src := copyFile(t, filepath.Join(pyDir, "langgraph-py.sqlite"))
	for _, after := range []int{0, 1, 30, 100} {
		db, before := seededDst(t)
		ctx, cancel := context.WithCancel(context.Background())
		if after == 0 {
			cancel()
		}
		_, err := Import(ctx, db, src, Options{Into: IntoMessages, DeltaReducers: pyOptions.DeltaReducers, Progress: func(done, total int) {
			if done == after {
				cancel()
			}
		}})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled after %d checkpoints: %v", after, err)
		}
		if fingerprint(t, db) != before {
			t.Fatalf("cancelled after %d checkpoints: the destination changed", after)
		}
	}
}

// A value past the engine's limits makes its thread unsupported before any
// of it is written.
func TestLangGraphLimits(t *testing.T) {
	src := copyFile(t, jsFixture)
	c, err := sqlite3.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := c.Prepare(`INSERT INTO writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value)
		SELECT thread_id, checkpoint_ns, checkpoint_id, 'big', 0, 'blob', 'bytes', ? FROM checkpoints WHERE thread_id = 'fork' LIMIT 1`)
	if err != nil {
		t.Fatal(err)
	}
	st.BindZeroBlob(1, engine.MaxValueBytes+1)
	if err := st.Exec(); err != nil {
		t.Fatal(err)
	}
	st.Close()
	c.Close()
	db, before := seededDst(t)
	_, err = Import(context.Background(), db, src, Options{Into: IntoMessages})
	var ue *UnsupportedError
	if !errors.As(err, &ue) || len(ue.Problems) != 1 || ue.Problems[0].ThreadID != "fork" || ue.Problems[0].Channel != "blob" || !strings.Contains(ue.Problems[0].Reason, "MaxValueBytes") {
		t.Fatalf("import: %v", err)
	}
	if fingerprint(t, db) != before {
		t.Fatal("a failed import changed the destination")
	}
}
