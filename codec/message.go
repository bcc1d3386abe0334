package codec

import (
	"fmt"
)

// Message roles, as LangChain names them.
const (
	Human  = "human"
	AI     = "ai"
	System = "system"
	Tool   = "tool"
	// Remove is a marker, not a message: written to a message channel it
	// deletes the message with the same ID (or all messages, see RemoveAll).
	Remove = "remove"
)

// RemoveAll is the ID of a remove marker that drops every message before it.
const RemoveAll = "__remove_all__"

// Message is one chat message as agents exchange them. Content is either a
// string or a list of content blocks (maps with at least a "type" key), so
// that multimodal messages survive a round trip unchanged.
type Message struct {
	ID               string         `msgpack:"id" json:"id"`
	Type             string         `msgpack:"type" json:"type"`
	Content          any            `msgpack:"content" json:"content"`
	Name             string         `msgpack:"name,omitempty" json:"name,omitempty"`
	ToolCalls        []ToolCall     `msgpack:"tool_calls,omitempty" json:"tool_calls,omitempty"`
	ToolCallID       string         `msgpack:"tool_call_id,omitempty" json:"tool_call_id,omitempty"`
	AdditionalKwargs map[string]any `msgpack:"additional_kwargs,omitempty" json:"additional_kwargs,omitempty"`
	ResponseMetadata map[string]any `msgpack:"response_metadata,omitempty" json:"response_metadata,omitempty"`
	UsageMetadata    *UsageMetadata `msgpack:"usage_metadata,omitempty" json:"usage_metadata,omitempty"`
}

// ToolCall is a request by an AI message to run a tool.
type ToolCall struct {
	ID   string         `msgpack:"id" json:"id"`
	Name string         `msgpack:"name" json:"name"`
	Args map[string]any `msgpack:"args,omitempty" json:"args,omitempty"`
}

// UsageMetadata counts the tokens one model call used.
type UsageMetadata struct {
	InputTokens  int64 `msgpack:"input_tokens" json:"input_tokens"`
	OutputTokens int64 `msgpack:"output_tokens" json:"output_tokens"`
	TotalTokens  int64 `msgpack:"total_tokens" json:"total_tokens"`
}

// Text returns the message's text: the string content, or the "text" of
// every text block joined in order.
func (m Message) Text() string {
	switch c := m.Content.(type) {
	case string:
		return c
	case []any:
		var s string
		for _, b := range c {
			if blk, ok := b.(map[string]any); ok && blk["type"] == "text" {
				if t, ok := blk["text"].(string); ok {
					s += t
				}
			}
		}
		return s
	}
	return ""
}

// Validate checks the shape of a message: a known type, content that is a
// string or a list of blocks, and a tool_call_id on tool messages.
func (m Message) Validate() error {
	switch m.Type {
	case Human, AI, System:
	case Tool:
		if m.ToolCallID == "" {
			return fmt.Errorf("%w: tool message %q without tool_call_id", ErrCorrupt, m.ID)
		}
	case Remove:
		if m.ID == "" {
			return fmt.Errorf("%w: remove marker without id", ErrCorrupt)
		}
	default:
		return fmt.Errorf("%w: unknown message type %q", ErrCorrupt, m.Type)
	}
	switch c := m.Content.(type) {
	case nil, string:
	case []any:
		for i, b := range c {
			blk, ok := b.(map[string]any)
			if !ok {
				return fmt.Errorf("%w: message %q content block %d is %T, not an object", ErrCorrupt, m.ID, i, b)
			}
			if _, ok := blk["type"].(string); !ok {
				return fmt.Errorf("%w: message %q content block %d has no type", ErrCorrupt, m.ID, i)
			}
		}
	default:
		return fmt.Errorf("%w: message %q content is %T, not a string or a list of blocks", ErrCorrupt, m.ID, m.Content)
	}
	return nil
}

// DecodeMessages decodes and validates a list of messages written by
// Marshal.
func DecodeMessages(data []byte) ([]Message, error) {
	var ms []Message
	if err := Unmarshal(data, &ms); err != nil {
		return nil, err
	}
	for _, m := range ms {
		if err := m.Validate(); err != nil {
			return nil, err
		}
	}
	return ms, nil
}

// DecodeMessage decodes and validates one message written by Marshal.
func DecodeMessage(data []byte) (Message, error) {
	var m Message
	if err := Unmarshal(data, &m); err != nil {
		return Message{}, err
	}
	if err := m.Validate(); err != nil {
		return Message{}, err
	}
	return m, nil
}
