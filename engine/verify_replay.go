// Verify's replay of a thread-API thread: every checkpoint rebuilt from its
// parent's state and the writes it consumed, against what is stored and
// what the read path reads.

package engine

import (
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"reflect"
	"slices"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
)

// replay rebuilds every checkpoint of a thread-API thread from its parent's
// state and the writes it consumed (the oracle of contract §2.4), compares that
// with the stored value where there is one, and with what the delta walk
// reads where there is none.
func (v *verifier) replay(th string, mode channels.Mode, order []*vcp, cps map[nsKey]*vcp, writes []*vwrite) error {
	r := &replayer{v: v, th: th, mode: mode, cps: cps,
		sealed: map[sealKey][]*vwrite{},
		names:  slices.Sorted(maps.Keys(v.db.opts.Schema)),
		kids:   map[nsKey]int{},
		state:  map[nsKey]map[string]*replayState{},
		broken: map[nsKey]bool{},
		steps:  map[nsKey]map[string]int{},
	}
	for _, w := range writes {
		if w.sealed {
			k := sealKey{w.ns, w.cp, w.consumedBy, w.channel}
			r.sealed[k] = append(r.sealed[k], w)
		}
	}
	for _, cp := range order {
		if cp.hasParent {
			r.kids[nsKey{cp.ns, cp.parent}]++
		}
	}
	for _, cp := range order {
		if err := r.checkpoint(cp); err != nil {
			return err
		}
	}
	return nil
}

// sealKey names the writes a child consumed from its parent for a channel.
type sealKey struct{ ns, cp, child, channel string }

// replayer is the state of one thread's replay.
type replayer struct {
	v      *verifier
	th     string
	mode   channels.Mode
	cps    map[nsKey]*vcp
	sealed map[sealKey][]*vwrite
	names  []string // the schema's channels, sorted
	// A checkpoint's rebuilt state is kept only until its last child has
	// been replayed: all of them, kept, were a list per checkpoint (a
	// thread of 100,000 messages passed 20 GB).
	kids   map[nsKey]int
	state  map[nsKey]map[string]*replayState // rebuilt state per checkpoint with children to come
	broken map[nsKey]bool                    // state unknown (a problem was reported on the way)
	// steps counts, per checkpoint with children to come and channel, the
	// checkpoints since the last one that stores the channel's value: how
	// far the delta history walk of the read path goes back from there.
	steps map[nsKey]map[string]int
}

// checkpoint replays one checkpoint, every schema channel, from its
// parent's rebuilt state (its parent comes before it in order).
func (r *replayer) checkpoint(cp *vcp) error {
	k := nsKey{cp.ns, cp.id}
	if !cp.ok {
		r.broken[k] = true
		return nil
	}
	var parent map[string]*replayState
	var parentSteps map[string]int
	lastChild := false // the parent's folders may be taken over, not copied
	if cp.hasParent {
		pk := nsKey{cp.ns, cp.parent}
		if _, ok := r.cps[pk]; !ok || r.broken[pk] {
			r.broken[k] = true
			return nil
		}
		parent = r.state[pk]
		parentSteps = r.steps[pk]
		if r.kids[pk]--; r.kids[pk] == 0 {
			delete(r.state, pk)
			delete(r.steps, pk)
			lastChild = true
		}
	}
	values := map[string]*replayState{}
	mySteps := map[string]int{}
	bad := false
	for _, name := range r.names {
		chBad, err := r.channel(cp, name, parent[name], parentSteps[name], lastChild, values, mySteps)
		if err != nil {
			return err
		}
		bad = bad || chBad
	}
	if bad {
		r.broken[k] = true
		return nil
	}
	if r.kids[k] > 0 {
		r.state[k] = values
		r.steps[k] = mySteps
	}
	r.v.rep.Replayed++
	return nil
}

// channel replays channel name at cp from prev, its parent's state, and
// parentSteps, the parent's count of checkpoints since the channel's last
// stored value; it records the state in values and the count in mySteps.
// It reports bad when the state is unknown (a problem was reported).
func (r *replayer) channel(cp *vcp, name string, prev *replayState, parentSteps int, lastChild bool, values map[string]*replayState, mySteps map[string]int) (bad bool, err error) {
	v, th := r.v, r.th
	ch := v.db.opts.Schema[name]
	rs, foldable := r.fold(cp, name, ch, prev, lastChild)
	ver, has := cp.versions[name]
	stored, held, err := v.storedValue(th, cp, name, ver, has)
	if err != nil {
		return false, err
	}
	switch {
	case held && stored == nil:
		return true, nil // decode problem already reported
	case held:
		if foldable && cp.hasParent {
			v.rep.SnapshotsChecked++
			replayed := rs.get()
			if !reflect.DeepEqual(normalizeState(stored), normalizeState(replayed)) {
				v.addf("replay", th, cp.ns, cp.id, "channel %q: the stored value (%s) differs from its parent's state plus the writes it consumed (%s)", name, describeValue(stored), describeValue(replayed))
			}
		}
		values[name] = &replayState{value: stored, made: true}
	case !foldable:
		return true, nil
	default:
		values[name] = rs
		if !has {
			return false, nil
		}
		if r.mode == channels.ModeFull && cp.hasParent && (parentVersion(r.cps, cp, name) != ver) {
			v.addf("replay", th, cp.ns, cp.id, "channel %q: a full-mode checkpoint that changed the channel (version %q) stores no value for it", name, ver)
		}
		n := parentSteps + 1
		mySteps[name] = n
		if !readPathChecked(n, r.kids[nsKey{cp.ns, cp.id}] == 0) {
			v.rep.DeltaReadsSkipped++
			return false, nil
		}
		return r.readPath(cp, name, ch, rs), nil
	}
	return false, nil
}

// fold applies the writes cp consumed from its parent for channel name
// onto prev, the parent's state; foldable is false when they do not (a
// problem was reported).
func (r *replayer) fold(cp *vcp, name string, ch channels.Channel, prev *replayState, lastChild bool) (rs *replayState, foldable bool) {
	v, th := r.v, r.th
	var ws []channels.TaskWrite
	foldable = true
	if cp.hasParent {
		for _, w := range r.sealed[sealKey{cp.ns, cp.parent, cp.id, name}] {
			if w.typ != codec.TypeMsgpack {
				v.addf("replay", th, cp.ns, cp.id, "channel %q: write of task %q has type %q, which the thread API cannot fold", name, w.task, w.typ)
				foldable = false
				continue
			}
			u, err := ch.DecodeUpdate(w.data)
			if err != nil {
				v.addf("replay", th, cp.ns, cp.id, "channel %q: write of task %q idx %d does not decode: %v", name, w.task, w.idx, err)
				foldable = false
				continue
			}
			ws = append(ws, channels.TaskWrite{TaskID: w.taskPath + "\x00" + w.task, Idx: w.idx, Value: u})
		}
	}
	if foldable {
		ordered, err := channels.OrderStep(ch, ws)
		if err == nil {
			rs, err = prev.next(ch, ordered, lastChild)
		}
		if err != nil {
			v.addf("replay", th, cp.ns, cp.id, "channel %q: the writes it consumed do not apply to its parent's state: %v", name, err)
			foldable = false
		}
	}
	return rs, foldable
}

// readPath reads cp's value of channel name through the delta history
// walk from the file, as a reader does, and compares it with rs, its
// replay. It reports bad when the walk or its fold fails.
func (r *replayer) readPath(cp *vcp, name string, ch channels.Channel, rs *replayState) (bad bool) {
	v, th := r.v, r.th
	e, err := walk(v.c, cpKey{th, cp.ns, cp.id}, name)
	if err != nil {
		v.addf("replay", th, cp.ns, cp.id, "channel %q: the history walk fails: %v", name, err)
		return true
	}
	read, err := v.foldHistory(name, ch, e.hist)
	if err != nil {
		v.addf("replay", th, cp.ns, cp.id, "channel %q: its history does not fold: %v", name, err)
		return true
	}
	v.rep.DeltaReads++
	if replayed := rs.get(); !reflect.DeepEqual(normalizeState(read), normalizeState(replayed)) {
		v.addf("replay", th, cp.ns, cp.id, "channel %q: the delta walk reads %s, its replay gives %s", name, describeValue(read), describeValue(replayed))
	}
	return false
}

// replayState is a channel's replayed state at a checkpoint: its value,
// or, for a channels.Stepper (the message list), a folder whose value is
// made only when something compares it. Folding each checkpoint's writes
// onto its parent's value rebuilt the list's index at every checkpoint,
// O(messages) each; a folder taken over from parent to child along a
// chain keeps it.
type replayState struct {
	value  any
	made   bool
	folder channels.StepFolder
}

// get returns the state's value.
func (r *replayState) get() any {
	if r == nil {
		return nil
	}
	if !r.made {
		r.value, r.made = r.folder.Value(), true
	}
	return r.value
}

// next is the state after a step of updates onto r (nil: the channel is
// empty). The last child of a checkpoint takes r's folder over; the
// others start one from r's value.
func (r *replayState) next(ch channels.Channel, updates []any, lastChild bool) (*replayState, error) {
	st, ok := ch.(channels.Stepper)
	if !ok {
		v, err := channels.Fold(ch, r.get(), updates)
		return &replayState{value: v, made: true}, err
	}
	var f channels.StepFolder
	if r != nil && r.folder != nil && lastChild {
		f, r.folder = r.folder, nil
	} else {
		var err error
		if f, err = st.Start(r.get()); err != nil {
			return nil, err
		}
	}
	if err := f.Step(updates); err != nil {
		return nil, err
	}
	return &replayState{folder: f}, nil
}

// readPathChecked says whether verify reads a checkpoint that stores no
// value of a channel back through the delta history walk, n checkpoints
// after the last one that stores it, and compares it with the replay.
// The walk goes back those n checkpoints, so reading every one costs
// O(n^2) per stretch, and retention leaves stretches of thousands (a
// 10,000-checkpoint thread took 14 minutes); the replay itself, which
// checks every checkpoint's state against every stored value, stays
// whole. So the walk is checked for the first 16 checkpoints of each
// stretch, at every power of two after that, and at every head (a
// checkpoint without children: what a reader of the thread reads first):
// O(n) in all.
func readPathChecked(n int, head bool) bool {
	return head || n <= 16 || n&(n-1) == 0
}

func parentVersion(cps map[nsKey]*vcp, cp *vcp, ch string) string {
	if p, ok := cps[nsKey{cp.ns, cp.parent}]; ok {
		return p.versions[ch]
	}
	return ""
}

// storedValue decodes the value stored for a schema channel at cp's version,
// if any: held reports a stored value, and value is nil when it did not
// decode (a problem is then reported).
func (v *verifier) storedValue(th string, cp *vcp, name, ver string, has bool) (value any, held bool, err error) {
	if !has {
		return nil, false, nil
	}
	b, held, err := readValue(v.c, valueKey{th, cp.ns, name}, ver)
	if errors.Is(err, ErrCorrupt) {
		return nil, true, nil // reported by values
	}
	if err != nil || !held {
		return nil, held, err
	}
	typ, data := b.Type, b.Data
	if typ != codec.TypeMsgpack {
		v.addf("blob", th, cp.ns, cp.id, "channel %q holds a value of type %q, which the thread API did not write", name, typ)
		return nil, true, nil
	}
	x, err := v.db.opts.Schema[name].DecodeState(data)
	if err != nil {
		v.addf("blob", th, cp.ns, cp.id, "channel %q version %q does not decode: %v", name, ver, err)
		return nil, true, nil
	}
	return x, true, nil
}

// foldHistory folds a delta history as the read path does. Decoded seeds
// are kept: consecutive checkpoints mostly share one.
func (v *verifier) foldHistory(name string, ch channels.Channel, h History) (any, error) {
	var seed any
	if h.Seed != nil {
		if h.Seed.Type != codec.TypeMsgpack {
			return nil, fmt.Errorf("seed of type %q is not ours to fold", h.Seed.Type)
		}
		k := seedKey{name, maphash.Bytes(v.seed, h.Seed.Data), len(h.Seed.Data)}
		s, ok := v.seeds[k]
		if !ok {
			var err error
			if s, err = ch.DecodeState(h.Seed.Data); err != nil {
				return nil, err
			}
			if v.seeds == nil || len(v.seeds) > 64 {
				v.seeds = map[seedKey]any{}
			}
			v.seeds[k] = s
		}
		seed = s
	}
	ups := make([]any, len(h.Writes))
	for i, w := range h.Writes {
		if w.Value.Type != codec.TypeMsgpack {
			return nil, fmt.Errorf("write of task %q has type %q, which is not ours to fold", w.TaskID, w.Value.Type)
		}
		u, err := ch.DecodeUpdate(w.Value.Data)
		if err != nil {
			return nil, fmt.Errorf("write of task %q: %w", w.TaskID, err)
		}
		ups[i] = u
	}
	return channels.Fold(ch, seed, ups)
}

// normalizeState makes an empty message list and a missing one compare
// equal (a fold of nothing onto nothing is an empty list).
func normalizeState(x any) any {
	if ms, ok := x.([]codec.Message); ok && len(ms) == 0 {
		return nil
	}
	return x
}

func describeValue(x any) string {
	switch v := x.(type) {
	case nil:
		return "nothing"
	case []codec.Message:
		if len(v) == 0 {
			return "0 messages"
		}
		return fmt.Sprintf("%d messages, last %q", len(v), v[len(v)-1].ID)
	}
	return fmt.Sprintf("a %T", x)
}
