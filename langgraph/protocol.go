package langgraph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
)

// Into names the form an import writes a LangGraph thread in.
type Into string

const (
	// IntoProtocol (the default) keeps the thread in the checkpoint
	// protocol's form: each checkpoint stored with engine.DB.Put and its
	// pending writes with PutWrites, the calls the savers make, every
	// channel value and write kept as its serde type and exact bytes
	// (codec.Blob{Type: "msgpack" | "json" | "bytes" | "bytearray" |
	// "null"}), metadata, parents and versions kept, values stored as the
	// engine's version deltas. A saver on the destination (AgentStateSaver
	// in JavaScript, the Python saver) resumes the thread where the source
	// left it.
	IntoProtocol Into = "protocol"
	// IntoMessages converts the thread into the thread API's model: message
	// channels become lists of codec.Message (see the package
	// documentation), for Go programs that read threads with engine.DB.State.
	// Fields a codec.Message has no place for are dropped.
	IntoMessages Into = "messages"
)

// tasksChannel is LangGraph's TASKS channel, where format 4 keeps the
// pending sends older formats kept in the checkpoint.
const tasksChannel = "__pregel_tasks"

// importProtocol is Import into the protocol's form.
func importProtocol(ctx context.Context, db *engine.DB, src string, o Options) (Report, error) {
	s, threads, total, err := openImport(ctx, src)
	if err != nil {
		return Report{}, err
	}
	defer s.close()
	// The engine's protocol calls add to a thread; an import never writes
	// into one the destination has.
	for _, th := range threads {
		if threadProblem(th) != nil {
			continue // not imported (importThreads); ThreadID "" would list every thread
		}
		for _, err := range db.List(ctx, engine.ListOptions{ThreadID: th, Limit: 1}) { // any namespace
			if err != nil {
				return Report{}, err
			}
			return Report{}, fmt.Errorf("%w: thread %q already exists in the destination; an import only adds threads", engine.ErrConflict, th)
		}
	}
	rep := newReport(s, db.Options().Mode)
	rep.Into = string(IntoProtocol)
	err = db.Batch(ctx, func(b *engine.Batch) error {
		return importThreads(ctx, b, s, threads, total, o, &rep, false, func(th string) ([]op, *Report, error) {
			t, err := s.readBytes(ctx, th, o.Key)
			var pl *planner
			if err == nil {
				pl, _, err = planBytes(t, false, o.OrphansAsRoots)
			}
			var p *Problem
			if errors.As(err, &p) {
				return nil, nil, err
			}
			if err != nil {
				return nil, nil, sourceError(ctx, s, err)
			}
			return pl.ops, pl.rep, nil
		})
	})
	if err != nil {
		return Report{}, err
	}
	return rep, nil
}

// expected is what the destination must hold for one source checkpoint:
// the versions the plan gave it (the source's, but for reused ones).
type expected struct {
	versions map[string]string
	seen     map[string]map[string]string
	parent   string
}

// bytePlanned is a planned checkpoint of the protocol's form.
type bytePlanned struct {
	cp       *byteCheckpoint
	versions map[string]string // ours
	parent   *bytePlanned
	sealed   bool
	pending  []*byteWrite
}

// planBytes turns a thread read in the protocol's form into the protocol
// calls that store it, and (if record) what each checkpoint must read back
// as.
func planBytes(t *byteThread, record, orphansAsRoots bool) (*planner, map[cpKey]*expected, error) {
	if len(t.cps) == 0 {
		return nil, nil, &Problem{ThreadID: t.id, Reason: "no checkpoint"}
	}
	pl := &planner{thread: t.id, orphansAsRoots: orphansAsRoots, rep: &Report{DeltaChannels: map[string]int{}, Dropped: map[string]int{}, Blobs: map[string]int{}}}
	var want map[cpKey]*expected
	if record {
		want = map[cpKey]*expected{}
	}
	known := make(map[cpKey]bool, len(t.cps))
	for _, cp := range t.cps {
		known[cpKey{cp.ns, cp.id}] = true
	}
	for k, ws := range t.writes {
		if !known[k] {
			pl.rep.OrphanWrites += len(ws)
		}
	}
	for start := 0; start < len(t.cps); {
		end := start
		for end < len(t.cps) && t.cps[end].ns == t.cps[start].ns {
			end++
		}
		if err := pl.byteNamespace(t, t.cps[start:end], want); err != nil {
			return nil, nil, err
		}
		pl.rep.Namespaces++
		start = end
	}
	return pl, want, nil
}

// claim is what a (channel, version) of a namespace holds once stored.
type claim struct {
	has  bool
	blob codec.Blob
}

func (pl *planner) byteNamespace(t *byteThread, cps []*byteCheckpoint, want map[cpKey]*expected) error {
	ns := cps[0].ns
	done := map[string]*bytePlanned{}
	claimed := map[[2]string]claim{}
	renamed := map[string]bool{} // channels with a renamed version in this namespace
	inSource := make(map[string]bool, len(cps))
	for _, cp := range cps {
		inSource[cp.id] = true
	}
	for _, cp := range cps {
		fail := func(ch string, err error) error {
			return &Problem{ThreadID: pl.thread, CheckpointNS: ns, CheckpointID: cp.id, Channel: ch, Reason: err.Error()}
		}
		if err := checkByteNames(cp, t.writes[cpKey{ns, cp.id}]); err != nil {
			return fail("", err)
		}
		migrateSends(cp)
		parent, parentID, err := plannedParent(pl, done, inSource, ns, cp.id, cp.parent)
		if err != nil {
			return fail("", err)
		}
		d := &bytePlanned{cp: cp, versions: map[string]string{}, parent: parent}
		out := engine.Checkpoint{V: cp.v, ID: cp.id, TS: cp.ts, ChannelValues: map[string]codec.Blob{},
			VersionsSeen: cp.seen, UpdatedChannels: cp.updated}
		newVersions := map[string]string{}
		for ch, b := range cp.values {
			if _, ok := cp.versions[ch]; !ok {
				// LangGraph.js writes the empty value of a channel that has
				// no version yet ([] or 0); a saver on the engine stores
				// only channels with a version (the engine keys values by
				// version), and LangGraph starts such a channel empty.
				delete(cp.values, ch)
				pl.rep.Unversioned++
				continue
			}
			if len(b.Data) > engine.MaxListBytes {
				return fail(ch, fmt.Errorf("a value of %d bytes, more than the engine's MaxListBytes (%d)", len(b.Data), engine.MaxListBytes))
			}
		}
		for _, ch := range slices.Sorted(maps.Keys(cp.versions)) {
			src := cp.versions[ch]
			b, has := cp.values[ch]
			if parent != nil {
				if pv, ok := parent.cp.versions[ch]; ok && pv == src {
					pb, pHas := parent.cp.values[ch]
					if pHas == has && (!has || sameBlob(pb, b)) {
						d.versions[ch] = parent.versions[ch]
						continue
					}
				}
			}
			// The engine keys values by (channel, version): a version the
			// namespace used already for another value (LangGraph.js counts
			// versions per branch, so a fork reuses them) gets a suffix.
			for k := 0; ; k++ {
				ver := src
				if k > 0 {
					// A number stays a number that sorts between src and
					// the next integer (LangGraph.js compares versions with
					// >): "3.11", "3.21", ..., "3.101", never a trailing 0.
					ver = src + "." + strconv.Itoa(k)
					if cp.numeric[ch] {
						ver += "1"
					}
					renamed[ch] = true
				}
				c, ok := claimed[[2]string{ch, ver}]
				if ok && c.has == has && (!has || sameBlob(c.blob, b)) {
					d.versions[ch] = ver
					break
				}
				if ok {
					continue
				}
				claimed[[2]string{ch, ver}] = claim{has, b}
				d.versions[ch] = ver
				if has {
					// A new version without a value stores nothing; that no
					// other checkpoint's value has it is the claim's to say.
					newVersions[ch] = ver
					out.ChannelValues[ch] = b
					pl.rep.Blobs[b.Type]++
				}
				break
			}
		}
		out.ChannelVersions = d.versions
		if len(renamed) > 0 {
			out.VersionsSeen = mapSeen(d, cp.seen, renamed)
		}
		// The parent's writes, sealed by this put.
		if parent != nil && !parent.sealed {
			if err := pl.storeByteWrites(ns, parentID, parent.pending); err != nil {
				return err
			}
			parent.sealed, parent.pending = true, nil
		}
		pl.ops = append(pl.ops, op{put: &putOp{cfg: engine.Config{ThreadID: pl.thread, CheckpointNS: ns, CheckpointID: parentID},
			cp: out, md: engine.Metadata(cp.metadata), nv: newVersions}})
		d.pending = t.writes[cpKey{ns, cp.id}]
		done[cp.id] = d
		if want != nil {
			want[cpKey{ns, cp.id}] = &expected{versions: d.versions, seen: out.VersionsSeen, parent: parentID}
		}
		pl.rep.Checkpoints++
	}
	for _, cp := range cps {
		if d := done[cp.id]; !d.sealed && len(d.pending) > 0 {
			if err := pl.storeByteWrites(ns, cp.id, d.pending); err != nil {
				return err
			}
		}
	}
	return nil
}

// mapSeen renames the versions a checkpoint's nodes have seen as the
// versions they name were renamed: a seen version of a renamed channel is
// the one the checkpoint or its nearest ancestor gave it.
func mapSeen(d *bytePlanned, seen map[string]map[string]string, renamed map[string]bool) map[string]map[string]string {
	var out map[string]map[string]string
	for node, m := range seen {
		for ch, v := range m {
			if !renamed[ch] {
				continue
			}
			for a := d; a != nil; a = a.parent {
				if a.cp.versions[ch] != v {
					continue
				}
				if w := a.versions[ch]; w != v {
					if out == nil {
						out = make(map[string]map[string]string, len(seen))
						for n, mm := range seen {
							out[n] = maps.Clone(mm)
						}
					}
					out[node][ch] = w
				}
				break
			}
		}
	}
	if out == nil {
		return seen
	}
	return out
}

// migrateSends moves the pending_sends of a checkpoint before format 4
// into the TASKS channel, as LangGraph's Pregel._migrate_checkpoint does on
// read: the list of sends as the value, the channels' greatest version as
// its version.
func migrateSends(cp *byteCheckpoint) {
	if cp.v >= 4 || len(cp.sends) == 0 {
		return
	}
	cp.values[tasksChannel] = joinList(cp.docType, cp.sends)
	cp.versions[tasksChannel] = maxVersion(cp)
	cp.sends = nil
}

func maxVersion(cp *byteCheckpoint) string {
	best, bestNum := "", 0.0
	allNum := len(cp.numeric) == len(cp.versions)
	for ch, v := range cp.versions {
		if allNum {
			n, err := strconv.ParseFloat(v, 64)
			if err == nil && (best == "" || n > bestNum) {
				best, bestNum = v, n
			}
			_ = ch
			continue
		}
		if v > best {
			best = v
		}
	}
	if best == "" {
		if cp.docType == "json" {
			return "1"
		}
		return "00000000000000000000000000000001.0.0"
	}
	return best
}

func sameBlob(a, b codec.Blob) bool { return a.Type == b.Type && bytes.Equal(a.Data, b.Data) }

// storeByteWrites stores a checkpoint's writes as they are.
func (pl *planner) storeByteWrites(ns, cpID string, bws []*byteWrite) error {
	ws := make([]*write, len(bws))
	for i, w := range bws {
		ws[i] = &write{task: w.task, path: w.path, idx: w.idx, channel: w.channel, value: w.value, why: w.value.Type}
	}
	return pl.storeWrites(ns, cpID, ws)
}

// checkByteNames is checkNames for the protocol's form.
func checkByteNames(cp *byteCheckpoint, ws []*byteWrite) error {
	c := &checkpoint{id: cp.id, parent: cp.parent, versions: cp.versions, values: map[string]any{}}
	for ch := range cp.values {
		c.values[ch] = nil
	}
	w := make([]*write, len(ws))
	for i, x := range ws {
		w[i] = &write{task: x.task, path: x.path, channel: x.channel}
	}
	return checkNames(c, cp.ns, w)
}

// compareProtocol is Compare for an import into the protocol's form: every
// checkpoint's parent, fields, metadata, channel values (type and bytes)
// and pending writes (task, path, channel, type and bytes, in order) as the
// engine returns them (DB.GetTuple), against the source's.
func compareProtocol(ctx context.Context, db *engine.DB, src string, o Options) (checked int, diffs []Diff, err error) {
	s, threads, err := openThreads(ctx, src)
	if err != nil {
		return 0, nil, err
	}
	defer s.close()
	for _, th := range threads {
		if threadProblem(th) != nil {
			continue // not imported (importThreads)
		}
		t, err := s.readBytes(ctx, th, o.Key)
		var want map[cpKey]*expected
		if err == nil {
			// Planning migrates old checkpoints' sends and renames reused
			// versions, as the import did.
			_, want, err = planBytes(t, true, o.OrphansAsRoots)
		}
		var p *Problem
		if errors.As(err, &p) {
			continue
		}
		if err != nil {
			return checked, diffs, err
		}
		for _, cp := range t.cps {
			if err := ctx.Err(); err != nil {
				return checked, diffs, err
			}
			checked++
			diff := func(format string, args ...any) {
				diffs = append(diffs, Diff{ThreadID: th, CheckpointNS: cp.ns, CheckpointID: cp.id, Message: fmt.Sprintf(format, args...)})
			}
			w := want[cpKey{cp.ns, cp.id}]
			tu, err := db.GetTuple(ctx, engine.Config{ThreadID: th, CheckpointNS: cp.ns, CheckpointID: cp.id})
			if err != nil {
				diff("cannot be read: %v", err)
				continue
			}
			parent := ""
			if tu.ParentConfig != nil {
				parent = tu.ParentConfig.CheckpointID
			}
			got := tu.Checkpoint
			switch {
			case parent != w.parent:
				diff("parent %q, the source's is %q", parent, w.parent)
			case got.V != cp.v || got.TS != cp.ts:
				diff("format %d at %q, the source's is %d at %q", got.V, got.TS, cp.v, cp.ts)
			case !maps.Equal(got.ChannelVersions, w.versions):
				diff("channel versions %v, the source's %v", got.ChannelVersions, cp.versions)
			case !seenEqual(got.VersionsSeen, w.seen):
				diff("versions seen %v, the source's %v", got.VersionsSeen, cp.seen)
			case !slices.Equal(got.UpdatedChannels, cp.updated) || (got.UpdatedChannels == nil) != (cp.updated == nil):
				diff("updated channels %v, the source's %v", got.UpdatedChannels, cp.updated)
			}
			a, err1 := json.Marshal(cp.metadata)
			b, err2 := json.Marshal(map[string]any(tu.Metadata))
			if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
				diff("metadata %s, the source's %s", clip(b), clip(a))
			}
			for _, ch := range slices.Sorted(maps.Keys(cp.values)) {
				g, ok := got.ChannelValues[ch]
				if sv := cp.values[ch]; !ok || !sameBlob(g, sv) {
					diff("channel %q: %s of %d bytes, the source's %s of %d bytes", ch, g.Type, len(g.Data), sv.Type, len(sv.Data))
				}
			}
			for ch := range got.ChannelValues {
				if _, ok := cp.values[ch]; !ok {
					diff("channel %q holds a value the source's checkpoint has not", ch)
				}
			}
			sw := t.writes[cpKey{cp.ns, cp.id}]
			gw := tu.PendingWrites
			if len(gw) != len(sw) {
				diff("%d pending writes, the source's %d", len(gw), len(sw))
				continue
			}
			for i, x := range sw {
				y := gw[i]
				if x.task != y.TaskID || x.path != y.TaskPath || x.channel != y.Channel || !sameBlob(x.value, y.Value) {
					diff("pending write %d: task %q path %q channel %q %s of %d bytes, the source's task %q path %q channel %q %s of %d bytes",
						i, y.TaskID, y.TaskPath, y.Channel, y.Value.Type, len(y.Value.Data), x.task, x.path, x.channel, x.value.Type, len(x.value.Data))
					break
				}
			}
		}
	}
	return checked, diffs, nil
}

func seenEqual(a, b map[string]map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, m := range a {
		n, ok := b[k]
		if !ok || !maps.Equal(m, n) {
			return false
		}
	}
	return true
}
