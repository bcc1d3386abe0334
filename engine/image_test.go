package engine

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
)

// TestImageRoundTrip: Image copies a file's database (a WAL-mode file with
// commits in its log) into bytes on every build; OpenImage opens them as a
// private copy that reads the same state, takes writes the file never
// sees, and Image of the copy opens again. Bytes that are not an SQLite
// database are ErrNotAgentstate. A PostgreSQL database has no image.
func TestImageRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, filepath.Join(t.TempDir(), "img.db"), nil)
	say := func(db *DB, text string) {
		t.Helper()
		_, err := db.Commit(ctx, "t1", Step{Tasks: []TaskWrites{{TaskID: "n", Writes: []ChannelWrite{{Channel: "messages",
			Value: []codec.Message{{Type: codec.Human, Content: text}}}}}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	texts := func(db *DB) []string {
		t.Helper()
		st, err := db.State(ctx, Config{ThreadID: "t1"})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range st.Values["messages"].([]codec.Message) {
			out = append(out, m.Text())
		}
		return out
	}
	say(db, "one")
	say(db, "two")
	img, err := db.Image(ctx)
	if onPG() {
		if !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("Image on PostgreSQL: %v, want ErrInvalidArgument", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	cp, err := OpenImage(ctx, img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	if got := texts(cp); len(got) != 2 || got[0] != "one" || got[1] != "two" {
		t.Fatalf("the image reads %q, want [one two]", got)
	}
	say(cp, "three")
	if got := texts(cp); len(got) != 3 {
		t.Fatalf("the copy after a commit reads %q", got)
	}
	if got := texts(db); len(got) != 2 {
		t.Fatalf("a commit to the copy reached the file: %q", got)
	}
	if rep, err := cp.Verify(ctx, admin.VerifyOptions{}); err != nil || !rep.OK {
		t.Fatalf("the copy does not verify: %+v %v", rep.Problems, err)
	}
	img2, err := cp.Image(ctx)
	if err != nil {
		t.Fatal(err)
	}
	again, err := OpenImage(ctx, img2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := texts(again); len(got) != 3 || got[2] != "three" {
		t.Fatalf("the copy's image reads %q", got)
	}
	for _, bad := range [][]byte{nil, []byte("not a database"), make([]byte, 4096)} {
		if _, err := OpenImage(ctx, bad, nil); !errors.Is(err, ErrNotAgentstate) {
			t.Errorf("OpenImage(%d bytes): %v, want ErrNotAgentstate", len(bad), err)
		}
	}
}
