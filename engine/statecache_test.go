package engine

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
)

// Issue 25, item 5: the state cache was bounded by entries (256), not
// bytes: a StateHistory walk of a long thread kept 256 whole message lists
// (1.56 GB for 10,000 messages) while CacheStats reported what the history
// cache held. States now count in HistoryCacheBytes: after a walk the heap
// holds at most about the budget.
func TestStateCacheIsBoundedInBytes(t *testing.T) {
	const budget = 4 << 20
	path := filepath.Join(t.TempDir(), "s.db")
	o := DefaultOptions()
	o.Mode, o.HistoryCacheBytes = channels.ModeDelta, budget
	db := openTest(t, path, &o)
	text := strings.Repeat("x", 2000)
	for i := range 300 {
		mustCommit(t, db, "th", Step{Tasks: []TaskWrites{say("t", codec.Message{ID: fmt.Sprint(i), Type: codec.Human, Content: text + fmt.Sprint(i)})}})
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n := 0
	for s, err := range db.StateHistory(bg, "th", HistoryOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if ms, _ := s.Values[MessagesChannel].([]codec.Message); len(ms) != max(300-n, 0) {
			t.Fatalf("state %d holds %d messages", n, len(ms))
		}
		n++
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	st := db.CacheStats()
	t.Logf("%d states; heap %d -> %d MiB; cache %+v", n, before.HeapAlloc>>20, after.HeapAlloc>>20, st)
	if st.Bytes > st.MaxBytes || st.StateBytes > st.Bytes || st.StateEntries == 0 {
		t.Fatalf("cache stats %+v", st)
	}
	// The states of the walk alone would be 300 lists of 150 messages of
	// 2 KB on average, 90 MB; 256 of them were kept.
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 3*budget {
		t.Fatalf("the walk left %d MiB on the heap, the cache's budget is %d MiB", grown>>20, budget>>20)
	}
	// A head still reads from the cache.
	if _, err := db.State(bg, Config{ThreadID: "th"}); err != nil {
		t.Fatal(err)
	}
}
