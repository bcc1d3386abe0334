package codec

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// A Message is stored as a msgpack array in field order, [id, type, content,
// name, tool_calls, tool_call_id, additional_kwargs, response_metadata,
// usage_metadata], with trailing empty fields left out. Message lists are
// most of what the engine stores; field names in every message would cost
// about 4% of a typical file and reflection most of the encoding time.
const messageFields = 9

var (
	_ msgpack.CustomEncoder = (*Message)(nil)
	_ msgpack.CustomDecoder = (*Message)(nil)
)

// EncodeMsgpack implements msgpack.CustomEncoder.
func (m *Message) EncodeMsgpack(enc *msgpack.Encoder) error {
	n := messageFields
	for n > 0 && m.emptyField(n-1) {
		n--
	}
	if err := enc.EncodeArrayLen(n); err != nil {
		return err
	}
	for i := range n {
		var err error
		switch i {
		case 0:
			err = enc.EncodeString(m.ID)
		case 1:
			err = enc.EncodeString(m.Type)
		case 2:
			if s, ok := m.Content.(string); ok {
				err = enc.EncodeString(s)
			} else {
				err = enc.Encode(m.Content)
			}
		case 3:
			err = enc.EncodeString(m.Name)
		case 4:
			err = encodeOrNil(enc, len(m.ToolCalls) == 0, m.ToolCalls)
		case 5:
			err = enc.EncodeString(m.ToolCallID)
		case 6:
			err = encodeOrNil(enc, len(m.AdditionalKwargs) == 0, m.AdditionalKwargs)
		case 7:
			err = encodeOrNil(enc, len(m.ResponseMetadata) == 0, m.ResponseMetadata)
		case 8:
			err = encodeOrNil(enc, m.UsageMetadata == nil, m.UsageMetadata)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func encodeOrNil(enc *msgpack.Encoder, empty bool, v any) error {
	if empty {
		return enc.EncodeNil()
	}
	return enc.Encode(v)
}

func (m *Message) emptyField(i int) bool {
	switch i {
	case 0:
		return m.ID == ""
	case 1:
		return m.Type == ""
	case 2:
		return m.Content == nil
	case 3:
		return m.Name == ""
	case 4:
		return len(m.ToolCalls) == 0
	case 5:
		return m.ToolCallID == ""
	case 6:
		return len(m.AdditionalKwargs) == 0
	case 7:
		return len(m.ResponseMetadata) == 0
	}
	return m.UsageMetadata == nil
}

// DecodeMsgpack implements msgpack.CustomDecoder. Fields past the ones this
// build knows are skipped, so a newer writer's extra fields do not break it.
func (m *Message) DecodeMsgpack(dec *msgpack.Decoder) error {
	*m = Message{}
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("message is nil")
	}
	for i := range n {
		if i >= messageFields {
			if err := dec.Skip(); err != nil {
				return err
			}
			continue
		}
		if err := m.decodeField(dec, i); err != nil {
			return fmt.Errorf("message field %d: %w", i, err)
		}
	}
	return nil
}

func (m *Message) decodeField(dec *msgpack.Decoder, i int) error {
	var err error
	switch i {
	case 0:
		m.ID, err = dec.DecodeString()
	case 1:
		m.Type, err = dec.DecodeString()
	case 2:
		var c byte
		if c, err = dec.PeekCode(); err != nil {
			return err
		}
		if msgpcode.IsString(c) {
			m.Content, err = dec.DecodeString()
		} else {
			m.Content, err = dec.DecodeInterfaceLoose()
		}
	case 3:
		m.Name, err = dec.DecodeString()
	case 4:
		err = dec.Decode(&m.ToolCalls)
	case 5:
		m.ToolCallID, err = dec.DecodeString()
	case 6:
		err = decodeMap(dec, &m.AdditionalKwargs)
	case 7:
		err = decodeMap(dec, &m.ResponseMetadata)
	case 8:
		err = dec.Decode(&m.UsageMetadata)
	}
	return err
}

func decodeMap(dec *msgpack.Decoder, dst *map[string]any) error {
	v, err := dec.DecodeInterfaceLoose()
	if err != nil || v == nil {
		return err
	}
	mm, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%T is not a map", v)
	}
	*dst = mm
	return nil
}
