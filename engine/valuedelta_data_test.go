package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
)

// Channel values shaped like what LangGraph's savers hand the engine: a
// message list serialised whole at every step (LangGraph.js's json serde
// of its default messages channel, LangGraph Python's msgpack serde), for
// the version-delta tests and benchmarks of the protocol path.

var lcWords = strings.Fields(`the agent reads a file then calls a tool and writes an answer about
state storage with care for every turn of the conversation while the user asks about weather prices
travel plans code review release notes and the model replies with a summary list of steps`)

func lcText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(lcWords[rng.IntN(len(lcWords))])
		b.WriteByte(' ')
	}
	return b.String()[:n]
}

func lcID(rng *rand.Rand) string {
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint64()&0xffffffffffff)
}

// chatMessage is one message as LangChain's toJSON() writes it (the shape
// LangGraph.js's json serde stores): turn i's human message (200 bytes of
// text) or AI answer (800 bytes, with usage metadata).
func chatMessage(rng *rand.Rand, i int) map[string]any {
	if i%2 == 0 {
		return map[string]any{"lc": 1, "type": "constructor", "id": []string{"langchain_core", "messages", "HumanMessage"},
			"kwargs": map[string]any{"content": lcText(rng, 200), "additional_kwargs": map[string]any{}, "response_metadata": map[string]any{}, "id": lcID(rng)}}
	}
	in := 40 * i
	return map[string]any{"lc": 1, "type": "constructor", "id": []string{"langchain_core", "messages", "AIMessage"},
		"kwargs": map[string]any{"content": lcText(rng, 800), "additional_kwargs": map[string]any{},
			"response_metadata": map[string]any{"tokenUsage": map[string]int{"promptTokens": in, "completionTokens": 190, "totalTokens": in + 190},
				"finish_reason": "stop", "model_name": "gpt-4o-mini-2024-07-18"},
			"id": "chatcmpl-" + lcID(rng)[:29], "tool_calls": []any{}, "invalid_tool_calls": []any{},
			"usage_metadata": map[string]int{"input_tokens": in, "output_tokens": 190, "total_tokens": in + 190}}}
}

// lcJSON is one message's json serde bytes.
func lcJSON(m map[string]any) []byte {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// msgpackList is a msgpack array of the elements' own msgpack bytes.
func msgpackList(elems [][]byte) []byte {
	var b bytes.Buffer
	enc := msgpack.NewEncoder(&b)
	if err := enc.EncodeArrayLen(len(elems)); err != nil {
		panic(err)
	}
	for _, e := range elems {
		b.Write(e)
	}
	return b.Bytes()
}

func lcMsgpack(m map[string]any) []byte {
	b, err := msgpack.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}
