package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/codec"
)

// A page of List holds about listPageBytes of values: a thread of large
// checkpoints is read a few at a time (a page of 64 whole message lists of
// tens of MB ran wasm32's memory out), small ones 64 at a time.
func TestListPagesAreSizedByBytes(t *testing.T) {
	big := func(mb int) []Tuple {
		return []Tuple{{Checkpoint: Checkpoint{ChannelValues: map[string]codec.Blob{"messages": {Type: "json", Data: make([]byte, mb<<20)}}}}}
	}
	if got := nextListPage(big(1)); got != 16 {
		t.Fatalf("1 MB tuples: next page of %d, want 16", got)
	}
	if got := nextListPage(big(10)); got != 1 {
		t.Fatalf("10 MB tuples: next page of %d, want 1", got)
	}
	if got := nextListPage(big(100)); got != 1 {
		t.Fatalf("100 MB tuples: next page of %d, want 1", got)
	}
	small := []Tuple{{Checkpoint: Checkpoint{ChannelValues: map[string]codec.Blob{"x": {Type: "json", Data: []byte("1")}}}}}
	if got := nextListPage(small); got != listPage {
		t.Fatalf("small tuples: next page of %d, want %d", got, listPage)
	}
	if got := nextListPage([]Tuple{{}}); got != listPage {
		t.Fatalf("tuples without values: next page of %d, want %d", got, listPage)
	}
}

// Pages of every size still list every checkpoint once, in order.
func TestListAcrossPagesOfLargeValues(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100 MB")
	}
	db := openTest(t, Memory, nil)
	parent := Config{ThreadID: "heavy"}
	var want []string
	for i := range 25 {
		id := fmt.Sprintf("%05d", i)
		v := fmt.Sprintf("v%d", i)
		value := `"` + strings.Repeat(string(rune('a'+i%26)), 4<<20) + `"`
		parent = mustPut(t, db, parent, cp(id, map[string]string{"big": v}, map[string]string{"big": value}), nil, map[string]string{"big": v})
		want = append(want, id)
	}
	slices.Reverse(want)
	if got := ids(collect(t, db, ListOptions{ThreadID: "heavy"})); !slices.Equal(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	if got := ids(collect(t, db, ListOptions{ThreadID: "heavy", Limit: 11})); !slices.Equal(got, want[:11]) {
		t.Fatalf("limit 11: listed %v", got)
	}
}
