package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/internal/driver/sqlite"
)

// Import of LangGraph.js SqliteSaver files (@langchain/langgraph-checkpoint-sqlite).
//
// Such a file has two tables: checkpoints (every checkpoint with all its
// channel values, serialised by the "json" serde of JsonPlusSerializer) and
// writes (pending writes, "json", or "bytes" for raw byte values). The
// import writes each thread through the checkpoint protocol of this engine,
// keeping checkpoint ids, parents, namespaces, metadata and writes, and
// registers it as a thread of the thread API in the handle's mode:
//
//   - the message channels of the handle's Schema (by default "messages")
//     become lists of codec.Message and their writes MessageUpdates, so the
//     engine folds them: in delta mode only every K-th update stores the
//     list, the rest is rebuilt from the writes;
//   - every other channel is stored as the engine's msgpack of its decoded
//     JSON value, once per version;
//   - channel versions are kept where they are unique in the thread, and
//     suffixed with the checkpoint id where a fork reused one (LangGraph.js
//     counts versions per branch; the engine keys values by version);
//   - where the writes a checkpoint consumed do not rebuild its message
//     list (an updateState fork stores no writes; a resumed fork reuses
//     its sibling's), a write Overwrite with the checkpoint's list is added
//     under the parent, so every checkpoint replays exactly (task id
//     "~agentstate-import"). Messages of writes that had no id (the reducer
//     gave them one) get the id the state shows.
//
// After the import every checkpoint's state equals the source's, decoded
// the same way (CompareLangGraph checks it), and the file verifies. Python's
// SqliteSaver ("msgpack" serde with ext types) is not covered: its rows are
// refused with ErrUnsupportedSource.

// ErrUnsupportedSource: the file to import is not a LangGraph.js SqliteSaver
// file, or holds values in a serde format this build does not read.
var ErrUnsupportedSource = errors.New("agentstate: unsupported import source")

// importTaskID names the writes the import adds (see above).
const importTaskID = "~agentstate-import"

// LangGraphOptions govern ImportLangGraph.
type LangGraphOptions struct {
	// Progress, if not nil, is called after each checkpoint with the number
	// imported and the total.
	Progress func(done, total int)
}

// LangGraphReport says what ImportLangGraph wrote.
type LangGraphReport struct {
	Source      string `json:"source"`
	Mode        string `json:"mode"`
	Threads     int    `json:"threads"`
	Namespaces  int    `json:"namespaces"`
	Checkpoints int    `json:"checkpoints"`
	Writes      int    `json:"writes"`
	// Snapshots counts stored message lists; Overwrites the writes added so
	// that a checkpoint replays exactly; IDsFilled the messages of writes
	// that took their id from the state.
	Snapshots  int `json:"snapshots"`
	Overwrites int `json:"overwrites"`
	IDsFilled  int `json:"ids_filled"`
	// ParentsMissing counts checkpoints whose parent is not in the source;
	// they are imported as roots.
	ParentsMissing int `json:"parents_missing"`
	// Dropped counts LangChain message fields that codec.Message has no
	// place for and that held something ("ToolMessage.artifact"), by name.
	Dropped map[string]int `json:"dropped"`
}

// lgSource is an open LangGraph file.
type lgSource struct {
	path string
	c    *sqlite.Conn
}

func openLangGraph(path string) (*lgSource, error) {
	c, err := sqlite.Open(path, sqlite.Options{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnsupportedSource, path, err)
	}
	s := &lgSource{path: path, c: c}
	for _, want := range []struct{ table, cols string }{
		{"checkpoints", "thread_id checkpoint_ns checkpoint_id parent_checkpoint_id type checkpoint metadata"},
		{"writes", "thread_id checkpoint_ns checkpoint_id task_id idx channel type value"},
	} {
		have := map[string]bool{}
		err := s.query(`SELECT name FROM pragma_table_info(?)`, []any{want.table}, func(st row) error {
			have[st.Text(0)] = true
			return nil
		})
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("%w: %s: %v", ErrUnsupportedSource, path, err)
		}
		for _, col := range strings.Fields(want.cols) {
			if !have[col] {
				c.Close()
				return nil, fmt.Errorf("%w: %s is not a LangGraph SqliteSaver file: table %s has no column %s", ErrUnsupportedSource, path, want.table, col)
			}
		}
	}
	return s, nil
}

func (s *lgSource) close() error { return s.c.Close() }

func (s *lgSource) query(q string, args []any, fn func(st row) error) error {
	return s.c.Query(q, args, fn)
}

// lgCheckpoint is one source checkpoint, decoded.
type lgCheckpoint struct {
	ns, id, parent string
	v              int
	ts             string
	values         map[string]any    // channel -> decoded value (messages as []codec.Message)
	versions       map[string]string // channel -> source version
	seen           map[string]map[string]string
	updated        []string
	hasUpdated     bool
	metadata       map[string]any
}

// lgWrite is one source write, converted.
type lgWrite struct {
	task    string
	idx     int
	channel string
	update  *channels.MessageUpdate // message channels
	value   any                     // other channels
	raw     []byte                  // "bytes" values
	isRaw   bool
}

func (s *lgSource) threads() ([]string, error) {
	var out []string
	err := s.query(`SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id`, nil, func(st row) error {
		out = append(out, st.Text(0))
		return nil
	})
	return out, err
}

func (s *lgSource) count() (int, error) {
	n := 0
	err := s.query(`SELECT count(*) FROM checkpoints`, nil, func(st row) error {
		n = int(st.Int64(0))
		return nil
	})
	return n, err
}

// messageChannels are the schema channels the import folds.
func (db *DB) messageChannels() map[string]bool {
	out := map[string]bool{}
	for name, ch := range db.opts.Schema {
		if _, ok := ch.(channels.Messages); ok {
			out[name] = true
		}
	}
	return out
}

// checkpoints reads one thread's checkpoints, all namespaces, in (ns, id)
// order.
func (s *lgSource) checkpoints(thread string, msgChannels map[string]bool, drops map[string]int) ([]*lgCheckpoint, error) {
	var out []*lgCheckpoint
	err := s.query(`SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints
		WHERE thread_id = ? ORDER BY checkpoint_ns, checkpoint_id`, []any{thread}, func(st row) error {
		cp := &lgCheckpoint{ns: st.Text(0), id: st.Text(1), parent: st.Text(2)}
		where := fmt.Sprintf("%s: thread %q checkpoint %q", s.path, thread, cp.id)
		if typ := st.Text(3); typ != "json" && typ != "" {
			return fmt.Errorf("%w: %s is serialised as %q; only LangGraph.js's \"json\" serde is covered (Python's msgpack serde is not)", ErrUnsupportedSource, where, typ)
		}
		raw, err := decodeJSONValue(st.Blob(4))
		if err != nil {
			return fmt.Errorf("%w: %s: checkpoint is not JSON: %v", ErrUnsupportedSource, where, err)
		}
		doc, ok := raw.(map[string]any)
		if !ok {
			return fmt.Errorf("%w: %s: checkpoint is not a JSON object", ErrUnsupportedSource, where)
		}
		if v, ok := doc["v"].(int64); ok {
			cp.v = int(v)
		}
		cp.ts, _ = doc["ts"].(string)
		cp.versions = map[string]string{}
		if cv, ok := doc["channel_versions"].(map[string]any); ok {
			for ch, v := range cv {
				cp.versions[ch] = versionString(v)
			}
		}
		cp.seen = map[string]map[string]string{}
		if vs, ok := doc["versions_seen"].(map[string]any); ok {
			for node, m := range vs {
				cp.seen[node] = map[string]string{}
				if mm, ok := m.(map[string]any); ok {
					for ch, v := range mm {
						cp.seen[node][ch] = versionString(v)
					}
				}
			}
		}
		if uc, ok := doc["updated_channels"].([]any); ok {
			cp.hasUpdated = true
			cp.updated = []string{}
			for _, x := range uc {
				if s, ok := x.(string); ok {
					cp.updated = append(cp.updated, s)
				}
			}
			sort.Strings(cp.updated)
		}
		cp.values = map[string]any{}
		if cvals, ok := doc["channel_values"].(map[string]any); ok {
			for ch, v := range cvals {
				if msgChannels[ch] {
					ms, err := lcMessageList(v, drops)
					if err != nil {
						return fmt.Errorf("%w: %s: channel %q: %v", ErrUnsupportedSource, where, ch, err)
					}
					cp.values[ch] = ms
					continue
				}
				cp.values[ch] = v
			}
		}
		md, err := decodeJSONValue(st.Blob(5))
		if err != nil {
			return fmt.Errorf("%w: %s: metadata is not JSON: %v", ErrUnsupportedSource, where, err)
		}
		cp.metadata, _ = md.(map[string]any)
		if cp.metadata == nil {
			cp.metadata = map[string]any{}
		}
		out = append(out, cp)
		return nil
	})
	return out, err
}

func versionString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// writes reads the writes stored under each checkpoint of one thread and
// namespace, in (task_id, idx) order.
func (s *lgSource) writes(thread string, msgChannels map[string]bool, drops map[string]int) (map[nsKey][]*lgWrite, error) {
	out := map[nsKey][]*lgWrite{}
	err := s.query(`SELECT checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value FROM writes
		WHERE thread_id = ? ORDER BY checkpoint_ns, checkpoint_id, task_id, idx`, []any{thread}, func(st row) error {
		k := nsKey{st.Text(0), st.Text(1)}
		w := &lgWrite{task: st.Text(2), idx: int(st.Int64(3)), channel: st.Text(4)}
		where := fmt.Sprintf("%s: thread %q checkpoint %q: write of task %q idx %d to %q", s.path, thread, k.id, w.task, w.idx, w.channel)
		data := st.Blob(6)
		switch typ := st.Text(5); typ {
		case "bytes":
			if msgChannels[w.channel] {
				return fmt.Errorf("%w: %s: raw bytes written to a message channel", ErrUnsupportedSource, where)
			}
			w.isRaw, w.raw = true, copyBytes(data)
		case "json", "":
			v, err := decodeJSONValue(data)
			if err != nil {
				return fmt.Errorf("%w: %s: not JSON: %v", ErrUnsupportedSource, where, err)
			}
			if msgChannels[w.channel] {
				u, err := lcUpdate(v, drops)
				if err != nil {
					return fmt.Errorf("%w: %s: %v", ErrUnsupportedSource, where, err)
				}
				w.update = &u
			} else {
				w.value = v
			}
		default:
			return fmt.Errorf("%w: %s is serialised as %q; only LangGraph.js's \"json\" and \"bytes\" are covered", ErrUnsupportedSource, where, typ)
		}
		out[k] = append(out[k], w)
		return nil
	})
	return out, err
}

// ImportLangGraph copies every thread of the LangGraph.js SqliteSaver file
// at src into db, in db's channel mode, in one transaction (see the comment
// at the top of this file for how). A thread id already present in db is
// refused with ErrConflict; a source it cannot read with
// ErrUnsupportedSource naming the row.
func (db *DB) ImportLangGraph(ctx context.Context, src string, o LangGraphOptions) (LangGraphReport, error) {
	s, err := openLangGraph(src)
	if err != nil {
		return LangGraphReport{}, err
	}
	defer s.close()
	threads, err := s.threads()
	if err != nil {
		return LangGraphReport{}, fmt.Errorf("%w: %s: %v", ErrUnsupportedSource, src, err)
	}
	total, err := s.count()
	if err != nil {
		return LangGraphReport{}, fmt.Errorf("%w: %s: %v", ErrUnsupportedSource, src, err)
	}
	msgChannels := db.messageChannels()
	var rep LangGraphReport
	err = db.write(ctx, func(c *conn) error {
		rep = LangGraphReport{Source: src, Mode: db.opts.Mode, Dropped: map[string]int{}}
		if err := db.checkFileModeNow(c); err != nil {
			return err
		}
		done := 0
		for _, th := range threads {
			if ok, err := c.queryRow(sqlThreadExists, []any{th}, nil); err != nil {
				return err
			} else if ok {
				return fmt.Errorf("%w: thread %q of %s already exists in %s", ErrConflict, th, src, db.path)
			}
			cps, err := s.checkpoints(th, msgChannels, rep.Dropped)
			if err != nil {
				return err
			}
			ws, err := s.writes(th, msgChannels, rep.Dropped)
			if err != nil {
				return err
			}
			if err := c.exec(sqlSetThreadMod, th, db.opts.Mode, db.opts.SnapshotEvery); err != nil {
				return err
			}
			imp := &lgImport{db: db, c: c, thread: th, msg: msgChannels, writes: ws, rep: &rep}
			byNS := map[string][]*lgCheckpoint{}
			var nss []string
			for _, cp := range cps {
				if _, ok := byNS[cp.ns]; !ok {
					nss = append(nss, cp.ns)
				}
				byNS[cp.ns] = append(byNS[cp.ns], cp)
			}
			for _, ns := range nss {
				if err := imp.namespace(ns, byNS[ns], func() {
					done++
					if o.Progress != nil {
						o.Progress(done, total)
					}
				}); err != nil {
					return fmt.Errorf("thread %q namespace %q: %w", th, ns, err)
				}
				rep.Namespaces++
			}
			rep.Threads++
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return nil
	})
	for _, th := range threads {
		db.purge(th)
	}
	if err != nil {
		return LangGraphReport{}, err
	}
	return rep, nil
}

// lgImport imports one thread.
type lgImport struct {
	db     *DB
	c      *conn
	thread string
	msg    map[string]bool
	writes map[nsKey][]*lgWrite
	rep    *LangGraphReport
}

// lgDone is an imported checkpoint: what the engine now reads for it.
type lgDone struct {
	versions map[string]string          // our channel versions
	src      map[string]string          // the source versions they came from
	walk     map[string][]codec.Message // message channels as the history walk sees them
	has      map[string]bool            // message channels with a value
	values   map[string]any             // the source's values (other channels)
	counters map[string]channels.Counter
	sealed   bool       // its writes were consumed by a child already
	pending  []*lgWrite // its writes, stored when its first child comes
}

func (imp *lgImport) namespace(ns string, cps []*lgCheckpoint, tick func()) error {
	done := map[string]*lgDone{}
	claimed := map[[2]string]bool{} // (channel, version) already used in this namespace
	mapVersion := func(ch, src, cpID string) string {
		if src == "" {
			src = "0"
		}
		if !claimed[[2]string{ch, src}] {
			claimed[[2]string{ch, src}] = true
			return src
		}
		v := src + "." + cpID
		claimed[[2]string{ch, v}] = true
		return v
	}
	cadence := channels.Cadence{K: imp.db.opts.SnapshotEvery}
	for _, cp := range cps {
		parent := done[cp.parent]
		parentID := cp.parent
		if cp.parent != "" && parent == nil {
			imp.rep.ParentsMissing++
			parentID = ""
		}
		d := &lgDone{versions: map[string]string{}, src: map[string]string{}, walk: map[string][]codec.Message{},
			has: map[string]bool{}, values: map[string]any{}, counters: map[string]channels.Counter{}}
		// The writes this checkpoint consumes: all of its parent's if it is
		// the parent's first child, none otherwise.
		var sealing []*lgWrite
		if parent != nil && !parent.sealed {
			sealing = parent.pending
		}
		cpOut := Checkpoint{V: cp.v, ID: cp.id, TS: cp.ts, ChannelValues: map[string]codec.Blob{}, ChannelVersions: map[string]string{},
			VersionsSeen: cp.seen, UpdatedChannels: cp.updated}
		if cp.hasUpdated && cpOut.UpdatedChannels == nil {
			cpOut.UpdatedChannels = []string{}
		}
		newVersions := map[string]string{}
		var synthetic []Write
		msgNames := slices.Sorted(maps.Keys(imp.msg))
		for _, ch := range msgNames {
			target, has := cp.values[ch].([]codec.Message)
			var walkIn []codec.Message
			var parentHas bool
			var parentSrc string
			var counter channels.Counter
			if parent != nil {
				walkIn, parentHas, parentSrc, counter = parent.walk[ch], parent.has[ch], parent.src[ch], parent.counters[ch]
			}
			var step []*lgWrite
			for _, w := range sealing {
				if w.channel == ch {
					step = append(step, w)
				}
			}
			replay, overwrite, err := imp.replay(walkIn, step, target, has)
			if err != nil {
				return fmt.Errorf("checkpoint %q channel %q: %w", cp.id, ch, err)
			}
			if has && !messagesSame(replay, target) {
				u := channels.MessageUpdate{Overwrite: true, Messages: target}
				data, err := u.Encode()
				if err != nil {
					return fmt.Errorf("checkpoint %q channel %q: %w", cp.id, ch, err)
				}
				if overwrite {
					return fmt.Errorf("checkpoint %q channel %q: its step already overwrites the list and does not rebuild it; the import cannot represent it", cp.id, ch)
				}
				synthetic = append(synthetic, Write{Channel: ch, Value: codec.Blob{Type: codec.TypeMsgpack, Data: data}})
				replay, overwrite = target, true
				imp.rep.Overwrites++
			}
			d.walk[ch] = replay
			if !has {
				continue
			}
			d.has[ch] = true
			srcVer := cp.versions[ch]
			d.src[ch] = srcVer
			changed := parent == nil || !parentHas || srcVer != parentSrc || len(step) > 0 || overwrite
			if !changed {
				d.versions[ch] = parent.versions[ch]
				d.counters[ch] = counter
				continue
			}
			ver := mapVersion(ch, srcVer, cp.id)
			d.versions[ch] = ver
			newVersions[ch] = ver
			store := true
			if imp.db.opts.Mode == ModeDelta {
				var next channels.Counter
				store, next = cadence.Next(counter, true, overwrite, parent == nil || !parentHas)
				d.counters[ch] = next
			}
			if store {
				data, err := imp.db.compress(target)
				if err != nil {
					return encodeError(fmt.Sprintf("checkpoint %q channel %q", cp.id, ch), "MaxListBytes", MaxListBytes, err)
				}
				cpOut.ChannelValues[ch] = codec.Blob{Type: codec.TypeMsgpack, Data: data}
				imp.rep.Snapshots++
			}
		}
		// Other channels: one stored value per distinct version.
		others := map[string]bool{}
		for ch := range cp.values {
			if !imp.msg[ch] {
				others[ch] = true
			}
		}
		for ch := range cp.versions {
			if !imp.msg[ch] {
				others[ch] = true
			}
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
				if pver, ok := parent.versions[ch]; ok && pHas == has && parent.src[ch] == srcVer && srcVer != "" && jsonSame(pv, v) {
					d.versions[ch] = pver
					continue
				}
			}
			ver := mapVersion(ch, srcVer, cp.id)
			d.versions[ch] = ver
			newVersions[ch] = ver
			if has {
				data, err := codec.MarshalMax(v, MaxListBytes)
				if err != nil {
					return encodeError(fmt.Sprintf("checkpoint %q channel %q", cp.id, ch), "MaxListBytes", MaxListBytes, err)
				}
				cpOut.ChannelValues[ch] = codec.Blob{Type: codec.TypeMsgpack, Data: data}
			}
		}
		cpOut.ChannelVersions = d.versions
		md := maps.Clone(cp.metadata)
		if imp.db.opts.Mode == ModeDelta {
			cs := map[string]channels.Counter{}
			for ch := range imp.msg {
				cs[ch] = d.counters[ch]
			}
			md = channels.SetCounters(md, cs)
		}
		// Store the parent's writes (sealed by this put) and any added ones.
		if parent != nil && !parent.sealed {
			if err := imp.storeWrites(ns, parentID, parent.pending); err != nil {
				return err
			}
			parent.sealed, parent.pending = true, nil
		}
		if len(synthetic) > 0 {
			for i, w := range synthetic {
				if err := imp.c.exec(sqlInsertWriteFirst, imp.thread, ns, parentID, importTaskID, i, w.Channel, w.Value.Type, w.Value.Data, "", nil); err != nil {
					return err
				}
			}
		}
		if parentID == "" && len(synthetic) > 0 {
			return fmt.Errorf("checkpoint %q: internal: an added write without a parent", cp.id)
		}
		p, err := preparePut(Config{ThreadID: imp.thread, CheckpointNS: ns, CheckpointID: parentID}, cpOut, Metadata(md), newVersions)
		if err != nil {
			return fmt.Errorf("checkpoint %q: %w", cp.id, err)
		}
		if err := p.run(imp.c); err != nil {
			return fmt.Errorf("checkpoint %q: %w", cp.id, err)
		}
		d.pending = imp.writes[nsKey{ns, cp.id}]
		done[cp.id] = d
		imp.rep.Checkpoints++
		tick()
	}
	// Writes of checkpoints without children stay pending.
	for _, cp := range cps {
		if d := done[cp.id]; !d.sealed && len(d.pending) > 0 {
			if err := imp.storeWrites(ns, cp.id, d.pending); err != nil {
				return err
			}
		}
	}
	return nil
}

// placeholderPrefix marks ids given to id-less messages of writes while
// matching them with the state's.
const placeholderPrefix = "\x00agentstate-import-"

// replay folds one step's message writes onto the list the walk gives the
// parent, giving id-less messages the ids the target state shows. It
// reports whether the step holds an Overwrite.
func (imp *lgImport) replay(walkIn []codec.Message, step []*lgWrite, target []codec.Message, has bool) ([]codec.Message, bool, error) {
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
			tw[i] = channels.TaskWrite{TaskID: w.task, Idx: w.idx, Value: *w.update}
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
					imp.rep.IDsFilled++
				} else {
					m.ID = fmt.Sprintf("%s-%d-%s", w.task, w.idx, strings.TrimPrefix(m.ID, placeholderPrefix))
				}
			}
		}
		out, err = fold()
	}
	if err != nil {
		// Writes that do not apply are still stored; the added Overwrite
		// makes the step replay.
		return nil, overwrite, nil
	}
	return out, overwrite, nil
}

// storeWrites inserts converted writes under checkpoint cpID. Message
// writes still holding a placeholder id (a leaf's writes) get a stable one.
func (imp *lgImport) storeWrites(ns, cpID string, ws []*lgWrite) error {
	for _, w := range ws {
		var typ string
		var data []byte
		switch {
		case w.isRaw:
			typ, data = "bytes", nonNil(w.raw)
			if len(data) > MaxValueBytes {
				return fmt.Errorf("%w: write of task %q to %q is %d bytes, more than MaxValueBytes (%d)", ErrTooLarge, w.task, w.channel, len(data), MaxValueBytes)
			}
		case w.update != nil:
			for i := range w.update.Messages {
				m := &w.update.Messages[i]
				if strings.HasPrefix(m.ID, placeholderPrefix) || (m.ID == "" && m.Type != codec.Remove) {
					m.ID = fmt.Sprintf("%s-%d-%d", w.task, w.idx, i)
				}
			}
			b, err := codec.MarshalMax(*w.update, MaxValueBytes)
			if err != nil {
				return encodeError(fmt.Sprintf("write of task %q to %q", w.task, w.channel), "MaxValueBytes", MaxValueBytes, err)
			}
			typ, data = codec.TypeMsgpack, b
		default:
			b, err := codec.MarshalMax(w.value, MaxValueBytes)
			if err != nil {
				return encodeError(fmt.Sprintf("write of task %q to %q", w.task, w.channel), "MaxValueBytes", MaxValueBytes, err)
			}
			typ, data = codec.TypeMsgpack, b
		}
		if err := imp.c.exec(sqlInsertWriteFirst, imp.thread, ns, cpID, w.task, w.idx, w.channel, typ, data, "", nil); err != nil {
			return err
		}
		imp.rep.Writes++
	}
	return nil
}

// messagesSame compares two lists as the engine stores them.
func messagesSame(a, b []codec.Message) bool {
	if len(a) != len(b) {
		return false
	}
	x, err1 := codec.Marshal(a)
	y, err2 := codec.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

func jsonSame(a, b any) bool {
	x, err1 := codec.Marshal(a)
	y, err2 := codec.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// lcMessageList converts a message channel's value: a list of messages.
func lcMessageList(v any, drops map[string]int) ([]codec.Message, error) {
	list, ok := v.([]any)
	if !ok {
		if v == nil {
			return []codec.Message{}, nil
		}
		return nil, fmt.Errorf("value is %T, not a list of messages", v)
	}
	out := make([]codec.Message, 0, len(list))
	for i, x := range list {
		m, err := lcMessage(x, drops)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// lcUpdate converts a write to a message channel: one message-like, a list
// of them, or an Overwrite of a list ({"__overwrite__": [...]}).
func lcUpdate(v any, drops map[string]int) (channels.MessageUpdate, error) {
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		if inner, ok := m["__overwrite__"]; ok {
			ms, err := lcMessageList(inner, drops)
			return channels.MessageUpdate{Overwrite: true, Messages: ms}, err
		}
	}
	if list, ok := v.([]any); ok && !isMessageTuple(list) {
		ms, err := lcMessageList(list, drops)
		return channels.MessageUpdate{Messages: ms}, err
	}
	m, err := lcMessage(v, drops)
	return channels.MessageUpdate{Messages: []codec.Message{m}}, err
}

// isMessageTuple recognises a [role, content] pair: a known role and a
// string (a list of two plain strings is two human messages otherwise).
func isMessageTuple(l []any) bool {
	if len(l) != 2 {
		return false
	}
	role, a := l[0].(string)
	_, b := l[1].(string)
	_, known := lcRoles[role]
	return a && b && known
}

var lcClasses = map[string]string{
	"HumanMessage": codec.Human, "HumanMessageChunk": codec.Human,
	"AIMessage": codec.AI, "AIMessageChunk": codec.AI,
	"SystemMessage": codec.System, "SystemMessageChunk": codec.System,
	"ToolMessage": codec.Tool, "ToolMessageChunk": codec.Tool,
	"RemoveMessage": codec.Remove,
}

var lcRoles = map[string]string{
	"human": codec.Human, "user": codec.Human,
	"ai": codec.AI, "assistant": codec.AI,
	"system": codec.System, "developer": codec.System,
	"tool": codec.Tool, "remove": codec.Remove,
}

// lcMessage converts one LangChain message: a serialised constructor
// ({"lc":1,"type":"constructor","id":[...,"HumanMessage"],"kwargs":{...}}),
// a plain object with "role" or "type", a [role, content] pair, or a string
// (a human message). Fields codec.Message cannot hold are counted in drops
// when they hold something.
func lcMessage(v any, drops map[string]int) (codec.Message, error) {
	switch x := v.(type) {
	case string:
		return codec.Message{Type: codec.Human, Content: x}, nil
	case []any:
		if isMessageTuple(x) {
			role := x[0].(string)
			t, ok := lcRoles[role]
			if !ok {
				return codec.Message{}, fmt.Errorf("unknown message role %q", role)
			}
			return codec.Message{Type: t, Content: x[1]}, nil
		}
		return codec.Message{}, fmt.Errorf("a list is not a message")
	case map[string]any:
		if lc, _ := x["lc"].(int64); lc == 1 && x["type"] == "constructor" {
			ids, _ := x["id"].([]any)
			class := ""
			if len(ids) > 0 {
				class, _ = ids[len(ids)-1].(string)
			}
			t, ok := lcClasses[class]
			if !ok {
				return codec.Message{}, fmt.Errorf("LangChain class %q is not a message type agentstate stores", class)
			}
			kw, _ := x["kwargs"].(map[string]any)
			return messageFields(class, t, kw, drops)
		}
		role, _ := x["role"].(string)
		if role == "" {
			role, _ = x["type"].(string)
		}
		t, ok := lcRoles[role]
		if !ok {
			return codec.Message{}, fmt.Errorf("object with role/type %q is not a message", role)
		}
		rest := maps.Clone(x)
		delete(rest, "role")
		delete(rest, "type")
		return messageFields(role, t, rest, drops)
	}
	return codec.Message{}, fmt.Errorf("%T is not a message", v)
}

func messageFields(class, typ string, kw map[string]any, drops map[string]int) (codec.Message, error) {
	m := codec.Message{Type: typ}
	for k, v := range kw {
		if isUndefined(v) {
			continue
		}
		switch k {
		case "id":
			m.ID, _ = v.(string)
		case "content":
			if typ == codec.Remove {
				continue
			}
			m.Content = v
		case "name":
			m.Name, _ = v.(string)
		case "tool_call_id":
			m.ToolCallID, _ = v.(string)
		case "additional_kwargs":
			if mm, ok := v.(map[string]any); ok && len(mm) > 0 {
				m.AdditionalKwargs = mm
			}
		case "response_metadata":
			if mm, ok := v.(map[string]any); ok && len(mm) > 0 {
				m.ResponseMetadata = mm
			}
		case "tool_calls":
			list, _ := v.([]any)
			for _, x := range list {
				tc, _ := x.(map[string]any)
				call := codec.ToolCall{}
				for tk, tv := range tc {
					switch tk {
					case "id":
						call.ID, _ = tv.(string)
					case "name":
						call.Name, _ = tv.(string)
					case "args":
						if a, ok := tv.(map[string]any); ok && len(a) > 0 {
							call.Args = a
						}
					case "type":
						if tv != "tool_call" {
							drops[class+".tool_calls.type"]++
						}
					default:
						if !isEmptyValue(tv) {
							drops[class+".tool_calls."+tk]++
						}
					}
				}
				m.ToolCalls = append(m.ToolCalls, call)
			}
		case "usage_metadata":
			u, _ := v.(map[string]any)
			if u == nil {
				continue
			}
			um := &codec.UsageMetadata{}
			for uk, uv := range u {
				n, _ := uv.(int64)
				switch uk {
				case "input_tokens":
					um.InputTokens = n
				case "output_tokens":
					um.OutputTokens = n
				case "total_tokens":
					um.TotalTokens = n
				default:
					if !isEmptyValue(uv) {
						drops[class+".usage_metadata."+uk]++
					}
				}
			}
			m.UsageMetadata = um
		case "status":
			if v != "success" {
				drops[class+".status"]++
			}
		default:
			if !isEmptyValue(v) {
				drops[class+"."+k]++
			}
		}
	}
	if err := m.Validate(); err != nil {
		return codec.Message{}, err
	}
	return m, nil
}

// isUndefined recognises JsonPlusSerializer's encoding of undefined.
func isUndefined(v any) bool {
	m, ok := v.(map[string]any)
	return ok && len(m) == 2 && m["lc"] == int64(2) && m["type"] == "undefined"
}

func isEmptyValue(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0 || isUndefined(x)
	}
	return false
}

// LangGraphDiff is one checkpoint whose state differs from the source's.
type LangGraphDiff struct {
	ThreadID     string `json:"thread_id"`
	CheckpointNS string `json:"checkpoint_ns"`
	CheckpointID string `json:"checkpoint_id"`
	Message      string `json:"message"`
}

// CompareLangGraph reads every checkpoint of the LangGraph.js file at src
// and the same checkpoint in db (ReadState), decodes the source values the
// way ImportLangGraph does, and lists the checkpoints whose states differ
// (as JSON) or are missing. It only reads.
func (db *DB) CompareLangGraph(ctx context.Context, src string) (checked int, diffs []LangGraphDiff, err error) {
	s, err := openLangGraph(src)
	if err != nil {
		return 0, nil, err
	}
	defer s.close()
	threads, err := s.threads()
	if err != nil {
		return 0, nil, err
	}
	msgChannels := db.messageChannels()
	for _, th := range threads {
		cps, err := s.checkpoints(th, msgChannels, map[string]int{})
		if err != nil {
			return checked, diffs, err
		}
		for _, cp := range cps {
			if err := ctx.Err(); err != nil {
				return checked, diffs, err
			}
			checked++
			diff := func(format string, args ...any) {
				diffs = append(diffs, LangGraphDiff{ThreadID: th, CheckpointNS: cp.ns, CheckpointID: cp.id, Message: fmt.Sprintf(format, args...)})
			}
			view, err := db.ReadState(ctx, Config{ThreadID: th, CheckpointNS: cp.ns, CheckpointID: cp.id})
			if err != nil {
				diff("cannot be read: %v", err)
				continue
			}
			want, err1 := json.Marshal(cp.values)
			got, err2 := json.Marshal(view.Values)
			if err1 != nil || err2 != nil {
				diff("cannot be compared: %v %v", err1, err2)
				continue
			}
			if !bytes.Equal(want, got) {
				diff("state differs: source %s, imported %s", clip(want), clip(got))
			}
		}
	}
	return checked, diffs, nil
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}
