package codec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
)

// Payloads shaped like what LangGraph's savers hand the engine, for the
// version-delta tests and benchmarks.

// lcMsg is one LangChain message, in the fields both serdes write.
type lcMsg struct {
	kind      string // human, ai, tool
	id        string
	content   string
	toolCalls []lcToolCall
	toolCall  string // tool messages: the call they answer
	toolName  string
	inTok     int
	outTok    int
}

type lcToolCall struct{ id, name, query string }

var lcWords = strings.Fields(`the agent reads a file then calls a tool and writes an answer about
state storage with care for every turn of the conversation while the user asks about weather prices
travel plans code review release notes and the model replies with a summary list of steps`)

func lcText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(lcWords[rng.IntN(len(lcWords))])
		if rng.IntN(12) == 0 {
			b.WriteString(". ")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()[:n]
}

func lcUUID(rng *rand.Rand) string {
	var b [16]byte
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return UUIDText(b)
}

// lcConversation returns a chat of n messages: turns of a 200-byte human
// message and an 800-byte AI answer, one turn in five through a tool call
// (AI call, tool result, answer).
func lcConversation(rng *rand.Rand, n int) []lcMsg {
	var ms []lcMsg
	for len(ms) < n {
		ms = append(ms, lcMsg{kind: "human", id: lcUUID(rng), content: lcText(rng, 200)})
		tokens := 40 * len(ms)
		if rng.IntN(5) == 0 {
			call := "call_" + lcUUID(rng)[:24]
			ms = append(ms, lcMsg{kind: "ai", id: "chatcmpl-" + lcUUID(rng)[:29], inTok: tokens, outTok: 21,
				toolCalls: []lcToolCall{{id: call, name: "search", query: lcText(rng, 40)}}})
			ms = append(ms, lcMsg{kind: "tool", id: lcUUID(rng), content: lcText(rng, 300), toolCall: call, toolName: "search"})
		}
		ms = append(ms, lcMsg{kind: "ai", id: "chatcmpl-" + lcUUID(rng)[:29], content: lcText(rng, 800), inTok: tokens + 80, outTok: 190})
	}
	return ms[:n]
}

// LangGraph.js's json serde: each message as LangChain's toJSON() writes
// it, keys in its order.
type jsLC struct {
	LC     int      `json:"lc"`
	Type   string   `json:"type"`
	ID     []string `json:"id"`
	Kwargs any      `json:"kwargs"`
}

type jsHuman struct {
	Content          string         `json:"content"`
	AdditionalKwargs map[string]any `json:"additional_kwargs"`
	ResponseMetadata map[string]any `json:"response_metadata"`
	ID               string         `json:"id"`
}

type jsTool struct {
	Content          string         `json:"content"`
	ToolCallID       string         `json:"tool_call_id"`
	Name             string         `json:"name"`
	AdditionalKwargs map[string]any `json:"additional_kwargs"`
	ResponseMetadata map[string]any `json:"response_metadata"`
	ID               string         `json:"id"`
}

type jsAI struct {
	Content          string       `json:"content"`
	AdditionalKwargs any          `json:"additional_kwargs"`
	ResponseMetadata jsRespMeta   `json:"response_metadata"`
	ID               string       `json:"id"`
	ToolCalls        []jsToolCall `json:"tool_calls"`
	InvalidToolCalls []any        `json:"invalid_tool_calls"`
	UsageMetadata    jsUsage      `json:"usage_metadata"`
}

type jsRespMeta struct {
	TokenUsage        map[string]int `json:"tokenUsage"`
	FinishReason      string         `json:"finish_reason"`
	ModelName         string         `json:"model_name"`
	SystemFingerprint string         `json:"system_fingerprint"`
}

type jsToolCall struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
	Type string         `json:"type"`
	ID   string         `json:"id"`
}

type jsUsage struct {
	InputTokens        int            `json:"input_tokens"`
	OutputTokens       int            `json:"output_tokens"`
	TotalTokens        int            `json:"total_tokens"`
	InputTokenDetails  map[string]int `json:"input_token_details"`
	OutputTokenDetails map[string]int `json:"output_token_details"`
}

func (m lcMsg) json() []byte {
	var kw any
	class := map[string]string{"human": "HumanMessage", "ai": "AIMessage", "tool": "ToolMessage"}[m.kind]
	switch m.kind {
	case "human":
		kw = jsHuman{Content: m.content, AdditionalKwargs: map[string]any{}, ResponseMetadata: map[string]any{}, ID: m.id}
	case "tool":
		kw = jsTool{Content: m.content, ToolCallID: m.toolCall, Name: m.toolName, AdditionalKwargs: map[string]any{}, ResponseMetadata: map[string]any{}, ID: m.id}
	case "ai":
		finish := "stop"
		var calls []jsToolCall
		var addl any = map[string]any{}
		for _, c := range m.toolCalls {
			finish = "tool_calls"
			calls = append(calls, jsToolCall{Name: c.name, Args: map[string]any{"query": c.query}, Type: "tool_call", ID: c.id})
		}
		if calls == nil {
			calls = []jsToolCall{}
		}
		kw = jsAI{Content: m.content, AdditionalKwargs: addl,
			ResponseMetadata: jsRespMeta{TokenUsage: map[string]int{"promptTokens": m.inTok, "completionTokens": m.outTok, "totalTokens": m.inTok + m.outTok},
				FinishReason: finish, ModelName: "gpt-4o-mini-2024-07-18", SystemFingerprint: "fp_0705bf87c0"},
			ID: m.id, ToolCalls: calls, InvalidToolCalls: []any{},
			UsageMetadata: jsUsage{InputTokens: m.inTok, OutputTokens: m.outTok, TotalTokens: m.inTok + m.outTok,
				InputTokenDetails: map[string]int{"audio": 0, "cache_read": 0}, OutputTokenDetails: map[string]int{"audio": 0, "reasoning": 0}}}
	}
	b, err := json.Marshal(jsLC{LC: 1, Type: "constructor", ID: []string{"langchain_core", "messages", class}, Kwargs: kw})
	if err != nil {
		panic(err)
	}
	return b
}

// jsonList is a message list as LangGraph.js's json serde stores the
// default messages channel: JSON.stringify of the array.
func jsonList(ms []lcMsg) []byte { return jsonListOf(encodeAll(ms, lcMsg.json)) }

func jsonListOf(elems [][]byte) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, e := range elems {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e)
	}
	b.WriteByte(']')
	return b.Bytes()
}

func encodeAll(ms []lcMsg, enc func(lcMsg) []byte) [][]byte {
	out := make([][]byte, len(ms))
	for i, m := range ms {
		out[i] = enc(m)
	}
	return out
}

// A serde writes a list of messages, from each message's own bytes.
type serde struct {
	elem func(lcMsg) []byte
	list func([][]byte) []byte
}

var (
	jsonSerde     = serde{lcMsg.json, jsonListOf}
	msgpackSerde  = serde{lcMsg.msgpack, msgpackListOf}
	snapshotSerde = serde{lcMsg.json, func(e [][]byte) []byte {
		return append(append([]byte(`{"lc":2,"type":"delta_snapshot","value":`), jsonListOf(e)...), '}')
	}}
)

// LangGraph Python's msgpack serde: a pydantic v2 model is ext type 5
// holding msgpack of (module, class, model_dump(), "model_validate_json").
func (m lcMsg) msgpack() []byte {
	var kv []any // ordered pairs, as model_dump orders them
	switch m.kind {
	case "human":
		kv = []any{"content", m.content, "additional_kwargs", map[string]any{}, "response_metadata", map[string]any{},
			"type", "human", "name", nil, "id", m.id, "example", false}
	case "tool":
		kv = []any{"content", m.content, "additional_kwargs", map[string]any{}, "response_metadata", map[string]any{},
			"type", "tool", "name", m.toolName, "id", m.id, "tool_call_id", m.toolCall, "artifact", nil, "status", "success"}
	case "ai":
		var calls []any
		for _, c := range m.toolCalls {
			calls = append(calls, map[string]any{"name": c.name, "args": map[string]any{"query": c.query}, "id": c.id, "type": "tool_call"})
		}
		kv = []any{"content", m.content, "additional_kwargs", map[string]any{"refusal": nil},
			"response_metadata", map[string]any{"token_usage": map[string]any{"completion_tokens": m.outTok, "prompt_tokens": m.inTok, "total_tokens": m.inTok + m.outTok},
				"model_name": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_0705bf87c0", "finish_reason": "stop", "logprobs": nil},
			"type", "ai", "name", nil, "id", "run-" + m.id, "example", false, "tool_calls", calls, "invalid_tool_calls", []any{},
			"usage_metadata", map[string]any{"input_tokens": m.inTok, "output_tokens": m.outTok, "total_tokens": m.inTok + m.outTok,
				"input_token_details": map[string]any{"audio": 0, "cache_read": 0}, "output_token_details": map[string]any{"audio": 0, "reasoning": 0}}}
	}
	module := map[string]string{"human": "langchain_core.messages.human", "ai": "langchain_core.messages.ai", "tool": "langchain_core.messages.tool"}[m.kind]
	class := map[string]string{"human": "HumanMessage", "ai": "AIMessage", "tool": "ToolMessage"}[m.kind]
	var inner bytes.Buffer
	enc := msgpack.NewEncoder(&inner)
	enc.SetSortMapKeys(true) // nested maps: any fixed order will do
	must(enc.EncodeArrayLen(4))
	must(enc.EncodeString(module))
	must(enc.EncodeString(class))
	must(enc.EncodeMapLen(len(kv) / 2))
	for i := 0; i < len(kv); i += 2 {
		must(enc.EncodeString(kv[i].(string)))
		must(enc.Encode(kv[i+1]))
	}
	must(enc.EncodeString("model_validate_json"))
	var out bytes.Buffer
	enc = msgpack.NewEncoder(&out)
	must(enc.EncodeExtHeader(5, inner.Len()))
	out.Write(inner.Bytes())
	return out.Bytes()
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// msgpackList is the list as LangGraph Python's serde stores it.
func msgpackList(ms []lcMsg) []byte { return msgpackListOf(encodeAll(ms, lcMsg.msgpack)) }

func msgpackListOf(elems [][]byte) []byte {
	var b bytes.Buffer
	must(msgpack.NewEncoder(&b).EncodeArrayLen(len(elems)))
	for _, e := range elems {
		b.Write(e)
	}
	return b.Bytes()
}

// A workload is the successive versions of one channel value.
type workload struct {
	name     string
	versions [][]byte
}

// growingList returns the versions of a messages channel that gains one or
// two messages per step up to n messages, in the given serde.
func growingList(seed uint64, n int, s serde) [][]byte { return growingEvery(seed, n, 1, s) }

// growingEvery is growingList keeping one version every k steps: a
// DeltaChannel's snapshots (k = its K).
func growingEvery(seed uint64, n, k int, s serde) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	elems := encodeAll(lcConversation(rng, n), s.elem)
	var vs [][]byte
	step := 0
	for m := 1; m <= n; m += 1 + rng.IntN(2) {
		if step++; step%k == 0 {
			vs = append(vs, s.list(elems[:m]))
		}
	}
	return vs
}

// editedList returns versions of a json message list that grows and, one
// step in four, has a message replaced (updateState), removed
// (RemoveMessage) or inserted in the middle, or several at once.
func editedList(seed uint64, steps int, s serde) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 2))
	pool := lcConversation(rng, 40+steps*2) // 40 to start, at most two more per step
	ms := append([]lcMsg(nil), pool[:40]...)
	pool = pool[40:]
	var vs [][]byte
	for range steps {
		switch rng.IntN(8) {
		case 0: // replace one message's content (updateState)
			i := rng.IntN(len(ms))
			ms[i].content = lcText(rng, 50+rng.IntN(900))
		case 1: // remove one (RemoveMessage)
			i := rng.IntN(len(ms))
			ms = append(ms[:i:i], ms[i+1:]...)
		case 2: // several scattered edits
			for range 2 + rng.IntN(4) {
				i := rng.IntN(len(ms))
				ms[i].content = lcText(rng, 50+rng.IntN(900))
			}
		case 3: // insert in the middle
			i := rng.IntN(len(ms))
			ms = append(ms[:i:i], append([]lcMsg{pool[0]}, ms[i:]...)...)
			pool = pool[1:]
		default: // append one or two
			k := 1 + rng.IntN(2)
			ms = append(ms, pool[:k]...)
			pool = pool[k:]
		}
		vs = append(vs, s.list(encodeAll(ms, s.elem)))
	}
	return vs
}

// unrelatedValues returns versions with nothing in common: a counter, then
// random bytes of random sizes.
func unrelatedValues(seed uint64, steps int) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 3))
	var vs [][]byte
	for i := range steps {
		if i%2 == 0 {
			vs = append(vs, fmt.Appendf(nil, "%d", i))
			continue
		}
		b := make([]byte, rng.IntN(64<<10))
		for k := range b {
			b[k] = byte(rng.Uint32())
		}
		vs = append(vs, b)
	}
	return vs
}
