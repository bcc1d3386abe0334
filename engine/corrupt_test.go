//go:build !js

// Native only: it damages files through ncruces VFSes (faultvfs), which
// GOOS=js builds do not link.

package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/engine/internal/faultvfs"
	"github.com/agentstate/agentstate/engine/records"
	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs"
)

// The corruption tests damage copies of a real file (every surface written,
// the WAL checkpointed into it) and read everything back: bytes flipped in
// the header, in random pages, in the pages that hold the large message
// values, and the file truncated. Opening and every read must give either
// the same answer as the undamaged file or a typed error (ErrCorrupt, or
// ErrNotFound when a key itself was damaged), never a panic; and when a
// read goes wrong, Verify must say so and name something. With page
// checksums (Options.PageChecksums) no read may return a wrong answer at
// all; without them a flipped byte inside a value can only be caught where
// the file holds the same fact twice (a checkpoint's stored state against
// its parent's state plus its writes, which Verify replays), and the test
// counts those that are not.
//
// Page checksums are SQLite's checksum VFS shim format, which ncruces
// verifies on every read of a file whose header reserves 8 bytes a page.
// They are not an engine option yet: in go-sqlite3 v0.37 a checksummed WAL
// file panics (nil MemoryMapper in vfsUnfetch) when a connection with an
// older view of the WAL checkpoints it, which Close does. The tests reach
// checksummed files through nommapVFS, a VFS that does not offer memory
// mapping, so that path is never taken.

const nommapVFS = "agentstate-nommap"

var nommapOnce sync.Once

// nommapURI opens path through a VFS without memory mapping (faultvfs with
// no fault armed).
func nommapURI(path string) string {
	nommapOnce.Do(func() { vfs.Register(nommapVFS, faultvfs.New()) })
	return "file:" + path + "?vfs=" + nommapVFS
}

// createChecksummed makes an empty file whose pages carry checksums.
func createChecksummed(t testing.TB, path string) {
	t.Helper()
	c, err := sqlite3.Open(nommapURI(path))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnableChecksums("main"); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// corpus is an undamaged file and what reading it returns.
type corpus struct {
	data      []byte
	pageSize  int
	want      map[string]string // read -> digest of its answer
	ids       map[string]string // "thread/step" -> checkpoint id
	needles   [][]byte          // bytes of large values, to find their pages
	opts      Options
	checksums bool // pages carry checksums: open through nommapVFS
}

func buildCorpus(t *testing.T, checksums bool) *corpus {
	t.Helper()
	ctx := context.Background()
	o := DefaultOptions()
	o.ReconcileOnOpen = false
	path := filepath.Join(t.TempDir(), "corpus.db")
	uri := path
	if checksums {
		createChecksummed(t, path)
		uri = nommapURI(path)
	}
	db, err := Open(ctx, uri, &o)
	if err != nil {
		t.Fatal(err)
	}
	w := relWork{seed: 42}
	c := &corpus{opts: o, ids: map[string]string{}}
	for _, th := range []string{"alpha", "beta"} {
		run, err := db.Runs().Create(ctx, records.NewRun{ThreadID: th, Status: records.RunRunning, ModelName: "m"})
		if err != nil {
			t.Fatal(err)
		}
		for n := 1; n <= 9; n++ {
			if _, err := db.Commit(ctx, th, w.step(th, n, run.Run.RunID)); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Events().PutBatch(ctx, w.events(th, n, run.Run.RunID)); err != nil {
				t.Fatal(err)
			}
			if a := w.answer(th, n); len(a) > 3000 {
				c.needles = append(c.needles, []byte(a[len(a)-400:]))
			}
		}
		if err := db.Runs().Complete(ctx, run.Run.RunID, records.RunSuccess, "", records.RunTotals{TotalTokens: 99, LastAIMessage: "bye"}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Threads().Create(ctx, User("u1"), records.NewThread{ThreadID: th, DisplayName: "thread " + th, Metadata: map[string]any{"k": th}}); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			if err := db.Store().Put(ctx, []string{"mem", th}, fmt.Sprintf("k%d", i), map[string]any{"v": strings.Repeat(th, 200+i*300), "i": int64(i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := db.CheckpointWAL(ctx); err != nil {
		t.Fatal(err)
	}
	if ps := relVerify(ctx, db); len(ps) > 0 {
		t.Fatalf("the undamaged file does not verify: %v", ps)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if c.data, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	if reserved := c.data[20]; checksums != (reserved == 8) {
		t.Fatalf("page checksums %v, but the header reserves %d bytes a page", checksums, reserved)
	}
	c.pageSize = int(binary.BigEndian.Uint16(c.data[16:18]))
	if c.pageSize == 1 {
		c.pageSize = 65536
	}
	c.checksums = checksums
	db, err = Open(ctx, uri, &o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, th := range []string{"alpha", "beta"} {
		for tu, err := range db.List(ctx, ListOptions{ThreadID: th}) {
			if err != nil {
				t.Fatal(err)
			}
			c.ids[th+"/"+fmt.Sprint(relN(tu.Metadata))] = tu.Config.CheckpointID
		}
	}
	var errs map[string]error
	c.want, errs = readEverything(ctx, db, c.ids)
	if len(errs) > 0 {
		t.Fatalf("reading the undamaged file: %v", errs)
	}
	if len(c.needles) == 0 {
		t.Fatal("the corpus holds no large value")
	}
	return c
}

func digestOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "unmarshalable: " + err.Error()
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// readEverything reads every surface through the public API, each read on
// its own, and returns the digest of each answer or its error.
func readEverything(ctx context.Context, db *DB, ids map[string]string) (map[string]string, map[string]error) {
	got, errs := map[string]string{}, map[string]error{}
	rec := func(key string, v any, err error) {
		if err != nil {
			errs[key] = err
			return
		}
		got[key] = digestOf(v)
	}
	for _, th := range []string{"alpha", "beta"} {
		var tuples []Tuple
		var listErr error
		for tu, err := range db.List(ctx, ListOptions{ThreadID: th}) {
			if err != nil {
				listErr = err
				break
			}
			tuples = append(tuples, tu)
		}
		rec("list/"+th, tuples, listErr)
		// Every checkpoint by the id the undamaged file gives it (a
		// damaged listing may hold fewer or other ids).
		for n := 0; n <= 9; n++ {
			id := ids[th+"/"+fmt.Sprint(n)]
			if id == "" {
				continue
			}
			cfg := Config{ThreadID: th, CheckpointID: id}
			st, err := db.State(ctx, cfg)
			rec(fmt.Sprintf("state/%s/%d", th, n), st, err)
			rec(fmt.Sprintf("values/%s/%d", th, n), st.Values, err)
			tu, err := db.GetTuple(ctx, cfg)
			rec(fmt.Sprintf("tuple/%s/%d", th, n), tu, err)
		}
		st, err := db.State(ctx, Config{ThreadID: th})
		rec("head/"+th, st, err)
		rec("values/"+th+"/head", st.Values, err)
		var hist []State
		var histErr error
		for s, err := range db.StateHistory(ctx, th, HistoryOptions{}) {
			if err != nil {
				histErr = err
				break
			}
			hist = append(hist, s)
		}
		rec("history/"+th, hist, histErr)
		evs, err := relEventsAfter(ctx, db, th, 0)
		rec("events/"+th, evs, err)
		msgs, err := db.Events().ListMessages(ctx, th, records.MessageQuery{Limit: 100})
		rec("messages/"+th, msgs, err)
		var runs []records.Run
		var runErr error
		for r, err := range db.Runs().List(ctx, th) {
			if err != nil {
				runErr = err
				break
			}
			r.Owner = "" // differs per handle
			runs = append(runs, r)
		}
		rec("runs/"+th, runs, runErr)
		tr, err := db.Threads().Get(ctx, User("u1"), th)
		rec("thread/"+th, tr, err)
		items, err := db.Store().Search(ctx, records.SearchOp{Prefix: []string{"mem", th}, Refresh: records.RefreshOff})
		rec("store/"+th, items, err)
		for i := range 5 {
			it, err := db.Store().Get(ctx, []string{"mem", th}, fmt.Sprintf("k%d", i), records.WithRefresh(records.RefreshOff))
			rec(fmt.Sprintf("item/%s/%d", th, i), it, err)
		}
	}
	return got, errs
}

// damage is one way to break a copy of the corpus.
type damage struct {
	name string
	fn   func(b []byte) []byte
}

func flipAt(off int, x byte) func([]byte) []byte {
	return func(b []byte) []byte {
		if off < len(b) {
			b[off] ^= x
		}
		return b
	}
}

// damages lists the header fields, random flips, flips in the pages of
// large values, and truncations.
func (c *corpus) damages(rng *rand.Rand, random, inBlobs int) []damage {
	var ds []damage
	for _, h := range []struct {
		name string
		off  int
	}{
		{"magic", 3}, {"page size", 16}, {"write version", 18}, {"reserved bytes", 20}, {"max payload fraction", 21},
		{"page count", 31}, {"first freelist page", 35}, {"schema cookie", 43}, {"schema format", 47},
		{"largest root page (auto-vacuum)", 55}, {"text encoding", 59}, {"user version", 63},
		{"incremental vacuum", 67}, {"application id", 71}, {"page 1 b-tree header", 100}, {"page 1 cell count", 104},
	} {
		ds = append(ds, damage{"header " + h.name, flipAt(h.off, 0x5a)})
	}
	pages := len(c.data) / c.pageSize
	for range random {
		pg := 1 + rng.IntN(pages-1)
		off := pg*c.pageSize + rng.IntN(c.pageSize)
		x := byte(1 + rng.IntN(255))
		ds = append(ds, damage{fmt.Sprintf("page %d byte %d ^%#x", pg+1, off%c.pageSize, x), flipAt(off, x)})
	}
	// Pages that hold large values: find the value's bytes in the file.
	var blobOffs []int
	for _, nd := range c.needles {
		if i := bytes.Index(c.data, nd); i >= 0 {
			blobOffs = append(blobOffs, i)
		}
	}
	for i := range inBlobs {
		if len(blobOffs) == 0 {
			break
		}
		off := blobOffs[i%len(blobOffs)] + rng.IntN(300)
		x := byte(1 + rng.IntN(255))
		ds = append(ds, damage{fmt.Sprintf("value page %d byte %d ^%#x", off/c.pageSize+1, off%c.pageSize, x), flipAt(off, x)})
	}
	for _, n := range []int{0, 100, c.pageSize, c.pageSize + 1000, len(c.data) / 2, len(c.data) - c.pageSize, len(c.data) - 1} {
		ds = append(ds, damage{fmt.Sprintf("truncated to %d of %d bytes", n, len(c.data)), func(b []byte) []byte { return b[:n] }})
	}
	return ds
}

// acceptable reports whether err is a typed error a damaged file may give.
func acceptable(err error) bool {
	for _, e := range []error{ErrCorrupt, ErrNotFound, ErrNotAgentstate, ErrSchemaTooNew, ErrModeMismatch} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// outcome is what one damaged copy did.
type outcome struct {
	openErr error
	wrong   []string // reads that returned another answer than the corpus
	failed  []string // reads that failed with a typed error
	verify  []string // what Verify named
}

// probe opens a damaged copy and reads everything; a panic or an untyped
// error is returned as an error.
func (c *corpus) probe(path string) (out outcome, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := c.opts
	if c.checksums {
		path = nommapURI(path)
	}
	db, openErr := Open(ctx, path, &o)
	if openErr != nil {
		if !acceptable(openErr) {
			return out, fmt.Errorf("open: untyped error: %v", openErr)
		}
		out.openErr = openErr
		return out, nil
	}
	defer db.Close()
	got, errs := readEverything(ctx, db, c.ids)
	for k, e := range errs {
		if !acceptable(e) {
			return out, fmt.Errorf("read %s: untyped error: %v", k, e)
		}
		out.failed = append(out.failed, k)
	}
	for k, d := range got {
		if c.want[k] != d {
			out.wrong = append(out.wrong, k)
		}
	}
	sort.Strings(out.failed)
	sort.Strings(out.wrong)
	rep, verr := db.Verify(ctx, admin.VerifyOptions{})
	switch {
	case verr != nil && !acceptable(verr):
		return out, fmt.Errorf("Verify: untyped error: %v", verr)
	case verr != nil:
		out.verify = []string{verr.Error()}
	default:
		for _, p := range rep.Problems {
			out.verify = append(out.verify, p.String())
		}
	}
	return out, nil
}

func testCorruption(t *testing.T, checksums bool) {
	sqliteOnly(t, "damages the bytes of an SQLite file")
	seed := relSeed(t)
	rng := rand.New(rand.NewPCG(seed, 4))
	c := buildCorpus(t, checksums)
	dir := t.TempDir()
	ds := c.damages(rng, relScale(60, 15, 2000), relScale(30, 8, 500))
	var refused, caught, harmless, silentCaught, silent int
	for i, d := range ds {
		b := d.fn(bytes.Clone(c.data))
		if bytes.Equal(b, c.data) {
			continue
		}
		path := filepath.Join(dir, fmt.Sprintf("d%d.db", i))
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := c.probe(path)
		if err != nil {
			t.Fatalf("%s: %v", d.name, err)
		}
		if len(b) == 0 {
			// An empty file is a new database to SQLite: it opens as an
			// empty agentstate file, which no check can tell from one
			// that lost everything. Only make sure it is that.
			if out.openErr != nil || len(out.verify) > 0 {
				t.Errorf("%s: an empty file should open as a new one: %v %v", d.name, out.openErr, out.verify)
			}
			continue
		}
		switch {
		case out.openErr != nil:
			refused++
		case len(out.wrong) == 0 && len(out.failed) == 0:
			harmless++ // an unused byte (free space, a slack area)
		case len(out.wrong) == 0:
			caught++
			if len(out.verify) == 0 {
				t.Errorf("%s: reads failed (%v) but Verify found nothing", d.name, out.failed)
			}
		default:
			if checksums {
				t.Errorf("%s: with page checksums, reads returned wrong answers: %v", d.name, out.wrong)
			}
			if len(out.verify) > 0 {
				silentCaught++
			} else {
				silent++
				if wrongState(out.wrong) {
					t.Errorf("%s: a checkpoint read returned another state and Verify found nothing: %v", d.name, out.wrong)
				}
			}
		}
		for _, p := range out.verify {
			if strings.TrimSpace(p) == "" {
				t.Errorf("%s: Verify reported an empty problem", d.name)
			}
		}
	}
	t.Logf("%d damaged copies: %d refused at Open, %d read errors (all typed, all named by Verify), %d harmless, %d wrong answers named by Verify, %d wrong answers Verify cannot see (facts stored once: metadata, timestamps, events, store items, records)",
		len(ds), refused, caught, harmless, silentCaught, silent)
}

// wrongState reports whether a wrong answer concerns the channel values
// of a checkpoint, which the file holds twice (the stored value, and the
// parent's values plus the writes the checkpoint consumed), so Verify must
// catch it. A checkpoint's metadata and timestamp are stored once.
func wrongState(keys []string) bool {
	return slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, "values/") })
}

func TestCorruption(t *testing.T) { testCorruption(t, false) }

func TestCorruptionWithChecksums(t *testing.T) { testCorruption(t, true) }
