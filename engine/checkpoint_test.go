package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var bg = context.Background()

func jb(s string) codec.Blob { return codec.Blob{Type: "json", Data: []byte(s)} }

// cp builds a checkpoint whose values are JSON strings and whose versions
// are given as "channel=version" pairs.
func cp(id string, versions map[string]string, values map[string]string) Checkpoint {
	c := Checkpoint{V: 4, ID: id, TS: "2026-11-29T00:00:00Z", ChannelVersions: versions,
		ChannelValues: map[string]codec.Blob{}, VersionsSeen: map[string]map[string]string{"node": {"a": "1"}}}
	for k, v := range values {
		c.ChannelValues[k] = jb(v)
	}
	return c
}

func mustPut(t testing.TB, db *DB, parent Config, c Checkpoint, md Metadata, newVersions map[string]string) Config {
	t.Helper()
	got, err := db.Put(bg, parent, c, md, newVersions)
	if err != nil {
		t.Fatalf("Put %s: %v", c.ID, err)
	}
	return got
}

func mustGet(t testing.TB, db *DB, cfg Config) Tuple {
	t.Helper()
	tup, err := db.GetTuple(bg, cfg)
	if err != nil {
		t.Fatalf("GetTuple %+v: %v", cfg, err)
	}
	return tup
}

func collect(t testing.TB, db *DB, o ListOptions) []Tuple {
	t.Helper()
	var out []Tuple
	for tup, err := range db.List(bg, o) {
		if err != nil {
			t.Fatalf("List %+v: %v", o, err)
		}
		out = append(out, tup)
	}
	return out
}

func ids(ts []Tuple) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Config.CheckpointID)
	}
	return out
}

func TestPutRoundTrip(t *testing.T) {
	db := openTest(t, Memory, nil)
	root := Config{ThreadID: "t1"}
	c1 := cp("0001", map[string]string{"a": "1", "b": "1"}, map[string]string{"a": `"x"`, "b": `[1]`})
	c1.UpdatedChannels = []string{"a", "b"}
	md := Metadata{"source": "input", "step": int64(-1), "parents": map[string]any{}, "run_id": "r1", "nested": map[string]any{"k": "v"}}
	got := mustPut(t, db, root, c1, md, map[string]string{"a": "1", "b": "1"})
	if want := (Config{ThreadID: "t1", CheckpointID: "0001"}); got != want {
		t.Fatalf("Put returned %+v, want %+v", got, want)
	}
	tup := mustGet(t, db, got)
	want := Tuple{Config: got, Checkpoint: c1, Metadata: md, PendingWrites: []PendingWrite{}}
	if diff := cmp.Diff(want, tup); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
	// updated_channels absent stays absent.
	c2 := cp("0002", map[string]string{"a": "1", "b": "1"}, nil)
	mustPut(t, db, got, c2, nil, nil)
	if tup := mustGet(t, db, Config{ThreadID: "t1"}); tup.Checkpoint.UpdatedChannels != nil {
		t.Fatalf("updated_channels = %#v, want absent", tup.Checkpoint.UpdatedChannels)
	}
}

func TestOnlyChangedChannelsAreStored(t *testing.T) {
	db := openTest(t, Memory, nil)
	c1 := mustPut(t, db, Config{ThreadID: "t"}, cp("01", map[string]string{"a": "1", "b": "1"}, map[string]string{"a": `"a1"`, "b": `"b1"`}), nil, map[string]string{"a": "1", "b": "1"})
	// The full values are passed again, as LangGraph does, but only a is new.
	c2 := mustPut(t, db, c1, cp("02", map[string]string{"a": "2", "b": "1"}, map[string]string{"a": `"a2"`, "b": `"b1"`}), nil, map[string]string{"a": "2"})
	// c is added; a and b come from two different ancestors.
	c3 := mustPut(t, db, c2, cp("03", map[string]string{"a": "2", "b": "1", "c": "1"}, map[string]string{"c": `"c1"`}), nil, map[string]string{"c": "1"})
	// b is removed from the checkpoint.
	c4 := mustPut(t, db, c3, cp("04", map[string]string{"a": "2", "c": "1"}, nil), nil, nil)
	in, _ := db.Info(bg)
	if in.Rows["blobs"] != 4 {
		t.Fatalf("blobs rows = %d, want 4 (a1, b1, a2, c1)", in.Rows["blobs"])
	}
	want := map[Config]map[string]codec.Blob{
		c1: {"a": jb(`"a1"`), "b": jb(`"b1"`)},
		c2: {"a": jb(`"a2"`), "b": jb(`"b1"`)},
		c3: {"a": jb(`"a2"`), "b": jb(`"b1"`), "c": jb(`"c1"`)},
		c4: {"a": jb(`"a2"`), "c": jb(`"c1"`)},
	}
	for cfg, vals := range want {
		if diff := cmp.Diff(vals, mustGet(t, db, cfg).Checkpoint.ChannelValues); diff != "" {
			t.Errorf("%s values (-want +got):\n%s", cfg.CheckpointID, diff)
		}
	}
	if p := mustGet(t, db, c3).ParentConfig; p == nil || *p != c2 {
		t.Fatalf("parent of 03 = %+v, want %+v", p, c2)
	}
}

func TestPutRefusesBadInput(t *testing.T) {
	db := openTest(t, Memory, nil)
	c1 := mustPut(t, db, Config{ThreadID: "t"}, cp("05", map[string]string{"a": "1"}, map[string]string{"a": "1"}), nil, map[string]string{"a": "1"})
	cases := []struct {
		name   string
		parent Config
		c      Checkpoint
		nv     map[string]string
		want   error
	}{
		{"missing thread", Config{}, cp("06", nil, nil), nil, ErrInvalidArgument},
		{"missing id", c1, cp("", nil, nil), nil, ErrInvalidArgument},
		{"unknown parent", Config{ThreadID: "t", CheckpointID: "04x"}, cp("09", nil, nil), nil, ErrNotFound},
		{"id not after parent", c1, cp("04", nil, nil), nil, ErrInvalidArgument},
		{"id equal to parent", c1, cp("05", nil, nil), nil, ErrInvalidArgument},
		{"empty channel", c1, cp("06", map[string]string{"": "1"}, nil), map[string]string{"": "1"}, ErrInvalidArgument},
		{"new version not in checkpoint", c1, cp("06", map[string]string{"a": "1"}, nil), map[string]string{"a": "2"}, ErrInvalidArgument},
		{"untyped blob", c1, Checkpoint{ID: "06", ChannelVersions: map[string]string{"a": "2"}, ChannelValues: map[string]codec.Blob{"a": {}}}, map[string]string{"a": "2"}, ErrInvalidArgument},
		{"version reused with another value", c1, cp("06", map[string]string{"a": "1"}, map[string]string{"a": "2"}), map[string]string{"a": "1"}, ErrConflict},
	}
	before, _ := db.Info(bg)
	for _, tc := range cases {
		if _, err := db.Put(bg, tc.parent, tc.c, nil, tc.nv); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	after, _ := db.Info(bg)
	if diff := cmp.Diff(before.Rows, after.Rows); diff != "" {
		t.Fatalf("refused puts changed the file (-before +after):\n%s", diff)
	}
}

func TestNamespacesAreSeparate(t *testing.T) {
	db := openTest(t, Memory, nil)
	root := mustPut(t, db, Config{ThreadID: "t"}, cp("01", map[string]string{"a": "1"}, map[string]string{"a": `"root"`}), nil, map[string]string{"a": "1"})
	sub := mustPut(t, db, Config{ThreadID: "t", CheckpointNS: "child:1"}, cp("01", map[string]string{"a": "1"}, map[string]string{"a": `"sub"`}), nil, map[string]string{"a": "1"})
	if got := mustGet(t, db, root).Checkpoint.ChannelValues["a"]; string(got.Data) != `"root"` {
		t.Fatalf("root value = %s", got.Data)
	}
	if got := mustGet(t, db, sub).Checkpoint.ChannelValues["a"]; string(got.Data) != `"sub"` {
		t.Fatalf("subgraph value = %s", got.Data)
	}
	if got := mustGet(t, db, Config{ThreadID: "t", CheckpointNS: "child:1"}).Config; got != sub {
		t.Fatalf("latest of subgraph = %+v", got)
	}
}

func TestPutWrites(t *testing.T) {
	db := openTest(t, Memory, nil)
	c1 := mustPut(t, db, Config{ThreadID: "t"}, cp("01", nil, nil), nil, nil)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.PutWrites(bg, c1, []Write{{"b", jb("1")}, {"a", jb("2")}}, "task-b", "~1"))
	must(db.PutWrites(bg, c1, []Write{{"a", jb("3")}}, "task-a", "~1"))
	must(db.PutWrites(bg, c1, []Write{{"x", jb("0")}}, "task-z", ""))
	// A retry of task-b with other values is ignored: first write wins.
	must(db.PutWrites(bg, c1, []Write{{"b", jb("9")}, {"a", jb("9")}}, "task-b", "~1"))
	// Special channels: fixed indexes, and an all-special call replaces.
	must(db.PutWrites(bg, c1, []Write{{ChannelInterrupt, jb(`"first"`)}}, "task-a", "~1"))
	must(db.PutWrites(bg, c1, []Write{{ChannelInterrupt, jb(`"second"`)}, {ChannelError, jb(`"boom"`)}}, "task-a", "~1"))
	want := []PendingWrite{
		{TaskID: "task-z", Channel: "x", Value: jb("0"), Idx: 0},
		{TaskID: "task-a", Channel: ChannelInterrupt, Value: jb(`"second"`), TaskPath: "~1", Idx: -3},
		{TaskID: "task-a", Channel: ChannelError, Value: jb(`"boom"`), TaskPath: "~1", Idx: -1},
		{TaskID: "task-a", Channel: "a", Value: jb("3"), TaskPath: "~1", Idx: 0},
		{TaskID: "task-b", Channel: "b", Value: jb("1"), TaskPath: "~1", Idx: 0},
		{TaskID: "task-b", Channel: "a", Value: jb("2"), TaskPath: "~1", Idx: 1},
	}
	if diff := cmp.Diff(want, mustGet(t, db, c1).PendingWrites); diff != "" {
		t.Fatalf("pending writes (-want +got):\n%s", diff)
	}
	// Cleared on the next checkpoint: the new head has no pending writes.
	c2 := mustPut(t, db, c1, cp("02", nil, nil), nil, nil)
	if pw := mustGet(t, db, Config{ThreadID: "t"}).PendingWrites; len(pw) != 0 || mustGet(t, db, Config{ThreadID: "t"}).Config != c2 {
		t.Fatalf("head pending writes = %v", pw)
	}
	// Bad input.
	for name, err := range map[string]error{
		"unknown checkpoint": db.PutWrites(bg, Config{ThreadID: "t", CheckpointID: "zz"}, []Write{{"a", jb("1")}}, "t1", ""),
		"no checkpoint id":   db.PutWrites(bg, Config{ThreadID: "t"}, []Write{{"a", jb("1")}}, "t1", ""),
		"no task id":         db.PutWrites(bg, c1, []Write{{"a", jb("1")}}, "", ""),
		"empty channel":      db.PutWrites(bg, c1, []Write{{"", jb("1")}}, "t1", ""),
	} {
		if err == nil || !(errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalidArgument)) {
			t.Errorf("%s: err = %v, want a typed error", name, err)
		}
	}
}

func TestGetTupleMissing(t *testing.T) {
	db := openTest(t, Memory, nil)
	if _, err := db.GetTuple(bg, Config{ThreadID: "nope"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("latest of empty thread: %v", err)
	}
	mustPut(t, db, Config{ThreadID: "t"}, cp("01", nil, nil), nil, nil)
	if _, err := db.GetTuple(bg, Config{ThreadID: "t", CheckpointID: "02"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	if _, err := db.GetTuple(bg, Config{}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("missing thread: %v", err)
	}
}

// listFixture: thread t1 with 4 root checkpoints and 1 subgraph checkpoint,
// thread t2 with 2; metadata varies for filters.
func listFixture(t *testing.T) *DB {
	db := openTest(t, Memory, nil)
	var parent = Config{ThreadID: "t1"}
	for i, md := range []Metadata{
		{"source": "input", "step": int64(-1), "run_id": "r1", "score": int64(1)},
		{"source": "loop", "step": int64(0), "run_id": "r1", "flag": true, "user": map[string]any{"name": "ann", "tier": "pro"}},
		{"source": "loop", "step": int64(1), "run_id": "r2", "flag": nil, "score": 1.0},
		{"source": "update", "step": int64(2), "run_id": "r2", "custom-key": "x", "user": map[string]any{"name": "bob"}},
	} {
		parent = mustPut(t, db, parent, cp(fmt.Sprintf("t1-%d", i), nil, nil), md, nil)
	}
	mustPut(t, db, Config{ThreadID: "t1", CheckpointNS: "sub:1"}, cp("t1-s", nil, nil), Metadata{"source": "loop"}, nil)
	p2 := mustPut(t, db, Config{ThreadID: "t2"}, cp("t2-0", nil, nil), Metadata{"source": "input"}, nil)
	mustPut(t, db, p2, cp("t2-1", nil, nil), Metadata{"source": "loop", "step": int64(0)}, nil)
	if err := db.PutWrites(bg, Config{ThreadID: "t1", CheckpointID: "t1-3"}, []Write{{"a", jb("1")}}, "task", ""); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestList(t *testing.T) {
	db := listFixture(t)
	root := ""
	cases := []struct {
		name string
		o    ListOptions
		want []string
	}{
		{"all threads", ListOptions{}, []string{"t2-1", "t2-0", "t1-s", "t1-3", "t1-2", "t1-1", "t1-0"}},
		{"one thread, all namespaces", ListOptions{ThreadID: "t1"}, []string{"t1-s", "t1-3", "t1-2", "t1-1", "t1-0"}},
		{"one thread, root namespace", ListOptions{ThreadID: "t1", Namespace: &root}, []string{"t1-3", "t1-2", "t1-1", "t1-0"}},
		{"filter single", ListOptions{Filter: map[string]any{"source": "loop"}}, []string{"t2-1", "t1-s", "t1-2", "t1-1"}},
		{"filter multiple", ListOptions{Filter: map[string]any{"source": "loop", "run_id": "r2"}}, []string{"t1-2"}},
		{"filter nested", ListOptions{Filter: map[string]any{"user.name": "ann"}}, []string{"t1-1"}},
		{"filter nested object", ListOptions{Filter: map[string]any{"user": map[string]any{"name": "bob"}}}, []string{"t1-3"}},
		{"filter custom key", ListOptions{Filter: map[string]any{"custom-key": "x"}}, []string{"t1-3"}},
		{"filter no match", ListOptions{Filter: map[string]any{"source": "fork"}}, nil},
		{"1 is not true", ListOptions{Filter: map[string]any{"flag": int64(1)}}, nil},
		{"true is true", ListOptions{Filter: map[string]any{"flag": true}}, []string{"t1-1"}},
		{"null is not missing", ListOptions{Filter: map[string]any{"flag": nil}}, []string{"t1-2"}},
		{"numbers by value", ListOptions{Filter: map[string]any{"score": 1.0}}, []string{"t1-2", "t1-0"}},
		{"step 0 is not false", ListOptions{Filter: map[string]any{"step": false}}, nil},
		{"before", ListOptions{ThreadID: "t1", Before: "t1-2"}, []string{"t1-1", "t1-0"}},
		{"limit", ListOptions{ThreadID: "t1", Limit: 2}, []string{"t1-s", "t1-3"}},
		{"limit and before", ListOptions{ThreadID: "t1", Namespace: &root, Before: "t1-3", Limit: 2}, []string{"t1-2", "t1-1"}},
	}
	for _, tc := range cases {
		if diff := cmp.Diff(tc.want, ids(collect(t, db, tc.o))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	got := collect(t, db, ListOptions{ThreadID: "t1", Limit: 2})
	if len(got[1].PendingWrites) != 1 || got[1].PendingWrites[0].Channel != "a" {
		t.Fatalf("list lost pending writes: %+v", got[1].PendingWrites)
	}
	if got[1].ParentConfig == nil || got[1].ParentConfig.CheckpointID != "t1-2" {
		t.Fatalf("list lost the parent config: %+v", got[1].ParentConfig)
	}
}

func TestListPagesAcrossQueryPages(t *testing.T) {
	db := openTest(t, Memory, nil)
	parent := Config{ThreadID: "long"}
	var want []string
	for i := range 3*listPage + 5 {
		id := fmt.Sprintf("%05d", i)
		parent = mustPut(t, db, parent, cp(id, nil, nil), Metadata{"even": i%2 == 0}, nil)
		want = append(want, id)
	}
	slices.Reverse(want)
	if diff := cmp.Diff(want, ids(collect(t, db, ListOptions{ThreadID: "long"}))); diff != "" {
		t.Fatalf("paged listing (-want +got):\n%s", diff)
	}
	if got := ids(collect(t, db, ListOptions{ThreadID: "long", Limit: listPage + 3})); !slices.Equal(got, want[:listPage+3]) {
		t.Fatalf("limit across pages: %d ids", len(got))
	}
	var evens []string
	for _, id := range want {
		if n, _ := strconv.Atoi(id); n%2 == 0 {
			evens = append(evens, id)
		}
	}
	if diff := cmp.Diff(evens, ids(collect(t, db, ListOptions{ThreadID: "long", Filter: map[string]any{"even": true}}))); diff != "" {
		t.Fatalf("filtered paging (-want +got):\n%s", diff)
	}
}

func TestListRefusesHostileFilterKeys(t *testing.T) {
	db := listFixture(t)
	before, _ := db.Info(bg)
	for _, key := range []string{
		`x') OR '1'='1`, `a"]'); DROP TABLE checkpoints; --`, `$.source`, `source..x`, ``, `.source`, `source.`,
		`a b`, "a\x00b", `source[0]`, `*`, strings.Repeat("k", 65) + ".x", strings.Repeat("k.", 128) + "k",
	} {
		for _, err := range db.List(bg, ListOptions{Filter: map[string]any{key: "loop"}}) {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("key %q: err = %v, want ErrInvalidArgument", key, err)
			}
			break
		}
	}
	after, _ := db.Info(bg)
	if diff := cmp.Diff(before.Rows, after.Rows); diff != "" {
		t.Fatalf("file changed (-before +after):\n%s", diff)
	}
	// A hostile value is only a value.
	if got := collect(t, db, ListOptions{Filter: map[string]any{"source": `x') OR '1'='1`}}); len(got) != 0 {
		t.Fatalf("hostile value matched %d rows", len(got))
	}
}

// TestFilterMatchesNumbersByValue: 1 equals 1.0, integers compare
// exactly (2^53+1 is not 2^53, which float64 cannot tell apart), and a
// number never equals a boolean or a string.
func TestFilterMatchesNumbersByValue(t *testing.T) {
	md := map[string]any{"n": int64(1<<53 + 1), "one": int64(1), "flag": true, "s": "1", "nested": map[string]any{"f": 2.5}}
	for _, tc := range []struct {
		path []string
		v    any
		want bool
	}{
		{[]string{"one"}, 1.0, true},
		{[]string{"n"}, int64(1<<53 + 1), true},
		{[]string{"n"}, int64(1 << 53), false},
		{[]string{"one"}, true, false},
		{[]string{"s"}, int64(1), false},
		{[]string{"flag"}, true, true},
		{[]string{"nested", "f"}, 2.5, true},
		{[]string{"missing"}, nil, false},
	} {
		if got := matchTerms(md, []filterTerm{{Path: tc.path, Value: tc.v}}); got != tc.want {
			t.Errorf("%v = %v: matched %v, want %v", tc.path, tc.v, got, tc.want)
		}
	}
}

func TestDeleteThread(t *testing.T) {
	db := listFixture(t)
	if err := db.DeleteThread(bg, "t1"); err != nil {
		t.Fatal(err)
	}
	if got := ids(collect(t, db, ListOptions{})); !slices.Equal(got, []string{"t2-1", "t2-0"}) {
		t.Fatalf("after delete: %v", got)
	}
	in, _ := db.Info(bg)
	if in.Rows["writes"] != 0 {
		t.Fatalf("writes left: %d", in.Rows["writes"])
	}
}

func TestDeleteForRuns(t *testing.T) {
	db := listFixture(t)
	// r1 is the start of t1: deleting it would orphan r2's checkpoints.
	if err := db.DeleteForRuns(bg, []string{"r1"}, admin.DeleteRunsOptions{}); !errors.Is(err, ErrConflict) {
		t.Fatalf("deleting an ancestor run: %v, want ErrConflict", err)
	}
	if err := db.DeleteForRuns(bg, []string{"r2"}, admin.DeleteRunsOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := ids(collect(t, db, ListOptions{ThreadID: "t1"})); !slices.Equal(got, []string{"t1-s", "t1-1", "t1-0"}) {
		t.Fatalf("after deleting r2: %v", got)
	}
	in, _ := db.Info(bg)
	if in.Rows["writes"] != 0 {
		t.Fatalf("writes of deleted checkpoints left: %d", in.Rows["writes"])
	}
	if err := db.DeleteForRuns(bg, []string{"r1", "r2"}, admin.DeleteRunsOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := ids(collect(t, db, ListOptions{ThreadID: "t1"})); !slices.Equal(got, []string{"t1-s"}) {
		t.Fatalf("after deleting r1: %v", got)
	}
}

// With Reroot (LangGraph's semantics), deleting an ancestor run keeps its
// descendants: the first survivor becomes a root, its own checkpoint and
// writes read as before, and nothing else of the thread changes.
func TestDeleteForRunsReroot(t *testing.T) {
	db := listFixture(t)
	before, err := db.GetTuple(bg, Config{ThreadID: "t1", CheckpointID: "t1-3"})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteForRuns(bg, []string{"r1"}, admin.DeleteRunsOptions{Reroot: true}); err != nil {
		t.Fatalf("deleting an ancestor run with Reroot: %v", err)
	}
	if got := ids(collect(t, db, ListOptions{ThreadID: "t1"})); !slices.Equal(got, []string{"t1-s", "t1-3", "t1-2"}) {
		t.Fatalf("after deleting r1: %v", got)
	}
	root, err := db.GetTuple(bg, Config{ThreadID: "t1", CheckpointID: "t1-2"})
	if err != nil {
		t.Fatal(err)
	}
	if root.ParentConfig != nil {
		t.Fatalf("the first survivor still names a parent: %+v", root.ParentConfig)
	}
	after, err := db.GetTuple(bg, Config{ThreadID: "t1", CheckpointID: "t1-3"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Fatalf("a surviving checkpoint changed (-before +after):\n%s", diff)
	}
	if got := ids(collect(t, db, ListOptions{ThreadID: "t2"})); !slices.Equal(got, []string{"t2-1", "t2-0"}) {
		t.Fatalf("another thread changed: %v", got)
	}
	if rep, err := db.Verify(bg, admin.VerifyOptions{}); err != nil || !rep.OK {
		t.Fatalf("verify after the reroot: %+v %v", rep.Problems, err)
	}
}

func TestCopyThread(t *testing.T) {
	db := listFixture(t)
	src := collect(t, db, ListOptions{ThreadID: "t1"})
	if err := db.CopyThread(bg, "t1", "t9"); err != nil {
		t.Fatal(err)
	}
	dst := collect(t, db, ListOptions{ThreadID: "t9"})
	for i := range src {
		src[i].Config.ThreadID = "t9"
		if src[i].ParentConfig != nil {
			src[i].ParentConfig.ThreadID = "t9"
		}
	}
	if diff := cmp.Diff(src, dst); diff != "" {
		t.Fatalf("copy differs (-src +dst):\n%s", diff)
	}
	if n := len(collect(t, db, ListOptions{ThreadID: "t1"})); n != 5 {
		t.Fatalf("source changed: %d checkpoints", n)
	}
	if err := db.CopyThread(bg, "t1", "t2"); !errors.Is(err, ErrConflict) {
		t.Fatalf("copy onto a thread with checkpoints: %v", err)
	}
	if err := db.CopyThread(bg, "none", "t8"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("copy of a missing thread: %v", err)
	}
}

func TestPrune(t *testing.T) {
	db := listFixture(t)
	rep, err := db.Prune(bg, []string{"t1"}, admin.PruneKeepLatest)
	if err != nil {
		t.Fatal(err)
	}
	if rep.CheckpointsRemoved != 3 || rep.CheckpointsKept != 2 {
		t.Fatalf("report %+v", rep)
	}
	got := collect(t, db, ListOptions{ThreadID: "t1"})
	if diff := cmp.Diff([]string{"t1-s", "t1-3"}, ids(got)); diff != "" {
		t.Fatalf("kept (-want +got):\n%s", diff)
	}
	if len(got[1].PendingWrites) != 1 || got[1].ParentConfig != nil {
		t.Fatalf("latest lost its writes or kept a dangling parent: %+v", got[1])
	}
	if n := len(collect(t, db, ListOptions{ThreadID: "t2"})); n != 2 {
		t.Fatalf("other thread touched: %d", n)
	}
	if _, err := db.Prune(bg, []string{"t2"}, admin.PruneDelete); err != nil {
		t.Fatal(err)
	}
	if n := len(collect(t, db, ListOptions{ThreadID: "t2"})); n != 0 {
		t.Fatalf("delete strategy left %d", n)
	}
	if _, err := db.Prune(bg, []string{"t1"}, "everything"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("unknown strategy: %v", err)
	}
}

// deltaThread builds a chain where channel m is stored only at the
// snapshot checkpoints listed, and every step writes one message.
//
//	c0 (snapshot "s0") -> c1 -> c2 -> c3 (snapshot "s3") -> c4 -> c5
func deltaThread(t *testing.T, db *DB, thread string) []Config {
	var cfgs []Config
	parent := Config{ThreadID: thread}
	for i := range 6 {
		v := fmt.Sprintf("%02d", i+1)
		c := cp(fmt.Sprintf("c%d", i), map[string]string{"m": v}, nil)
		if i == 0 || i == 3 {
			c.ChannelValues["m"] = jb(fmt.Sprintf(`"s%d"`, i))
		}
		parent = mustPut(t, db, parent, c, nil, map[string]string{"m": v})
		cfgs = append(cfgs, parent)
		// Two tasks write to m (out of order), one to another channel.
		for _, task := range []string{"tb", "ta"} {
			if err := db.PutWrites(bg, parent, []Write{{"m", jb(fmt.Sprintf(`"w%d%s"`, i, task))}, {"other", jb("0")}}, task, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	return cfgs
}

func hw(cpIdx int, task string, idx int) PendingWrite {
	return PendingWrite{TaskID: task, Channel: "m", Value: jb(fmt.Sprintf(`"w%d%s"`, cpIdx, task)), Idx: idx}
}

func TestDeltaChannelHistory(t *testing.T) {
	for _, cacheBytes := range []int64{0, 1 << 20} {
		t.Run(fmt.Sprintf("cache=%d", cacheBytes), func(t *testing.T) {
			o := DefaultOptions()
			o.HistoryCacheBytes = cacheBytes
			db := openTest(t, Memory, &o)
			cfgs := deltaThread(t, db, "t")
			seed := func(s string) *codec.Blob { b := jb(s); return &b }
			cases := []struct {
				name   string
				target Config
				want   History
			}{
				{"root has no history", cfgs[0], History{Writes: []PendingWrite{}}},
				{"seed is the parent, its writes included", cfgs[1], History{Seed: seed(`"s0"`), Writes: []PendingWrite{hw(0, "ta", 0), hw(0, "tb", 0)}}},
				{"walk back to the nearest snapshot", cfgs[3], History{Seed: seed(`"s0"`), Writes: []PendingWrite{
					hw(0, "ta", 0), hw(0, "tb", 0), hw(1, "ta", 0), hw(1, "tb", 0), hw(2, "ta", 0), hw(2, "tb", 0)}}},
				{"newer snapshot wins", cfgs[5], History{Seed: seed(`"s3"`), Writes: []PendingWrite{
					hw(3, "ta", 0), hw(3, "tb", 0), hw(4, "ta", 0), hw(4, "tb", 0)}}},
				{"latest", Config{ThreadID: "t"}, History{Seed: seed(`"s3"`), Writes: []PendingWrite{
					hw(3, "ta", 0), hw(3, "tb", 0), hw(4, "ta", 0), hw(4, "tb", 0)}}},
			}
			for range 2 { // the second round is served by the cache when enabled
				for _, tc := range cases {
					got, err := db.DeltaChannelHistory(bg, tc.target, []string{"m"})
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(tc.want, got["m"]); diff != "" {
						t.Errorf("%s (-want +got):\n%s", tc.name, diff)
					}
				}
			}
			// Several channels at once; a channel never stored walks to the root.
			got, err := db.DeltaChannelHistory(bg, cfgs[2], []string{"m", "other"})
			if err != nil {
				t.Fatal(err)
			}
			if len(got["other"].Writes) != 4 || got["other"].Seed != nil || got["m"].Seed == nil {
				t.Fatalf("multi-channel: %+v", got)
			}
			if _, err := db.DeltaChannelHistory(bg, Config{ThreadID: "t", CheckpointID: "zz"}, []string{"m"}); !errors.Is(err, ErrNotFound) {
				t.Fatalf("unknown target: %v", err)
			}
			if cacheBytes > 0 {
				st := db.CacheStats()
				if st.Hits == 0 || st.Entries == 0 || st.Bytes <= 0 {
					t.Fatalf("cache unused: %+v", st)
				}
			}
		})
	}
}

// TestForksNeverReplayAbandonedWrites: after time travel to c1, the new
// branch sees only writes sealed on its own path.
func TestForksNeverReplayAbandonedWrites(t *testing.T) {
	db := openTest(t, Memory, nil)
	put := func(parent Config, id, v string, snapshot string) Config {
		c := cp(id, map[string]string{"m": v}, nil)
		if snapshot != "" {
			c.ChannelValues["m"] = jb(snapshot)
		}
		return mustPut(t, db, parent, c, nil, map[string]string{"m": v})
	}
	write := func(at Config, task, val string) {
		if err := db.PutWrites(bg, at, []Write{{"m", jb(val)}}, task, ""); err != nil {
			t.Fatal(err)
		}
	}
	hist := func(at Config) []string {
		h, err := db.DeltaChannelHistory(bg, at, []string{"m"})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		if h["m"].Seed != nil {
			out = append(out, "seed:"+string(h["m"].Seed.Data))
		}
		for _, w := range h["m"].Writes {
			out = append(out, string(w.Value.Data))
		}
		return out
	}
	c0 := put(Config{ThreadID: "t"}, "c0", "1", "[]")
	write(c0, "t", "hi")
	c1 := put(c0, "c1", "2", "")
	write(c1, "t", "answer-A") // the answer we will abandon
	a2 := put(c1, "c2a", "3", "")
	write(a2, "t", "after-A")
	a3 := put(a2, "c3a", "4", "")
	// Time travel: a fork of c1 that copies c1's state consumes nothing...
	f := put(c1, "c2f", "3f", "")
	if diff := cmp.Diff([]string{"seed:[]", "hi"}, hist(f)); diff != "" {
		t.Fatalf("fork copying its parent (-want +got):\n%s", diff)
	}
	// ...a second child after new writes gets only those writes.
	write(c1, "t2", "answer-B")
	b2 := put(c1, "c2b", "3b", "")
	if diff := cmp.Diff([]string{"seed:[]", "hi", "answer-B"}, hist(b2)); diff != "" {
		t.Fatalf("second child (-want +got):\n%s", diff)
	}
	// Continue on the new branch; the old branch reads as before.
	write(b2, "t", "after-B")
	b3 := put(b2, "c3b", "4b", "")
	if diff := cmp.Diff([]string{"seed:[]", "hi", "answer-B", "after-B"}, hist(b3)); diff != "" {
		t.Fatalf("continued fork (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"seed:[]", "hi", "answer-A", "after-A"}, hist(a3)); diff != "" {
		t.Fatalf("original branch (-want +got):\n%s", diff)
	}
	// Three-way branching from c1.
	write(c1, "t3", "answer-C")
	c2c := put(c1, "c2c", "3c", "")
	if diff := cmp.Diff([]string{"seed:[]", "hi", "answer-C"}, hist(c2c)); diff != "" {
		t.Fatalf("third branch (-want +got):\n%s", diff)
	}
	// c1's pending writes, as LangGraph reports them, are all of them.
	if n := len(mustGet(t, db, c1).PendingWrites); n != 3 {
		t.Fatalf("c1 pending writes = %d, want 3", n)
	}
}

func TestHistoryCacheFollowsTheHead(t *testing.T) {
	db := openTest(t, Memory, nil)
	parent := mustPut(t, db, Config{ThreadID: "t"}, func() Checkpoint {
		c := cp("c000", map[string]string{"m": "000"}, nil)
		c.ChannelValues["m"] = jb("[]")
		return c
	}(), nil, map[string]string{"m": "000"})
	if _, err := db.DeltaChannelHistory(bg, parent, []string{"m"}); err != nil {
		t.Fatal(err)
	}
	walks := db.CacheStats().FullWalks
	for i := 1; i <= 30; i++ {
		if err := db.PutWrites(bg, parent, []Write{{"m", jb(fmt.Sprint(i))}}, "t", ""); err != nil {
			t.Fatal(err)
		}
		v := fmt.Sprintf("%03d", i)
		parent = mustPut(t, db, parent, cp("c"+v, map[string]string{"m": v}, nil), nil, map[string]string{"m": v})
		h, err := db.DeltaChannelHistory(bg, parent, []string{"m"})
		if err != nil {
			t.Fatal(err)
		}
		if len(h["m"].Writes) != i {
			t.Fatalf("step %d: %d writes", i, len(h["m"].Writes))
		}
	}
	if st := db.CacheStats(); st.FullWalks != walks || st.Extensions < 30 {
		t.Fatalf("the head was not served by extension: %+v", st)
	}
	if err := db.DeleteThread(bg, "t"); err != nil {
		t.Fatal(err)
	}
	if st := db.CacheStats(); st.Entries != 0 || st.Bytes != 0 {
		t.Fatalf("delete did not purge the cache: %+v", st)
	}
}

func TestHistoryCacheIsBoundedByBytes(t *testing.T) {
	o := DefaultOptions()
	o.HistoryCacheBytes = 4096
	db := openTest(t, Memory, &o)
	cfgs := deltaThread(t, db, "t")
	for range 3 {
		for _, c := range cfgs {
			if _, err := db.DeltaChannelHistory(bg, c, []string{"m", "other"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	st := db.CacheStats()
	if st.Bytes > o.HistoryCacheBytes || st.Evictions == 0 {
		t.Fatalf("cache over budget or never evicted: %+v", st)
	}
}

func TestPruneKeepsWhatDeltaChannelsNeed(t *testing.T) {
	db := openTest(t, Memory, nil)
	cfgs := deltaThread(t, db, "t")
	head := cfgs[len(cfgs)-1]
	before, err := db.DeltaChannelHistory(bg, head, []string{"m"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := db.Prune(bg, []string{"t"}, admin.PruneKeepLatest)
	if err != nil {
		t.Fatal(err)
	}
	// c5 needs c4's and c3's sealed writes and c3's snapshot; c0..c2 go.
	if diff := cmp.Diff([]string{"c5", "c4", "c3"}, ids(collect(t, db, ListOptions{ThreadID: "t"}))); diff != "" {
		t.Fatalf("kept (-want +got):\n%s (report %+v)", diff, rep)
	}
	after, err := db.DeltaChannelHistory(bg, head, []string{"m"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Fatalf("prune changed the head's history (-before +after):\n%s", diff)
	}
	if p := mustGet(t, db, cfgs[3]).ParentConfig; p != nil {
		t.Fatalf("oldest kept checkpoint still points at a deleted parent: %+v", p)
	}
}

// A pending write is stored packed when that saves an eighth (writes.enc
// 1) and read back as the caller's bytes, whatever they are: too short to
// pack, compressible, incompressible, empty. An export writes each value
// unpacked, an import packs it again, and a packed write whose bytes are
// damaged is ErrCorrupt to a read and a problem to verify.
func TestPendingWritesStoredPacked(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "w.db")
	db := openTest(t, path, nil)
	cfg := putVersion(t, db, "t", 0, []byte(`["first"]`))

	rnd := rand.New(rand.NewPCG(7, 12))
	noise := make([]byte, 3000)
	for i := range noise {
		noise[i] = byte(rnd.Uint32())
	}
	msg := []byte(`{"lc":1,"type":"constructor","id":["langchain_core","messages","AIMessage"],"kwargs":{"content":"` +
		strings.Repeat("the weather in the notes of the agent ", 20) + `","tool_calls":[],"response_metadata":{}}}`)
	values := [][]byte{{}, []byte(`"short"`), msg, noise, bytes.Repeat([]byte{0}, codec.PackMin), append([]byte{codec.FormatV1S2}, msg...)}
	var writes []Write
	for _, v := range values {
		writes = append(writes, Write{Channel: "messages", Value: codec.Blob{Type: "json", Data: v}})
	}
	if err := db.PutWrites(ctx, cfg, writes, "task", ""); err != nil {
		t.Fatal(err)
	}
	got := func(db *DB) [][]byte {
		t.Helper()
		tp, err := db.GetTuple(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		out := make([][]byte, len(tp.PendingWrites))
		for _, w := range tp.PendingWrites {
			out[w.Idx] = w.Value.Data
		}
		return out
	}
	if diff := cmp.Diff(values, got(db), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("pending writes read back (-put +got):\n%s", diff)
	}
	encs := func(db *DB) []int64 {
		t.Helper()
		var out []int64
		err := db.read(ctx, func(c *conn) error {
			return c.query("SELECT enc FROM writes ORDER BY idx", nil, func(st row) error {
				out = append(out, st.Int64(0))
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// Only the message and the zeros save an eighth; the value that starts
	// like an envelope is the caller's and is packed like any other.
	want := []int64{encPlain, encPlain, encPacked, encPlain, encPacked, encPacked}
	if diff := cmp.Diff(want, encs(db)); diff != "" {
		t.Fatalf("writes.enc (-want +got):\n%s", diff)
	}

	dump := exportOf(t, db, "")
	if !bytes.Contains(dump, []byte(base64.StdEncoding.EncodeToString(msg))) {
		t.Fatal("the export does not hold the message's own bytes")
	}
	for _, line := range bytes.Split(dump, []byte("\n")) {
		if bytes.HasPrefix(line, []byte(`{"table":"writes"`)) && bytes.Contains(line, []byte(`"enc"`)) {
			t.Fatalf("the export names a write's storage encoding: %s", line)
		}
	}
	dst := filepath.Join(t.TempDir(), "copy.db")
	if _, err := ImportFile(ctx, testPath(t, dst), bytes.NewReader(dump), nil, admin.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	cp := openRW(t, dst)
	if diff := cmp.Diff(values, got(cp), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("pending writes after export and import (-put +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, encs(cp)); diff != "" {
		t.Fatalf("writes.enc after import (-want +got):\n%s", diff)
	}
	if !bytes.Equal(dump, exportOf(t, cp, "")) {
		t.Fatal("the import's export differs from the source's")
	}

	// Damage the packed message.
	err := cp.write(ctx, func(c *conn) error {
		return c.exec("UPDATE writes SET data = substr(data, 1, 20) WHERE idx = 2")
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cp.GetTuple(ctx, cfg); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("GetTuple of a damaged packed write: err = %v, want ErrCorrupt", err)
	}
	rep, err := cp.Verify(ctx, admin.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || len(rep.Problems) == 0 || !strings.Contains(fmt.Sprint(rep.Problems), "do not read") {
		t.Fatalf("verify of a damaged packed write: %+v", rep.Problems)
	}
}
