package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// recClock is a fake clock for TTL and lease tests: time moves only when
// the test says so.
type recClock struct {
	mu sync.Mutex
	t  time.Time
}

func newRecClock() *recClock {
	return &recClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *recClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *recClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// openRec opens a fresh file-backed database with a fake clock; mod may
// change the options first.
func openRec(t testing.TB, mod func(*Options)) (*DB, *recClock) {
	t.Helper()
	clk := newRecClock()
	o := DefaultOptions()
	o.Now = clk.Now
	if mod != nil {
		mod(&o)
	}
	return openTest(t, filepath.Join(t.TempDir(), "rec.db"), &o), clk
}

// dumpRecords renders every row of the record tables (and the schema) as
// text, to prove that a refused call changed nothing.
func dumpRecords(t testing.TB, db *DB) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := db.read(context.Background(), func(c *conn) error {
		cat, err := testCatalog(c)
		if err != nil {
			return err
		}
		out["catalog"] = cat
		for _, table := range []string{"store_items", "runs", "events", "event_seqs", "threads"} {
			rows := []string{}
			// Table names are constants of this test.
			err := c.query("SELECT * FROM "+table, nil, func(st row) error {
				s := ""
				for i := range st.Columns() {
					s += fmt.Sprintf("%q|", st.Blob(i))
				}
				rows = append(rows, s)
				return nil
			})
			if err != nil {
				return err
			}
			sort.Strings(rows)
			out[table] = rows
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var rctx = context.Background()

func TestStoreAndRunOptionsAreValidated(t *testing.T) {
	for _, tc := range []struct {
		field string
		mod   func(*Options)
	}{
		{"StoreDefaultTTL", func(o *Options) { o.StoreDefaultTTL = -time.Second }},
		{"StoreSweepInterval", func(o *Options) { o.StoreSweepInterval = -time.Second }},
		{"StoreSweepInterval", func(o *Options) { o.StoreSweepInterval = time.Millisecond }},
		{"TraceContentLimit", func(o *Options) { o.TraceContentLimit = -1 }},
		{"RunLease", func(o *Options) { o.RunLease = 0 }},
		{"RunLease", func(o *Options) { o.RunLease = 999 * time.Millisecond }},
		{"RunLease", func(o *Options) { o.RunLease = 25 * time.Hour }},
		{"RunOwner", func(o *Options) { o.RunOwner = "bad\x00owner" }},
		{"RunOwner", func(o *Options) { o.RunOwner = strings.Repeat("o", 129) }},
	} {
		o := DefaultOptions()
		tc.mod(&o)
		path := filepath.Join(t.TempDir(), "x.db")
		_, err := Open(context.Background(), testPath(t, path), &o)
		if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: err = %v, want ErrInvalidOption naming the field", tc.field, err)
		}
		if _, statErr := os.Stat(path); statErr == nil {
			t.Errorf("%s: a refused Open created the file", tc.field)
		}
	}
	d := DefaultOptions()
	got := []any{d.StoreDefaultTTL, d.StoreRefreshOnRead, d.StoreSweepInterval, d.TraceContentLimit, d.ReconcileOnOpen, d.RunLease, d.RunOwner != ""}
	want := []any{time.Duration(0), true, time.Duration(0), 10 << 10, true, time.Minute, true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("documented defaults (-want +got):\n%s", diff)
	}
}
