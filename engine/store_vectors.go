package engine

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/agentstate/agentstate/engine/records"
)

// Semantic search (docs/storage.md, "Semantic search"). The host embeds an
// item's fields and passes the vectors with its put; the engine keeps them
// in store_vectors beside the item (float32 little-endian blobs, one row per
// field path) and ranks by them in Go, on every backend, with no SQLite
// extension. A search with a query vector streams the vectors of the live
// items that match its prefix and filter out of SQL, scores each one in
// place (no allocation per row) and keeps the best offset+limit items in a
// heap, an item scoring as its best vector; only those items are read.

const (
	maxVectorDims    = 16384 // pgvector's vector type stops at 16,000
	maxItemVectors   = 1024  // vectors of one item (a path like "a[*].b" gives one per element)
	maxVectorPathLen = 1024
)

const (
	sqlStoreVectorsDelete = `DELETE FROM store_vectors WHERE namespace=? AND key=?`
	// A vector row names its item's rowid, which a search selects by.
	sqlStoreVectorsPut = `INSERT INTO store_vectors(item, namespace, key, path, vec)
		SELECT rowid, ?1, ?2, ?3, ?4 FROM store_items WHERE namespace = ?1 AND key = ?2`
	// A sweep deletes the vectors of the items it deletes, first.
	sqlStoreVectorsSweep = `DELETE FROM store_vectors WHERE id IN (SELECT v.id FROM store_vectors v
		JOIN store_items i ON i.namespace = v.namespace AND i.key = v.key WHERE i.expires_at <= ?)`
	// An import links the vectors it inserted to their items.
	sqlStoreVectorsLink = `UPDATE store_vectors SET item = (SELECT rowid FROM store_items i
		WHERE i.namespace = store_vectors.namespace AND i.key = store_vectors.key) WHERE item IS NULL`
	// The vectors' version: ids are never used twice, so any change moves
	// max(id) (an insert) or the count (deletes only).
	sqlStoreVectorsVersion = `SELECT coalesce(max(id), 0), count(*) FROM store_vectors`
	sqlStoreVectorsAfter   = `SELECT id, item, vec FROM store_vectors WHERE id > ? ORDER BY id`
	sqlStoreVectorsIDs     = `SELECT id FROM store_vectors`
	sqlStoreVectorsIDList  = `SELECT group_concat(id) FROM store_vectors`
	// The items a search selects (store.go's parameters: ?1 now, ?2..?4 the
	// prefix's range, ?5 the filter): in one row of text on SQLite, where a
	// row costs most on the hosts' SQLite (a call out of WebAssembly each).
	storeVecItems     = `SELECT rowid FROM store_items`
	storeVecItemsList = `SELECT group_concat(rowid) FROM store_items`
	sqlStoreItemRow   = `SELECT ` + storeCols + ` FROM store_items WHERE rowid = ?`
)

var exportStoreVectors = exportTable{name: "store_vectors", orderBy: "namespace, key, path",
	cols: []exportCol{{"namespace", colText}, {"key", colText}, {"path", colText}, {"vec", colBytes}}}

// encodeVectors validates a put's vectors and encodes them, in path order.
func encodeVectors(key string, vs map[string][]float32) ([]storeVec, int, error) {
	if len(vs) > maxItemVectors {
		return nil, 0, fmt.Errorf("%w: store item %s has %d vectors, at most %d allowed", ErrInvalidArgument, quoteCut(key), len(vs), maxItemVectors)
	}
	out := make([]storeVec, 0, len(vs))
	size := 0
	for path, v := range vs {
		if path == "" {
			return nil, 0, fmt.Errorf("%w: store item %s: a vector's field path is empty", ErrInvalidArgument, quoteCut(key))
		}
		if err := checkText("vector field path", path, maxVectorPathLen); err != nil {
			return nil, 0, err
		}
		if len(v) == 0 || len(v) > maxVectorDims {
			return nil, 0, checkVector("vector of field "+quoteCut(path), v)
		}
		// The check reads the exponent bits (all ones: NaN or infinite);
		// the blob is the vector's own memory (every target of the engine
		// is little-endian, as asFloats says), bound before Batch returns.
		bad := false
		for _, f := range v {
			bad = bad || math.Float32bits(f)&0x7f800000 == 0x7f800000
		}
		if bad {
			return nil, 0, checkVector("vector of field "+quoteCut(path), v)
		}
		b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
		out = append(out, storeVec{path, b})
		size += len(b) + len(path)
	}
	slices.SortFunc(out, func(a, b storeVec) int { return cmp.Compare(a.path, b.path) })
	return out, size, nil
}

type storeVec struct {
	path string
	vec  []byte
}

func checkVector(what string, v []float32) error {
	if len(v) == 0 || len(v) > maxVectorDims {
		return fmt.Errorf("%w: %s has %d dimensions, want 1..%d", ErrInvalidArgument, what, len(v), maxVectorDims)
	}
	for _, f := range v {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return fmt.Errorf("%w: %s holds %v", ErrInvalidArgument, what, f)
		}
	}
	return nil
}

// vecDistance is a search's scoring: higher scores rank first.
type vecDistance int8

const (
	distCosine vecDistance = iota
	distInner
	distL2
)

func parseDistance(s string) (vecDistance, error) {
	switch s {
	case "", "cosine":
		return distCosine, nil
	case "inner_product":
		return distInner, nil
	case "l2":
		return distL2, nil
	}
	return 0, fmt.Errorf("%w: distance type %q (want cosine, inner_product or l2)", ErrInvalidArgument, s)
}

// onServer: c is a PostgreSQL connection, where no trigger deletes an
// item's vectors with it (SQLite files have them: migrations/0008).
func onServer(c *conn) bool { return c.tr != nil && !c.shared }

// putVectors stores the vectors of the item at (ns, key), which the put
// just wrote: on SQLite the put's own update dropped the old ones.
func putVectors(c *conn, ns, key string, vs []storeVec) error {
	if onServer(c) {
		if err := c.exec(sqlStoreVectorsDelete, ns, key); err != nil {
			return err
		}
	}
	for _, v := range vs {
		if err := c.exec(sqlStoreVectorsPut, ns, key, v.path, v.vec); err != nil {
			return err
		}
	}
	return nil
}

// vecWriter holds a write batch's vector rows on SQLite and inserts them
// in a few multi-row statements: on the hosts' SQLite a statement is a call
// out of WebAssembly (docs/profiles/store-put.md). Rows wait only while the
// batch goes on putting other items: any other op, or a put of a waiting
// item, writes them first, so every op sees what the ops before it did.
type vecWriter struct {
	rows  []vecRow
	bytes int
}

type vecRow struct {
	ns, key string
	v       storeVec
}

const (
	vecRowsMax  = 16      // rows of one statement: 64 arguments (Durable Objects bind at most 100)
	vecBytesMax = 1 << 20 // bytes of vectors waiting
)

// waiting reports whether the item at (ns, key) has rows waiting.
func (w *vecWriter) waiting(ns, key string) bool {
	for i := range w.rows {
		if w.rows[i].key == key && w.rows[i].ns == ns {
			return true
		}
	}
	return false
}

// add queues the vectors of the item the put just wrote.
func (w *vecWriter) add(c *conn, ns, key string, vs []storeVec) error {
	for _, v := range vs {
		w.rows = append(w.rows, vecRow{ns, key, v})
		w.bytes += len(v.vec)
	}
	if len(w.rows) >= vecRowsMax || w.bytes >= vecBytesMax {
		return w.flush(c)
	}
	return nil
}

// flush inserts the waiting rows, in statements of a power of two rows
// (a few statement texts for the connection's cache).
func (w *vecWriter) flush(c *conn) error {
	rows := w.rows
	for len(rows) > 0 {
		n := 1
		for n*2 <= min(len(rows), vecRowsMax) {
			n *= 2
		}
		args := make([]any, 0, 4*n)
		for _, r := range rows[:n] {
			args = append(args, r.ns, r.key, r.v.path, r.v.vec)
		}
		if err := c.exec(sqlStoreVectorsPutN(n), args...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	w.rows, w.bytes = w.rows[:0], 0
	return nil
}

var vecPutN sync.Map // rows -> statement text

// sqlStoreVectorsPutN inserts n vector rows (namespace, key, path, vec),
// each naming its item's rowid.
func sqlStoreVectorsPutN(n int) string {
	if q, ok := vecPutN.Load(n); ok {
		return q.(string)
	}
	var b strings.Builder
	b.WriteString(`INSERT INTO store_vectors(item, namespace, key, path, vec) SELECT i.rowid, v.column1, v.column2, v.column3, v.column4 FROM (VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?)")
	}
	b.WriteString(`) v CROSS JOIN store_items i ON i.namespace = v.column1 AND i.key = v.column2`)
	vecPutN.Store(n, b.String())
	return b.String()
}

// asFloats views a float32 little-endian blob in place (every target of the
// engine is little-endian), or copies it into scratch when the driver's
// bytes are not 4-byte aligned; a blob's odd tail bytes are ignored.
func asFloats(b []byte, scratch *[]float32) []float32 {
	n := len(b) / 4
	if n == 0 {
		return nil
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(b)))%4 == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), n)
	}
	if cap(*scratch) < n {
		*scratch = make([]float32, n)
	}
	v := (*scratch)[:n]
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// vecCache is a handle's copy of store_vectors (id, item, vector), kept
// current by reading only what changed since (rows past its last id, and
// the ids alone when rows went): a search then crosses one row per search,
// not one per vector. It costs the vectors' size in memory, once per handle.
type vecCache struct {
	mu    sync.Mutex
	maxID int64
	ids   []int64 // ascending
	items []int64
	norms []float64 // each row's Euclidean norm, for cosine
	offs  []int     // row i is data[offs[i]:offs[i+1]]
	data  []float32
}

func (vc *vecCache) reset() {
	vc.maxID, vc.ids, vc.items, vc.norms, vc.offs, vc.data = 0, nil, nil, nil, []int{0}, nil
}

// refresh brings the copy to what c's transaction sees.
func (vc *vecCache) refresh(c *conn) error {
	var maxID, count int64
	if _, err := c.queryRow(sqlStoreVectorsVersion, nil, func(st row) error {
		maxID, count = st.Int64(0), st.Int64(1)
		return nil
	}); err != nil {
		return err
	}
	if vc.offs == nil || maxID < vc.maxID {
		vc.reset()
	}
	if maxID == vc.maxID && count == int64(len(vc.ids)) {
		return nil
	}
	for attempt := 0; ; attempt++ {
		if maxID > vc.maxID {
			var scratch []float32
			err := c.query(sqlStoreVectorsAfter, []any{vc.maxID}, func(st row) error {
				v := asFloats(st.Blob(2), &scratch)
				if vc.data == nil {
					vc.data = make([]float32, 0, int(count)*len(v))
				}
				vc.ids = append(vc.ids, st.Int64(0))
				vc.items = append(vc.items, st.Int64(1)) // NULL (an import before its link): 0, no item
				vc.norms = append(vc.norms, vecNorm(v))
				vc.data = append(vc.data, v...)
				vc.offs = append(vc.offs, len(vc.data))
				return nil
			})
			if err != nil {
				return err
			}
			vc.maxID = maxID
		}
		if int64(len(vc.ids)) == count {
			return nil
		}
		if attempt > 0 {
			return fmt.Errorf("%w: store_vectors changed while being read", ErrCorrupt)
		}
		// Rows went: keep those still there.
		live, err := idSet(c, sqlStoreVectorsIDList, sqlStoreVectorsIDs, nil)
		if err != nil {
			return err
		}
		vc.keep(live)
		if int64(len(vc.ids)) != count {
			vc.reset() // not what a deletion leaves: read everything again
		}
	}
}

func (vc *vecCache) keep(live rowSet) {
	n, d := 0, 0
	for i, id := range vc.ids {
		if !live.has(id) {
			continue
		}
		row := vc.data[vc.offs[i]:vc.offs[i+1]]
		d += copy(vc.data[d:], row)
		vc.ids[n], vc.items[n], vc.norms[n] = id, vc.items[i], vc.norms[i]
		n++
		vc.offs[n] = d
	}
	vc.ids, vc.items, vc.norms, vc.offs, vc.data = vc.ids[:n], vc.items[:n], vc.norms[:n], vc.offs[:n+1], vc.data[:d]
}

// rowSet is a set of row ids: a bitmap while the ids are dense enough
// (rowids and AUTOINCREMENT ids are), which a scan tests with no hashing;
// a map when they are not.
type rowSet struct {
	bits []uint64
	m    map[int64]struct{}
	n    int
}

func newRowSet(ids []int64) rowSet {
	var hi int64
	for _, id := range ids {
		hi = max(hi, id)
	}
	for _, id := range ids {
		if id < 0 {
			hi = -1 // not a rowid: the map
			break
		}
	}
	if hi >= 0 && hi/64 <= int64(len(ids))+1<<16 {
		bits := make([]uint64, hi/64+1)
		for _, id := range ids {
			bits[id/64] |= 1 << (id % 64)
		}
		return rowSet{bits: bits, n: len(ids)}
	}
	m := make(map[int64]struct{}, len(ids))
	for _, id := range ids {
		m[id] = struct{}{}
	}
	return rowSet{m: m, n: len(m)}
}

func (r *rowSet) has(id int64) bool {
	if r.m != nil {
		_, ok := r.m[id]
		return ok
	}
	return id >= 0 && id/64 < int64(len(r.bits)) && r.bits[id/64]&(1<<(id%64)) != 0
}

// idSet runs a query of ids: on SQLite the group_concat form (one row of
// text), on a server one row per id.
func idSet(c *conn, list, rows string, args []any) (rowSet, error) {
	var ids []int64
	if c.tr != nil {
		err := c.query(rows, args, func(st row) error {
			ids = append(ids, st.Int64(0))
			return nil
		})
		return newRowSet(ids), err
	}
	var text []byte
	if _, err := c.queryRow(list, args, func(st row) error {
		if !st.Null(0) {
			text = append(text, st.Text(0)...)
		}
		return nil
	}); err != nil {
		return rowSet{}, err
	}
	ids = make([]int64, 0, bytes.Count(text, []byte{','})+1)
	for len(text) > 0 {
		// The digits of a rowid, parsed here: strconv costs a string each.
		var id int64
		i := 0
		for ; i < len(text) && text[i] >= '0' && text[i] <= '9' && i < 18; i++ {
			id = id*10 + int64(text[i]-'0')
		}
		if i == 0 || (i < len(text) && text[i] != ',') {
			field, _, _ := strings.Cut(string(text), ",")
			n, err := strconv.ParseInt(field, 10, 64)
			if err != nil {
				return rowSet{}, fmt.Errorf("%w: an id list holds %q", ErrCorrupt, quoteCut(field))
			}
			id, i = n, len(field)
		}
		ids = append(ids, id)
		text = text[min(i+1, len(text)):]
	}
	return newRowSet(ids), nil
}

// searchVectors is a search with a query vector (see records.SearchOp).
//
// The items under the prefix come back as one row; their vectors are
// scored from the handle's copy. Without a filter the best offset+limit
// are kept and read. With one, the items are read best first and the
// filter checked on each value in Go, until the page is full: on the hosts'
// SQLite a filter in SQL is a call into WebAssembly per item, so checking
// the few winners costs far less. A filter that keeps too few of them
// (more than filterTries reads per wanted item) is run in SQL instead.
func (s Store) searchVectors(c *conn, p *storePlanned, offset int, now int64) ([]records.Item, error) {
	want := offset + p.limit
	if p.filter != nil && !p.inWrite {
		out, ok, err := s.searchVectorsThenFilter(c, p, offset, now)
		if err != nil || ok {
			return out, err
		}
	}
	items, err := s.vecItems(c, p, now, p.filter)
	if err != nil {
		return nil, err
	}
	scorer := newVecScorer(p.query, p.dist)
	top := newTopK(want)
	if items.n > 0 {
		err = s.scanVectors(c, p, items, func(item int64, v []float32, norm float64) {
			if sc, ok := scorer.score(v, norm); ok {
				top.add(item, sc)
			}
		})
		if err != nil {
			return nil, err
		}
	}
	best := top.best()
	best = best[min(offset, len(best)):]
	out := make([]records.Item, 0, len(best))
	for _, b := range best {
		it, found, err := readScored(c, b, nil)
		if err != nil {
			return nil, err
		}
		if found {
			out = append(out, it)
		}
	}
	return out, nil
}

const filterTries = 8

func (s Store) searchVectorsThenFilter(c *conn, p *storePlanned, offset int, now int64) ([]records.Item, bool, error) {
	items, err := s.vecItems(c, p, now, nil)
	if err != nil || items.n == 0 {
		return nil, err == nil, err
	}
	// The filter is checked on at most budget items, best first: only
	// the best budget items are kept while scanning (an item at its best
	// vector), not every vector's score.
	want := offset + p.limit
	budget := filterTries*want + 64
	scorer := newVecScorer(p.query, p.dist)
	top := newTopK(budget)
	err = s.scanVectors(c, p, items, func(item int64, v []float32, norm float64) {
		if sc, ok := scorer.score(v, norm); ok {
			top.add(item, sc)
		}
	})
	if err != nil {
		return nil, false, err
	}
	best := top.best()
	var out []records.Item
	kept := 0
	for _, b := range best {
		if kept == want {
			break
		}
		it, found, err := readScored(c, b, p.filter)
		if err != nil {
			return nil, false, err
		}
		if !found {
			continue
		}
		if kept >= offset {
			out = append(out, it)
		}
		kept++
	}
	if kept < want && len(best) == budget {
		return nil, false, nil // more items may rank below these: the filter in SQL
	}
	if out == nil {
		out = []records.Item{}
	}
	return out, true, nil
}

// readScored reads a ranked item, with its score; found is false when it
// is gone or (with a filter) does not match.
func readScored(c *conn, b scored, filter *recFilter) (records.Item, bool, error) {
	var it records.Item
	matched := true
	found, err := c.queryRow(sqlStoreItemRow, []any{b.item}, func(st row) (err error) {
		if filter != nil && !filter.match(st.Blob(2)) {
			matched = false
			return nil
		}
		it, err = scanItem(st)
		return err
	})
	if err != nil || !found || !matched {
		return it, false, err
	}
	score := b.score
	it.Score = &score
	return it, true, nil
}

// vecItems returns the live items under the search's prefix (and filter).
func (s Store) vecItems(c *conn, p *storePlanned, now int64, filter *recFilter) (rowSet, error) {
	args := []any{now, "", "", "", nil}
	where := storeWhereAll
	if p.ns != "" {
		args[1], args[2], args[3] = p.ns, p.ns+".", p.ns+"/"
		where = storeWhereNS
	}
	if filter != nil {
		args[4] = filter.encoded
		where += storeMatch
	} else if p.ns != "" { // a statement is given no more arguments than it numbers
		args = args[:4]
	} else {
		args = args[:1]
	}
	return idSet(c, storeVecItemsList+where, storeVecItems+where, args)
}

// scanVectors calls fn with every vector of the given items.
func (s Store) scanVectors(c *conn, p *storePlanned, items rowSet, fn func(item int64, v []float32, norm float64)) error {
	if p.inWrite {
		// A write transaction may yet roll back: read its rows, not the copy.
		var scratch []float32
		return c.query(sqlStoreVectorsAfter, []any{0}, func(st row) error {
			if items.has(st.Int64(1)) {
				v := asFloats(st.Blob(2), &scratch)
				fn(st.Int64(1), v, vecNorm(v))
			}
			return nil
		})
	}
	return s.scanCached(c, items, fn)
}

func (s Store) scanCached(c *conn, items rowSet, fn func(item int64, v []float32, norm float64)) error {
	vc := &s.db.vecs
	vc.mu.Lock()
	defer vc.mu.Unlock()
	if err := vc.refresh(c); err != nil {
		vc.reset()
		return err
	}
	for i, item := range vc.items {
		if !items.has(item) {
			continue
		}
		fn(item, vc.data[vc.offs[i]:vc.offs[i+1]], vc.norms[i])
	}
	return nil
}

// sqlStoreVectorsVerify: every vector row beside the item its namespace
// and key name (NULL when there is none), by item then path.
const sqlStoreVectorsVerify = `SELECT v.namespace, v.key, v.path, v.item, i.rowid, v.vec FROM store_vectors v
	LEFT JOIN store_items i ON i.namespace = v.namespace AND i.key = v.key ORDER BY v.namespace, v.key, v.path`

// vectors checks store_vectors against store_items: a row must belong to
// an item and name that item's rowid (a search ranks by it), hold whole
// float32 values, 1..maxVectorDims of them, all finite, and an item's
// vectors must all have the same dimensions (one index embedded them).
// Which items should have vectors the file does not say (index=False, or
// an index configured later): that is not checked.
func (v *verifier) vectors() error {
	if v.o.ThreadID != "" {
		return nil
	}
	var lastNS, lastKey string
	lastDims := -1
	return v.c.query(sqlStoreVectorsVerify, nil, func(st row) error {
		ns, key, path := st.Text(0), st.Text(1), st.Text(2)
		bad := func(format string, args ...any) {
			v.addf("vector", "", "", "", "vector %q of item %q in namespace %q: "+format, append([]any{path, key, ns}, args...)...)
		}
		switch {
		case st.Null(4):
			bad("its item does not exist")
		case st.Null(3):
			bad("is not linked to its item (a search skips it)")
		case st.Int64(3) != st.Int64(4):
			bad("names item row %d, its item is row %d (a search would rank the wrong item)", st.Int64(3), st.Int64(4))
		}
		b := st.Blob(5)
		if len(b)%4 != 0 || len(b) == 0 || len(b) > 4*maxVectorDims {
			bad("%d bytes are not 1..%d float32 values", len(b), maxVectorDims)
			return nil
		}
		for i := 0; i < len(b); i += 4 {
			if binary.LittleEndian.Uint32(b[i:])&0x7f800000 == 0x7f800000 {
				bad("value %d is not finite", i/4)
				break
			}
		}
		dims := len(b) / 4
		if ns == lastNS && key == lastKey && lastDims >= 0 && dims != lastDims {
			bad("has %d dimensions, the item's other vectors %d", dims, lastDims)
		}
		lastNS, lastKey, lastDims = ns, key, dims
		return nil
	})
}
