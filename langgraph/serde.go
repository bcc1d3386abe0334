package langgraph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentstate/agentstate/codec"
)

// LangGraph's serde names each stored value's encoding with a type string
// (JsonPlusSerializer.dumps_typed, in both LangGraphs). decodeTyped reads
// the ones the savers write:
//
//   - "json": LangGraph.js's values, and LangGraph Python's before it moved
//     to msgpack; integers decode as int64 (uint64 above), other numbers as
//     float64, the types the engine's codec gives;
//   - "msgpack": LangGraph Python's (msgpack.go);
//   - "bytes", "bytearray": raw bytes, kept as a blob of that type;
//   - "null": Python's None.
//
// Anything else ("pickle", an encrypted "msgpack+aes", a custom serde) is
// refused by name: its bytes mean nothing without code this build lacks.
func decodeTyped(typ string, data []byte, memo extMemo) (any, error) {
	switch typ {
	case "json", "":
		v, err := codec.DecodeJSON(data)
		if err != nil {
			return nil, fmt.Errorf("not JSON: %w", err)
		}
		return v, nil
	case "msgpack":
		return decodePyMemo(data, memo)
	case "bytes", "bytearray":
		return codec.Blob{Type: typ, Data: bytes.Clone(nonNil(data))}, nil
	case "null":
		return nil, nil
	}
	if strings.HasPrefix(typ, "msgpack+") || strings.HasPrefix(typ, "json+") {
		return nil, fmt.Errorf("serde type %q is encrypted (EncryptedSerializer); decrypt the file first", typ)
	}
	return nil, fmt.Errorf("serde type %q is not one this build reads (json, msgpack, bytes, bytearray, null)", typ)
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// versionString is a channel version as a string: LangGraph Python's are
// strings already, LangGraph.js's numbers.
func versionString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
