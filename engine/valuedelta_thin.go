// Rewriting stored chains after the fact: deleting values (rebasing the
// values that depend on them), rebasing one value, and thinning a
// namespace's whole values into deltas.

package engine

import (
	"fmt"
	"maps"
	"math/bits"
	"slices"

	"github.com/agentstate/agentstate/codec"
)

// blobID names a stored value inside one thread.
type blobID struct{ ns, ch, version string }

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
	if onThinValues != nil {
		onThinValues()
	}
	t := &thinning{c: c, thread: thread, ns: ns}
	if err := t.loadCheckpoints(); err != nil {
		return 0, 0, err
	}
	need, err := t.loadValues(skip)
	if err != nil {
		return 0, 0, err
	}
	if len(t.chains) == 0 {
		return 0, 0, nil
	}
	if err := t.loadDetails(need); err != nil {
		return 0, 0, err
	}
	for _, ch := range slices.Sorted(maps.Keys(t.chains)) {
		cn, cf, err := t.thinChannel(ch)
		if err != nil {
			return 0, 0, err
		}
		n += cn
		freed += cf
	}
	return n, freed, nil
}

// onThinValues, when set (by tests), is called at the start of every
// thinValues run: what a run costs is its scan, not what it finds.
var onThinValues func()

// thinning is what thinValues knows of one namespace of a thread.
type thinning struct {
	c          *conn
	thread, ns string
	cps        map[string]*thinCheckpoint
	chains     map[string]map[string]*thinValue // channel -> version -> value
}

// thinCheckpoint is one checkpoint: its parent link always; its step and
// channel versions only when loadDetails read them (step -1 otherwise).
type thinCheckpoint struct {
	parent   string
	hasChild bool
	step     int64
	versions map[string]string
}

// thinValue is one stored value of a chain, as stored.
type thinValue struct {
	version, owner, base string
	enc, size            int64
}

// loadCheckpoints reads the parent links of every checkpoint of the
// namespace and marks which have children.
func (t *thinning) loadCheckpoints() error {
	t.cps = map[string]*thinCheckpoint{}
	err := t.c.query(sqlNSParents, []any{t.thread, t.ns},
		func(st row) error {
			t.cps[st.Text(0)] = &thinCheckpoint{parent: st.Text(1), step: -1}
			return nil
		})
	if err != nil {
		return err
	}
	for _, ci := range t.cps {
		if p, ok := t.cps[ci.parent]; ok {
			p.hasChild = true
		}
	}
	return nil
}

// loadValues reads how every value of the namespace's chains is stored
// (not their bytes), but for channels for which skip is true. It returns
// the checkpoints whose metadata and versions thinning needs: the tips,
// the owners of whole values and their parents, so that AutoRetain's run
// after each whole value stays cheap.
func (t *thinning) loadValues(skip func(ch string) bool) (map[string]bool, error) {
	t.chains = map[string]map[string]*thinValue{}
	need := map[string]bool{}
	for id, ci := range t.cps {
		if !ci.hasChild {
			need[id] = true
		}
	}
	err := t.c.query(sqlThinBlobs, []any{t.thread, t.ns},
		func(st row) error {
			ch := st.Text(0)
			if skip(ch) {
				return nil
			}
			if t.chains[ch] == nil {
				t.chains[ch] = map[string]*thinValue{}
			}
			vi := &thinValue{version: st.Text(1), owner: st.Text(2), enc: st.Int64(3), base: st.Text(4), size: st.Int64(5)}
			t.chains[ch][vi.version] = vi
			if vi.enc != encDelta {
				need[vi.owner] = true
				if o, ok := t.cps[vi.owner]; ok {
					need[o.parent] = true
				}
			}
			return nil
		})
	if err != nil {
		return nil, err
	}
	return need, nil
}

// loadDetails reads the step and the channel versions of the checkpoints
// in need.
func (t *thinning) loadDetails(need map[string]bool) error {
	ids, err := jsonArg(slices.Sorted(maps.Keys(need)))
	if err != nil {
		return err
	}
	return t.c.query(sqlThinCheckpoints, []any{t.thread, t.ns, ids},
		func(st row) error {
			ci := t.cps[st.Text(0)]
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
}

func (t *thinning) versionsOf(id string) map[string]string {
	if ci, ok := t.cps[id]; ok {
		return ci.versions
	}
	return nil
}

// thinChannel turns the whole values of channel ch that need not stay
// whole into deltas against their predecessors, where that is smaller.
func (t *thinning) thinChannel(ch string) (n int, freed int64, err error) {
	vals := t.chains[ch]
	k := valueKey{t.thread, t.ns, ch}
	keep, err := t.keepWhole(ch)
	if err != nil {
		return 0, 0, err
	}
	for _, v := range slices.Sorted(maps.Keys(vals)) {
		vi := vals[v]
		if vi.enc == encDelta || keep[v] {
			continue
		}
		// Its predecessor: what its checkpoint's parent reads.
		owner := t.cps[vi.owner]
		pred, found, err := t.readBy(ch, t.versionsOf(owner.parent), vi.owner)
		if err != nil {
			return 0, 0, err
		}
		if !found || pred == v {
			continue
		}
		// Never a loop: the predecessor's chain must not pass through v.
		if passesThrough(vals, pred, v) {
			continue
		}
		saved, ok, err := t.deltify(k, vi, pred)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			n++
			freed += saved
		}
	}
	return n, freed, nil
}

// keepWhole returns the versions of channel ch that stay whole: where each
// branch tip's chain starts, roots' values (and values too short to diff),
// and the earliest whole value of each step bucket.
func (t *thinning) keepWhole(ch string) (map[string]bool, error) {
	vals := t.chains[ch]
	keep := map[string]bool{}
	// Where each branch tip's chain starts.
	for id, ci := range t.cps {
		if ci.hasChild {
			continue
		}
		start, found, err := t.readBy(ch, t.versionsOf(id), id)
		if err != nil {
			return nil, err
		}
		if found {
			if w, ok := wholeOf(vals, start); ok {
				keep[w] = true
			}
		}
	}
	// Roots' values, and the earliest whole value of each step bucket.
	first := map[int]*thinValue{}
	for _, vi := range vals {
		if vi.enc == encDelta {
			continue
		}
		owner, ok := t.cps[vi.owner]
		if !ok || owner.parent == "" || vi.size < int64(deltaPolicy.minValue) {
			keep[vi.version] = true
			continue
		}
		b := (bits.Len64(uint64(owner.step+1)) + 1) / 2
		if cur, ok := first[b]; !ok || owner.step < t.cps[cur.owner].step || owner.step == t.cps[cur.owner].step && vi.owner < cur.owner {
			first[b] = vi
		}
	}
	for _, vi := range first {
		keep[vi.version] = true
	}
	return keep, nil
}

// readBy returns the version of channel ch a checkpoint reads: the one its
// recorded versions name when the chain holds it, or else the history
// walk's seed from checkpoint seed.
func (t *thinning) readBy(ch string, versions map[string]string, seed string) (string, bool, error) {
	if v, ok := versions[ch]; ok {
		if _, held := t.chains[ch][v]; held {
			return v, true, nil
		}
	}
	var v string
	found, err := t.c.queryRow(sqlWalkSeed, []any{ch, t.thread, t.ns, seed}, func(st row) error {
		v = st.Text(0)
		return nil
	})
	return v, found, err
}

// wholeOf follows base links to the whole value a chain starts from.
func wholeOf(vals map[string]*thinValue, v string) (string, bool) {
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

// passesThrough reports whether the chain of version pred passes through
// version v.
func passesThrough(vals map[string]*thinValue, pred, v string) bool {
	for p, steps := pred, 0; steps <= len(vals); steps++ {
		pi, ok := vals[p]
		if !ok || pi.enc != encDelta {
			break
		}
		if pi.base == v {
			return true
		}
		p = pi.base
	}
	return false
}

// deltify rewrites whole value vi of chain k as a delta against version
// pred when that is smaller, and returns the bytes that saved; ok is false
// when it left the value whole.
func (t *thinning) deltify(k valueKey, vi *thinValue, pred string) (saved int64, ok bool, err error) {
	val, _, err := readValue(t.c, k, vi.version)
	if err != nil {
		return 0, false, err
	}
	base, err := readChainValue(t.c, k, pred, stamp{})
	if err != nil {
		return 0, false, err
	}
	d, _, err := base.val.Diff(nil, val.Data)
	if err != nil {
		return 0, false, nil
	}
	if d = codec.PackDelta(d); int64(len(d)) >= vi.size {
		return 0, false, nil
	}
	if err := t.c.exec(sqlRewriteValue, encDelta, pred, d, t.thread, t.ns, k.ch, vi.version); err != nil {
		return 0, false, err
	}
	vi.enc, vi.base = encDelta, pred
	saved = vi.size - int64(len(d))
	vi.size = int64(len(d))
	return saved, true, nil
}
