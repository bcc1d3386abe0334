package engine

import (
	"bytes"
	"container/list"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/agentstate/agentstate/codec"
	"github.com/klauspost/compress/zstd"
)

// Version deltas of the checkpoint protocol's channel values.
//
// What is stored. A value that comes in through the protocol (DB.Put, and
// whatever stores through put.run: batches, importers) is stored as a
// codec delta (copy/insert against the previous version, codec.Diff) when
// that is smaller than the value, and whole otherwise, in full and in
// delta mode alike: the modes concern the thread API's message channels.
// The thread API's own values are not diffed: they are snapshots already,
// compressed inside their envelope. Values under 256 bytes stay whole as
// given: a delta's header and a chain to follow cost more than they save.
// Each row of blobs records how it holds its value (enc: as given, packed,
// delta) and, for a delta, the version it applies to (base); nothing is
// inferred from the bytes (migration 0005).
//
// The base is the parent checkpoint's version of the same (thread,
// namespace, channel), read from the parent's row; where the parent stores
// no value for it (LangGraph's DeltaChannel between two snapshots), the
// nearest ancestor's that does (the history walk's seed). Two children of
// one checkpoint (a fork) each diff against the same base.
//
// Whole values. A value is stored whole when it has no base, when the
// delta is not smaller, when 100 deltas already follow the chain's whole
// value, or when the deltas since it would add up to more than its length;
// whole values are packed (one zstd frame in codec's envelope) when that
// saves an eighth. Under the share rule each whole value is about twice as
// long as the one before, so their total is about twice the newest; the
// cap bounds what a cold read follows. BenchmarkPutGrowingList (800
// versions of a LangChain message list in LangGraph.js's json serde; file
// bytes over the bytes of the messages themselves, ms per Put): this
// policy 2.52x, 0.23-0.6 ms; every version whole (the engine before) 403x,
// 1.9-3.7 ms; a cap of 50 3.27x, of 200 2.16x, none 2.01x; share 0.5
// 2.64x, 2 2.54x. Whole values at the file's cadence K (SnapshotEvery, 10)
// instead: 8.56x; with AutoRetain thinning after each, 2.40x but 1.1-2.0
// ms per Put, the thinning scanning the namespace's checkpoints at every
// whole value (a cost that grows with the thread). So K does not govern
// these chains; it stays the thread API's cadence. Reading a head 100
// deltas past its whole value (BenchmarkGetTupleChain, an 880 KB list)
// costs 2.1-2.2x reading a packed whole value of the same bytes without
// a cache (1.2 ms against 0.55: the 100 rows are about 0.45 ms of it, two
// primary-key searches each, and composing and checksumming 0.2) and 0.7x
// once the cache holds it.
//
// The cache. The last value of each chain that a write stored or a read
// rebuilt (a codec.DeltaBase: bytes and checksum) is kept in the history
// cache's byte budget, so that a Put right after the previous Put or read
// diffs without reading the file, and a read of that version, or of one
// after it, starts from it. A write's value is published when its
// transaction commits. A cached value is used only for the row it came from
// (its stamp: owner checkpoint, stored length, a delta's header), so a
// version another handle deleted and stored again is read from the file.
// On a miss the base is rebuilt from the file: 0.95-1.35 ms per Put
// against 0.23-0.6 with the cache, and the same file (storing whole on a
// miss would be the 403x above). HistoryCacheBytes 0 keeps nothing.
//
// Reads rebuild delta values chain by chain: one query brings the links
// from the versions asked for back to the nearest whole (or cached) value,
// with each row's bytes, and codec.PatchChain applies the deltas in one
// pass; versions of one chain asked for together (a List page) are rebuilt
// oldest first, each from the one before. A delta whose base is deleted
// (prune, delete for runs, retention, conversion) is first rebased onto
// the nearest surviving version of its chain, or stored whole
// (deleteValues); retention thins whole values as it thins delta snapshots
// (thinValues); verify rebuilds every value one delta at a time; export
// writes rows as stored (enc, base, the bytes in base64) and import
// restores them, refusing a delta whose base the dump lacks.

// Encodings of a stored channel value (blobs.enc, migration 0005).
const (
	encPlain  = 0 // the value's bytes as given
	encPacked = 1 // a codec envelope (zstd) around them
	encDelta  = 2 // a codec.DeltaV1 delta against the value of version base
)

// deltaPolicy decides when a value of the protocol is stored whole. It is a
// variable so that the benchmarks can compare policies; the engine never
// changes it.
var deltaPolicy = struct {
	// minValue: values shorter than this are stored whole, as given: a
	// delta's header and the chain a read must follow cost more than the
	// few bytes it saves.
	minValue int
	// maxChain bounds the deltas between a value and the whole value its
	// chain starts from, which bounds the rows a cold read follows.
	maxChain int
	// share: a value is stored whole once the deltas since the last whole
	// value would add up to more than share times that whole value's
	// length. Whole values then grow geometrically, so their total is a
	// small multiple of the newest.
	share float64
}{minValue: 256, maxChain: 100, share: 1}

// valueKey names a chain: the versions of one channel in one namespace of
// one thread.
type valueKey struct{ thread, ns, ch string }

// chainValue is a value's bytes and where it sits in its chain.
type chainValue struct {
	val   codec.DeltaBase
	depth int   // deltas between it and the whole value its chain starts from
	since int64 // their bytes
	whole int64 // the length of that whole value
}

// baseEntry is the last value of a chain that a write stored or a read
// rebuilt, kept so that the next write diffs against it without reading the
// file and a read of it (or of a version after it) starts from it.
type baseEntry struct {
	key     valueKey
	version string
	stamp   stamp // of the row it was read from or stored as
	enc     int64 // that row's encoding
	cv      chainValue
	size    int64 // in the cache's budget
	elem    *list.Element
}

// stamp identifies a stored row cheaply, so that a cached value is used
// only for the row it came from: another handle (another process) may have
// deleted the version and stored another value under it since.
type stamp struct {
	owner  string // the checkpoint that stored it
	stored int64  // the stored bytes' length
	head   []byte // their first bytes: a delta's header names its result's length and checksum
}

// stampHead is how many stored bytes a stamp keeps: a delta header is at
// most 19.
const stampHead = 24

func stampOf(sv storedVal) stamp {
	return stamp{owner: sv.owner, stored: int64(len(sv.data)), head: sv.data[:min(len(sv.data), stampHead)]}
}

// holds reports whether e is the value of the row stamped s.
func (e *baseEntry) holds(s stamp) bool {
	if e.stamp.owner != s.owner || e.stamp.stored != s.stored {
		return false
	}
	if e.enc != encDelta {
		return true
	}
	h, err := codec.ReadDeltaHeader(s.head)
	return err == nil && h.Len == len(e.cv.val.Bytes()) && h.Sum == e.cv.val.Sum()
}

func newBaseEntry(k valueKey, version string, sv storedVal, cv chainValue) *baseEntry {
	st := stampOf(sv)
	st.head = bytes.Clone(st.head)
	return &baseEntry{key: k, version: version, stamp: st, enc: sv.enc, cv: cv}
}

// storedVal is a row of blobs as stored.
type storedVal struct {
	typ   string
	enc   int64
	base  string
	owner string
	data  []byte
}

// base returns the cached last value of chain k: this transaction's own
// (a write not yet committed) first, then the handle's.
func (c *conn) base(k valueKey) *baseEntry {
	if e, ok := c.pending[k]; ok {
		return e
	}
	return c.hc.peekBase(k)
}

// remember offers a value to the cache: a write's value waits for its
// transaction to commit (db.write publishes it), a read's goes in at once.
func (c *conn) remember(e *baseEntry) {
	if !c.hc.enabled() {
		return
	}
	if c.d.InTx() && c.writer {
		if c.pending == nil {
			c.pending = map[valueKey]*baseEntry{}
		}
		c.pending[e.key] = e
		return
	}
	c.hc.putBase(e)
}

func (hc *historyCache) peekBase(k valueKey) *baseEntry {
	if !hc.enabled() {
		return nil
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	e := hc.bases[k]
	if e != nil {
		hc.lru.MoveToFront(e.elem)
	}
	return e
}

func (hc *historyCache) countValue(hit bool) {
	if !hc.enabled() {
		return
	}
	hc.mu.Lock()
	if hit {
		hc.stats.ValueHits++
	} else {
		hc.stats.ValueMisses++
	}
	hc.mu.Unlock()
}

func (hc *historyCache) putBase(e *baseEntry) {
	if !hc.enabled() {
		return
	}
	e.size = int64(entryOverhead + len(e.key.thread) + len(e.key.ns) + len(e.key.ch) + len(e.version) + len(e.stamp.owner) + len(e.cv.val.Bytes()))
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if old, ok := hc.bases[e.key]; ok {
		hc.removeBaseLocked(old)
	}
	if e.size > hc.maxBytes {
		return
	}
	hc.bases[e.key] = e
	e.elem = hc.lru.PushFront(e)
	hc.stats.Entries++
	hc.stats.Bytes += e.size
	hc.evictLocked()
}

func (hc *historyCache) removeBaseLocked(e *baseEntry) {
	hc.lru.Remove(e.elem)
	delete(hc.bases, e.key)
	hc.stats.Entries--
	hc.stats.Bytes -= e.size
}

// publish moves a committed transaction's values into the cache.
func (hc *historyCache) publish(pending map[valueKey]*baseEntry) {
	for _, e := range pending {
		hc.putBase(e)
	}
}

// valueRead is one stored value to turn back into the bytes that were put.
type valueRead struct {
	key     valueKey
	version string
	stored  storedVal
	value   []byte     // the result
	cv      chainValue // the result's place in its chain (for encDelta, and for encPacked when base or cached)
	base    bool       // the value is wanted as a delta base: cv is needed
}

// unpack returns the bytes of a whole value.
func unpack(k valueKey, version string, sv storedVal) ([]byte, error) {
	switch sv.enc {
	case encPlain:
		return sv.data, nil
	case encPacked:
		body, _, err := codec.Body(sv.data)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", undecodable(err), describeValueKey(k, version), err)
		}
		return body, nil
	}
	return nil, fmt.Errorf("%w: %s: unknown encoding %d", ErrCorrupt, describeValueKey(k, version), sv.enc)
}

func describeValueKey(k valueKey, version string) string {
	s := fmt.Sprintf("thread %q", k.thread)
	if k.ns != "" {
		s += fmt.Sprintf(" namespace %q", k.ns)
	}
	return s + fmt.Sprintf(" channel %q version %q", k.ch, version)
}

// readValues turns stored values back into the bytes that were put: whole
// values as they are (inflated if packed), deltas by following their base
// links to the nearest whole or cached value and applying the deltas after
// it in one pass (codec.PatchChain). Values of one chain asked for together
// (a List page) are rebuilt oldest first, each from the one before. The
// values of packed and delta rows are offered to the cache.
func readValues(c *conn, reads []*valueRead) error {
	var groups map[valueKey][]*valueRead
	var order []valueKey
	for _, r := range reads {
		switch r.stored.enc {
		case encPlain:
			r.value = r.stored.data
		case encPacked:
			if e := c.base(r.key); e != nil && e.version == r.version && e.holds(stampOf(r.stored)) {
				c.hc.countValue(true)
				r.cv, r.value = e.cv, bytes.Clone(e.cv.val.Bytes())
				continue
			}
			body, err := unpack(r.key, r.version, r.stored)
			if err != nil {
				return err
			}
			r.value = body
			switch {
			case c.hc.enabled():
				r.cv = chainValue{val: codec.NewDeltaBase(bytes.Clone(body)), whole: int64(len(body))}
				c.remember(newBaseEntry(r.key, r.version, r.stored, r.cv))
			case r.base:
				r.cv = chainValue{val: codec.NewDeltaBase(body), whole: int64(len(body))}
			}
		case encDelta:
			if groups == nil {
				groups = map[valueKey][]*valueRead{}
			}
			if _, ok := groups[r.key]; !ok {
				order = append(order, r.key)
			}
			groups[r.key] = append(groups[r.key], r)
		default:
			return fmt.Errorf("%w: %s: unknown encoding %d", ErrCorrupt, describeValueKey(r.key, r.version), r.stored.enc)
		}
	}
	for _, k := range order {
		err := readChain(c, k, groups[k], true)
		if errors.Is(err, codec.ErrDeltaBase) {
			// The cached value the chain stopped at is not what the file
			// holds under that version any more (another handle deleted
			// and rewrote it): rebuild from the file alone.
			err = readChain(c, k, groups[k], false)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// The rows of a chain, newest first: one range of the channel's versions
// from ?4 down. Where versions sort in the order they were made (LangGraph's
// zero-padded ones, ids that grow with time) and the thread did not branch
// there, a chain is a run of consecutive rows, and reading it is one index
// seek and a step per row. The caller follows the bases and stops reading
// at the whole value, or at the first row that is not the next link.
const sqlChainRange = `SELECT version, enc, base, data FROM blobs
WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND channel = ?3 AND version <= ?4
ORDER BY version DESC`

// The links of a chain from some versions ?4 back to the nearest whole value
// (or to a version of ?5, which the caller has already), with every row's
// bytes: what the range above did not reach. One index search per link to
// follow it and one to read it; UNION ends a walk that loops. CROSS JOIN
// keeps the links as the outer loop (the planner cannot know the CTE holds
// a few rows).
const sqlChainLinks = `WITH RECURSIVE link(version) AS (
	SELECT value FROM json_each(?4)
	UNION
	SELECT b.base FROM link CROSS JOIN blobs b
	  ON b.thread_id = ?1 AND b.checkpoint_ns = ?2 AND b.channel = ?3 AND b.version = link.version
	WHERE b.enc = 2 AND b.base NOT IN (SELECT value FROM json_each(?5))
)
SELECT link.version, b.enc, b.base, b.data FROM link
CROSS JOIN blobs b ON b.thread_id = ?1 AND b.checkpoint_ns = ?2 AND b.channel = ?3 AND b.version = link.version`

// readChain rebuilds delta values of one chain, starting from the cached
// value where the chain passes through it (if cached).
func readChain(c *conn, k valueKey, rs []*valueRead, cached bool) error {
	known := map[string]chainValue{}
	var e *baseEntry
	if cached {
		e = c.base(k)
	}
	for _, r := range rs {
		if e != nil && r.version == e.version && !e.holds(stampOf(r.stored)) {
			e = nil // stored again by another checkpoint since: not the cached value
		}
	}
	if e != nil {
		known[e.version] = e.cv
	}
	var todo []*valueRead
	for _, r := range rs {
		if cv, ok := known[r.version]; ok {
			r.cv, r.value = cv, bytes.Clone(cv.val.Bytes())
			continue
		}
		todo = append(todo, r)
	}
	c.hc.countValue(len(todo) == 0)
	if len(todo) == 0 {
		return nil
	}
	links := map[string]storedVal{}
	for _, r := range todo {
		links[r.version] = r.stored
	}
	if err := readLinks(c, k, links, known); err != nil {
		return err
	}
	ch := chainReader{k: k, known: known, links: links}
	// Oldest first: a value asked for is then where the next one stops.
	depth := make(map[*valueRead]int, len(todo))
	for _, r := range todo {
		d, err := ch.distance(r.version)
		if err != nil {
			return err
		}
		depth[r] = d
	}
	slices.SortStableFunc(todo, func(a, b *valueRead) int { return depth[a] - depth[b] })
	for _, r := range todo {
		if _, err := ch.rebuild(r.version); err != nil {
			return err
		}
	}
	// The first value asked for (a page's newest) is the one the next
	// write or read most likely continues from. The cache shares its
	// bytes, and so would two tuples naming one version: each caller gets
	// its own copy, and a value rebuilt for one caller alone is its.
	first := rs[0]
	shared := map[string]bool{}
	if c.hc.enabled() {
		shared[first.version] = true
	}
	for _, r := range todo {
		r.cv = known[r.version]
		r.value = r.cv.val.Bytes()
		if shared[r.version] {
			r.value = bytes.Clone(r.value)
		}
		shared[r.version] = true
	}
	c.remember(newBaseEntry(k, first.version, first.stored, known[first.version]))
	return nil
}

// chainWalks counts the reads that needed sqlChainLinks (tests check which
// path a read took).
var chainWalks atomic.Int64

// readLinks adds to links the rows of the chains behind them, back to their
// whole values or to a version known already: first the range of versions
// below the newest missing base, for as long as each row read is the next
// link (one seek, then a step per row); then, for the bases that range did
// not bring (a branch, versions that do not sort as they were made), the
// walk of sqlChainLinks. Each row is checked as it is followed, so the order
// of versions decides only how many statements a read takes, never what
// it reads.
func readLinks(c *conn, k valueKey, links map[string]storedVal, known map[string]chainValue) error {
	need := map[string]bool{}
	want := func(v string) {
		_, have := links[v]
		_, cached := known[v]
		if !have && !cached {
			need[v] = true
		}
	}
	for _, l := range links {
		if l.enc == encDelta {
			want(l.base)
		}
	}
	if len(need) == 0 {
		return nil
	}
	var hi string
	for v := range need {
		hi = max(hi, v)
	}
	err := c.query(sqlChainRange, []any{k.thread, k.ns, k.ch, hi}, func(st row) error {
		v := st.Text(0)
		if _, have := links[v]; have {
			return nil // a version asked for, whose row came with the request
		}
		if !need[v] {
			return errStop // not the next link: the walk takes over
		}
		l := storedVal{enc: st.Int64(1), base: st.Text(2), data: copyBytes(st.Blob(3))}
		links[v] = l
		delete(need, v)
		if l.enc == encDelta {
			want(l.base)
		}
		if len(need) == 0 {
			return errStop
		}
		return nil
	})
	if err = ignoreStop(err); err != nil || len(need) == 0 {
		return err
	}
	chainWalks.Add(1)
	seeds := slices.Sorted(maps.Keys(need))
	stops := slices.Concat(slices.Collect(maps.Keys(links)), slices.Collect(maps.Keys(known)))
	seedArg, err := jsonArg(seeds)
	if err != nil {
		return err
	}
	stopArg, err := jsonArg(stops)
	if err != nil {
		return err
	}
	return c.query(sqlChainLinks, []any{k.thread, k.ns, k.ch, seedArg, stopArg}, func(st row) error {
		links[st.Text(0)] = storedVal{enc: st.Int64(1), base: st.Text(2), data: copyBytes(st.Blob(3))}
		return nil
	})
}

// chainReader rebuilds versions of one chain from its links.
type chainReader struct {
	k     valueKey
	known map[string]chainValue
	links map[string]storedVal
}

// distance counts the deltas between version v and the nearest known or
// whole value, checking that the links get there.
func (r *chainReader) distance(v string) (int, error) {
	n := 0
	for cur := v; ; n++ {
		if _, ok := r.known[cur]; ok {
			return n, nil
		}
		l, ok := r.links[cur]
		if !ok {
			return 0, fmt.Errorf("%w: %s: the value it is a delta of is missing (version %q)", ErrCorrupt, describeValueKey(r.k, v), cur)
		}
		if l.enc != encDelta {
			return n, nil
		}
		if n > len(r.links) {
			return 0, fmt.Errorf("%w: %s: its delta chain loops", ErrCorrupt, describeValueKey(r.k, v))
		}
		cur = l.base
	}
}

// rebuild returns version v, applying the deltas after the nearest known
// or whole value, and makes it known.
func (r *chainReader) rebuild(v string) (chainValue, error) {
	var path []string // deltas from v back
	var start chainValue
	for cur := v; ; {
		if cv, ok := r.known[cur]; ok {
			start = cv
			break
		}
		l, ok := r.links[cur]
		if !ok {
			return chainValue{}, fmt.Errorf("%w: %s: the value it is a delta of is missing (version %q)", ErrCorrupt, describeValueKey(r.k, v), cur)
		}
		if l.enc != encDelta {
			body, err := unpack(r.k, cur, l)
			if err != nil {
				return chainValue{}, err
			}
			start = chainValue{val: codec.NewDeltaBase(body), whole: int64(len(body))}
			r.known[cur] = start
			break
		}
		if len(path) > len(r.links) {
			return chainValue{}, fmt.Errorf("%w: %s: its delta chain loops", ErrCorrupt, describeValueKey(r.k, v))
		}
		path = append(path, cur)
		cur = l.base
	}
	if len(path) == 0 {
		return start, nil
	}
	deltas := make([][]byte, len(path))
	since := start.since
	for i, ver := range path {
		d := r.links[ver].data
		deltas[len(path)-1-i] = d
		since += int64(len(d))
	}
	// No value the engine stores is longer than MaxListBytes: a damaged
	// or hostile chain claiming more (copies can repeat) is refused
	// before anything is allocated.
	val, err := start.val.PatchChain(nil, deltas, MaxListBytes)
	if err != nil {
		return chainValue{}, fmt.Errorf("%w: %s: %w", undecodable(err), describeValueKey(r.k, v), err)
	}
	cv := chainValue{val: val, depth: start.depth + len(path), since: since, whole: start.whole}
	r.known[v] = cv
	return cv, nil
}

const sqlValueRow = `SELECT type, enc, base, checkpoint_id, data FROM blobs WHERE thread_id=? AND checkpoint_ns=? AND channel=? AND version=?`

// readValue returns the value stored for one version, rebuilt.
func readValue(c *conn, k valueKey, version string) (codec.Blob, bool, error) {
	r := &valueRead{key: k, version: version}
	found, err := c.queryRow(sqlValueRow, []any{k.thread, k.ns, k.ch, version}, func(st row) error {
		r.stored = storedVal{typ: st.Text(0), enc: st.Int64(1), base: st.Text(2), owner: st.Text(3), data: copyBytes(st.Blob(4))}
		return nil
	})
	if err != nil || !found {
		return codec.Blob{}, found, err
	}
	if err := readValues(c, []*valueRead{r}); err != nil {
		return codec.Blob{}, true, err
	}
	return codec.Blob{Type: r.stored.typ, Data: r.value}, true, nil
}

// readChainValue returns the value stored for one version with its place
// in its chain, from the cache when it holds that row's value (st; a zero
// stamp never matches).
func readChainValue(c *conn, k valueKey, version string, st stamp) (chainValue, error) {
	if e := c.base(k); e != nil && e.version == version && e.holds(st) {
		c.hc.countValue(true)
		return e.cv, nil
	}
	r := &valueRead{key: k, version: version, base: true}
	found, err := c.queryRow(sqlValueRow, []any{k.thread, k.ns, k.ch, version}, func(st row) error {
		r.stored = storedVal{typ: st.Text(0), enc: st.Int64(1), base: st.Text(2), owner: st.Text(3), data: copyBytes(st.Blob(4))}
		return nil
	})
	if err != nil {
		return chainValue{}, err
	}
	if !found {
		return chainValue{}, fmt.Errorf("%w: %s is not stored", ErrCorrupt, describeValueKey(k, version))
	}
	if r.stored.enc == encPlain {
		c.hc.countValue(false)
		return chainValue{val: codec.NewDeltaBase(r.stored.data), whole: int64(len(r.stored.data))}, nil // plain: stored bytes are the value's
	}
	if err := readValues(c, []*valueRead{r}); err != nil {
		return chainValue{}, err
	}
	return r.cv, nil
}

// The version a new value of channel ?1 diffs against, when its parent's
// version holds no stored value: the nearest ancestor's that does (the
// history walk's seed), from checkpoint ?4 (already inserted) up; with the
// row's stamp.
const sqlBaseSeed = walkChain + `SELECT b.version, b.checkpoint_id, length(b.data), substr(b.data, 1, 24)
FROM chain CROSS JOIN blobs b ON b.thread_id = :thread AND b.checkpoint_ns = :ns AND b.channel = :ch AND b.version = chain.ver`

// A row's stamp, without reading more than its first bytes.
const sqlStamp = `SELECT checkpoint_id, length(data), substr(data, 1, 24) FROM blobs WHERE thread_id=? AND checkpoint_ns=? AND channel=? AND version=?`

// baseFor finds the value a new version of chain k diffs against: the
// value stored for the parent checkpoint's version pv, or where it stores
// none, for the nearest ancestor's. ok is false when there is none.
func baseFor(c *conn, k valueKey, pv, childID string) (version string, cv chainValue, ok bool, err error) {
	var st stamp
	scan := func(r row, at int) {
		st = stamp{owner: r.Text(at), stored: r.Int64(at + 1), head: r.Blob(at + 2)}
		st.head = bytes.Clone(st.head)
	}
	found, err := c.queryRow(sqlStamp, []any{k.thread, k.ns, k.ch, pv}, func(r row) error {
		scan(r, 0)
		return nil
	})
	if err != nil {
		return "", chainValue{}, false, err
	}
	version = pv
	if !found {
		found, err = c.queryRow(sqlBaseSeed, []any{k.ch, k.thread, k.ns, childID}, func(r row) error {
			version = r.Text(0)
			scan(r, 1)
			return nil
		})
		if err != nil || !found {
			return "", chainValue{}, false, err
		}
	}
	cv, err = readChainValue(c, k, version, st)
	if err != nil {
		return "", chainValue{}, false, err
	}
	return version, cv, true, nil
}

// encodeChannelValue chooses how to store value b as version v of chain k, owned
// by checkpoint cpID, given the version of its parent checkpoint (pv, if
// hasPV): a delta against the previous value when that is smaller and the
// chain allows one, otherwise whole (packed when that saves an eighth). The
// new value goes to the cache once the transaction commits.
//
// newWhole reports a whole value stored where a delta could have been (the
// chain's cap or share was reached), after which AutoRetain thins.
func encodeChannelValue(c *conn, k valueKey, v, cpID string, b codec.Blob, pv string, hasPV bool) (sv storedVal, newWhole bool, err error) {
	next := b.Data
	sv = storedVal{typ: b.Type, enc: encPlain, owner: cpID, data: nonNil(next)}
	if len(next) < deltaPolicy.minValue {
		return sv, false, nil
	}
	keep := c.hc.enabled()
	if keep {
		// The cache outlives the call: it must not share the caller's buffer.
		next = bytes.Clone(next)
	}
	var nb codec.DeltaBase
	var cv chainValue
	if hasPV && pv != v {
		bv, base, ok, err := baseFor(c, k, pv, cpID)
		if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrFormatTooNew) {
			// A damaged previous value (or one of a newer build's format)
			// must not stop the thread: the new value does not need it, it
			// is stored whole.
			ok, err = false, nil
		}
		if err != nil {
			return storedVal{}, false, err
		}
		if ok && bv != v {
			newWhole = true
			d, n, err := base.val.Diff(nil, next)
			if err == nil {
				d = codec.PackDelta(d)
				nb = n
				cv = chainValue{val: n, depth: base.depth + 1, since: base.since + int64(len(d)), whole: base.whole}
				if len(d) < len(next) && cv.depth <= deltaPolicy.maxChain && float64(cv.since) <= deltaPolicy.share*float64(base.whole) {
					sv.enc, sv.base, sv.data = encDelta, bv, d
					newWhole = false
				}
			}
		}
	}
	if sv.enc != encDelta {
		packed, err := pack(next)
		if err != nil {
			return storedVal{}, false, err
		}
		if packed != nil {
			sv.enc, sv.data = encPacked, packed
		}
		if keep {
			if nb.Bytes() == nil {
				nb = codec.NewDeltaBase(next)
			}
			cv = chainValue{val: nb, whole: int64(len(next))}
		}
	}
	if keep {
		c.remember(newBaseEntry(k, v, sv, cv))
	}
	return sv, newWhole, nil
}

// pack returns a whole value compressed as the engine compresses delta
// snapshots (a codec zstd envelope, which codec.Body inflates), or nil when
// that saves less than an eighth. It is one frame, not codec's frames per
// list chunk: the bytes are the caller's, not necessarily msgpack, and a
// chain's whole values are too far apart to share chunks. A value shorter
// than codec.CompressMin gets an S2 envelope instead (packSmall).
func pack(v []byte) ([]byte, error) {
	if len(v) < codec.CompressMin {
		return packSmall(v), nil
	}
	enc, err := packEncoder()
	if err != nil {
		return nil, err
	}
	out := enc.EncodeAll(v, append(make([]byte, 0, len(v)/2), codec.FormatV1Zstd))
	if len(out) > len(v)-len(v)/8 {
		return nil, nil
	}
	return out, nil
}

// packSmall returns a caller's bytes in an S2 envelope (codec.PackSmall),
// or nil when that saves less than an eighth: for values stored whole that
// are read often and are too short for zstd's frame to pay (a step's
// input, a pending write of a message).
func packSmall(v []byte) []byte {
	if len(v) < codec.PackMin {
		return nil
	}
	p := codec.PackSmall(append(append(make([]byte, 0, len(v)+1), codec.FormatV1), v...))
	if p[0] != codec.FormatV1S2 {
		return nil
	}
	return p
}

// packEncoder is zstd at the level codec uses for snapshots (codec.Small).
var packEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithLowerEncoderMem(true))
})

// blobID names a stored value inside one thread.
type blobID struct{ ns, ch, version string }

const sqlThreadDeltas = `SELECT checkpoint_ns, channel, version, base FROM blobs WHERE thread_id = ? AND enc = 2`

// deleteValues deletes stored values of a thread. A surviving delta whose
// base goes is rebased first, never left dangling: it becomes a delta
// against the nearest surviving version on its chain, or whole when none
// survives (or the delta would not be smaller). Values do not change, only
// how they are stored, so the order of the rebases does not matter.
func deleteValues(c *conn, thread string, dead []blobID) error {
	if len(dead) == 0 {
		return nil
	}
	gone := make(map[blobID]bool, len(dead))
	for _, d := range dead {
		gone[d] = true
	}
	links := map[blobID]string{} // delta -> its base's version
	err := c.query(sqlThreadDeltas, []any{thread}, func(st row) error {
		links[blobID{st.Text(0), st.Text(1), st.Text(2)}] = st.Text(3)
		return nil
	})
	if err != nil {
		return err
	}
	var orphans []blobID
	for id, base := range links {
		if !gone[id] && gone[blobID{id.ns, id.ch, base}] {
			orphans = append(orphans, id)
		}
	}
	slices.SortFunc(orphans, compareBlobID)
	for _, id := range orphans {
		cur, found := links[id], false
		for steps := 0; ; steps++ {
			bid := blobID{id.ns, id.ch, cur}
			if !gone[bid] {
				found = true
				break
			}
			next, isDelta := links[bid]
			if !isDelta {
				break // the chain's whole value goes too
			}
			if steps > len(links) {
				return fmt.Errorf("%w: %s: its delta chain loops", ErrCorrupt, describeValueKey(valueKey{thread, id.ns, id.ch}, id.version))
			}
			cur = next
		}
		if err := rebase(c, valueKey{thread, id.ns, id.ch}, id.version, cur, found); err != nil {
			return err
		}
	}
	for _, d := range dead {
		if err := c.exec(sqlDeleteBlob, thread, d.ns, d.ch, d.version); err != nil {
			return err
		}
	}
	return nil
}

func compareBlobID(a, b blobID) int {
	if a.ns != b.ns {
		return cmpString(a.ns, b.ns)
	}
	if a.ch != b.ch {
		return cmpString(a.ch, b.ch)
	}
	return cmpString(a.version, b.version)
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

const sqlRewriteValue = `UPDATE blobs SET enc = ?, base = ?, data = ? WHERE thread_id = ? AND checkpoint_ns = ? AND channel = ? AND version = ?`

// rebase rewrites version v of chain k as a delta against version base
// when hasBase and that is smaller than the value, and whole otherwise.
func rebase(c *conn, k valueKey, v, base string, hasBase bool) error {
	val, found, err := readValue(c, k, v)
	if err != nil || !found {
		return err
	}
	if hasBase {
		b, err := readChainValue(c, k, base, stamp{})
		if err != nil {
			return err
		}
		if d, _, err := b.val.Diff(nil, val.Data); err == nil && len(d) < len(val.Data) {
			return c.exec(sqlRewriteValue, encDelta, base, codec.PackDelta(d), k.thread, k.ns, k.ch, v)
		}
	}
	enc, data := int64(encPlain), nonNil(val.Data)
	if len(val.Data) >= deltaPolicy.minValue {
		packed, err := pack(val.Data)
		if err != nil {
			return err
		}
		if packed != nil {
			enc, data = encPacked, packed
		}
	}
	return c.exec(sqlRewriteValue, enc, nil, data, k.thread, k.ns, k.ch, v)
}

// thinValues thins the whole values of the version-delta chains of one
// namespace of a thread as thinSnapshots thins delta snapshots: it keeps
// the whole value every branch tip's chain starts from, those stored by
// roots, and the earliest of each step bucket [4^j, 4^(j+1)); every other
// whole value becomes a delta against its predecessor (the value its
// checkpoint's parent reads), when that is smaller, so every chain stays
// readable and old whole values form a geometric series. Channels for
// which skip is true are left alone (the thread API's own). It returns how
// many values it turned into deltas and the bytes that saved.
func thinValues(c *conn, thread, ns string, skip func(ch string) bool) (n int, freed int64, err error) {
	type cpInfo struct {
		parent   string
		hasChild bool
		step     int64
		versions map[string]string
	}
	// Parent links of every checkpoint; metadata and versions only of the
	// few that need them (tips, owners of whole values and their parents),
	// so that AutoRetain's run after each whole value stays cheap.
	cps := map[string]*cpInfo{}
	err = c.query(`SELECT checkpoint_id, coalesce(parent_id, '') FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ?`, []any{thread, ns},
		func(st row) error {
			cps[st.Text(0)] = &cpInfo{parent: st.Text(1), step: -1}
			return nil
		})
	if err != nil {
		return 0, 0, err
	}
	for _, ci := range cps {
		if p, ok := cps[ci.parent]; ok {
			p.hasChild = true
		}
	}
	type valInfo struct {
		version, owner, base string
		enc, size            int64
	}
	chains := map[string]map[string]*valInfo{} // channel -> version -> value
	need := map[string]bool{}
	for id, ci := range cps {
		if !ci.hasChild {
			need[id] = true
		}
	}
	err = c.query(`SELECT channel, version, checkpoint_id, enc, base, length(data) FROM blobs WHERE thread_id = ? AND checkpoint_ns = ?`, []any{thread, ns},
		func(st row) error {
			ch := st.Text(0)
			if skip(ch) {
				return nil
			}
			if chains[ch] == nil {
				chains[ch] = map[string]*valInfo{}
			}
			vi := &valInfo{version: st.Text(1), owner: st.Text(2), enc: st.Int64(3), base: st.Text(4), size: st.Int64(5)}
			chains[ch][vi.version] = vi
			if vi.enc != encDelta {
				need[vi.owner] = true
				if o, ok := cps[vi.owner]; ok {
					need[o.parent] = true
				}
			}
			return nil
		})
	if err != nil {
		return 0, 0, err
	}
	if len(chains) == 0 {
		return 0, 0, nil
	}
	ids, err := jsonArg(slices.Sorted(maps.Keys(need)))
	if err != nil {
		return 0, 0, err
	}
	err = c.query(`SELECT checkpoint_id, metadata, checkpoint FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id IN (SELECT value FROM json_each(?))`, []any{thread, ns, ids},
		func(st row) error {
			ci := cps[st.Text(0)]
			if ci == nil {
				return nil
			}
			var md map[string]any
			if codec.Unmarshal(st.Blob(1), &md) == nil {
				ci.step = metadataStep(md)
			}
			var sv storedVersions
			if codec.Unmarshal(st.Blob(2), &sv) == nil {
				ci.versions = sv.ChannelVersions
			}
			return nil
		})
	if err != nil {
		return 0, 0, err
	}
	versionsOf := func(id string) map[string]string {
		if ci, ok := cps[id]; ok {
			return ci.versions
		}
		return nil
	}
	for _, ch := range slices.Sorted(maps.Keys(chains)) {
		vals := chains[ch]
		k := valueKey{thread, ns, ch}
		// wholeOf follows base links to the whole value a chain starts from.
		wholeOf := func(v string) (string, bool) {
			for steps := 0; steps <= len(vals); steps++ {
				vi, ok := vals[v]
				if !ok {
					return "", false
				}
				if vi.enc != encDelta {
					return v, true
				}
				v = vi.base
			}
			return "", false
		}
		keep := map[string]bool{}
		// Where each branch tip's chain starts.
		for id, ci := range cps {
			if ci.hasChild {
				continue
			}
			start, found := "", false
			if v, ok := versionsOf(id)[ch]; ok {
				if _, held := vals[v]; held {
					start, found = v, true
				}
			}
			if !found {
				found, err = c.queryRow(sqlWalkSeed, []any{ch, thread, ns, id}, func(st row) error {
					start = st.Text(0)
					return nil
				})
				if err != nil {
					return 0, 0, err
				}
			}
			if found {
				if w, ok := wholeOf(start); ok {
					keep[w] = true
				}
			}
		}
		// Roots' values, and the earliest whole value of each step bucket.
		first := map[int]*valInfo{}
		for _, vi := range vals {
			if vi.enc == encDelta {
				continue
			}
			owner, ok := cps[vi.owner]
			if !ok || owner.parent == "" || vi.size < int64(deltaPolicy.minValue) {
				keep[vi.version] = true
				continue
			}
			b := (bits.Len64(uint64(owner.step+1)) + 1) / 2
			if cur, ok := first[b]; !ok || owner.step < cps[cur.owner].step || owner.step == cps[cur.owner].step && vi.owner < cur.owner {
				first[b] = vi
			}
		}
		for _, vi := range first {
			keep[vi.version] = true
		}
		for _, v := range slices.Sorted(maps.Keys(vals)) {
			vi := vals[v]
			if vi.enc == encDelta || keep[v] {
				continue
			}
			// Its predecessor: what its checkpoint's parent reads.
			owner := cps[vi.owner]
			pred, found := "", false
			if pv, ok := versionsOf(owner.parent)[ch]; ok {
				if _, held := vals[pv]; held {
					pred, found = pv, true
				}
			}
			if !found {
				found, err = c.queryRow(sqlWalkSeed, []any{ch, thread, ns, vi.owner}, func(st row) error {
					pred = st.Text(0)
					return nil
				})
				if err != nil {
					return 0, 0, err
				}
			}
			if !found || pred == v {
				continue
			}
			// Never a loop: the predecessor's chain must not pass through v.
			loops := false
			for p, steps := pred, 0; steps <= len(vals); steps++ {
				pi, ok := vals[p]
				if !ok || pi.enc != encDelta {
					break
				}
				if pi.base == v {
					loops = true
					break
				}
				p = pi.base
			}
			if loops {
				continue
			}
			val, _, err := readValue(c, k, v)
			if err != nil {
				return 0, 0, err
			}
			base, err := readChainValue(c, k, pred, stamp{})
			if err != nil {
				return 0, 0, err
			}
			d, _, err := base.val.Diff(nil, val.Data)
			if err != nil {
				continue
			}
			if d = codec.PackDelta(d); int64(len(d)) >= vi.size {
				continue
			}
			if err := c.exec(sqlRewriteValue, encDelta, pred, d, thread, ns, ch, v); err != nil {
				return 0, 0, err
			}
			vi.enc, vi.base = encDelta, pred
			n++
			freed += vi.size - int64(len(d))
			vi.size = int64(len(d))
		}
	}
	return n, freed, nil
}
