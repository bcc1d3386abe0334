package engine

import (
	"testing"

	"github.com/agentstate/agentstate/codec"
	"github.com/google/go-cmp/cmp"
)

func boundaryInput() map[string]any {
	hidden := map[string]any{
		"id": "m2", "type": "human",
		"additional_kwargs": map[string]any{"hide_from_ui": true},
		"content": []any{
			map[string]any{"type": "text", "text": "here is the image"},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,AAAA"}},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://example.com/a.png"}},
			map[string]any{"type": "image_url", "image_url": "DATA:image/jpeg;base64,BBBB"},
			map[string]any{"type": "image", "url": "data:image/gif;base64,CCCC"},
			map[string]any{"type": "image", "source_type": "base64", "data": "DDDD", "mime_type": "image/png"},
			map[string]any{"type": "image", "base64": "EEEE"},
			map[string]any{"type": "image", "url": "https://example.com/b.png"},
			map[string]any{"type": "text", "text": "after"},
		},
	}
	visible := map[string]any{
		"id": "m1", "type": "ai",
		"content": []any{
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,KEEP"}},
		},
	}
	return map[string]any{
		"messages":             []any{visible, hidden, map[string]any{"id": "m3", "type": "ai", "content": "plain", "additional_kwargs": map[string]any{"hide_from_ui": true}}},
		"title":                "a chat",
		"__pregel_tasks":       []any{"internal"},
		"__pregel_scratchpad":  map[string]any{"x": 1},
		"__not_pregel":         "kept",
		"nested":               map[string]any{"inner": []any{hidden}},
		"typed":                []codec.Message{{ID: "t1", Type: "human", AdditionalKwargs: map[string]any{"hide_from_ui": true}, Content: []any{map[string]any{"type": "image", "url": "data:x"}, map[string]any{"type": "text", "text": "hi"}}}},
		"typed_visible":        codec.Message{ID: "t2", Type: "ai", Content: []any{map[string]any{"type": "image", "url": "data:y"}}},
		"hide_flag_not_true":   []any{map[string]any{"type": "ai", "content": []any{map[string]any{"type": "image", "url": "data:z"}}, "additional_kwargs": map[string]any{"hide_from_ui": "yes"}}},
		"not_a_message_no_key": map[string]any{"content": []any{map[string]any{"type": "image", "url": "data:w"}}, "additional_kwargs": map[string]any{"hide_from_ui": true}},
	}
}

func TestBoundarySafeForBrowser(t *testing.T) {
	in := boundaryInput()
	pristine := boundaryInput()
	got := SafeForBrowser(in)

	strippedHidden := map[string]any{
		"id": "m2", "type": "human",
		"additional_kwargs": map[string]any{"hide_from_ui": true},
		"content": []any{
			map[string]any{"type": "text", "text": "here is the image"},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://example.com/a.png"}},
			map[string]any{"type": "image", "url": "https://example.com/b.png"},
			map[string]any{"type": "text", "text": "after"},
		},
	}
	want := map[string]any{
		"messages":     []any{pristine["messages"].([]any)[0], strippedHidden, pristine["messages"].([]any)[2]},
		"title":        "a chat",
		"__not_pregel": "kept",
		"nested":       map[string]any{"inner": []any{strippedHidden}},
		"typed": []codec.Message{{ID: "t1", Type: "human", AdditionalKwargs: map[string]any{"hide_from_ui": true},
			Content: []any{map[string]any{"type": "text", "text": "hi"}}}},
		"typed_visible":        pristine["typed_visible"],
		"hide_flag_not_true":   pristine["hide_flag_not_true"],
		"not_a_message_no_key": pristine["not_a_message_no_key"],
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("SafeForBrowser (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(pristine, in); diff != "" {
		t.Fatalf("the input changed (-before +after):\n%s", diff)
	}
	// The copy shares nothing with the input: changing it leaves the input alone.
	got["messages"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["type"] = "changed"
	got["nested"].(map[string]any)["inner"] = nil
	got["typed"].([]codec.Message)[0].AdditionalKwargs["hide_from_ui"] = false
	if diff := cmp.Diff(pristine, in); diff != "" {
		t.Fatalf("changing the copy changed the input (-before +after):\n%s", diff)
	}
	if SafeForBrowser(nil) != nil {
		t.Fatal("nil state gives non-nil")
	}
}
