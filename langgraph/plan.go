// Planning an import: a prepared thread turned into the protocol calls
// that store it (puts and writes), checked against what the engine can
// represent before any of it is written.

package langgraph

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
)

// op is one protocol call of an import.
type op struct {
	put    *putOp
	writes *writesOp
}

type putOp struct {
	cfg engine.Config
	cp  engine.Checkpoint
	md  engine.Metadata
	nv  map[string]string
}

type writesOp struct {
	cfg        engine.Config
	writes     []engine.Write
	task, path string
}

func (x op) run(b *engine.Batch) error {
	if x.put != nil {
		_, err := b.Put(x.put.cfg, x.put.cp, x.put.md, x.put.nv)
		return err
	}
	return b.PutWrites(x.writes.cfg, x.writes.writes, x.writes.task, x.writes.path)
}

// planThread turns a prepared thread into the protocol calls that write it,
// with the counts they add to the report. Nothing is written yet: a thread
// the engine cannot represent is a *Problem before any of it is stored.
func planThread(t *thread, dbo engine.Options, comp *codec.Compressor, orphansAsRoots bool) ([]op, *Report, error) {
	pl := &planner{thread: t.id, mode: dbo.Mode, cadence: channels.Cadence{K: dbo.SnapshotEvery}, comp: comp, orphansAsRoots: orphansAsRoots,
		rep: &Report{DeltaChannels: map[string]int{}, Dropped: t.dropped, Blobs: map[string]int{}, OrphanWrites: t.orphans}}
	for name, ch := range dbo.Schema {
		if _, ok := ch.(channels.Messages); ok {
			pl.msg = append(pl.msg, name)
		}
	}
	slices.Sort(pl.msg)
	for _, r := range t.deltas {
		pl.rep.DeltaChannels[string(r)]++
	}
	for _, ns := range t.namespaces {
		if err := pl.namespace(ns); err != nil {
			var p *Problem
			if errors.As(err, &p) {
				return nil, nil, err
			}
			return nil, nil, &Problem{ThreadID: t.id, CheckpointNS: ns.ns, Reason: err.Error()}
		}
		pl.rep.Namespaces++
	}
	return pl.ops, pl.rep, nil
}

type planner struct {
	thread  string
	mode    channels.Mode
	cadence channels.Cadence
	msg     []string // message channels of the Schema, sorted
	comp    *codec.Compressor
	rep     *Report
	ops     []op
	// orphansAsRoots is Options.OrphansAsRoots.
	orphansAsRoots bool
}

// planned is a checkpoint already planned: what the engine will read for it.
type planned struct {
	versions map[string]string          // our channel versions
	src      map[string]string          // the source versions they came from
	walk     map[string][]codec.Message // message channels as the history walk sees them
	has      map[string]bool            // message channels with a value
	values   map[string]any             // the source's values (other channels)
	counters map[string]channels.Counter
	sealed   bool     // its writes were consumed by a child already
	pending  []*write // its writes, stored when its first child comes
}

// plannedParent finds the parent of checkpoint cp (of namespace ns) among
// the checkpoints of its namespace planned already (done). Checkpoints come
// in id order, so a parent is planned before its children unless its id
// does not sort first, which the engine refuses (the error). A parent the
// source lacks is an error too, unless pl.orphansAsRoots: then the
// checkpoint is stored without one (parentID ""), counted in
// rep.ParentsMissing and listed in rep.Orphans.
func plannedParent[P any](pl *planner, done map[string]*P, inSource map[string]bool, ns, cp, parent string) (_ *P, parentID string, err error) {
	p := done[parent]
	if parent != "" && p == nil {
		if inSource[parent] {
			return nil, "", fmt.Errorf("its id does not sort after its parent %q", parent)
		}
		if !pl.orphansAsRoots {
			return nil, "", fmt.Errorf("its parent %q is not in the source (a pruned history?); an import keeps every parent link: OrphansAsRoots (--orphans-as-roots) imports such a checkpoint as a root", parent)
		}
		pl.rep.ParentsMissing++
		pl.rep.Orphans = append(pl.rep.Orphans, Orphan{ThreadID: pl.thread, CheckpointNS: ns, CheckpointID: cp, Parent: parent})
		return nil, "", nil
	}
	return p, parent, nil
}

// namespace plans one namespace of a thread, its checkpoints in id order,
// then stores the writes of those without children as pending.
func (pl *planner) namespace(ns *namespace) error {
	np := &nsPlan{ns: ns, done: map[string]*planned{}, claimed: map[[2]string]bool{}, inSource: make(map[string]bool, len(ns.cps))}
	for _, cp := range ns.cps {
		np.inSource[cp.id] = true
	}
	for _, cp := range ns.cps {
		if err := pl.checkpoint(np, cp); err != nil {
			return err
		}
	}
	// Writes of checkpoints without children stay pending.
	for _, cp := range ns.cps {
		if d := np.done[cp.id]; !d.sealed && len(d.pending) > 0 {
			if err := pl.storeWrites(ns.ns, cp.id, d.pending); err != nil {
				return err
			}
		}
	}
	return nil
}

// nsPlan is one namespace being planned.
type nsPlan struct {
	ns       *namespace
	done     map[string]*planned // its checkpoints planned already
	claimed  map[[2]string]bool  // (channel, version) already used in this namespace
	inSource map[string]bool     // the ids of its checkpoints in the source
}

// mapVersion gives the version a source version of channel ch at
// checkpoint cpID is stored under. LangGraph.js counts versions per
// branch, so a fork reuses numbers; the engine keys values by version: a
// reused one gets the checkpoint id.
func (np *nsPlan) mapVersion(ch, src, cpID string) string {
	if src == "" {
		src = "0"
	}
	if !np.claimed[[2]string{ch, src}] {
		np.claimed[[2]string{ch, src}] = true
		return src
	}
	v := src + "." + cpID
	np.claimed[[2]string{ch, v}] = true
	return v
}

// cpPlan is one checkpoint being planned: what the engine will read for
// it (d), and the put that stores it.
type cpPlan struct {
	cp          *checkpoint
	parent      *planned // nil for a root
	d           *planned
	out         engine.Checkpoint
	newVersions map[string]string
	synthetic   []engine.Write // writes added to the parent's (an Overwrite each)
}

// problem is err as the Problem of checkpoint cp of namespace ns (and
// channel ch, if not empty).
func (pl *planner) problem(ns string, cp *checkpoint, ch string, err error) error {
	return &Problem{ThreadID: pl.thread, CheckpointNS: ns, CheckpointID: cp.id, Channel: ch, Reason: err.Error()}
}

// checkpoint plans one checkpoint of a namespace: the writes of its parent
// it consumes, any it adds, and the put that stores it.
func (pl *planner) checkpoint(np *nsPlan, cp *checkpoint) error {
	ns := np.ns
	if err := checkNames(cp, ns.ns, ns.writes[cp.id]); err != nil {
		return pl.problem(ns.ns, cp, "", err)
	}
	parent, parentID, err := plannedParent(pl, np.done, np.inSource, ns.ns, cp.id, cp.parent)
	if err != nil {
		return pl.problem(ns.ns, cp, "", err)
	}
	c := &cpPlan{cp: cp, parent: parent,
		d: &planned{versions: map[string]string{}, src: map[string]string{}, walk: map[string][]codec.Message{},
			has: map[string]bool{}, values: map[string]any{}, counters: map[string]channels.Counter{}},
		out: engine.Checkpoint{V: cp.v, ID: cp.id, TS: cp.ts, ChannelValues: map[string]codec.Blob{},
			VersionsSeen: cp.seen, UpdatedChannels: cp.updated},
		newVersions: map[string]string{}}
	// The writes this checkpoint consumes: all of its parent's if it is
	// the parent's first child, none otherwise.
	var sealing []*write
	if parent != nil && !parent.sealed {
		sealing = parent.pending
	}
	for _, ch := range pl.msg {
		if err := pl.messageChannel(np, c, ch, sealing); err != nil {
			return err
		}
	}
	if err := pl.otherChannels(np, c); err != nil {
		return err
	}
	d := c.d
	c.out.ChannelVersions = d.versions
	md := maps.Clone(cp.metadata)
	if pl.mode == channels.ModeDelta {
		cs := map[string]channels.Counter{}
		for _, ch := range pl.msg {
			cs[ch] = d.counters[ch]
		}
		md = channels.SetCounters(md, cs)
	}
	// The parent's writes (sealed by this put) and any added ones.
	if parent != nil && !parent.sealed {
		if err := pl.storeWrites(ns.ns, parentID, parent.pending); err != nil {
			return err
		}
		parent.sealed, parent.pending = true, nil
	}
	if len(c.synthetic) > 0 {
		pl.ops = append(pl.ops, op{writes: &writesOp{cfg: engine.Config{ThreadID: pl.thread, CheckpointNS: ns.ns, CheckpointID: parentID},
			writes: c.synthetic, task: importTaskID, path: importTaskPath}})
	}
	pl.ops = append(pl.ops, op{put: &putOp{cfg: engine.Config{ThreadID: pl.thread, CheckpointNS: ns.ns, CheckpointID: parentID},
		cp: c.out, md: md, nv: c.newVersions}})
	d.pending = ns.writes[cp.id]
	np.done[cp.id] = d
	pl.rep.Checkpoints++
	return nil
}

// messageChannel plans message channel ch of a checkpoint: what the
// history walk will read for it (the parent's list and the sealing writes
// replayed, or an Overwrite added where that is not the source's list),
// its version, and, when the cadence says so, its snapshot.
func (pl *planner) messageChannel(np *nsPlan, c *cpPlan, ch string, sealing []*write) error {
	cp, parent, d := c.cp, c.parent, c.d
	target, has := cp.values[ch].([]codec.Message)
	var walkIn []codec.Message
	var parentHas bool
	var parentSrc string
	var counter channels.Counter
	if parent != nil {
		walkIn, parentHas, parentSrc, counter = parent.walk[ch], parent.has[ch], parent.src[ch], parent.counters[ch]
	}
	var step []*write
	for _, w := range sealing {
		if w.channel == ch {
			step = append(step, w)
		}
	}
	replay, overwrite := pl.replay(walkIn, step, target, has)
	if has && !messagesSame(replay, target) {
		if parent != nil {
			// The engine rebuilds this checkpoint from its parent and
			// the writes it consumes: an added Overwrite makes that
			// give the source's list.
			if overwrite {
				return pl.problem(np.ns.ns, cp, ch, fmt.Errorf("its step overwrites the list and LangGraph's value is not what the step's writes give; the import cannot represent it"))
			}
			u := channels.MessageUpdate{Overwrite: true, Messages: target}
			data, err := u.Encode()
			if err != nil {
				return pl.problem(np.ns.ns, cp, ch, err)
			}
			c.synthetic = append(c.synthetic, engine.Write{Channel: ch, Value: codec.Blob{Type: codec.TypeMsgpack, Data: data}})
			pl.rep.Overwrites++
			overwrite = true
		}
		replay = target
	}
	d.walk[ch] = replay
	if !has {
		return nil
	}
	d.has[ch] = true
	srcVer := cp.versions[ch]
	d.src[ch] = srcVer
	changed := parent == nil || !parentHas || srcVer != parentSrc || len(step) > 0 || overwrite
	if !changed {
		d.versions[ch] = parent.versions[ch]
		d.counters[ch] = counter
		return nil
	}
	ver := np.mapVersion(ch, srcVer, cp.id)
	d.versions[ch] = ver
	c.newVersions[ch] = ver
	store := true
	if pl.mode == channels.ModeDelta {
		var next channels.Counter
		store, next = pl.cadence.Next(counter, true, overwrite, parent == nil || !parentHas)
		d.counters[ch] = next
	}
	if store {
		data, err := pl.comp.Marshal(target)
		if err != nil {
			return pl.problem(np.ns.ns, cp, ch, err)
		}
		c.out.ChannelValues[ch] = codec.Blob{Type: codec.TypeMsgpack, Data: data}
		pl.rep.Snapshots++
	}
	return nil
}

// otherChannels plans a checkpoint's other channels: one stored value per
// distinct version, the parent's version kept where the value is the same.
func (pl *planner) otherChannels(np *nsPlan, c *cpPlan) error {
	cp, parent, d := c.cp, c.parent, c.d
	others := map[string]bool{}
	for ch := range cp.values {
		others[ch] = true
	}
	for ch := range cp.versions {
		others[ch] = true
	}
	for _, ch := range pl.msg {
		delete(others, ch)
	}
	for _, ch := range slices.Sorted(maps.Keys(others)) {
		v, has := cp.values[ch]
		srcVer := cp.versions[ch]
		d.src[ch] = srcVer
		if has {
			d.values[ch] = v
		}
		if parent != nil {
			pv, pHas := parent.values[ch]
			if pver, ok := parent.versions[ch]; ok && pHas == has && parent.src[ch] == srcVer && srcVer != "" && sameValue(pv, v) {
				d.versions[ch] = pver
				continue
			}
		}
		ver := np.mapVersion(ch, srcVer, cp.id)
		d.versions[ch] = ver
		c.newVersions[ch] = ver
		if has {
			b, err := pl.blob(v, cp.why[ch], engine.MaxListBytes, "MaxListBytes")
			if err != nil {
				return pl.problem(np.ns.ns, cp, ch, err)
			}
			c.out.ChannelValues[ch] = b
		}
	}
	return nil
}

// blob encodes a non-message value to store: an engine value as the
// engine's msgpack, a blob (the source's bytes) as it is, within the
// engine's limit for it (engine.MaxListBytes for a channel's value,
// engine.MaxValueBytes for a write), so that a value the engine would
// refuse makes its thread unsupported before any of it is written.
func (pl *planner) blob(v any, why string, limit int, limitName string) (codec.Blob, error) {
	if b, ok := v.(codec.Blob); ok {
		if len(b.Data) > limit {
			return codec.Blob{}, fmt.Errorf("a value of %d bytes, more than the engine's %s (%d)", len(b.Data), limitName, limit)
		}
		pl.rep.Blobs[why]++
		return b, nil
	}
	data, err := codec.MarshalMax(v, limit)
	if errors.Is(err, codec.ErrTooLarge) {
		return codec.Blob{}, fmt.Errorf("a value larger than the engine's %s (%d bytes)", limitName, limit)
	}
	if err != nil {
		return codec.Blob{}, err
	}
	return codec.Blob{Type: codec.TypeMsgpack, Data: data}, nil
}

// replay folds one step's message writes onto the list the walk gives the
// parent, as the engine will, giving id-less messages the ids the target
// state shows. It reports whether the step holds an Overwrite; a step that
// does not fold gives nil (the added Overwrite then makes it replay).
func (pl *planner) replay(walkIn []codec.Message, step []*write, target []codec.Message, has bool) ([]codec.Message, bool) {
	n := 0
	overwrite := false
	for _, w := range step {
		overwrite = overwrite || w.update.Overwrite
		for i := range w.update.Messages {
			m := &w.update.Messages[i]
			if m.ID == "" && m.Type != codec.Remove {
				m.ID = placeholderPrefix + strconv.Itoa(n)
				n++
			}
		}
	}
	fold := func() ([]codec.Message, error) {
		tw := make([]channels.TaskWrite, len(step))
		for i, w := range step {
			// The engine orders a step's writes by (task_path, task_id, idx).
			tw[i] = channels.TaskWrite{TaskID: w.path + "\x00" + w.task, Idx: w.idx, Value: *w.update}
		}
		ordered, err := channels.OrderStep(channels.Messages{}, tw)
		if err != nil {
			return nil, err
		}
		out, err := channels.Fold(channels.Messages{}, walkIn, ordered)
		if err != nil {
			return nil, err
		}
		return out.([]codec.Message), nil
	}
	out, err := fold()
	if n > 0 {
		ids := map[string]string{}
		if err == nil && has && len(out) == len(target) {
			for i, m := range out {
				if strings.HasPrefix(m.ID, placeholderPrefix) && target[i].ID != "" {
					ids[m.ID] = target[i].ID
				}
			}
		}
		for _, w := range step {
			for i := range w.update.Messages {
				m := &w.update.Messages[i]
				if !strings.HasPrefix(m.ID, placeholderPrefix) {
					continue
				}
				if id, ok := ids[m.ID]; ok {
					m.ID = id
					pl.rep.IDsFilled++
				} else {
					m.ID = fmt.Sprintf("%s-%d-%s", w.task, w.idx, strings.TrimPrefix(m.ID, placeholderPrefix))
				}
			}
		}
		out, err = fold()
	}
	if err != nil {
		return nil, overwrite
	}
	return out, overwrite
}

// threadProblem is the *Problem of a thread whose id the engine cannot
// store, nil for any other id: an empty id, or one that is not UTF-8 (the
// engine's reads pass ids to SQLite as JSON text, which cannot carry such
// bytes). The Reason shows the id escaped, as Problem.String does, so that
// a report or an error never carries its raw bytes. Import and Compare
// check it before they read the thread, so that such a thread is skipped
// (Options.SkipUnsupported) or listed, not a failure of the whole import.
func threadProblem(th string) error {
	switch {
	case th == "":
		return &Problem{ThreadID: th, Reason: "the thread id is empty; the engine stores no thread without one"}
	case !utf8.ValidString(th):
		return &Problem{ThreadID: th, Reason: fmt.Sprintf("the thread id %q is not valid UTF-8, which the engine's ids must be", th)}
	}
	return nil
}

// checkNames refuses what the engine's protocol calls would refuse in a
// checkpoint's names, before anything of the thread is written: ids and
// versions that are not UTF-8, channel names that are empty or hold control
// characters, writes without a task.
func checkNames(cp *checkpoint, ns string, ws []*write) error {
	for _, s := range []string{ns, cp.id, cp.parent} {
		if !utf8.ValidString(s) {
			return fmt.Errorf("id or namespace %q is not UTF-8", s)
		}
	}
	channel := func(ch string) error {
		if ch == "" || !utf8.ValidString(ch) || strings.ContainsFunc(ch, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return fmt.Errorf("channel name %q is empty, not UTF-8 or holds control characters", ch)
		}
		return nil
	}
	for ch, v := range cp.versions {
		if err := channel(ch); err != nil {
			return err
		}
		if !utf8.ValidString(v) {
			return fmt.Errorf("channel %q: version %q is not UTF-8", ch, v)
		}
	}
	for ch := range cp.values {
		if err := channel(ch); err != nil {
			return err
		}
	}
	for _, w := range ws {
		if err := channel(w.channel); err != nil {
			return err
		}
		if w.task == "" || !utf8.ValidString(w.task) || !utf8.ValidString(w.path) {
			return fmt.Errorf("a write to %q has an empty or non-UTF-8 task id or path", w.channel)
		}
	}
	return nil
}

// specialIdx are the fixed indexes of LangGraph's special write channels.
var specialIdx = map[string]int{engine.ChannelError: -1, engine.ChannelScheduled: -2, engine.ChannelInterrupt: -3, engine.ChannelResume: -4}

// storeWrites plans the PutWrites calls that store one checkpoint's writes.
// The protocol numbers a task's writes by position, special channels at
// their fixed indexes, so each task's writes go in one call with every
// source index at its position, the gaps (where a special write stood in
// LangGraph's own call) filled by the task's special writes; an index no
// call can give is renumbered, keeping the order. Message writes still
// holding a placeholder id (a leaf's writes) get a stable one.
func (pl *planner) storeWrites(ns, cpID string, ws []*write) error {
	cfg := engine.Config{ThreadID: pl.thread, CheckpointNS: ns, CheckpointID: cpID}
	for start := 0; start < len(ws); {
		end := start
		for end < len(ws) && ws[end].task == ws[start].task && ws[end].path == ws[start].path {
			end++
		}
		group := ws[start:end]
		start = end
		var regular, special []*write
		for _, w := range group {
			if idx, ok := specialIdx[w.channel]; ok && idx == w.idx {
				special = append(special, w)
			} else {
				regular = append(regular, w)
			}
		}
		var slots []*write
		ok := true
		for i, w := range regular {
			if w.idx < len(slots) || (i > 0 && w.idx <= regular[i-1].idx) {
				ok = false
				break
			}
			for len(slots) < w.idx {
				if len(special) == 0 {
					ok = false
					break
				}
				slots, special = append(slots, special[0]), special[1:]
			}
			if !ok {
				break
			}
			slots = append(slots, w)
		}
		if !ok {
			slots = nil
			special = nil
			for _, w := range group {
				if idx, isSpecial := specialIdx[w.channel]; isSpecial && idx == w.idx {
					special = append(special, w)
					continue
				}
				if w.idx != len(slots) {
					pl.rep.Renumbered++
				}
				slots = append(slots, w)
			}
		}
		for _, call := range [][]*write{slots, special} {
			if len(call) == 0 {
				continue
			}
			out := make([]engine.Write, len(call))
			for i, w := range call {
				b, err := pl.encodeWrite(w)
				if err != nil {
					return &Problem{ThreadID: pl.thread, CheckpointNS: ns, CheckpointID: cpID, Channel: w.channel,
						Reason: fmt.Sprintf("write of task %q idx %d: %v", w.task, w.idx, err)}
				}
				out[i] = engine.Write{Channel: w.channel, Value: b}
			}
			pl.ops = append(pl.ops, op{writes: &writesOp{cfg: cfg, writes: out, task: call[0].task, path: call[0].path}})
			pl.rep.Writes += len(call)
		}
	}
	return nil
}

func (pl *planner) encodeWrite(w *write) (codec.Blob, error) {
	if w.update == nil {
		return pl.blob(w.value, w.why, engine.MaxValueBytes, "MaxValueBytes")
	}
	for i := range w.update.Messages {
		m := &w.update.Messages[i]
		if strings.HasPrefix(m.ID, placeholderPrefix) || (m.ID == "" && m.Type != codec.Remove) {
			m.ID = fmt.Sprintf("%s-%d-%d", w.task, w.idx, i)
		}
	}
	data, err := w.update.Encode()
	if err != nil {
		return codec.Blob{}, err
	}
	if len(data) > engine.MaxValueBytes {
		return codec.Blob{}, fmt.Errorf("a write of %d bytes, more than the engine's MaxValueBytes (%d)", len(data), engine.MaxValueBytes)
	}
	return codec.Blob{Type: codec.TypeMsgpack, Data: data}, nil
}

// messagesSame compares two lists as the engine stores them. Lists of a
// LangGraph file mostly share their messages (a checkpoint repeats its
// parent's), so equal values are the fast path; anything else is settled by
// the bytes the engine would store.
func messagesSame(a, b []codec.Message) bool {
	if len(a) != len(b) {
		return false
	}
	if reflect.DeepEqual(a, b) {
		return true
	}
	x, err1 := codec.Marshal(a)
	y, err2 := codec.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// sameValue compares two prepared values of a channel.
func sameValue(a, b any) bool {
	ba, aBlob := a.(codec.Blob)
	bb, bBlob := b.(codec.Blob)
	if aBlob || bBlob {
		return aBlob && bBlob && ba.Type == bb.Type && bytes.Equal(ba.Data, bb.Data)
	}
	x, err1 := codec.Marshal(a)
	y, err2 := codec.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
