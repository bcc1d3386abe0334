// Reading version-delta chains back: whole values, deltas applied along
// their base links, and single values with their place in the chain.

package engine

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/agentstate/agentstate/codec"
)

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
