package langgraph

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentstate/agentstate/codec"
)

// TestNeutralMessageOneForm: the same ToolMessage as LangGraph Python's
// msgpack and as LangChain.js's constructor JSON shows as one value.
func TestNeutralMessageOneForm(t *testing.T) {
	js := `{"lc":1,"type":"constructor","id":["langchain_core","messages","ToolMessage"],"kwargs":{"id":"t1","content":"21 C","tool_call_id":"c1","status":"success","artifact":{"src":"x"},"additional_kwargs":{},"response_metadata":{}}}`
	jv, err := codec.DecodeJSON([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	gotJS, err := neutralV(jv, false)
	if err != nil {
		t.Fatal(err)
	}
	pyv := &pyRaw{ext: &pyExt{code: extPydanticV2, module: "langchain_core.messages.tool", name: "ToolMessage", arg: map[string]any{
		"content": "21 C", "additional_kwargs": map[string]any{}, "response_metadata": map[string]any{}, "type": "tool", "name": nil,
		"id": "t1", "tool_call_id": "c1", "artifact": map[string]any{"src": "x"}, "status": "success"}}}
	gotPy, err := neutralV(pyv, true)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"type": "tool", "id": "t1", "content": "21 C", "tool_call_id": "c1", "artifact": map[string]any{"src": "x"}}
	old := `{"lc":1,"type":"constructor","id":["langchain","schema","messages","ToolMessage"],"kwargs":{"id":"t1","content":"21 C","tool_call_id":"c1","artifact":{"src":"x"}}}`
	ov, err := codec.DecodeJSON([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	gotOld, err := neutralV(ov, false)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]any{"js": gotJS, "python": gotPy, "python json serde": gotOld} {
		if !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			t.Errorf("%s: %s", name, g)
		}
	}
}

// TestAddMessages: replace by id, RemoveMessage by id (an unknown one
// ignored), REMOVE_ALL_MESSAGES drops what came before it, a message
// without id is appended without one, a pair and a role map are messages.
func TestAddMessages(t *testing.T) {
	m := func(typ, id, content string) map[string]any {
		return map[string]any{"type": typ, "id": id, "content": content}
	}
	state := []any{m("human", "a", "1"), m("ai", "b", "2")}
	got, err := reduce(Messages, state, []viewWrite{
		{v: []any{m("ai", "b", "2'"), m("remove", "a", ""), m("remove", "zz", "")}},
		{v: map[string]any{"role": "user", "content": "3", "id": "c"}},
		{v: []any{"human", "no id"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []any{m("ai", "b", "2'"), m("human", "c", "3"), map[string]any{"type": "human", "id": nil, "content": "no id"}}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		t.Fatalf("got %s", g)
	}
	got, err = reduce(Messages, got, []viewWrite{{v: []any{m("human", "d", "4"), m("remove", codec.RemoveAll, ""), m("human", "e", "5")}}})
	if err != nil || !reflect.DeepEqual(got, []any{m("human", "e", "5")}) {
		t.Fatalf("REMOVE_ALL: %v %v", got, err)
	}
	got, err = reduce(Messages, got, []viewWrite{{v: []any{m("human", "f", "6")}, overwrite: true}})
	if err != nil || !reflect.DeepEqual(got, []any{m("human", "f", "6")}) {
		t.Fatalf("Overwrite: %v %v", got, err)
	}
	if _, err := reduce(Messages, nil, []viewWrite{{v: 42.0}}); err == nil {
		t.Fatal("a number written to a message channel was taken")
	}
}
