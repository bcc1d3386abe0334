package engine

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/engine/records"
	"github.com/google/go-cmp/cmp"
)

func msg(thread, run string, content any) records.Event {
	return records.Event{ThreadID: thread, RunID: run, EventType: "llm.ai.response", Category: records.CategoryMessage, Content: content}
}

func seqs(evs []records.Event) []int64 {
	out := []int64{}
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

func TestEventPutAndList(t *testing.T) {
	db, clk := openRec(t, nil)
	e := db.Events()
	// seq 1..10: messages at odd seqs, traces at even ones; two runs.
	for i := 1; i <= 10; i++ {
		run := "r1"
		if i > 6 {
			run = "r2"
		}
		ev := msg("t", run, fmt.Sprintf("m%d", i))
		if i%2 == 0 {
			ev = records.Event{ThreadID: "t", RunID: run, EventType: "llm.trace", Category: records.CategoryTrace, Content: fmt.Sprintf("tr%d", i),
				Metadata: map[string]any{"task_id": fmt.Sprintf("task%d", i%4)}}
		}
		got, err := e.Put(rctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		ev.Seq, ev.CreatedAt = int64(i), clk.Now()
		if diff := cmp.Diff(ev, got); diff != "" {
			t.Fatalf("put %d (-want +got):\n%s", i, diff)
		}
	}
	// Another thread has its own seq.
	if got, _ := e.Put(rctx, msg("u", "r9", "x")); got.Seq != 1 {
		t.Fatalf("first seq of another thread: %d", got.Seq)
	}

	for _, tc := range []struct {
		name string
		q    records.MessageQuery
		want []int64
	}{
		{"latest", records.MessageQuery{}, []int64{1, 3, 5, 7, 9}},
		{"latest limited", records.MessageQuery{Limit: 2}, []int64{7, 9}},
		{"before", records.MessageQuery{BeforeSeq: new(int64(7)), Limit: 2}, []int64{3, 5}},
		{"before the start", records.MessageQuery{BeforeSeq: new(int64(1))}, []int64{}},
		{"after", records.MessageQuery{AfterSeq: new(int64(3)), Limit: 2}, []int64{5, 7}},
		{"after the end", records.MessageQuery{AfterSeq: new(int64(9))}, []int64{}},
		{"from the start", records.MessageQuery{AfterSeq: new(int64(0)), Limit: 3}, []int64{1, 3, 5}},
	} {
		got, err := e.ListMessages(rctx, "t", tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, seqs(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	page, _ := e.ListMessages(rctx, "t", records.MessageQuery{Limit: 1})
	if diff := cmp.Diff([]records.Event{{ThreadID: "t", RunID: "r2", EventType: "llm.ai.response", Category: records.CategoryMessage, Content: "m9", Seq: 9, CreatedAt: clk.Now()}}, page); diff != "" {
		t.Fatalf("message content (-want +got):\n%s", diff)
	}
	if n, err := e.CountMessages(rctx, "t"); err != nil || n != 5 {
		t.Fatalf("count: %d %v", n, err)
	}

	for _, tc := range []struct {
		name string
		run  string
		q    records.RunEventQuery
		want []int64
	}{
		{"all of r1", "r1", records.RunEventQuery{}, []int64{1, 2, 3, 4, 5, 6}},
		{"types", "r1", records.RunEventQuery{Types: []string{"llm.trace"}}, []int64{2, 4, 6}},
		{"two types", "r2", records.RunEventQuery{Types: []string{"llm.trace", "llm.ai.response"}}, []int64{7, 8, 9, 10}},
		{"unknown type", "r2", records.RunEventQuery{Types: []string{"nope"}}, []int64{}},
		{"task id", "r1", records.RunEventQuery{TaskID: "task2"}, []int64{2, 6}},
		{"after seq and limit", "r1", records.RunEventQuery{AfterSeq: 2, Limit: 3}, []int64{3, 4, 5}},
		{"other run", "r9", records.RunEventQuery{}, []int64{}},
	} {
		got, err := e.ListRunEvents(rctx, "t", tc.run, tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, seqs(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	if _, err := e.ListMessages(rctx, "t", records.MessageQuery{BeforeSeq: new(int64(5)), AfterSeq: new(int64(1))}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("both cursors: %v", err)
	}
	if _, err := e.ListMessages(rctx, "t", records.MessageQuery{Limit: 5000}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("huge limit: %v", err)
	}
}

func TestEventBatch(t *testing.T) {
	db, _ := openRec(t, nil)
	e := db.Events()
	e.Put(rctx, msg("t", "r", "first"))
	batch := []records.Event{msg("t", "r", "a"), msg("t", "r", "b"), msg("t", "r", "c")}
	got, err := e.PutBatch(rctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{2, 3, 4}, seqs(got)); diff != "" {
		t.Fatalf("batch seqs (-want +got):\n%s", diff)
	}
	before := dumpRecords(t, db)
	for name, b := range map[string][]records.Event{
		"two threads": {msg("t", "r", "a"), msg("u", "r", "b")},
		"one bad":     {msg("t", "r", "a"), {ThreadID: "t", EventType: strings.Repeat("x", 33), Category: records.CategoryMessage}},
		"no type":     {{ThreadID: "t", Category: records.CategoryMessage}},
		"long cat":    {{ThreadID: "t", EventType: "x", Category: strings.Repeat("c", 17)}},
		"no thread":   {{EventType: "x", Category: "c"}},
		"bad content": {{ThreadID: "t", EventType: "x", Category: "c", Content: func() {}}},
	} {
		if _, err := e.PutBatch(rctx, b); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if diff := cmp.Diff(before, dumpRecords(t, db)); diff != "" {
		t.Fatalf("refused batches wrote:\n%s", diff)
	}
	// Limits count characters, not bytes.
	if _, err := e.Put(rctx, records.Event{ThreadID: "t", EventType: strings.Repeat("é", 32), Category: strings.Repeat("ü", 16)}); err != nil {
		t.Fatalf("32-character type: %v", err)
	}
	if out, err := e.PutBatch(rctx, nil); err != nil || len(out) != 0 {
		t.Fatalf("empty batch: %v %v", out, err)
	}
}

func TestEventPutIfAbsent(t *testing.T) {
	db, _ := openRec(t, nil)
	e := db.Events()
	start := records.Event{ThreadID: "t", RunID: "r", EventType: "run.start", Category: "lifecycle", Content: "one"}
	first, created, err := e.PutIfAbsent(rctx, start)
	if err != nil || !created || first.Seq != 1 {
		t.Fatalf("first: %+v %v %v", first, created, err)
	}
	again := start
	again.Content = "two"
	got, created, err := e.PutIfAbsent(rctx, again)
	if err != nil || created {
		t.Fatalf("second: created=%v %v", created, err)
	}
	if diff := cmp.Diff(first, got); diff != "" {
		t.Fatalf("second returns the first (-want +got):\n%s", diff)
	}
	// Another run or type is another key.
	other := start
	other.RunID = "r2"
	if _, created, _ := e.PutIfAbsent(rctx, other); !created {
		t.Fatal("another run was treated as present")
	}
	// Concurrent callers: exactly one inserts.
	var wg sync.WaitGroup
	var mu sync.Mutex
	inserted := 0
	for range 8 {
		wg.Go(func() {
			_, created, err := e.PutIfAbsent(rctx, records.Event{ThreadID: "t", RunID: "r3", EventType: "run.end", Category: "lifecycle"})
			if err != nil {
				t.Error(err)
			}
			if created {
				mu.Lock()
				inserted++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if inserted != 1 {
		t.Fatalf("%d concurrent PutIfAbsent inserted", inserted)
	}
}

func TestEventTraceTruncation(t *testing.T) {
	db, _ := openRec(t, func(o *Options) { o.TraceContentLimit = 10 })
	e := db.Events()
	md := map[string]any{"k": "v"}
	// "aaaaaaaaé" is 10 bytes; "aaaaaaaaaé" is 11 and must be cut before é.
	got, err := e.Put(rctx, records.Event{ThreadID: "t", EventType: "x", Category: records.CategoryTrace, Content: "aaaaaaaaaéz", Metadata: md})
	if err != nil {
		t.Fatal(err)
	}
	if got.Content != "aaaaaaaaa" {
		t.Fatalf("cut content %q", got.Content)
	}
	wantMD := map[string]any{"k": "v", records.MetaContentTruncated: true, records.MetaOriginalByteLength: int64(12)}
	if diff := cmp.Diff(wantMD, got.Metadata); diff != "" {
		t.Fatalf("metadata (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"k": "v"}, md); diff != "" {
		t.Fatalf("caller's metadata changed:\n%s", diff)
	}
	stored, _ := e.ListRunEvents(rctx, "t", "", records.RunEventQuery{})
	if diff := cmp.Diff(got, stored[0]); diff != "" {
		t.Fatalf("stored event (-returned +stored):\n%s", diff)
	}
	for _, tc := range []struct {
		name     string
		category string
		content  any
		want     any
		cut      bool
	}{
		{"fits exactly", records.CategoryTrace, "aaaaaaaaé", "aaaaaaaaé", false},
		{"not a trace", records.CategoryMessage, strings.Repeat("m", 50), strings.Repeat("m", 50), false},
		{"4-byte runes", records.CategoryTrace, "😀😀😀", "😀😀", true},
		{"small map kept", records.CategoryTrace, map[string]any{"a": 1}, map[string]any{"a": int64(1)}, false},
		{"big map as JSON", records.CategoryTrace, map[string]any{"text": "0123456789"}, `{"text":"0`, true},
	} {
		got, err := e.Put(rctx, records.Event{ThreadID: "t", EventType: "x", Category: tc.category, Content: tc.content})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		stored, _ := e.ListRunEvents(rctx, "t", "", records.RunEventQuery{AfterSeq: got.Seq - 1, Limit: 1})
		if diff := cmp.Diff(tc.want, stored[0].Content); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
		if s, ok := stored[0].Content.(string); ok && (len(s) > 10 && tc.category == records.CategoryTrace || !utf8.ValidString(s)) {
			t.Errorf("%s: stored %d bytes, valid UTF-8 %v", tc.name, len(s), utf8.ValidString(s))
		}
		if cut := stored[0].Metadata[records.MetaContentTruncated] == true; cut != tc.cut {
			t.Errorf("%s: truncation recorded %v, want %v", tc.name, cut, tc.cut)
		}
	}
	// The default limit is 10 KiB; 0 keeps traces whole.
	if DefaultOptions().TraceContentLimit != 10<<10 {
		t.Fatalf("default trace limit %d", DefaultOptions().TraceContentLimit)
	}
	whole, _ := openRec(t, func(o *Options) { o.TraceContentLimit = 0 })
	big := strings.Repeat("x", 20<<10)
	got, _ = whole.Events().Put(rctx, records.Event{ThreadID: "t", EventType: "x", Category: records.CategoryTrace, Content: big})
	if got.Content != big || got.Metadata != nil {
		t.Fatal("TraceContentLimit 0 cut a trace")
	}
}

func TestEventDeletes(t *testing.T) {
	db, _ := openRec(t, nil)
	e := db.Events()
	for i := range 6 {
		e.Put(rctx, msg("t", fmt.Sprint("r", i%2), i))
	}
	e.Put(rctx, msg("u", "r0", "other thread"))
	// Deleting the run that holds the newest event does not let seq go back.
	n, err := e.DeleteRun(rctx, "t", "r1")
	if err != nil || n != 3 {
		t.Fatalf("delete run: %d %v", n, err)
	}
	got, _ := e.Put(rctx, msg("t", "r2", "next"))
	if got.Seq != 7 {
		t.Fatalf("seq after deleting the newest events: %d, want 7", got.Seq)
	}
	all, _ := e.ListMessages(rctx, "t", records.MessageQuery{})
	if diff := cmp.Diff([]int64{1, 3, 5, 7}, seqs(all)); diff != "" {
		t.Fatalf("after delete run (-want +got):\n%s", diff)
	}
	n, err = e.DeleteThread(rctx, "t")
	if err != nil || n != 4 {
		t.Fatalf("delete thread: %d %v", n, err)
	}
	if c, _ := e.CountMessages(rctx, "t"); c != 0 {
		t.Fatalf("%d messages left", c)
	}
	if c, _ := e.CountMessages(rctx, "u"); c != 1 {
		t.Fatalf("other thread lost messages: %d", c)
	}
	// A deleted thread starts again at 1.
	if got, _ := e.Put(rctx, msg("t", "r", "again")); got.Seq != 1 {
		t.Fatalf("seq after delete thread: %d", got.Seq)
	}
}

// TestEventSeqGoroutines: goroutines on two handles of one file put events
// to one thread; seqs are exactly 1..n.
func TestEventSeqGoroutines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ev.db")
	dbs := []*DB{openTest(t, path, nil), openTest(t, path, nil)}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				ev := msg("t", "r", map[string]any{"g": g, "i": i})
				var err error
				if i%5 == 0 {
					_, err = dbs[g%2].Events().PutBatch(rctx, []records.Event{ev, ev})
				} else {
					_, err = dbs[g%2].Events().Put(rctx, ev)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	checkSeqs(t, dbs[0], "t", 8*60, nil)
}

// checkSeqs reads the whole thread and checks that seqs are exactly 1..n
// and, when owner is given, that every (proc, goroutine, i) is present once
// and each writer's events appear in the order it wrote them.
func checkSeqs(t *testing.T, db *DB, thread string, n int, owner func(records.Event) (string, int64)) {
	t.Helper()
	var all []records.Event
	var after int64
	for {
		page, err := db.Events().ListMessages(rctx, thread, records.MessageQuery{AfterSeq: &after, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		after = page[len(page)-1].Seq
	}
	if len(all) != n {
		t.Fatalf("%d events, want %d", len(all), n)
	}
	for i, ev := range all {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: gap or duplicate", i, ev.Seq)
		}
	}
	if owner == nil {
		return
	}
	last := map[string]int64{}
	seen := map[string]bool{}
	for _, ev := range all {
		w, i := owner(ev)
		key := fmt.Sprint(w, "/", i)
		if seen[key] {
			t.Fatalf("event %s stored twice", key)
		}
		seen[key] = true
		if prev, ok := last[w]; ok && i <= prev {
			t.Fatalf("writer %s: event %d after %d", w, i, prev)
		}
		last[w] = i
	}
}

// asInt64 reads an integer the codec decoded: int64, or uint64 for
// positive values it stored in unsigned form.
func asInt64(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case uint64:
		return int64(n)
	}
	panic(fmt.Sprintf("%T is not an integer", v))
}

// TestEventOwners: two users' events on one thread. Each user's reads,
// counts and deletes see only its own (an event written without a user
// belongs to no one); without a filter they see all. Export and import
// keep the owner.
func TestEventOwners(t *testing.T) {
	db, _ := openRec(t, nil)
	e := db.Events()
	for i, u := range []string{"alice", "bob", "alice", "", "bob", "alice"} {
		ev := msg("t", "r", i)
		ev.UserID = u
		if got, err := e.Put(rctx, ev); err != nil || got.UserID != u {
			t.Fatalf("put %d: %+v %v", i, got, err)
		}
	}
	e.Put(rctx, records.Event{ThreadID: "t", RunID: "r", EventType: "x", Category: records.CategoryTrace, UserID: "bob"})
	check := func(db *DB, user string, want []int64) {
		t.Helper()
		ev := db.Events().ForUser(user)
		all, err := ev.ListMessages(rctx, "t", records.MessageQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, seqs(all)); diff != "" {
			t.Fatalf("%q: messages (-want +got):\n%s", user, diff)
		}
		for _, m := range all {
			if user != "" && m.UserID != user {
				t.Fatalf("%q sees an event of %q", user, m.UserID)
			}
		}
		after := int64(0)
		for name, page := range map[string]func() ([]records.Event, error){
			"before": func() ([]records.Event, error) {
				return ev.ListMessages(rctx, "t", records.MessageQuery{BeforeSeq: new(int64(100))})
			},
			"after": func() ([]records.Event, error) {
				return ev.ListMessages(rctx, "t", records.MessageQuery{AfterSeq: &after})
			},
			"run": func() ([]records.Event, error) { return ev.ListRunMessages(rctx, "t", "r", records.MessageQuery{}) },
			"run before": func() ([]records.Event, error) {
				return ev.ListRunMessages(rctx, "t", "r", records.MessageQuery{BeforeSeq: new(int64(100))})
			},
			"run after": func() ([]records.Event, error) {
				return ev.ListRunMessages(rctx, "t", "r", records.MessageQuery{AfterSeq: &after})
			},
			"run events": func() ([]records.Event, error) {
				return ev.ListRunEvents(rctx, "t", "r", records.RunEventQuery{Types: []string{"llm.ai.response"}})
			},
		} {
			got, err := page()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, seqs(got)); diff != "" {
				t.Fatalf("%q: %s (-want +got):\n%s", user, name, diff)
			}
		}
		if n, err := ev.CountMessages(rctx, "t"); err != nil || n != int64(len(want)) {
			t.Fatalf("%q: count %d %v, want %d", user, n, err, len(want))
		}
		last, err := ev.LastVisibleAISeq(rctx, "t", []string{"r"})
		if err != nil {
			t.Fatal(err)
		}
		if w := want[len(want)-1]; last["r"] != w {
			t.Fatalf("%q: last visible %v, want %d", user, last, w)
		}
	}
	check(db, "alice", []int64{1, 3, 6})
	check(db, "bob", []int64{2, 5})
	check(db, "", []int64{1, 2, 3, 4, 5, 6})
	if got, _ := e.ForUser("carol").ListMessages(rctx, "t", records.MessageQuery{}); len(got) != 0 {
		t.Fatalf("a stranger sees %d events", len(got))
	}
	if all, _ := e.ForUser("bob").ListRunEvents(rctx, "t", "r", records.RunEventQuery{}); len(all) != 3 {
		t.Fatalf("bob's run events: %d, want 3", len(all))
	}

	// Export and import keep the owners.
	other, _ := openRec(t, nil)
	if _, err := other.Import(rctx, bytes.NewReader(exportBytes(t, db)), admin.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	check(other, "alice", []int64{1, 3, 6})
	check(other, "bob", []int64{2, 5})
	if rep, err := other.Verify(rctx, admin.VerifyOptions{}); err != nil || !rep.OK {
		t.Fatalf("verify after import: %+v %v", rep, err)
	}

	// A user's deletes leave the others' events, and the seqs go on.
	if n, err := e.ForUser("bob").DeleteRun(rctx, "t", "r"); err != nil || n != 3 {
		t.Fatalf("bob deletes his run: %d %v", n, err)
	}
	if n, err := e.ForUser("alice").DeleteThread(rctx, "t"); err != nil || n != 3 {
		t.Fatalf("alice deletes her thread: %d %v", n, err)
	}
	check(db, "", []int64{4})
	if got, _ := e.Put(rctx, msg("t", "r", "next")); got.Seq != 8 {
		t.Fatalf("seq after a user's deletes: %d, want 8", got.Seq)
	}
}
