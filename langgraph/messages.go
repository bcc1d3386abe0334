package langgraph

import (
	"fmt"
	"maps"
	"strings"

	"github.com/agentstate/agentstate/codec"
)

// LangChain messages as LangGraph serialises them, mapped to codec.Message:
//
//   - LangGraph.js ("json" serde, and LangGraph Python before msgpack): a
//     constructor object {"lc": 1, "type": "constructor", "id": [...,
//     "AIMessage"], "kwargs": {...}};
//   - LangGraph Python ("msgpack" serde): extension 5 [module, class,
//     model_dump(), ...] with module langchain_core.messages.*;
//   - in writes, what a node returned: a plain {"role"|"type", "content"}
//     map, a [role, content] pair, a string (a human message).
//
// Fields a codec.Message has no place for are dropped and counted by name
// ("ToolMessage.artifact") when they hold something; a kept field holding a
// value the engine's values cannot hold (a datetime in additional_kwargs)
// makes the message unsupported rather than silently changed.

// messageClasses maps LangChain's class names to message types.
var messageClasses = map[string]string{
	"HumanMessage": codec.Human, "HumanMessageChunk": codec.Human,
	"AIMessage": codec.AI, "AIMessageChunk": codec.AI,
	"SystemMessage": codec.System, "SystemMessageChunk": codec.System,
	"ToolMessage": codec.Tool, "ToolMessageChunk": codec.Tool,
	"RemoveMessage": codec.Remove,
}

var messageRoles = map[string]string{
	"human": codec.Human, "user": codec.Human,
	"ai": codec.AI, "assistant": codec.AI,
	"system": codec.System, "developer": codec.System,
	"tool": codec.Tool, "remove": codec.Remove,
}

// listItems returns the elements of a list, JSON or Python.
func listItems(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case *pyRaw:
		if x.items != nil {
			return x.items, true
		}
	}
	return nil, false
}

// overwriteOf recognises a write that replaces a reducer channel's value:
// LangGraph Python's Overwrite dataclass (extension 2), and the map
// {"__overwrite__": value} both LangGraphs accept.
func overwriteOf(v any) (inner any, ok bool) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			inner, ok = x["__overwrite__"]
		}
	case *pyRaw:
		if x.ext != nil && x.ext.code == extConstructorKwArgs && x.ext.module == "langgraph.types" && x.ext.name == "Overwrite" {
			f := fieldsOf(x.ext.arg)
			return f["value"], f != nil
		}
		if x.fields != nil && len(x.fields) == 1 {
			inner, ok = x.fields["__overwrite__"]
		}
	}
	return inner, ok
}

// fieldsOf returns a map's entries, JSON or Python.
func fieldsOf(v any) map[string]any {
	switch x := v.(type) {
	case map[string]any:
		return x
	case *pyRaw:
		return x.fields
	}
	return nil
}

// isMessagePair recognises a [role, content] pair: a known role and a
// string (a list of two plain strings is two human messages otherwise).
func isMessagePair(l []any) bool {
	if len(l) != 2 {
		return false
	}
	role, a := l[0].(string)
	_, b := l[1].(string)
	_, known := messageRoles[role]
	return a && b && known
}

// message converts one message in any of the forms above.
func message(v any, drops map[string]int) (codec.Message, error) {
	switch x := v.(type) {
	case string:
		return codec.Message{Type: codec.Human, Content: x}, nil
	case []any:
		if isMessagePair(x) {
			return codec.Message{Type: messageRoles[x[0].(string)], Content: x[1]}, nil
		}
		return codec.Message{}, fmt.Errorf("a list is not a message")
	case *pyRaw:
		e := x.ext
		if e == nil || e.code != extPydanticV2 || !strings.HasPrefix(e.module, "langchain_core.messages") {
			return codec.Message{}, fmt.Errorf("%s is not a LangChain message", describe(x))
		}
		t, ok := messageClasses[e.name]
		if !ok {
			return codec.Message{}, fmt.Errorf("LangChain class %q is not a message type agentstate stores", e.name)
		}
		kw := fieldsOf(e.arg)
		if kw == nil {
			return codec.Message{}, fmt.Errorf("%s holds %s, not its fields", e.class(), describe(e.arg))
		}
		return messageFields(e.name, t, kw, drops)
	case map[string]any:
		if lc, _ := x["lc"].(int64); lc == 1 && x["type"] == "constructor" {
			ids, _ := x["id"].([]any)
			class := ""
			if len(ids) > 0 {
				class, _ = ids[len(ids)-1].(string)
			}
			t, ok := messageClasses[class]
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
		t, ok := messageRoles[role]
		if !ok {
			return codec.Message{}, fmt.Errorf("a map with role/type %q is not a message", role)
		}
		rest := maps.Clone(x)
		delete(rest, "role")
		delete(rest, "type")
		return messageFields(role, t, rest, drops)
	}
	return codec.Message{}, fmt.Errorf("%s is not a message", describe(v))
}

// plainField refuses a kept field whose value the engine cannot hold.
func plainField(class, k string, v any) error {
	if raw, ok := v.(*pyRaw); ok {
		return fmt.Errorf("%s.%s holds %s, which an agentstate message cannot hold", class, k, raw.why)
	}
	return nil
}

func messageFields(class, typ string, kw map[string]any, drops map[string]int) (codec.Message, error) {
	m := codec.Message{Type: typ}
	for k, v := range kw {
		if isUndefined(v) {
			continue
		}
		switch k {
		case "type":
			// The class already said it (Python's model_dump repeats it).
		case "id":
			m.ID, _ = v.(string)
		case "content":
			if typ == codec.Remove {
				continue
			}
			if err := plainField(class, k, v); err != nil {
				return m, err
			}
			m.Content = v
		case "name":
			m.Name, _ = v.(string)
		case "tool_call_id":
			m.ToolCallID, _ = v.(string)
		case "additional_kwargs", "response_metadata":
			if err := plainField(class, k, v); err != nil {
				return m, err
			}
			if mm, ok := v.(map[string]any); ok && len(mm) > 0 {
				if k == "additional_kwargs" {
					m.AdditionalKwargs = mm
				} else {
					m.ResponseMetadata = mm
				}
			}
		case "tool_calls":
			if err := plainField(class, k, v); err != nil {
				return m, err
			}
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
			u := fieldsOf(v)
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
