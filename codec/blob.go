package codec

import "fmt"

// Blob is a payload the engine stores without reading it: a type tag chosen
// by the caller (LangGraph's serde names such as "json" or "msgpack", or one
// of the Type* constants below) and the bytes themselves.
type Blob struct {
	Type string `msgpack:"t" json:"type"`
	Data []byte `msgpack:"d" json:"data"`
}

// Type tags the engine itself understands.
const (
	// TypeMsgpack marks bytes written by Marshal.
	TypeMsgpack = "agentstate/msgpack"
	// TypeEmpty marks a channel that exists but holds no value.
	TypeEmpty = "empty"
)

// MaxTypeLen bounds a blob's type tag; longer tags are rejected, not cut.
const MaxTypeLen = 64

// Validate reports a blob whose tag is empty or too long.
func (b Blob) Validate() error {
	if b.Type == "" {
		return fmt.Errorf("%w: blob without a type tag", ErrCorrupt)
	}
	if len(b.Type) > MaxTypeLen {
		return fmt.Errorf("%w: blob type tag of %d bytes (max %d)", ErrCorrupt, len(b.Type), MaxTypeLen)
	}
	return nil
}

// Encode returns a Blob holding Marshal(v).
func Encode(v any) (Blob, error) {
	data, err := Marshal(v)
	if err != nil {
		return Blob{}, err
	}
	return Blob{Type: TypeMsgpack, Data: data}, nil
}

// Decode unmarshals a blob written by Encode into v. A blob of another type
// is an error matching ErrCorrupt, because its bytes are not ours to read.
func (b Blob) Decode(v any) error {
	if b.Type != TypeMsgpack {
		return fmt.Errorf("%w: blob of type %q is not %q", ErrCorrupt, b.Type, TypeMsgpack)
	}
	return Unmarshal(b.Data, v)
}
