package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/engine/records"
	"github.com/google/go-cmp/cmp"
)

func threadIDs(ts []records.Thread) []string {
	out := []string{}
	for _, th := range ts {
		out = append(out, th.ThreadID)
	}
	return out
}

func TestThreadCreateGetUpdate(t *testing.T) {
	db, clk := openRec(t, nil)
	th := db.Threads()
	alice := User("alice")
	t0 := clk.Now()
	got, err := th.Create(rctx, alice, records.NewThread{ThreadID: "t1", AssistantID: "lead", DisplayName: "first", Metadata: map[string]any{"team": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	want := records.Thread{ThreadID: "t1", AssistantID: "lead", UserID: "alice", DisplayName: "first", Status: records.ThreadIdle,
		Metadata: map[string]any{"team": "x"}, CreatedAt: t0, UpdatedAt: t0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("create (-want +got):\n%s", diff)
	}
	if _, err := th.Create(rctx, User("bob"), records.NewThread{ThreadID: "t1"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("duplicate id: %v", err)
	}
	gen, err := th.Create(rctx, alice, records.NewThread{})
	if err != nil || len(gen.ThreadID) != 36 {
		t.Fatalf("generated id %q: %v", gen.ThreadID, err)
	}

	clk.Add(time.Second)
	if err := th.SetDisplayName(rctx, alice, "t1", "renamed"); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Second)
	if err := th.SetStatus(rctx, alice, "t1", records.ThreadBusy); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Second)
	if err := th.MergeMetadata(rctx, alice, "t1", map[string]any{"pinned": true, "n": 1}, false); err != nil {
		t.Fatal(err)
	}
	got, _ = th.Get(rctx, alice, "t1")
	want.DisplayName, want.Status, want.UpdatedAt = "renamed", records.ThreadBusy, t0.Add(2*time.Second)
	want.Metadata = map[string]any{"team": "x", "pinned": true, "n": int64(1)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("after updates without touch (-want +got):\n%s", diff)
	}
	if err := th.MergeMetadata(rctx, alice, "t1", map[string]any{"n": nil}, true); err != nil {
		t.Fatal(err)
	}
	got, _ = th.Get(rctx, alice, "t1")
	want.Metadata["n"], want.UpdatedAt = nil, clk.Now()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("after touching merge (-want +got):\n%s", diff)
	}
	if err := th.SetStatus(rctx, alice, "t1", "running"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("bad status: %v", err)
	}
	if err := th.Delete(rctx, alice, "t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := th.Get(rctx, alice, "t1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if err := th.Delete(rctx, alice, "t1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestThreadSearch(t *testing.T) {
	db, clk := openRec(t, nil)
	th := db.Threads()
	alice, bob := User("alice"), User("bob")
	mk := func(owner Owner, id string, md map[string]any) {
		t.Helper()
		clk.Add(time.Second)
		if _, err := th.Create(rctx, owner, records.NewThread{ThreadID: id, Metadata: md}); err != nil {
			t.Fatal(err)
		}
	}
	mk(alice, "a1", map[string]any{"n": 1, "kind": "chat", "tags": []any{"x"}})
	mk(alice, "a2", map[string]any{"n": 1.0, "kind": "chat", "nested": map[string]any{"deep": "yes"}})
	mk(alice, "a3", map[string]any{"n": "1", "kind": "task", "pinned": true})
	mk(alice, "a4", map[string]any{"n": true})
	mk(bob, "b1", map[string]any{"n": 1, "kind": "chat"})
	mk(AnyOwner, "x1", nil)
	clk.Add(time.Second)
	th.SetStatus(rctx, alice, "a1", records.ThreadError)
	// a1 was just updated: it is now the newest of alice's unpinned threads.

	for _, tc := range []struct {
		name  string
		owner Owner
		q     records.ThreadQuery
		want  []string
	}{
		{"owner, pinned first then newest", alice, records.ThreadQuery{}, []string{"a3", "a1", "a4", "a2"}},
		{"other owner", bob, records.ThreadQuery{}, []string{"b1"}},
		{"any owner", AnyOwner, records.ThreadQuery{}, []string{"a3", "a1", "x1", "b1", "a4", "a2"}},
		{"int is not float, string or bool", alice, records.ThreadQuery{Metadata: map[string]any{"n": 1}}, []string{"a1"}},
		{"float", alice, records.ThreadQuery{Metadata: map[string]any{"n": 1.0}}, []string{"a2"}},
		{"string", alice, records.ThreadQuery{Metadata: map[string]any{"n": "1"}}, []string{"a3"}},
		{"bool", alice, records.ThreadQuery{Metadata: map[string]any{"n": true}}, []string{"a4"}},
		{"two keys", AnyOwner, records.ThreadQuery{Metadata: map[string]any{"n": 1, "kind": "chat"}}, []string{"a1", "b1"}},
		{"nested key", alice, records.ThreadQuery{Metadata: map[string]any{"nested.deep": "yes"}}, []string{"a2"}},
		{"list value", alice, records.ThreadQuery{Metadata: map[string]any{"tags": []any{"x"}}}, []string{"a1"}},
		{"missing key", alice, records.ThreadQuery{Metadata: map[string]any{"nope": nil}}, []string{}},
		{"status", alice, records.ThreadQuery{Status: records.ThreadError}, []string{"a1"}},
		{"status idle", alice, records.ThreadQuery{Status: records.ThreadIdle}, []string{"a3", "a4", "a2"}},
		{"limit offset", alice, records.ThreadQuery{Limit: 2, Offset: 1}, []string{"a1", "a4"}},
		{"filter with offset", AnyOwner, records.ThreadQuery{Metadata: map[string]any{"kind": "chat"}, Offset: 1, Limit: 1}, []string{"b1"}},
	} {
		got, err := th.Search(rctx, tc.owner, tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, threadIDs(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestThreadOwnerIsolation: no call made as one owner returns, changes or
// deletes another owner's thread; every such call says "not found".
func TestThreadOwnerIsolation(t *testing.T) {
	db, _ := openRec(t, nil)
	th := db.Threads()
	alice, bob := User("alice"), User("bob")
	th.Create(rctx, alice, records.NewThread{ThreadID: "secret", DisplayName: "alice's", Metadata: map[string]any{"k": "v"}})
	th.Create(rctx, AnyOwner, records.NewThread{ThreadID: "unowned"})
	before := dumpRecords(t, db)
	for _, id := range []string{"secret", "unowned"} {
		for name, call := range map[string]func() error{
			"get":     func() error { _, err := th.Get(rctx, bob, id); return err },
			"name":    func() error { return th.SetDisplayName(rctx, bob, id, "pwned") },
			"status":  func() error { return th.SetStatus(rctx, bob, id, records.ThreadError) },
			"merge":   func() error { return th.MergeMetadata(rctx, bob, id, map[string]any{"k": "x"}, true) },
			"delete":  func() error { return th.Delete(rctx, bob, id) },
			"missing": func() error { _, err := th.Get(rctx, bob, "does-not-exist"); return err },
		} {
			err := call()
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("%s on %s as bob: %v, want ErrNotFound", name, id, err)
			}
		}
	}
	for _, q := range []records.ThreadQuery{{}, {Metadata: map[string]any{"k": "v"}}, {Status: records.ThreadIdle}} {
		if got, _ := th.Search(rctx, bob, q); len(got) != 0 {
			t.Errorf("bob's search %+v sees %v", q, threadIDs(got))
		}
	}
	if diff := cmp.Diff(before, dumpRecords(t, db)); diff != "" {
		t.Fatalf("another owner's calls changed the file:\n%s", diff)
	}
	// The owner and admins still see it.
	if _, err := th.Get(rctx, alice, "secret"); err != nil {
		t.Fatal(err)
	}
	if _, err := th.Get(rctx, AnyOwner, "secret"); err != nil {
		t.Fatal(err)
	}
	if err := th.SetDisplayName(rctx, AnyOwner, "secret", "admin edit"); err != nil {
		t.Fatal(err)
	}
	// A forgotten owner is refused, not treated as "everyone".
	if _, err := th.Get(rctx, Owner{}, "secret"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("zero owner: %v", err)
	}
	if _, err := th.Search(rctx, User(""), records.ThreadQuery{}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("empty user: %v", err)
	}
}

func TestThreadRejectsHostileFilters(t *testing.T) {
	db, _ := openRec(t, nil)
	th := db.Threads()
	th.Create(rctx, User("u"), records.NewThread{ThreadID: "t", Metadata: map[string]any{"a": 1}})
	before := dumpRecords(t, db)
	for _, key := range []string{
		"x') OR '1'='1", `a"]'); DROP TABLE x; --`, "$.a", "a..b", ".a", "a.", "", "a b", "a\x00", strings.Repeat("k", 300),
	} {
		_, err := th.Search(rctx, AnyOwner, records.ThreadQuery{Metadata: map[string]any{key: 1}})
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("filter key %q: %v, want ErrInvalidArgument", key, err)
		}
	}
	for name, q := range map[string]records.ThreadQuery{
		"status":       {Status: "'; DROP TABLE threads; --"},
		"limit":        {Limit: -1},
		"offset":       {Offset: -1},
		"filter value": {Metadata: map[string]any{"a": make(chan int)}},
	} {
		if _, err := th.Search(rctx, AnyOwner, q); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if diff := cmp.Diff(before, dumpRecords(t, db)); diff != "" {
		t.Fatalf("refused searches changed the file:\n%s", diff)
	}
	// Many threads, one match deep in the list: the filter runs in SQL and
	// still finds it past the first pages.
	for i := range 300 {
		th.Create(rctx, User("u"), records.NewThread{ThreadID: fmt.Sprint("bulk", i), Metadata: map[string]any{"i": i}})
	}
	got, err := th.Search(rctx, User("u"), records.ThreadQuery{Metadata: map[string]any{"i": 3}})
	if err != nil || len(got) != 1 || got[0].ThreadID != "bulk3" {
		t.Fatalf("deep match: %v %v", threadIDs(got), err)
	}
}
