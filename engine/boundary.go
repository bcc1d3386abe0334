package engine

import (
	"strings"

	"github.com/agentstate/agentstate/codec"
)

// The API boundary (contract §6): what a server may hand a browser. DeerFlow's
// ViewImageMiddleware puts base64 images into messages hidden from the UI so
// the model can see them; serialising state for the UI must not ship those
// megabytes, nor LangGraph's internal channels.

// HideFromUIKey is the additional_kwargs flag that marks a message hidden
// from the UI.
const HideFromUIKey = "hide_from_ui"

// pregelPrefix starts the names of LangGraph's internal channels.
const pregelPrefix = "__pregel_"

// SafeForBrowser returns a copy of state (channel name -> value) for display:
// channels named __pregel_* are left out, and in every message marked
// hide_from_ui in its additional_kwargs, content blocks holding an inline
// data: image are dropped (https images, text blocks and the order of what
// stays are kept). Messages may be maps or codec.Message values. The input is
// never modified, and the copy shares no map or slice with it.
func SafeForBrowser(state map[string]any) map[string]any {
	if state == nil {
		return nil
	}
	out := make(map[string]any, len(state))
	for k, v := range state {
		if strings.HasPrefix(k, pregelPrefix) {
			continue
		}
		out[k] = boundaryValue(v)
	}
	return out
}

// boundaryValue deep-copies v, stripping hidden inline images from any
// message it meets.
func boundaryValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if isMessageMap(x) && hiddenKwargs(x["additional_kwargs"]) {
			m := copyValue(x).(map[string]any)
			if blocks, ok := m["content"].([]any); ok {
				m["content"] = withoutDataImages(blocks)
			}
			return m
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = boundaryValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = boundaryValue(e)
		}
		return out
	case []map[string]any:
		out := make([]map[string]any, len(x))
		for i, e := range x {
			out[i] = boundaryValue(e).(map[string]any)
		}
		return out
	case codec.Message:
		return boundaryMessage(x)
	case *codec.Message:
		if x == nil {
			return x
		}
		m := boundaryMessage(*x)
		return &m
	case []codec.Message:
		out := make([]codec.Message, len(x))
		for i, m := range x {
			out[i] = boundaryMessage(m)
		}
		return out
	}
	return copyValue(v)
}

func boundaryMessage(m codec.Message) codec.Message {
	out := m
	out.Content = copyValue(m.Content)
	out.AdditionalKwargs, _ = copyValue(m.AdditionalKwargs).(map[string]any)
	out.ResponseMetadata, _ = copyValue(m.ResponseMetadata).(map[string]any)
	if m.ToolCalls != nil {
		out.ToolCalls = make([]codec.ToolCall, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			tc.Args, _ = copyValue(tc.Args).(map[string]any)
			out.ToolCalls[i] = tc
		}
	}
	if m.UsageMetadata != nil {
		u := *m.UsageMetadata
		out.UsageMetadata = &u
	}
	if blocks, ok := out.Content.([]any); ok && hiddenKwargs(m.AdditionalKwargs) {
		out.Content = withoutDataImages(blocks)
	}
	return out
}

// isMessageMap recognises a serialised LangChain message: a map with a
// string "type" and a "content".
func isMessageMap(m map[string]any) bool {
	_, typed := m["type"].(string)
	_, hasContent := m["content"]
	return typed && hasContent
}

func hiddenKwargs(v any) bool {
	kw, ok := v.(map[string]any)
	return ok && kw[HideFromUIKey] == true
}

// withoutDataImages returns the blocks that are not inline images. The
// blocks are already copies.
func withoutDataImages(blocks []any) []any {
	out := make([]any, 0, len(blocks))
	for _, b := range blocks {
		if isDataImage(b) {
			continue
		}
		out = append(out, b)
	}
	return out
}

// isDataImage recognises the image block shapes LangChain uses with inline
// data: {"type": "image_url", "image_url": {"url": "data:..."}} (or the
// URL as a plain string), {"type": "image", "url": "data:..."}, and base64
// source blocks {"type": "image", "source_type": "base64", ...} /
// {"type": "image", "base64": ...}.
func isDataImage(b any) bool {
	blk, ok := b.(map[string]any)
	if !ok {
		return false
	}
	switch blk["type"] {
	case "image_url":
		switch u := blk["image_url"].(type) {
		case string:
			return isDataURL(u)
		case map[string]any:
			s, _ := u["url"].(string)
			return isDataURL(s)
		}
	case "image":
		if s, ok := blk["url"].(string); ok && isDataURL(s) {
			return true
		}
		if blk["source_type"] == "base64" {
			return true
		}
		_, inline := blk["base64"]
		return inline
	}
	return false
}

func isDataURL(s string) bool {
	return len(s) >= 5 && strings.EqualFold(s[:5], "data:")
}

// copyValue deep-copies the containers of a decoded value.
func copyValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return x
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = copyValue(e)
		}
		return out
	case []any:
		if x == nil {
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyValue(e)
		}
		return out
	case []map[string]any:
		out := make([]map[string]any, len(x))
		for i, e := range x {
			out[i], _ = copyValue(e).(map[string]any)
		}
		return out
	case []string:
		return append([]string(nil), x...)
	case []byte:
		return append([]byte(nil), x...)
	case codec.Message, *codec.Message, []codec.Message:
		return boundaryValue(v)
	}
	return v
}
