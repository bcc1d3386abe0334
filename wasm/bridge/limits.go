//go:build js || (wasip1 && hostsqlite)

package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/agentstate/agentstate/engine"
)

// rawJSON is a JSON value of a request kept as the request's own bytes, not
// copied (json.RawMessage is a copy: 100 MB more for a 100 MB store value).
// Only for requests read with decodeInPlace, whose input outlives the call.
type rawJSON []byte

func (r *rawJSON) UnmarshalJSON(b []byte) error {
	*r = b
	return nil
}

// decodeInPlace is decodeJSON for requests that may carry large values:
// json.Unmarshal reads the request where it is (json.Decoder copies it
// into its own buffer first), and rawJSON fields are slices of it. Numbers
// in `any` fields would be float64, so such requests keep those fields as
// rawJSON and decode them with decodeJSON.
func decodeInPlace(b []byte, v any) error {
	if len(b) == 0 {
		b = []byte("{}")
	}
	if err := json.Unmarshal(b, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return errArg("request: %s must be %s, not a JSON %s", te.Field, jsonKind(te.Type), te.Value)
		}
		return errArg("request: %v", err)
	}
	return nil
}

// checkValueJSON refuses a value the engine would refuse past
// engine.MaxValueBytes of msgpack, before it is decoded: decoding and
// encoding it first made a refused 100 MB store value cost 5-6 times its
// size in the module's memory, which never shrinks (docs/memory.md).
// Values whose JSON is within the limit are left to the engine's own check.
func checkValueJSON(what string, raw []byte) error {
	if len(raw) <= engine.MaxValueBytes {
		return nil
	}
	if packedAtLeast(raw, engine.MaxValueBytes) > engine.MaxValueBytes {
		return fmt.Errorf("%w: %s encodes to more than MaxValueBytes (%d bytes)", engine.ErrTooLarge, what, engine.MaxValueBytes)
	}
	return nil
}

// packedAtLeast is a lower bound of the bytes of msgpack the valid JSON
// value raw encodes to: each string's UTF-8 bytes plus one, one byte for
// every other value, map and list. It stops counting past limit.
func packedAtLeast(raw []byte, limit int) int {
	n := 0
	for i := 0; i < len(raw) && n <= limit; {
		switch c := raw[i]; {
		case c == '"':
			n++
			i++
			q := bytes.IndexByte(raw[i:], '"')
			if q < 0 {
				return n + len(raw) - i
			}
			q += i
			for {
				k := bytes.IndexByte(raw[i:q], '\\')
				if k < 0 {
					n += q - i
					i = q + 1
					break
				}
				n += k
				i += k
				if i+1 < len(raw) && raw[i+1] == 'u' {
					n += utf8LenOfEscape(raw[i+2 : min(i+6, len(raw))])
					i += 6
				} else {
					n++
					i += 2
				}
				if i > q { // the escape was \" : the string goes on
					r := bytes.IndexByte(raw[min(i, len(raw)):], '"')
					if r < 0 {
						return n
					}
					q = i + r
				}
			}
		case c == '{' || c == '[' || c == '-' || c == 't' || c == 'f' || c == 'n' || (c >= '0' && c <= '9'):
			n++
			i++
			for i < len(raw) && c != '{' && c != '[' && !endsToken(raw[i]) {
				i++
			}
		default:
			i++
		}
	}
	return n
}

func endsToken(c byte) bool {
	return c == ',' || c == ']' || c == '}' || c == ':' || c == ' ' || c == '\t' || c == '\r' || c == '\n'
}

// quoteShort quotes s for a message, cut to its first 64 bytes.
func quoteShort(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "..."
	}
	return strconv.Quote(s)
}

// utf8LenOfEscape is at least the UTF-8 bytes of the character a \uXXXX
// escape (its 4 hex digits given) stands for; a surrogate counts 2, half of
// the 4 bytes of its pair (a lone one becomes U+FFFD, 3 bytes).
func utf8LenOfEscape(hex []byte) int {
	v := 0
	for _, h := range hex {
		switch {
		case h >= '0' && h <= '9':
			v = v<<4 | int(h-'0')
		case h >= 'a' && h <= 'f':
			v = v<<4 | int(h-'a'+10)
		case h >= 'A' && h <= 'F':
			v = v<<4 | int(h-'A'+10)
		default:
			return 1
		}
	}
	switch {
	case v < 0x80:
		return 1
	case v < 0x800, v >= 0xD800 && v < 0xE000:
		return 2
	}
	return 3
}
