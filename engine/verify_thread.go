// Verify's check of one thread's rows: its checkpoints and their parent
// links, its writes and their seals, its channel values and their chains.

package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentstate/agentstate/codec"
)

// vcp is one checkpoint as verify sees it.
type vcp struct {
	ns, id, parent string
	hasParent      bool
	versions       map[string]string
	ok             bool // decoded
}

type vwrite struct {
	ns, cp, task, channel, typ, consumedBy, taskPath string
	idx                                              int
	data                                             []byte
	loadErr                                          error
	sealed                                           bool
}

type nsKey struct{ ns, id string }

// thread checks one thread: its checkpoints, its writes and its channel
// values, and, for a thread of the thread API, replays it.
func (v *verifier) thread(th string) error {
	cps, order, err := v.checkpoints(th)
	if err != nil {
		return err
	}
	writes, err := v.writes(th, cps)
	if err != nil {
		return err
	}
	mode, _, ours, err := threadMode(v.c, th)
	if err != nil {
		return err
	}
	if err := v.channelValues(th, order, cps, ours); err != nil {
		return err
	}
	if ours {
		return v.replay(th, mode, order, cps, writes)
	}
	return nil
}

// checkpoints reads a thread's checkpoints (in order of namespace and id)
// and checks that each decodes and that each parent exists and sorts
// before its child.
func (v *verifier) checkpoints(th string) (map[nsKey]*vcp, []*vcp, error) {
	cps := map[nsKey]*vcp{}
	var order []*vcp
	err := v.c.query(sqlCheckpointsVerify, []any{th},
		func(st row) error {
			cp := &vcp{ns: st.Text(0), id: st.Text(1), hasParent: !st.Null(2), parent: st.Text(2), ok: true}
			var sc storedCheckpoint
			if err := codec.Unmarshal(st.Blob(3), &sc); err != nil {
				v.addf("checkpoint", th, cp.ns, cp.id, "does not decode: %v", err)
				cp.ok = false
			}
			cp.versions = sc.ChannelVersions
			var md map[string]any
			if err := codec.Unmarshal(st.Blob(4), &md); err != nil {
				v.addf("checkpoint", th, cp.ns, cp.id, "metadata does not decode: %v", err)
			}
			cps[nsKey{cp.ns, cp.id}] = cp
			order = append(order, cp)
			return nil
		})
	if err != nil {
		return nil, nil, err
	}
	v.rep.Checkpoints += len(order)
	slices.SortFunc(order, func(a, b *vcp) int {
		if c := strings.Compare(a.ns, b.ns); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	for _, cp := range order {
		if !cp.hasParent {
			continue
		}
		if _, ok := cps[nsKey{cp.ns, cp.parent}]; !ok {
			v.addf("parent", th, cp.ns, cp.id, "parent %q does not exist", cp.parent)
		} else if cp.parent >= cp.id {
			v.addf("parent", th, cp.ns, cp.id, "does not sort after its parent %q", cp.parent)
		}
	}
	return cps, order, nil
}

// writes reads a thread's pending writes and checks them: each belongs to
// a checkpoint, each seal names a child of it, each has a type tag, and
// those of the engine's type decode.
func (v *verifier) writes(th string, cps map[nsKey]*vcp) ([]*vwrite, error) {
	var writes []*vwrite
	err := v.c.query(sqlWritesVerify, []any{th},
		func(st row) error {
			w := &vwrite{ns: st.Text(0), cp: st.Text(1), task: st.Text(2), idx: int(st.Int64(3)), channel: st.Text(4),
				typ: st.Text(5), sealed: !st.Null(6), consumedBy: st.Text(6), taskPath: st.Text(7)}
			w.data, w.loadErr = loadWrite(st, 8)
			writes = append(writes, w)
			return nil
		})
	if err != nil {
		return nil, err
	}
	v.rep.Writes += len(writes)
	for _, w := range writes {
		where := fmt.Sprintf("write of task %q idx %d to %q", w.task, w.idx, w.channel)
		if w.loadErr != nil {
			v.addf("write", th, w.ns, w.cp, "%s: its stored bytes do not read: %v", where, w.loadErr)
		}
		if _, ok := cps[nsKey{w.ns, w.cp}]; !ok {
			v.addf("write", th, w.ns, w.cp, "%s belongs to no checkpoint (orphan write)", where)
		}
		if w.sealed {
			child, ok := cps[nsKey{w.ns, w.consumedBy}]
			switch {
			case !ok:
				v.addf("write", th, w.ns, w.cp, "%s is sealed by checkpoint %q, which does not exist", where, w.consumedBy)
			case !child.hasParent || child.parent != w.cp:
				v.addf("write", th, w.ns, w.cp, "%s is sealed by checkpoint %q, which is not a child of its checkpoint", where, w.consumedBy)
			}
		}
		switch {
		case w.typ == "":
			v.addf("write", th, w.ns, w.cp, "%s has no type tag", where)
		case w.typ == codec.TypeMsgpack && w.loadErr == nil:
			var x any
			if err := codec.Unmarshal(w.data, &x); err != nil {
				v.addf("write", th, w.ns, w.cp, "%s does not decode: %v", where, err)
			}
		}
	}
	return writes, nil
}

// channelValues checks a thread's channel values: each is named by a
// checkpoint's versions, and its owner (if it survives) has that version;
// each has a type tag; and every value rebuilds (values). ours says the
// thread is the thread API's, whose schema channels the replay decodes.
func (v *verifier) channelValues(th string, order []*vcp, cps map[nsKey]*vcp, ours bool) error {
	named := map[[3]string]bool{}
	for _, cp := range order {
		for ch, ver := range cp.versions {
			named[[3]string{cp.ns, ch, ver}] = true
		}
	}
	var blobs []*blobRef
	err := v.c.query(sqlBlobsVerify, []any{th}, func(st row) error {
		blobs = append(blobs, &blobRef{ns: st.Text(0), ch: st.Text(1), ver: st.Text(2), owner: st.Text(3), typ: st.Text(4),
			enc: st.Int64(5), base: st.Text(6), hasBase: !st.Null(6)})
		return nil
	})
	if err != nil {
		return err
	}
	v.rep.Blobs += len(blobs)
	for _, b := range blobs {
		where := fmt.Sprintf("value of channel %q version %q", b.ch, b.ver)
		if !named[[3]string{b.ns, b.ch, b.ver}] {
			v.addf("blob", th, b.ns, b.owner, "%s is named by no checkpoint (orphan value)", where)
		}
		if owner, ok := cps[nsKey{b.ns, b.owner}]; ok && owner.ok && owner.versions[b.ch] != b.ver {
			v.addf("blob", th, b.ns, b.owner, "%s is stored by this checkpoint, whose version of the channel is %q", where, owner.versions[b.ch])
		}
		if b.typ == "" {
			v.addf("blob", th, b.ns, b.owner, "%s has no type tag", where)
		}
	}
	// Every value rebuilds: each delta applies to its base (lengths and
	// checksums), no base is missing, no chain loops; and values of the
	// engine's type that the replay does not decode are decoded here.
	return v.values(th, blobs, func(b *blobRef, data []byte) {
		_, inSchema := v.db.opts.Schema[b.ch]
		if b.typ == codec.TypeMsgpack && !(ours && inSchema) {
			var x any
			if err := codec.Unmarshal(data, &x); err != nil {
				v.addf("blob", th, b.ns, b.owner, "value of channel %q version %q does not decode: %v", b.ch, b.ver, err)
			}
		}
	})
}

// blobRef is a stored channel value as verify sees it.
type blobRef struct {
	ns, ch, ver, owner, typ string
	enc                     int64
	base                    string
	hasBase                 bool
	visited                 bool
}

// values rebuilds every stored value of a thread, chain by chain, one delta
// at a time (codec.Patch, which checks the base's length and checksum and
// the result's checksum), calling check with each value that rebuilds. A
// delta is applied to its base as soon as the base is known and the base
// is dropped after its last delta, so a long chain costs two values of
// memory, not the chain.
func (v *verifier) values(th string, blobs []*blobRef, check func(b *blobRef, data []byte)) error {
	type chainKey struct{ ns, ch string }
	byVer := map[chainKey]map[string]*blobRef{}
	for _, b := range blobs {
		k := chainKey{b.ns, b.ch}
		if byVer[k] == nil {
			byVer[k] = map[string]*blobRef{}
		}
		byVer[k][b.ver] = b
	}
	where := func(b *blobRef) string { return fmt.Sprintf("value of channel %q version %q", b.ch, b.ver) }
	children := map[*blobRef][]*blobRef{}
	var roots, broken []*blobRef
	for _, b := range blobs {
		switch {
		case b.enc == encPlain || b.enc == encPacked:
			if b.hasBase {
				v.addf("blob", th, b.ns, b.owner, "%s is stored whole (encoding %d) but names a base version %q", where(b), b.enc, b.base)
			}
			roots = append(roots, b)
		case b.enc == encDelta:
			base, ok := byVer[chainKey{b.ns, b.ch}][b.base]
			switch {
			case !b.hasBase:
				v.addf("blob", th, b.ns, b.owner, "%s is a delta without a base version", where(b))
				b.visited = true
				broken = append(broken, b)
			case !ok:
				v.addf("blob", th, b.ns, b.owner, "%s is a delta of version %q, which is not stored (a dangling base)", where(b), b.base)
				b.visited = true
				broken = append(broken, b)
			default:
				children[base] = append(children[base], b)
			}
		default:
			v.addf("blob", th, b.ns, b.owner, "%s has an unknown encoding %d", where(b), b.enc)
			b.visited = true
			broken = append(broken, b)
		}
	}
	// What follows a value that cannot be rebuilt cannot be either.
	for _, b := range broken {
		v.skipChain(th, b, children, where)
	}
	data := func(b *blobRef) ([]byte, error) {
		var d []byte
		_, err := v.c.queryRow(sqlBlobsVerifyData, []any{th, b.ns, b.ch, b.ver}, func(st row) error {
			d = copyBytes(st.Blob(0))
			return nil
		})
		return d, err
	}
	type frame struct {
		b    *blobRef
		val  codec.DeltaBase
		next int
	}
	for _, r := range roots {
		r.visited = true
		stored, err := data(r)
		if err != nil {
			return err
		}
		body, err := unpack(valueKey{th, r.ns, r.ch}, r.ver, storedVal{enc: r.enc, data: stored})
		if err != nil {
			v.addf("blob", th, r.ns, r.owner, "%s does not inflate: %v", where(r), err)
			v.skipChain(th, r, children, where)
			continue
		}
		check(r, body)
		stack := []frame{{b: r, val: codec.NewDeltaBase(body)}}
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			kids := children[top.b]
			if top.next == len(kids) {
				stack = stack[:len(stack)-1]
				continue
			}
			kid := kids[top.next]
			top.next++
			kid.visited = true
			base := top.val
			if top.next == len(kids) {
				stack = stack[:len(stack)-1] // the base's last delta: let it go
			}
			d, err := data(kid)
			if err != nil {
				return err
			}
			val, err := base.Patch(nil, d, MaxListBytes)
			if err != nil {
				v.addf("blob", th, kid.ns, kid.owner, "%s does not apply to its base version %q: %v", where(kid), kid.base, err)
				v.skipChain(th, kid, children, where)
				continue
			}
			check(kid, val.Bytes())
			stack = append(stack, frame{b: kid, val: val})
		}
	}
	for _, b := range blobs {
		if !b.visited {
			v.addf("blob", th, b.ns, b.owner, "%s is a delta whose chain of bases loops and reaches no whole value", where(b))
		}
	}
	return nil
}

// skipChain reports the deltas after one that cannot be rebuilt (each
// delta has one base, so they form a tree).
func (v *verifier) skipChain(th string, b *blobRef, children map[*blobRef][]*blobRef, where func(*blobRef) string) {
	todo := []*blobRef{b}
	for len(todo) > 0 {
		x := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, k := range children[x] {
			if k.visited {
				continue
			}
			k.visited = true
			v.addf("blob", th, k.ns, k.owner, "%s cannot be rebuilt: its base version %q does not", where(k), x.ver)
			todo = append(todo, k)
		}
	}
}
