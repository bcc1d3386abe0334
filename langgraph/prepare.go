package langgraph

import (
	"fmt"
	"maps"
	"slices"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
)

// Preparing a thread turns what a source holds into the values the import
// writes and the comparison checks: every checkpoint's state as LangGraph
// reads it (DeltaChannels rebuilt), message channels as codec.Message
// lists, message writes as channels.MessageUpdate, everything else as an
// engine value (codec's types) or, when the engine's values cannot hold it,
// a codec.Blob of the source's bytes and serde type.

type thread struct {
	id         string
	namespaces []*namespace
	// deltas names the DeltaChannels rebuilt, "namespace\x00channel" ->
	// reducer.
	deltas map[string]Reducer
	// dropped counts the message fields dropped (see drops).
	dropped map[string]int
	// orphans counts writes of checkpoints the source does not hold.
	orphans int
}

type namespace struct {
	ns     string
	cps    []*checkpoint
	writes map[string][]*write // by checkpoint id, in (task_path, task_id, idx) order
}

type checkpoint struct {
	id, parent string
	v          int
	ts         string
	// values: message channels as []codec.Message, others as an engine
	// value or a codec.Blob.
	values   map[string]any
	why      map[string]string // channel -> why its value is a blob
	versions map[string]string
	seen     map[string]map[string]string
	updated  []string
	metadata map[string]any
}

type write struct {
	task, path string
	idx        int
	channel    string
	update     *channels.MessageUpdate // message channels
	value      any                     // other channels: an engine value or a codec.Blob
	why        string                  // why value is a blob
	raw        any                     // the source's value
}

// preparer holds what preparing needs across threads.
type preparer struct {
	msg      map[string]bool    // the message channels of the destination's Schema
	reducers map[string]Reducer // Options.DeltaReducers
	drops    *drops
	memo     map[string]memoMessage // Python messages by their bytes
}

type memoMessage struct {
	m       codec.Message
	dropped []string
}

// drops counts dropped message fields once per message of a thread (a
// message repeats in every checkpoint of a LangGraph file).
type drops struct {
	counts map[string]int
	seen   map[[3]string]bool // thread, message id, field
	thread string
}

func (d *drops) add(id string, fields []string) {
	for _, f := range fields {
		k := [3]string{d.thread, id, f}
		if id != "" && d.seen[k] {
			continue
		}
		d.seen[k] = true
		d.counts[f]++
	}
}

// message converts one message (messages.go), through the memo for Python
// messages.
func (p *preparer) message(v any) (codec.Message, error) {
	raw, isRaw := v.(*pyRaw)
	if isRaw {
		if e, ok := p.memo[string(raw.data)]; ok {
			p.drops.add(e.m.ID, e.dropped)
			return e.m, nil
		}
	}
	local := map[string]int{}
	m, err := message(v, local)
	if err != nil {
		return m, err
	}
	dropped := slices.Sorted(maps.Keys(local))
	p.drops.add(m.ID, dropped)
	if isRaw {
		if len(p.memo) > 1<<16 {
			clear(p.memo)
		}
		p.memo[string(raw.data)] = memoMessage{m, dropped}
	}
	return m, nil
}

// messageList converts a message channel's value: a list of messages.
func (p *preparer) messageList(v any) ([]codec.Message, error) {
	if v == nil {
		return []codec.Message{}, nil
	}
	list, ok := listItems(v)
	if !ok {
		return nil, fmt.Errorf("value is %s, not a list of messages", describe(v))
	}
	out := make([]codec.Message, 0, len(list))
	for i, x := range list {
		m, err := p.message(x)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// messageUpdate converts a write to a message channel: one message-like, a
// list of them, or an Overwrite of a list.
func (p *preparer) messageUpdate(v any) (channels.MessageUpdate, error) {
	if inner, ok := overwriteOf(v); ok {
		ms, err := p.messageList(inner)
		return channels.MessageUpdate{Overwrite: true, Messages: ms}, err
	}
	if list, ok := listItems(v); ok && !isMessagePair(list) {
		ms, err := p.messageList(list)
		return channels.MessageUpdate{Messages: ms}, err
	}
	m, err := p.message(v)
	return channels.MessageUpdate{Messages: []codec.Message{m}}, err
}

// stored is how a non-message value is stored: itself, or the source's
// bytes when the engine's values cannot hold it.
func stored(v any) (value any, why string) {
	if raw, ok := v.(*pyRaw); ok {
		return codec.Blob{Type: "msgpack", Data: raw.data}, raw.why
	}
	if b, ok := v.(codec.Blob); ok {
		return b, b.Type
	}
	return v, ""
}

func (p *preparer) prepare(raw *rawThread) (*thread, error) {
	p.drops = &drops{counts: map[string]int{}, seen: map[[3]string]bool{}, thread: raw.id}
	t := &thread{id: raw.id, deltas: map[string]Reducer{}, dropped: p.drops.counts}
	for start := 0; start < len(raw.cps); {
		end := start
		for end < len(raw.cps) && raw.cps[end].ns == raw.cps[start].ns {
			end++
		}
		ns, err := p.namespace(t, raw, raw.cps[start:end])
		if err != nil {
			return nil, err
		}
		t.namespaces = append(t.namespaces, ns)
		start = end
	}
	known := make(map[cpKey]bool, len(raw.cps))
	for _, cp := range raw.cps {
		known[cpKey{cp.ns, cp.id}] = true
	}
	for k, ws := range raw.writes {
		if !known[k] {
			t.orphans += len(ws)
		}
	}
	return t, nil
}

func (p *preparer) namespace(t *thread, raw *rawThread, rcps []*rawCheckpoint) (*namespace, error) {
	nsName := rcps[0].ns
	out := &namespace{ns: nsName, writes: map[string][]*write{}}
	fail := func(cpID, ch string, err error) error {
		return &Problem{ThreadID: raw.id, CheckpointNS: nsName, CheckpointID: cpID, Channel: ch, Reason: err.Error()}
	}
	// Writes first: the DeltaChannel walk folds them.
	for _, cp := range rcps {
		for _, rw := range raw.writes[cpKey{nsName, cp.id}] {
			w := &write{task: rw.task, path: rw.path, idx: rw.idx, channel: rw.channel, raw: rw.value}
			if p.msg[rw.channel] {
				if b, ok := rw.value.(codec.Blob); ok {
					return nil, fail(cp.id, rw.channel, fmt.Errorf("write of task %q idx %d: raw %s written to a message channel", rw.task, rw.idx, b.Type))
				}
				u, err := p.messageUpdate(rw.value)
				if err != nil {
					return nil, fail(cp.id, rw.channel, fmt.Errorf("write of task %q idx %d: %w", rw.task, rw.idx, err))
				}
				w.update = &u
			} else {
				w.value, w.why = stored(rw.value)
			}
			out.writes[cp.id] = append(out.writes[cp.id], w)
		}
	}
	refs := make([]*checkpointRef, len(rcps))
	for i, cp := range rcps {
		refs[i] = &checkpointRef{cp.id, cp.parent}
		out.cps = append(out.cps, &checkpoint{id: cp.id, parent: cp.parent, v: cp.v, ts: cp.ts,
			values: map[string]any{}, why: map[string]string{}, versions: cp.versions, seen: cp.seen,
			updated: cp.updated, metadata: cp.metadata})
	}
	deltas := deltaChannelsOf(rcps)
	for _, ch := range slices.Sorted(maps.Keys(deltas)) {
		reducer := Reducer("messages")
		if !p.msg[ch] {
			r, ok := p.reducers[ch]
			if !ok {
				return nil, fail(deltas[ch], ch, fmt.Errorf("a DeltaChannel (snapshots every K steps, only writes between them) whose reducer is code the file does not name; give it (Options.DeltaReducers, --delta-reducer %s=concat) or import without the thread", ch))
			}
			reducer = r
		}
		t.deltas[nsName+"\x00"+ch] = reducer
		if err := p.rebuild(out, rcps, refs, ch, reducer); err != nil {
			return nil, err
		}
	}
	for i, cp := range rcps {
		dst := out.cps[i]
		for ch, v := range cp.values {
			if _, isDelta := deltas[ch]; isDelta {
				continue
			}
			if p.msg[ch] {
				ms, err := p.messageList(v)
				if err != nil {
					return nil, fail(cp.id, ch, err)
				}
				dst.values[ch] = ms
				continue
			}
			var why string
			dst.values[ch], why = stored(v)
			if why != "" {
				dst.why[ch] = why
			}
		}
	}
	return out, nil
}

// rebuild sets a DeltaChannel's value at every checkpoint of a namespace
// where it has a version.
func (p *preparer) rebuild(out *namespace, rcps []*rawCheckpoint, refs []*checkpointRef, ch string, reducer Reducer) error {
	fail := func(cpID string, err error) error {
		return &Problem{ThreadID: p.drops.thread, CheckpointNS: out.ns, CheckpointID: cpID, Channel: ch, Reason: err.Error()}
	}
	held := func(i int) (any, bool) {
		v, ok := rcps[i].values[ch]
		if !ok {
			return nil, false
		}
		if inner, isSnap := snapshotOf(v); isSnap {
			return inner, true
		}
		return v, true // a value kept from before the channel became a DeltaChannel
	}
	writesOf := func(parent string) []*write {
		var ws []*write
		for _, w := range out.writes[parent] {
			if w.channel == ch {
				ws = append(ws, w)
			}
		}
		return ws
	}
	if reducer == "messages" {
		vals, err := deltaWalk(refs, []codec.Message{}, func(i int) ([]codec.Message, bool, error) {
			v, ok := held(i)
			if !ok {
				return nil, false, nil
			}
			ms, err := p.messageList(v)
			if err != nil {
				return nil, false, fail(rcps[i].id, err)
			}
			return ms, true, nil
		}, func(prev []codec.Message, parent string) ([]codec.Message, error) {
			ws := writesOf(parent)
			if len(ws) == 0 {
				return prev, nil
			}
			us := make([]channels.MessageUpdate, len(ws))
			for i, w := range ws {
				us[i] = *w.update
			}
			return deltaMessages(prev, us), nil
		})
		if err != nil {
			return err
		}
		for i, cp := range rcps {
			if _, ok := cp.versions[ch]; ok {
				out.cps[i].values[ch] = vals[cp.id]
			}
		}
		return nil
	}
	// Concat: on the source's values, so that items the engine cannot hold
	// keep their bytes.
	vals, err := deltaWalk(refs, []any{}, func(i int) ([]any, bool, error) {
		v, ok := held(i)
		if !ok {
			return nil, false, nil
		}
		if v == nil {
			return []any{}, true, nil
		}
		items, isList := listItems(v)
		if !isList {
			return nil, false, fail(rcps[i].id, fmt.Errorf("the DeltaChannel holds %s; the concat reducer needs a list", describe(v)))
		}
		return items, true, nil
	}, func(prev []any, parent string) ([]any, error) {
		ws := writesOf(parent)
		if len(ws) == 0 {
			return prev, nil
		}
		vs := make([]any, len(ws))
		for i, w := range ws {
			vs[i] = w.raw
		}
		return deltaConcat(prev, vs), nil
	})
	if err != nil {
		return err
	}
	for i, cp := range rcps {
		if _, ok := cp.versions[ch]; !ok {
			continue
		}
		items := vals[cp.id]
		why := ""
		for _, x := range items {
			if raw, ok := x.(*pyRaw); ok {
				why = raw.why
				break
			}
		}
		if why == "" {
			out.cps[i].values[ch] = items
			continue
		}
		data, err := encodePy(nil, items)
		if err != nil {
			return fail(cp.id, err)
		}
		out.cps[i].values[ch] = codec.Blob{Type: "msgpack", Data: data}
		out.cps[i].why[ch] = why
	}
	return nil
}
