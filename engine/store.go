package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/records"
)

// Store is the long-lived key/value surface of a DB, with LangGraph
// BaseStore semantics (contract §3). Get one with DB.Store; it only holds the
// handle, so it is free to copy. Like every record handle, its methods
// validate everything first and write in one transaction or not at all.
type Store struct{ db *DB }

// Store returns the key/value surface of db.
func (db *DB) Store() Store { return Store{db} }

// Get returns the live item at (ns, key), or an error matching ErrNotFound.
// Unless told otherwise it pushes back the item's expiry.
func (s Store) Get(ctx context.Context, ns []string, key string, opts ...records.GetOption) (records.Item, error) {
	op := records.GetOp{Namespace: ns, Key: key}
	for _, o := range opts {
		o(&op)
	}
	res, err := s.Batch(ctx, op)
	if err != nil {
		return records.Item{}, err
	}
	if res[0].Item == nil {
		return records.Item{}, fmt.Errorf("%w: store item %s in namespace %s", ErrNotFound, quoteCut(key), quoteCut(strings.Join(ns, ".")))
	}
	return *res[0].Item, nil
}

// Put stores value at (ns, key), replacing any item there but keeping its
// created_at; a nil value deletes the item.
func (s Store) Put(ctx context.Context, ns []string, key string, value map[string]any, opts ...records.PutOption) error {
	op := records.PutOp{Namespace: ns, Key: key, Value: value}
	for _, o := range opts {
		o(&op)
	}
	_, err := s.Batch(ctx, op)
	return err
}

// Delete removes the item at (ns, key); deleting an absent item is not an
// error.
func (s Store) Delete(ctx context.Context, ns []string, key string) error {
	_, err := s.Batch(ctx, records.PutOp{Namespace: ns, Key: key})
	return err
}

// Search returns at most op.Limit live items matching op (see SearchOp).
func (s Store) Search(ctx context.Context, op records.SearchOp) ([]records.Item, error) {
	res, err := s.Batch(ctx, op)
	if err != nil {
		return nil, err
	}
	return res[0].Items, nil
}

// ListNamespaces returns at most op.Limit namespaces matching op (see
// ListNamespacesOp).
func (s Store) ListNamespaces(ctx context.Context, op records.ListNamespacesOp) ([][]string, error) {
	res, err := s.Batch(ctx, op)
	if err != nil {
		return nil, err
	}
	return res[0].Namespaces, nil
}

// Batch runs ops in order and returns one result per op, in order. Every op
// is validated first: a bad op fails the batch before anything is written.
// Batches that write run in one write transaction (later ops see earlier
// puts); read-only batches read one snapshot, then refresh TTLs in one write.
func (s Store) Batch(ctx context.Context, ops ...records.StoreOp) ([]records.StoreResult, error) {
	plan := make([]storePlanned, len(ops))
	writes := false
	budget := callBudget{what: "the store batch"}
	for i, op := range ops {
		p, err := s.plan(op)
		if err == nil {
			err = budget.add(len(p.value) + p.vecBytes)
		}
		if err != nil {
			if len(ops) > 1 {
				return nil, fmt.Errorf("store batch op %d: %w", i, err)
			}
			return nil, err
		}
		plan[i] = p
		if _, ok := op.(records.PutOp); ok {
			writes = true
		}
	}
	res := make([]records.StoreResult, len(ops))
	if writes {
		err := s.db.write(ctx, func(c *conn) error {
			now := s.db.nowUS()
			var refresh []storeRef
			var vw *vecWriter
			if !onServer(c) {
				vw = &vecWriter{}
			}
			for i := range plan {
				plan[i].inWrite = true
				if err := s.run(c, &plan[i], now, &res[i], &refresh, vw); err != nil {
					return err
				}
			}
			if vw != nil {
				if err := vw.flush(c); err != nil {
					return err
				}
			}
			return refreshTTL(c, refresh, now)
		})
		if err != nil {
			return nil, err
		}
		return res, nil
	}
	now := s.db.nowUS()
	var refresh []storeRef
	err := s.db.read(ctx, func(c *conn) error {
		refresh = refresh[:0]
		for i := range plan {
			if err := s.run(c, &plan[i], now, &res[i], &refresh, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(refresh) > 0 && !s.db.opts.ReadOnly {
		// Refreshing is best kept out of the read snapshot: most reads find
		// items without a TTL and never need the writer.
		err = s.db.write(ctx, func(c *conn) error { return refreshTTL(c, refresh, s.db.nowUS()) })
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}

// Sweep deletes every expired item and returns how many it deleted. Expired
// items are invisible before a sweep; sweeping only reclaims their space.
func (s Store) Sweep(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.write(ctx, func(c *conn) error {
		now := s.db.nowUS()
		if onServer(c) {
			if err := c.exec(sqlStoreVectorsSweep, now); err != nil {
				return err
			}
		}
		changed, err := c.execN(sqlStoreSweep, now)
		if err != nil {
			return err
		}
		n = changed
		return nil
	})
	return n, err
}

// storePlanned is a validated op, ready to run.
type storePlanned struct {
	op       records.StoreOp
	ns       string // joined namespace (get, put) or prefix (search)
	value    []byte // encoded value of a put; nil deletes
	ttlUS    int64  // 0: no expiry
	refresh  bool
	filter   *recFilter
	limit    int
	vecs     []storeVec // a put's vectors
	vecBytes int
	query    []float32 // a search's query vector
	dist     vecDistance
	inWrite  bool // runs in a write transaction
	// list namespaces
	prefix, suffix []string
}

// storeRef is an item a read returned, whose TTL the batch refreshes.
type storeRef struct{ item *records.Item }

func (s Store) plan(op records.StoreOp) (storePlanned, error) {
	p := storePlanned{op: op}
	var err error
	switch o := op.(type) {
	case records.GetOp:
		if p.ns, err = joinNamespace(o.Namespace); err != nil {
			return p, err
		}
		if err := checkStoreKey(o.Key); err != nil {
			return p, err
		}
		p.refresh, err = s.refresh(o.Refresh)
	case records.PutOp:
		if p.ns, err = joinNamespace(o.Namespace); err != nil {
			return p, err
		}
		if err := checkStoreKey(o.Key); err != nil {
			return p, err
		}
		if o.Value == nil {
			return p, nil
		}
		if p.value, err = encodeValue("store value for key "+quoteCut(o.Key), o.Value); err != nil {
			return p, err
		}
		if len(o.Vectors) > 0 {
			if p.vecs, p.vecBytes, err = encodeVectors(o.Key, o.Vectors); err != nil {
				return p, err
			}
		}
		switch {
		case o.TTL == records.NoExpiry:
		case o.TTL == 0:
			p.ttlUS = s.db.opts.StoreDefaultTTL.Microseconds()
		case o.TTL < 0:
			return p, fmt.Errorf("%w: store TTL %v is negative (use NoExpiry for items that never expire)", ErrInvalidArgument, o.TTL)
		default:
			p.ttlUS = max(o.TTL.Microseconds(), 1)
		}
	case records.SearchOp:
		if len(o.Prefix) > 0 {
			if p.ns, err = joinNamespace(o.Prefix); err != nil {
				return p, err
			}
		}
		if p.filter, err = compileStoreFilter(o.Filter); err != nil {
			return p, err
		}
		if p.limit, err = pageLimit("search", o.Limit, 10); err != nil {
			return p, err
		}
		if err := pageOffset("search", o.Offset); err != nil {
			return p, err
		}
		if o.Query != nil {
			if err := checkVector("search query vector", o.Query); err != nil {
				return p, err
			}
			if p.dist, err = parseDistance(o.Distance); err != nil {
				return p, err
			}
			p.query = o.Query
		}
		p.refresh, err = s.refresh(o.Refresh)
	case records.ListNamespacesOp:
		if p.prefix, err = checkPattern("prefix", o.Prefix); err != nil {
			return p, err
		}
		if p.suffix, err = checkPattern("suffix", o.Suffix); err != nil {
			return p, err
		}
		if o.MaxDepth < 0 {
			return p, fmt.Errorf("%w: list namespaces max depth %d is negative", ErrInvalidArgument, o.MaxDepth)
		}
		if p.limit, err = pageLimit("list namespaces", o.Limit, 100); err != nil {
			return p, err
		}
		err = pageOffset("list namespaces", o.Offset)
	case nil:
		err = fmt.Errorf("%w: nil store op", ErrInvalidArgument)
	default:
		err = fmt.Errorf("%w: unknown store op %T", ErrInvalidArgument, op)
	}
	return p, err
}

func (s Store) refresh(r records.TTLRefresh) (bool, error) {
	switch r {
	case records.RefreshDefault:
		return s.db.opts.StoreRefreshOnRead, nil
	case records.RefreshOn:
		return true, nil
	case records.RefreshOff:
		return false, nil
	}
	return false, fmt.Errorf("%w: TTL refresh mode %d", ErrInvalidArgument, r)
}

// run executes one planned op on c, collecting TTL refreshes; on a write
// connection it also applies them at the end of the batch. vw, in a write
// batch on SQLite, holds the puts' vector rows (see vecWriter).
func (s Store) run(c *conn, p *storePlanned, now int64, res *records.StoreResult, refresh *[]storeRef, vw *vecWriter) error {
	if o, ok := p.op.(records.PutOp); vw != nil && (!ok || vw.waiting(p.ns, o.Key)) {
		if err := vw.flush(c); err != nil {
			return err
		}
	}
	switch o := p.op.(type) {
	case records.GetOp:
		var it *records.Item
		_, err := c.queryRow(sqlStoreGet, []any{p.ns, o.Key, now}, func(st row) error {
			item, err := scanItem(st)
			it = &item
			return err
		})
		if err != nil {
			return err
		}
		if it != nil && p.refresh && !it.ExpiresAt.IsZero() {
			*refresh = append(*refresh, storeRef{it})
		}
		res.Item = it
	case records.PutOp:
		if p.value == nil {
			if onServer(c) {
				if err := c.exec(sqlStoreVectorsDelete, p.ns, o.Key); err != nil {
					return err
				}
			}
			return c.exec(sqlStoreDelete, p.ns, o.Key)
		}
		var ttl, exp any
		if p.ttlUS > 0 {
			ttl, exp = p.ttlUS, now+p.ttlUS
		}
		if err := c.exec(sqlStorePut, p.ns, o.Key, p.value, now, ttl, exp); err != nil {
			return err
		}
		if vw != nil {
			return vw.add(c, p.ns, o.Key, p.vecs)
		}
		return putVectors(c, p.ns, o.Key, p.vecs)
	case records.SearchOp:
		search := s.search
		if p.query != nil {
			search = s.searchVectors
		}
		items, err := search(c, p, o.Offset, now)
		if err != nil {
			return err
		}
		for i := range items {
			if p.refresh && !items[i].ExpiresAt.IsZero() {
				*refresh = append(*refresh, storeRef{&items[i]})
			}
		}
		res.Items = items
	case records.ListNamespacesOp:
		ns, err := listNamespaces(c, p, o, now)
		if err != nil {
			return err
		}
		res.Namespaces = ns
	}
	return nil
}

// storeSearchInSQL selects where search filters run: true evaluates them
// in SQLite through agentstate_store_match, false steps every candidate out
// to Go and filters there. Both read the filtered fields straight from the
// msgpack bytes. In SQL wins (BenchmarkStoreSearchFilter, 100 results from
// 10,000 items): about 10 ms against 40 ms when 1% of the items match, and
// across several namespaces, where only SQL can keep the sort top-N, 10 ms
// against 45 ms; the two tie when the first rows match. Go filtering stays
// only as the benchmark's baseline and the tests' oracle.
var storeSearchInSQL = true

func (s Store) search(c *conn, p *storePlanned, offset int, now int64) ([]records.Item, error) {
	shape := 0 // every namespace
	args := []any{now, "", "", "", nil, p.limit, offset}
	if p.ns != "" {
		args[1], args[2], args[3] = p.ns, p.ns+".", p.ns+"/"
		children, err := c.queryInt64(sqlStoreHasChildren, p.ns+".", p.ns+"/")
		if err != nil {
			return nil, err
		}
		shape = 1 // one namespace
		if children != 0 {
			shape = 2 // a namespace and its children
		}
	}
	filter := p.filter
	filtered := storeSearchInSQL && filter != nil
	if filtered {
		args[4] = filter.encoded
		filter = nil
	} else if filter != nil {
		args[5], args[6] = -1, 0 // no LIMIT: Go counts
	}
	q := [2][3]string{
		{sqlStoreSearchAll, sqlStoreSearchOne, sqlStoreSearchNS},
		{sqlStoreSearchAllFiltered, sqlStoreSearchOneFiltered, sqlStoreSearchNSFiltered},
	}[b2i(filtered)][shape]
	type found struct {
		it             records.Item
		updated, rowid int64
	}
	rows := make([]found, 0, min(p.limit, 64))
	err := c.query(q, args, func(st row) error {
		if filter != nil && !filter.match(st.Blob(2)) {
			return nil
		}
		it, err := scanItem(st)
		if err != nil {
			return err
		}
		rows = append(rows, found{it, st.Int64(4), st.Int64(7)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(rows, func(a, b found) int { // newest first
		if c := cmp.Compare(b.updated, a.updated); c != 0 {
			return c
		}
		return cmp.Compare(b.rowid, a.rowid)
	})
	if filter != nil { // filtered here: the query returned every candidate
		rows = rows[min(offset, len(rows)):]
		rows = rows[:min(p.limit, len(rows))]
	}
	items := make([]records.Item, len(rows))
	for i, r := range rows {
		items[i] = r.it
	}
	return items, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// scanItem reads a row of storeCols.
func scanItem(st row) (records.Item, error) {
	it := records.Item{
		Namespace: strings.Split(st.Text(0), "."),
		Key:       st.Text(1),
		CreatedAt: fromUS(st.Int64(3)),
		UpdatedAt: fromUS(st.Int64(4)),
	}
	if err := codec.Unmarshal(st.Blob(2), &it.Value); err != nil {
		return it, fmt.Errorf("%w: store item %s: %w", undecodable(err), quoteCut(it.Key), err)
	}
	if it.Value == nil {
		it.Value = map[string]any{}
	}
	if !st.Null(6) {
		it.ExpiresAt = fromUS(st.Int64(6))
	}
	return it, nil
}

// refreshTTL pushes back the expiry of the items a batch read (those with a
// TTL that are still live) and shows the new expiry in the results.
func refreshTTL(c *conn, refs []storeRef, now int64) error {
	for _, r := range refs {
		ns := strings.Join(r.item.Namespace, ".")
		_, err := c.queryRow(sqlStoreRefresh, []any{now, ns, r.item.Key}, func(st row) error {
			r.item.ExpiresAt = fromUS(st.Int64(0))
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Namespace rules. A segment is 1..128 bytes of letters, digits and
// "_-:@+=~#/|%": no ".", which joins segments in the file and in LangGraph's
// API; no "*", the wildcard of ListNamespaces; and no quotes, brackets,
// parentheses, semicolons, spaces or control characters, so that a
// namespace can never read as SQL, a JSON path or a shell word wherever it is
// shown or forwarded (LangGraph's CVE-2025-8709 came in through namespace
// and filter text).
const (
	maxNamespaceDepth = 32
	maxSegmentBytes   = 128
	maxStoreKeyBytes  = 1024
	segmentPunct      = "_-:@+=~#/|%"
)

func checkSegment(seg string) error {
	if seg == "" {
		return fmt.Errorf("%w: empty namespace segment", ErrInvalidArgument)
	}
	if len(seg) > maxSegmentBytes {
		return fmt.Errorf("%w: namespace segment %s is longer than %d bytes", ErrInvalidArgument, quoteCut(seg), maxSegmentBytes)
	}
	for _, r := range seg {
		if r == '.' {
			return fmt.Errorf("%w: namespace segment %s holds a '.'", ErrInvalidArgument, quoteCut(seg))
		}
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune(segmentPunct, r)) {
			return fmt.Errorf("%w: namespace segment %s holds %q: use letters, digits and %s", ErrInvalidArgument, quoteCut(seg), r, segmentPunct)
		}
	}
	return nil
}

// joinNamespace validates ns and joins it as stored.
func joinNamespace(ns []string) (string, error) {
	if len(ns) == 0 {
		return "", fmt.Errorf("%w: empty namespace", ErrInvalidArgument)
	}
	if len(ns) > maxNamespaceDepth {
		return "", fmt.Errorf("%w: namespace has %d segments, at most %d allowed", ErrInvalidArgument, len(ns), maxNamespaceDepth)
	}
	for _, seg := range ns {
		if err := checkSegment(seg); err != nil {
			return "", err
		}
	}
	return strings.Join(ns, "."), nil
}

// checkPattern validates a ListNamespaces prefix or suffix: segments or "*".
func checkPattern(what string, pat []string) ([]string, error) {
	if len(pat) > maxNamespaceDepth {
		return nil, fmt.Errorf("%w: namespace %s has %d segments, at most %d allowed", ErrInvalidArgument, what, len(pat), maxNamespaceDepth)
	}
	for _, seg := range pat {
		if seg == "*" {
			continue
		}
		if err := checkSegment(seg); err != nil {
			return nil, fmt.Errorf("namespace %s: %w", what, err)
		}
	}
	return pat, nil
}

func checkStoreKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty store key", ErrInvalidArgument)
	}
	return checkText("store key", key, maxStoreKeyBytes)
}

// listNamespaces reads the distinct live namespaces, narrowed in SQL to the
// literal segments before the prefix's first wildcard, then matched, cut
// and paged in Go.
func listNamespaces(c *conn, p *storePlanned, o records.ListNamespacesOp, now int64) ([][]string, error) {
	var lit []string
	for _, seg := range p.prefix {
		if seg == "*" {
			break
		}
		lit = append(lit, seg)
	}
	q, args := sqlStoreNamespacesAll, []any{now}
	if len(lit) > 0 {
		// Literal segments as a range: the namespace itself and its children.
		j := strings.Join(lit, ".")
		q, args = sqlStoreNamespacesFrom, []any{now, j, j + "/"}
	}
	seen := map[string]bool{}
	var out [][]string
	err := c.query(q, args, func(st row) error {
		ns := strings.Split(st.Text(0), ".")
		if !segmentsMatch(ns, p.prefix, false) || !segmentsMatch(ns, p.suffix, true) {
			return nil
		}
		if o.MaxDepth > 0 && len(ns) > o.MaxDepth {
			ns = ns[:o.MaxDepth]
		}
		k := strings.Join(ns, ".")
		if !seen[k] {
			seen[k] = true
			out = append(out, ns)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b []string) int { return slices.Compare(a, b) })
	if o.Offset >= len(out) {
		return [][]string{}, nil
	}
	out = out[o.Offset:]
	return out[:min(len(out), p.limit)], nil
}

// segmentsMatch reports whether ns starts (or, with atEnd, ends) with pat,
// "*" matching any one segment.
func segmentsMatch(ns, pat []string, atEnd bool) bool {
	if len(pat) > len(ns) {
		return false
	}
	off := 0
	if atEnd {
		off = len(ns) - len(pat)
	}
	for i, seg := range pat {
		if seg != "*" && seg != ns[off+i] {
			return false
		}
	}
	return true
}
