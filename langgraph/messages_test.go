package langgraph

import (
	"strings"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/google/go-cmp/cmp"
)

// pyExt5 builds LangGraph Python's encoding of a LangChain message:
// extension 5 around [module, class, model_dump(), "model_validate_json"].
func pyExt5(t *testing.T, module, class string, fields map[string]any) []byte {
	t.Helper()
	data, err := encodePy(nil, []any{module, class, fields, "model_validate_json"})
	if err != nil {
		t.Fatal(err)
	}
	return extBytes(5, data)
}

func extBytes(code byte, data []byte) []byte {
	if len(data) < 256 {
		return append([]byte{0xc7, byte(len(data)), code}, data...)
	}
	return append([]byte{0xc8, byte(len(data) >> 8), byte(len(data)), code}, data...)
}

func decodeOne(t *testing.T, b []byte) any {
	t.Helper()
	v, err := decodePy(b)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestLangGraphMessages(t *testing.T) {
	drops := map[string]int{}
	toolCall := map[string]any{"id": "c", "name": "w", "args": map[string]any{"a": int64(1)}, "type": "tool_call"}
	for _, tc := range []struct {
		name string
		in   any
		want codec.Message
	}{
		{"string", "hi", codec.Message{Type: codec.Human, Content: "hi"}},
		{"pair", []any{"assistant", "yes"}, codec.Message{Type: codec.AI, Content: "yes"}},
		{"role map", map[string]any{"role": "user", "content": "q", "id": "1"}, codec.Message{ID: "1", Type: codec.Human, Content: "q"}},
		{"js tool message", map[string]any{"lc": int64(1), "type": "constructor", "id": []any{"langchain_core", "messages", "ToolMessage"},
			"kwargs": map[string]any{"id": "t", "content": "21", "tool_call_id": "c", "status": "error", "artifact": map[string]any{"x": int64(1)}}},
			codec.Message{ID: "t", Type: codec.Tool, Content: "21", ToolCallID: "c"}},
		{"js ai message", map[string]any{"lc": int64(1), "type": "constructor", "id": []any{"langchain_core", "messages", "AIMessage"},
			"kwargs": map[string]any{"id": map[string]any{"lc": int64(2), "type": "undefined"}, "content": "", "invalid_tool_calls": []any{},
				"tool_calls": []any{toolCall}}},
			codec.Message{Type: codec.AI, Content: "", ToolCalls: []codec.ToolCall{{ID: "c", Name: "w", Args: map[string]any{"a": int64(1)}}}}},
		{"python ai message", decodeOne(t, pyExt5(t, "langchain_core.messages.ai", "AIMessage", map[string]any{
			"content": []any{map[string]any{"type": "text", "text": "x"}}, "additional_kwargs": map[string]any{"seq": int64(1)},
			"response_metadata": map[string]any{}, "type": "ai", "name": nil, "id": "ai-1", "tool_calls": []any{toolCall},
			"invalid_tool_calls": []any{}, "usage_metadata": map[string]any{"input_tokens": int64(3), "output_tokens": int64(4), "total_tokens": int64(7),
				"input_token_details": map[string]any{"cache_read": int64(2)}}})),
			codec.Message{ID: "ai-1", Type: codec.AI, Content: []any{map[string]any{"type": "text", "text": "x"}}, AdditionalKwargs: map[string]any{"seq": int64(1)},
				ToolCalls: []codec.ToolCall{{ID: "c", Name: "w", Args: map[string]any{"a": int64(1)}}}, UsageMetadata: &codec.UsageMetadata{InputTokens: 3, OutputTokens: 4, TotalTokens: 7}}},
		{"python chunk", decodeOne(t, pyExt5(t, "langchain_core.messages.ai", "AIMessageChunk", map[string]any{
			"content": "part", "type": "AIMessageChunk", "id": "lc_run--1", "tool_call_chunks": []any{}, "chunk_position": "last"})),
			codec.Message{ID: "lc_run--1", Type: codec.AI, Content: "part"}},
		{"python remove", decodeOne(t, pyExt5(t, "langchain_core.messages.modifier", "RemoveMessage", map[string]any{
			"content": "", "type": "remove", "id": codec.RemoveAll})),
			codec.Message{ID: codec.RemoveAll, Type: codec.Remove}},
	} {
		got, err := message(tc.in, drops)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Fatalf("%s (-want +got):\n%s", tc.name, d)
		}
	}
	want := map[string]int{"ToolMessage.status": 1, "ToolMessage.artifact": 1, "AIMessage.usage_metadata.input_token_details": 1, "AIMessageChunk.chunk_position": 1}
	if d := cmp.Diff(want, drops); d != "" {
		t.Fatalf("drops (-want +got):\n%s", d)
	}
	for name, in := range map[string]any{
		"ChatMessage":             map[string]any{"lc": int64(1), "type": "constructor", "id": []any{"ChatMessage"}, "kwargs": map[string]any{}},
		"python ChatMessage":      decodeOne(t, pyExt5(t, "langchain_core.messages.chat", "ChatMessage", map[string]any{"content": "x", "role": "r"})),
		"a pydantic model":        decodeOne(t, pyExt5(t, "fixture_types", "Report", map[string]any{"title": "x"})),
		"datetime in kwargs":      decodeOne(t, pyExt5(t, "langchain_core.messages.human", "HumanMessage", map[string]any{"content": "x", "additional_kwargs": map[string]any{"at": &pyRaw{data: extBytes(3, mustPy(t, []any{"datetime", "datetime", "2026-01-01T00:00:00", "fromisoformat"})), why: "datetime.datetime"}}})),
		"tool message without id": map[string]any{"role": "tool", "content": "x"},
	} {
		if _, err := message(in, drops); err == nil {
			t.Errorf("%s accepted", name)
		} else if name == "datetime in kwargs" && !strings.Contains(err.Error(), "HumanMessage.additional_kwargs holds datetime.datetime") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func mustPy(t *testing.T, v any) []byte {
	t.Helper()
	b, err := encodePy(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Writes to a message channel: every form LangGraph stores.
func TestLangGraphMessageUpdates(t *testing.T) {
	p := newPreparer(nil, nil)
	p.drops = &drops{counts: map[string]int{}, seen: map[[3]string]bool{}}
	human := pyExt5(t, "langchain_core.messages.human", "HumanMessage", map[string]any{"content": "a", "id": "h"})
	list := append([]byte{0x92}, human...)
	list = append(list, mustPy(t, []any{"human", "b"})...)
	overwrite := extBytes(2, mustPy(t, []any{"langgraph.types", "Overwrite", map[string]any{"value": []any{}, "type": "__overwrite__"}}))
	for name, tc := range map[string]struct {
		in   any
		want channels.MessageUpdate
	}{
		"one message":        {decodeOne(t, human), channels.MessageUpdate{Messages: []codec.Message{{ID: "h", Type: codec.Human, Content: "a"}}}},
		"a list with a pair": {decodeOne(t, list), channels.MessageUpdate{Messages: []codec.Message{{ID: "h", Type: codec.Human, Content: "a"}, {Type: codec.Human, Content: "b"}}}},
		"a pair":             {[]any{"ai", "x"}, channels.MessageUpdate{Messages: []codec.Message{{Type: codec.AI, Content: "x"}}}},
		"python Overwrite":   {decodeOne(t, overwrite), channels.MessageUpdate{Overwrite: true, Messages: []codec.Message{}}},
		"overwrite map":      {map[string]any{"__overwrite__": []any{"q"}}, channels.MessageUpdate{Overwrite: true, Messages: []codec.Message{{Type: codec.Human, Content: "q"}}}},
	} {
		got, err := p.messageUpdate(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Fatalf("%s (-want +got):\n%s", name, d)
		}
	}
}

// LangGraph's delta message reducer, against add_messages where they
// differ: an unknown removal is ignored, a re-added id moves to the end.
func TestLangGraphDeltaMessages(t *testing.T) {
	m := func(id, c string) codec.Message { return codec.Message{ID: id, Type: codec.Human, Content: c} }
	rm := func(id string) codec.Message { return codec.Message{ID: id, Type: codec.Remove} }
	u := func(ms ...codec.Message) channels.MessageUpdate { return channels.MessageUpdate{Messages: ms} }
	for _, tc := range []struct {
		name   string
		state  []codec.Message
		writes []channels.MessageUpdate
		want   []codec.Message
	}{
		{"append and replace", []codec.Message{m("a", "1")}, []channels.MessageUpdate{u(m("b", "2"), m("a", "1'"))}, []codec.Message{m("a", "1'"), m("b", "2")}},
		{"unknown removal ignored", []codec.Message{m("a", "1")}, []channels.MessageUpdate{u(rm("zz"))}, []codec.Message{m("a", "1")}},
		{"remove then re-add moves to the end", []codec.Message{m("a", "1"), m("b", "2")}, []channels.MessageUpdate{u(rm("a")), u(m("a", "3"))}, []codec.Message{m("b", "2"), m("a", "3")}},
		{"remove all", []codec.Message{m("a", "1")}, []channels.MessageUpdate{u(m("b", "2"), rm(codec.RemoveAll), m("c", "3"))}, []codec.Message{m("c", "3")}},
		{"overwrite resets, later writes apply", []codec.Message{m("a", "1")}, []channels.MessageUpdate{u(m("b", "2")), {Overwrite: true, Messages: []codec.Message{m("x", "0")}}, u(m("y", "9"))}, []codec.Message{m("x", "0"), m("y", "9")}},
		{"no id appends", nil, []channels.MessageUpdate{u(codec.Message{Type: codec.AI, Content: "?"})}, []codec.Message{{Type: codec.AI, Content: "?"}}},
	} {
		got := deltaMessages(tc.state, tc.writes)
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
		// Batch invariance: one write at a time gives the same.
		seq := tc.state
		for _, w := range tc.writes {
			seq = deltaMessages(seq, []channels.MessageUpdate{w})
		}
		if d := cmp.Diff(got, seq); d != "" {
			t.Errorf("%s: one write at a time (-batch +sequential):\n%s", tc.name, d)
		}
	}
}
