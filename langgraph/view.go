package langgraph

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
)

// View shows a checkpoint of a thread LangGraph wrote through a saver on
// the engine (AgentStateSaver in JavaScript, the Python saver, or an
// import-langgraph in the protocol's form) as LangGraph's get_state shows
// its values (docs/cli.md, "LangGraph threads"):
//
//   - every value decoded from the serde that wrote it (Python's msgpack,
//     LangGraph.js's JSON) and every LangChain message, whichever language
//     wrote it, in one neutral form (NeutralMessage);
//   - a DeltaChannel (a snapshot, counters in the metadata, or a channel
//     with a version whose value is its writes) rebuilt as LangGraph reads
//     it: its last snapshot plus the writes after it, reduced;
//   - with ViewOptions.Head, the pending writes of the superstep that
//     follows the checkpoint (the tasks that finished before it failed or
//     was interrupted) applied, as get_state does for a thread's config
//     without a checkpoint id; the writes of the null task (update_state's
//     input, Command(resume)) are applied always, as LangGraph does.
//
// Reducers are code, which the file does not name. A channel called
// "messages" uses LangGraph's message reducer (add_messages; for a
// DeltaChannel _messages_delta_reducer / messagesDeltaReducer, the same on
// a state); any other channel that needs one takes it from
// ViewOptions.Reducers, and without it View fails with a *ReducerError
// naming the channel.

// Reducers View knows besides Concat.
const (
	// Messages is LangGraph's message reducer: each message replaces the
	// one with its id or is appended, RemoveMessage deletes its id,
	// REMOVE_ALL_MESSAGES drops everything before it.
	Messages Reducer = "messages"
	// Last keeps the last write (LangGraph's LastValue channel).
	Last Reducer = "last"
)

// ParseReducer returns the reducer named s (messages, concat, last).
func ParseReducer(s string) (Reducer, error) {
	switch r := Reducer(s); r {
	case Messages, Concat, Last:
		return r, nil
	}
	return "", fmt.Errorf("reducer %q is not one of messages, concat, last", s)
}

// ViewOptions are View's options.
type ViewOptions struct {
	// Reducers names the reducer of channels other than "messages" that
	// View has to reduce (a DeltaChannel, or a channel with pending writes
	// applied by Head).
	Reducers map[string]Reducer
	// Head applies the pending writes of the checkpoint's next superstep.
	Head bool
}

// ReducerError says that a channel's value depends on a reducer the file
// does not name.
type ReducerError struct {
	Config  engine.Config
	Channel string
	Why     string // "a DeltaChannel", "pending writes of finished tasks"
}

func (e *ReducerError) Error() string {
	return fmt.Sprintf("channel %q of thread %q (namespace %q, checkpoint %s) %s, and its reducer is code the file does not name",
		e.Channel, e.Config.ThreadID, e.Config.CheckpointNS, e.Config.CheckpointID, e.Why)
}

// NullTaskID is the task id of writes without a task (LangGraph's
// NULL_TASK_ID).
const NullTaskID = "00000000-0000-0000-0000-000000000000"

// Internal reports whether a channel is one of LangGraph's own (triggers,
// tasks, special writes) rather than a key of the graph's state: get_state
// does not show them.
func Internal(ch string) bool {
	return strings.HasPrefix(ch, "__") || strings.HasPrefix(ch, "branch:") || strings.HasPrefix(ch, "start:") || strings.HasPrefix(ch, "join:")
}

// StateValues is what View returns.
type StateValues struct {
	Config engine.Config
	// Values holds every channel with a value, LangGraph's internal ones
	// included (Internal tells them apart).
	Values map[string]any
	// Delta lists the DeltaChannels View rebuilt.
	Delta []string
	// Applied lists the channels to which Head applied pending writes.
	Applied []string
	// Empty lists channels with a version but no value: an empty trigger
	// channel (LangGraph stores none).
	Empty []string
}

// View returns the values of the checkpoint cfg names (the latest of its
// namespace when cfg.CheckpointID is empty) as LangGraph shows them.
func View(ctx context.Context, db *engine.DB, cfg engine.Config, o ViewOptions) (StateValues, error) {
	t, err := db.GetTuple(ctx, cfg)
	if err != nil {
		return StateValues{}, err
	}
	memo := extMemo{}
	out := StateValues{Config: t.Config, Values: map[string]any{}}
	delta := map[string]bool{}
	for ch := range fieldsOf(t.Metadata[channels.CountersKey]) {
		delta[ch] = true
	}
	var missing []string
	for _, ch := range slices.Sorted(maps.Keys(t.Checkpoint.ChannelVersions)) {
		b, ok := t.Checkpoint.ChannelValues[ch]
		if !ok {
			missing = append(missing, ch)
			continue
		}
		v, err := decodeBlob(b, memo)
		if err != nil {
			return out, fmt.Errorf("channel %q of thread %q at checkpoint %s: %w", ch, t.Config.ThreadID, t.Config.CheckpointID, err)
		}
		if inner, ok := snapshotOf(v); ok {
			v, delta[ch] = inner, true
		}
		if out.Values[ch], err = neutralV(v, b.Type == "msgpack"); err != nil {
			return out, fmt.Errorf("channel %q of thread %q at checkpoint %s: %w", ch, t.Config.ThreadID, t.Config.CheckpointID, err)
		}
	}
	if len(missing) > 0 {
		hist, err := db.DeltaChannelHistory(ctx, t.Config, missing)
		if err != nil {
			return out, err
		}
		for _, ch := range missing {
			h := hist[ch]
			if h.Seed == nil && len(h.Writes) == 0 && !delta[ch] {
				out.Empty = append(out.Empty, ch)
				continue
			}
			if Internal(ch) {
				// A trigger's writes are not its value: LangGraph
				// stores none for an empty channel.
				out.Empty = append(out.Empty, ch)
				continue
			}
			var seed any
			if h.Seed != nil {
				v, err := decodeBlob(*h.Seed, memo)
				if err != nil {
					return out, fmt.Errorf("channel %q of thread %q: its snapshot: %w", ch, t.Config.ThreadID, err)
				}
				if inner, ok := snapshotOf(v); ok {
					v = inner
				}
				if seed, err = neutralV(v, h.Seed.Type == "msgpack"); err != nil {
					return out, err
				}
			}
			ws, err := decodeWrites(h.Writes, memo)
			if err != nil {
				return out, fmt.Errorf("channel %q of thread %q: %w", ch, t.Config.ThreadID, err)
			}
			r, ok := reducerFor(ch, o.Reducers)
			if !ok {
				return out, &ReducerError{Config: t.Config, Channel: ch, Why: "is a DeltaChannel (its value is its last snapshot plus the writes since)"}
			}
			if out.Values[ch], err = reduce(r, seed, ws); err != nil {
				return out, fmt.Errorf("channel %q of thread %q: %w", ch, t.Config.ThreadID, err)
			}
			delta[ch] = true
		}
	}
	for ch := range delta {
		if _, ok := out.Values[ch]; ok {
			out.Delta = append(out.Delta, ch)
		}
	}
	slices.Sort(out.Delta)
	if err := applyPending(&out, t, o, memo); err != nil {
		return out, err
	}
	return out, nil
}

// applyPending applies the pending writes get_state applies: the null
// task's always, the others' with o.Head. The writes come in LangGraph's
// order, (task_path, task_id, idx), which is the order apply_writes takes
// its tasks in; special channels (__error__, __interrupt__, ...) and
// internal channels are not values.
func applyPending(out *StateValues, t engine.Tuple, o ViewOptions, memo extMemo) error {
	byChannel := map[string][]engine.PendingWrite{}
	var order []string
	for _, w := range t.PendingWrites {
		if Internal(w.Channel) || !o.Head && w.TaskID != NullTaskID {
			continue
		}
		if _, seen := byChannel[w.Channel]; !seen {
			order = append(order, w.Channel)
		}
		byChannel[w.Channel] = append(byChannel[w.Channel], w)
	}
	for _, ch := range order {
		ws, err := decodeWrites(byChannel[ch], memo)
		if err != nil {
			return fmt.Errorf("channel %q of thread %q: a pending write: %w", ch, t.Config.ThreadID, err)
		}
		r, ok := reducerFor(ch, o.Reducers)
		if !ok {
			return &ReducerError{Config: t.Config, Channel: ch, Why: "has pending writes of finished tasks to apply"}
		}
		cur, had := out.Values[ch]
		if !had {
			cur = nil
		}
		if out.Values[ch], err = reduce(r, cur, ws); err != nil {
			return fmt.Errorf("channel %q of thread %q: %w", ch, t.Config.ThreadID, err)
		}
		out.Applied = append(out.Applied, ch)
		out.Empty = slices.DeleteFunc(out.Empty, func(e string) bool { return e == ch })
	}
	slices.Sort(out.Applied)
	return nil
}

func reducerFor(ch string, named map[string]Reducer) (Reducer, bool) {
	if r, ok := named[ch]; ok {
		return r, true
	}
	if ch == "messages" {
		return Messages, true
	}
	return "", false
}

// viewWrite is one decoded write: a value, or an Overwrite of the channel.
type viewWrite struct {
	v         any
	overwrite bool
}

func decodeWrites(pws []engine.PendingWrite, memo extMemo) ([]viewWrite, error) {
	out := make([]viewWrite, 0, len(pws))
	for _, pw := range pws {
		v, err := decodeBlob(pw.Value, memo)
		if err != nil {
			return nil, fmt.Errorf("write of task %s: %w", pw.TaskID, err)
		}
		w := viewWrite{}
		if inner, ok := overwriteOf(v); ok {
			v, w.overwrite = inner, true
		}
		if w.v, err = neutralV(v, pw.Value.Type == "msgpack"); err != nil {
			return nil, fmt.Errorf("write of task %s: %w", pw.TaskID, err)
		}
		out = append(out, w)
	}
	return out, nil
}

// decodeBlob decodes a stored value: LangGraph's serde types, the engine's
// msgpack; any other type stays a typed blob.
func decodeBlob(b codec.Blob, memo extMemo) (any, error) {
	switch b.Type {
	case codec.TypeMsgpack:
		var v any
		if err := codec.Unmarshal(b.Data, &v); err != nil {
			return nil, err
		}
		return v, nil
	case "json", "msgpack", "null", "bytes", "bytearray":
		return decodeTyped(b.Type, b.Data, memo)
	}
	return b, nil
}

// reduce folds writes onto state with r; an Overwrite replaces the state.
func reduce(r Reducer, state any, ws []viewWrite) (any, error) {
	for _, w := range ws {
		if w.overwrite {
			state = w.v
			if r == Messages || r == Concat {
				if state == nil {
					state = []any{}
				}
			}
			continue
		}
		switch r {
		case Last:
			state = w.v
		case Concat:
			cur, _ := state.([]any)
			cur = slices.Clone(cur)
			if items, ok := w.v.([]any); ok {
				cur = append(cur, items...)
			} else {
				cur = append(cur, w.v)
			}
			state = cur
		case Messages:
			cur, _ := state.([]any)
			next, err := addMessages(cur, w.v)
			if err != nil {
				return nil, err
			}
			state = next
		default:
			return nil, fmt.Errorf("unknown reducer %q", r)
		}
	}
	if state == nil && (r == Messages || r == Concat) {
		state = []any{}
	}
	return state, nil
}

// addMessages is LangGraph's message reducer on one write, on neutral
// messages: the write's messages (a list, or one) after the last
// REMOVE_ALL_MESSAGES in it replace the state; each message replaces the
// one with its id or is appended; a RemoveMessage deletes its id (one the
// state lacks is ignored: add_messages would refuse the write, and a
// DeltaChannel's reducer ignores it). A message without id is appended
// with none: LangGraph would make up a uuid4, which no file holds.
func addMessages(state []any, w any) ([]any, error) {
	var msgs []any
	if items, ok := w.([]any); ok && !isMessagePair(items) {
		msgs = items
	} else {
		msgs = []any{w}
	}
	conv := make([]map[string]any, 0, len(msgs))
	for _, m := range msgs {
		nm, err := toNeutral(m)
		if err != nil {
			return nil, err
		}
		conv = append(conv, nm)
	}
	base := slices.Clone(state)
	for i := len(conv) - 1; i >= 0; i-- {
		if conv[i]["type"] == "remove" && conv[i]["id"] == codec.RemoveAll {
			base, conv = nil, conv[i+1:]
			break
		}
	}
	out := base
	removed := make([]bool, len(out))
	index := map[string]int{}
	for i, m := range out {
		if id := msgID(m); id != "" {
			index[id] = i
		}
	}
	for _, m := range conv {
		id := msgID(m)
		i, known := index[id]
		switch {
		case id == "":
			out = append(out, m)
			removed = append(removed, false)
		case m["type"] == "remove":
			if known {
				removed[i] = true
				delete(index, id)
			}
		case known:
			out[i] = m
		default:
			index[id] = len(out)
			out = append(out, m)
			removed = append(removed, false)
		}
	}
	kept := make([]any, 0, len(out))
	for i, m := range out {
		if !removed[i] {
			kept = append(kept, m)
		}
	}
	return kept, nil
}

func msgID(m any) string {
	if mm, ok := m.(map[string]any); ok {
		id, _ := mm["id"].(string)
		return id
	}
	return ""
}

// NeutralMessage is the one form View shows a LangChain message in,
// whichever language wrote it (Python's msgpack extension, LangChain.js's
// constructor JSON, a node's {"role", "content"} map, a [role, content]
// pair, a string): a map with "type" (human, ai, system, tool, remove,
// chat, function: a chunk is its message's type), "id" (null when the
// message has none), "content", and every other field the message holds,
// snake_case as both LangChains serialise them, leaving out the ones that
// hold their default (null, "", [], {}, a tool message's status
// "success", a tool call's type "tool_call") and a chunk's own fields
// (tool_call_chunks, chunk_position), which the state's message lacks.
// The conversion is toNeutral; docs/cli.md shows an example.
type NeutralMessage = map[string]any

var neutralTypes = map[string]string{
	"Human": "human", "AI": "ai", "System": "system", "Tool": "tool",
	"Remove": "remove", "Chat": "chat", "Function": "function",
}

// classType maps a LangChain message class to its neutral type.
func classType(class string) (string, bool) {
	base := strings.TrimSuffix(strings.TrimSuffix(class, "Chunk"), "Message")
	t, ok := neutralTypes[base]
	return t, ok
}

var roleTypes = map[string]string{
	"human": "human", "user": "human", "ai": "ai", "assistant": "ai",
	"system": "system", "developer": "system", "tool": "tool", "remove": "remove",
	"chat": "chat", "function": "function", "AIMessageChunk": "ai", "HumanMessageChunk": "human",
	"SystemMessageChunk": "system", "ToolMessageChunk": "tool",
}

// neutralFields builds a neutral message from a type and fields already
// mapped to display values.
func neutralFields(typ string, fields map[string]any) NeutralMessage {
	m := NeutralMessage{"type": typ, "id": nil, "content": ""}
	for k, v := range fields {
		switch k {
		case "type", "tool_call_chunks", "chunk_position", "lc_kwargs", "lc_serializable":
			continue
		case "role":
			if typ != "chat" {
				continue
			}
		case "id":
			if s, ok := v.(string); ok && s != "" {
				m["id"] = s
			}
			continue
		case "content":
			if v != nil {
				m["content"] = v
			}
			continue
		case "status":
			if v == "success" {
				continue
			}
		case "tool_calls", "invalid_tool_calls":
			v = toolCalls(v)
		}
		if isEmptyValue(v) {
			continue
		}
		m[k] = v
	}
	if typ == "remove" {
		m["content"] = ""
	}
	return m
}

func toolCalls(v any) any {
	list, ok := v.([]any)
	if !ok {
		return v
	}
	out := make([]any, len(list))
	for i, x := range list {
		tc, ok := x.(map[string]any)
		if !ok {
			out[i] = x
			continue
		}
		c := map[string]any{}
		for k, e := range tc {
			if k == "type" && (e == "tool_call" || e == "invalid_tool_call") || isUndefined(e) {
				continue
			}
			c[k] = e
		}
		out[i] = c
	}
	return out
}

// toNeutral turns one message written in any form (a neutral message
// already, a {"role"|"type", "content"} map, a pair, a string) into a
// neutral message.
func toNeutral(v any) (NeutralMessage, error) {
	switch x := v.(type) {
	case string:
		return neutralFields("human", map[string]any{"content": x}), nil
	case []any:
		if isMessagePair(x) {
			return neutralFields(roleTypes[x[0].(string)], map[string]any{"content": x[1]}), nil
		}
	case map[string]any:
		role, _ := x["role"].(string)
		if role == "" {
			role, _ = x["type"].(string)
		}
		if t, ok := roleTypes[role]; ok {
			if _, neutral := x["type"]; !neutral {
				// {"role": "user", "content": ...}: the role is the type.
				x = maps.Clone(x)
				delete(x, "role")
			}
			return neutralFields(t, x), nil
		}
	}
	return nil, fmt.Errorf("a write to a message channel holds %s, not a message", describeDisplay(v))
}

func describeDisplay(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		if t, ok := x["$type"].(string); ok {
			return "a " + t
		}
		return "a map"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("a %T", v)
}

// neutral maps a decoded value (decodeTyped's: JSON values, or Python's
// with *pyRaw inside) into display JSON: messages anywhere in it as
// neutral messages, other Python values in the mapping of SerdeJSON.
func neutral(v any) (any, error) { return neutralV(v, false) }

// neutralV is neutral; py says v is Python's, whose maps with a "$type"
// key show as {"$type": "dict", "items"} (SerdeJSON's mapping), so that
// they do not read as a tagged value.
func neutralV(v any, py bool) (any, error) {
	switch x := v.(type) {
	case *pyRaw:
		if e := x.ext; e != nil && e.code == extPydanticV2 && strings.HasPrefix(e.module, "langchain_core.messages") {
			if t, ok := classType(e.name); ok {
				f, err := neutralV(e.arg, true)
				if err != nil {
					return nil, err
				}
				fm, _ := f.(map[string]any)
				return neutralFields(t, fm), nil
			}
		}
		switch {
		case x.items != nil:
			return neutralV(x.items, true)
		case x.fields != nil:
			if _, tagged := x.fields["$type"]; !tagged {
				return neutralV(x.fields, true)
			}
		}
		return pyJSON(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = neutralV(e, py); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[string]any:
		if lc, _ := x["lc"].(int64); lc == 1 && x["type"] == "constructor" {
			ids, _ := x["id"].([]any)
			class := ""
			if len(ids) > 0 {
				class, _ = ids[len(ids)-1].(string)
			}
			// ["langchain_core", "messages", "AIMessage"]; LangChain
			// Python's older ["langchain", "schema", "messages", ...].
			if t, ok := classType(class); ok && len(ids) > 1 && ids[len(ids)-2] == "messages" {
				kw, _ := x["kwargs"].(map[string]any)
				f, err := neutralV(kw, py)
				if err != nil {
					return nil, err
				}
				fm, _ := f.(map[string]any)
				return neutralFields(t, fm), nil
			}
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			var err error
			if out[k], err = neutralV(e, py); err != nil {
				return nil, err
			}
		}
		if _, tagged := x["$type"]; tagged && py {
			return dictItems(out), nil
		}
		return out, nil
	case codec.Blob:
		return map[string]any{"$type": x.Type, "b64": base64.StdEncoding.EncodeToString(x.Data)}, nil
	}
	return v, nil
}
