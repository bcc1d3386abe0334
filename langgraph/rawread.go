package langgraph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/agentstate/agentstate/codec"
)

// Reading a source in the checkpoint protocol's form: every channel value
// and pending write as its serde type and its exact bytes (codec.Blob), as
// a LangGraph saver's get_tuple hands them to its serde's loads_typed.
// Nothing is decoded but the checkpoint's own fields (id, versions, ...):
// the bytes go to the engine as they are.

// byteThread is one thread of a source in the protocol's form.
type byteThread struct {
	id     string
	cps    []*byteCheckpoint      // in (namespace, id) order
	writes map[cpKey][]*byteWrite // each checkpoint's, in (task_path, task_id, idx) order
}

type byteCheckpoint struct {
	ns, id, parent string
	v              int
	ts             string
	values         map[string]codec.Blob
	versions       map[string]string
	// numeric records the channels whose version is a number in the source
	// (LangGraph.js's): a renamed one stays a number ("3.1").
	numeric  map[string]bool
	seen     map[string]map[string]string
	updated  []string // sorted; nil when absent
	metadata map[string]any
	// sends are the pending_sends of a checkpoint before format 4, which
	// LangGraph moves into the __pregel_tasks channel on read.
	sends [][]byte
	// docType is the serde type of the checkpoint document ("json" or
	// "msgpack"): how sends is joined into a list.
	docType string
}

type byteWrite struct {
	task, path string
	idx        int
	channel    string
	value      codec.Blob
}

// typedBlob is a stored value as the protocol keeps it, decrypted when the
// source's serde was LangGraph's EncryptedSerializer ("msgpack+aes"). data
// is the caller's to give: the blob may share it.
func typedBlob(typ string, data []byte, key []byte) (codec.Blob, error) {
	if base, cipher, ok := strings.Cut(typ, "+"); ok {
		plain, err := decrypt(base, cipher, data, key)
		if err != nil {
			return codec.Blob{}, err
		}
		typ, data = base, plain
	}
	switch typ {
	case "json", "msgpack", "bytes", "bytearray", "null":
	default:
		return codec.Blob{}, fmt.Errorf("serde type %q is not one LangGraph's JsonPlusSerializer writes (json, msgpack, bytes, bytearray, null); its bytes mean nothing without the code that wrote them", typ)
	}
	return codec.Blob{Type: typ, Data: nonNil(data)}, nil
}

// splitCheckpoint reads a SqliteSaver checkpoint document (the whole
// Checkpoint dict in one serde value): its fields, and each channel value's
// bytes as the serde wrote them alone (both serdes encode a dict entry as
// they encode the value by itself). The values share data, which the caller
// gives up; intern, if not nil, shares the strings of the fields (versions
// repeat from checkpoint to checkpoint).
func splitCheckpoint(typ string, data []byte, key []byte, intern map[string]string) (*byteCheckpoint, error) {
	if typ == "" {
		typ = "json" // a type-less row of an old saver, as the messages form reads it
	}
	b, err := typedBlob(typ, data, key)
	if err != nil {
		return nil, err
	}
	switch b.Type {
	case "json":
		return splitJSONCheckpoint(b.Data)
	case "msgpack":
		return splitPyCheckpoint(b.Data, intern)
	}
	return nil, fmt.Errorf("a checkpoint document of serde type %q, not json or msgpack", b.Type)
}

func splitJSONCheckpoint(data []byte) (*byteCheckpoint, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not a JSON checkpoint: %w", err)
	}
	cp := &byteCheckpoint{docType: "json", values: map[string]codec.Blob{}}
	fields := map[string]any{}
	for k, raw := range doc {
		if k == "channel_values" {
			var vals map[string]json.RawMessage
			if !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
				if err := json.Unmarshal(raw, &vals); err != nil {
					return nil, fmt.Errorf("channel_values: %w", err)
				}
			}
			for ch, v := range vals {
				cp.values[ch] = codec.Blob{Type: "json", Data: bytes.Clone(v)}
			}
			continue
		}
		if k == "pending_sends" {
			var sends []json.RawMessage
			if err := json.Unmarshal(raw, &sends); err == nil {
				for _, s := range sends {
					cp.sends = append(cp.sends, bytes.Clone(s))
				}
			}
			continue
		}
		v, err := codec.DecodeJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("checkpoint field %q: %w", k, err)
		}
		fields[k] = v
	}
	cp.fields(fields)
	return cp, nil
}

func splitPyCheckpoint(data []byte, intern map[string]string) (*byteCheckpoint, error) {
	r := &pyReader{b: data, intern: intern}
	n, p, err := r.mapLen(0)
	if err != nil {
		return nil, err
	}
	cp := &byteCheckpoint{docType: "msgpack", values: map[string]codec.Blob{}, numeric: map[string]bool{}}
	fields := map[string]any{}
	for range n {
		k, next, err := r.value(p, 1)
		if err != nil {
			return nil, err
		}
		key, _ := k.(string)
		switch key {
		case "channel_values", "pending_sends":
			if next < len(data) && data[next] == 0xc0 {
				p = next + 1
				continue
			}
			var m int
			var q int
			if key == "channel_values" {
				m, q, err = r.mapLen(next)
			} else {
				m, q, err = r.arrayLen(next)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			for range m {
				var ch string
				if key == "channel_values" {
					ck, q2, err := r.value(q, 2)
					if err != nil {
						return nil, fmt.Errorf("channel_values: %w", err)
					}
					ch, _ = ck.(string)
					q = q2
				}
				end, err := skipPy(data, q, 2)
				if err != nil {
					return nil, &channelError{ch, err}
				}
				if key == "pending_sends" {
					cp.sends = append(cp.sends, data[q:end])
				} else {
					cp.values[ch] = pyBlob(data[q:end])
				}
				q = end
			}
			p = q
		case "channel_versions":
			m, q, err := r.versions(next, cp)
			if err != nil {
				return nil, fmt.Errorf("checkpoint field %q: %w", key, err)
			}
			cp.versions, p = m, q
		case "versions_seen":
			n, q, err := r.mapLen(next)
			if err != nil {
				return nil, fmt.Errorf("checkpoint field %q: %w", key, err)
			}
			cp.seen = make(map[string]map[string]string, n)
			for range n {
				k, q2, err := r.value(q, 2)
				if err != nil {
					return nil, fmt.Errorf("checkpoint field %q: %w", key, err)
				}
				node, _ := k.(string)
				m, q3, err := r.versions(q2, nil)
				if err != nil {
					return nil, fmt.Errorf("checkpoint field %q: %w", key, err)
				}
				cp.seen[node], q = m, q3
			}
			p = q
		default:
			v, next, err := r.value(next, 1)
			if err != nil {
				return nil, fmt.Errorf("checkpoint field %q: %w", key, err)
			}
			fields[key], p = v, next
		}
	}
	versions, seen := cp.versions, cp.seen
	cp.fields(fields)
	if versions != nil {
		cp.versions = versions
	}
	if seen != nil {
		cp.seen = seen
	}
	return cp, nil
}

// versions reads a map of channel versions (strings in LangGraph Python,
// numbers in old files) at pos; numeric versions are noted in cp (if not
// nil).
func (r *pyReader) versions(pos int, cp *byteCheckpoint) (map[string]string, int, error) {
	if pos < len(r.b) && r.b[pos] == 0xc0 {
		return map[string]string{}, pos + 1, nil
	}
	n, p, err := r.mapLen(pos)
	if err != nil {
		return nil, 0, err
	}
	out := make(map[string]string, n)
	for range n {
		k, q, err := r.value(p, 3)
		if err != nil {
			return nil, 0, err
		}
		v, q2, err := r.value(q, 3)
		if err != nil {
			return nil, 0, err
		}
		ch, _ := k.(string)
		if s, ok := v.(string); ok {
			out[ch] = s
		} else {
			out[ch] = versionString(v)
			if cp != nil {
				cp.numeric[ch] = true
			}
		}
		p = q2
	}
	return out, p, nil
}

// pyBlob is one msgpack value as JsonPlusSerializer.dumps_typed would have
// written it alone: None as "null", bytes as "bytes", the rest "msgpack".
func pyBlob(v []byte) codec.Blob {
	switch {
	case len(v) == 1 && v[0] == 0xc0:
		return codec.Blob{Type: "null", Data: []byte{}}
	case len(v) > 0 && v[0] >= 0xc4 && v[0] <= 0xc6:
		size := 1 << (v[0] - 0xc4)
		return codec.Blob{Type: "bytes", Data: v[1+size:]}
	}
	return codec.Blob{Type: "msgpack", Data: v}
}

// fields sets the checkpoint's own fields from the decoded document.
func (cp *byteCheckpoint) fields(doc map[string]any) {
	switch v := doc["v"].(type) {
	case int64:
		cp.v = int(v)
	case uint64:
		cp.v = int(min(v, math.MaxInt32))
	case float64:
		cp.v = int(v)
	}
	cp.ts, _ = doc["ts"].(string)
	cp.versions = map[string]string{}
	if cp.numeric == nil {
		cp.numeric = map[string]bool{}
	}
	for ch, v := range fieldsOf(doc["channel_versions"]) {
		cp.versions[ch] = versionString(v)
		if _, isStr := v.(string); !isStr {
			cp.numeric[ch] = true
		}
	}
	cp.seen = versionsSeen(doc)
	if u, ok := updatedChannels(doc); ok {
		cp.updated = u
	}
}

// arrayLen reads the header of the array at pos.
func (r *pyReader) arrayLen(pos int) (n, next int, err error) {
	if err := r.need(pos, 1); err != nil {
		return 0, 0, err
	}
	c := r.b[pos]
	switch {
	case c >= 0x90 && c <= 0x9f:
		n, next = int(c&0x0f), pos+1
	case c == 0xdc || c == 0xdd:
		size := 2 << (c - 0xdc)
		u, err := r.uint(pos+1, size)
		if err != nil {
			return 0, 0, err
		}
		n, next = int(min(u, 1<<31)), pos+1+size
	default:
		return 0, 0, r.fail(pos, "an array was expected, found byte 0x%02x", c)
	}
	if err := r.need(next, n); err != nil {
		return 0, 0, err
	}
	return n, next, nil
}

// skipPy returns the position after the msgpack value at pos, checking
// only its framing (the bytes are kept, not decoded).
func skipPy(b []byte, pos, depth int) (int, error) {
	r := &pyReader{b: b}
	if depth > maxDepth {
		return 0, r.fail(pos, "nested more than %d deep", maxDepth)
	}
	if err := r.need(pos, 1); err != nil {
		return 0, err
	}
	c := b[pos]
	p := pos + 1
	items := 0
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		return p, nil
	case c >= 0xa0 && c <= 0xbf:
		n := int(c & 0x1f)
		return p + n, r.need(p, n)
	case c >= 0x90 && c <= 0x9f:
		items = int(c & 0x0f)
	case c >= 0x80 && c <= 0x8f:
		items = 2 * int(c&0x0f)
	default:
		switch c {
		case 0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd1, 0xd2, 0xd3:
			size := 1 << ((c - 0xcc) & 3)
			return p + size, r.need(p, size)
		case 0xca:
			return p + 4, r.need(p, 4)
		case 0xcb:
			return p + 8, r.need(p, 8)
		case 0xd9, 0xda, 0xdb, 0xc4, 0xc5, 0xc6:
			first := byte(0xd9)
			if c <= 0xc6 {
				first = 0xc4
			}
			size := 1 << (c - first)
			n, err := r.uint(p, size)
			if err != nil {
				return 0, err
			}
			if n > math.MaxInt32 {
				return 0, r.fail(pos, "a length of %d", n)
			}
			return p + size + int(n), r.need(p+size, int(n))
		case 0xdc, 0xdd, 0xde, 0xdf:
			first := byte(0xdc)
			if c >= 0xde {
				first = 0xde
			}
			size := 2 << (c - first)
			n, err := r.uint(p, size)
			if err != nil {
				return 0, err
			}
			if n > math.MaxInt32 {
				return 0, r.fail(pos, "a length of %d", n)
			}
			items = int(n)
			if c >= 0xde {
				items *= 2
			}
			p += size
		case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
			n := 1 + 1<<(c-0xd4)
			return p + n, r.need(p, n)
		case 0xc7, 0xc8, 0xc9:
			size := 1 << (c - 0xc7)
			n, err := r.uint(p, size)
			if err != nil {
				return 0, err
			}
			if n > math.MaxInt32 {
				return 0, r.fail(pos, "a length of %d", n)
			}
			return p + size + 1 + int(n), r.need(p+size, 1+int(n))
		default:
			return 0, r.fail(pos, "byte 0x%02x starts no msgpack value", c)
		}
	}
	if err := r.need(p, items); err != nil {
		return 0, err
	}
	for range items {
		next, err := skipPy(b, p, depth+1)
		if err != nil {
			return 0, err
		}
		p = next
	}
	return p, nil
}

// joinList is a list of values of one serde as that serde writes the list:
// how LangGraph's migration of pending_sends stores them in one channel.
func joinList(docType string, items [][]byte) codec.Blob {
	if docType == "json" {
		return codec.Blob{Type: "json", Data: append(append([]byte("["), bytes.Join(items, []byte(","))...), ']')}
	}
	out := appendHeader(nil, 0x90, 0xdc, len(items), false)
	for _, it := range items {
		out = append(out, it...)
	}
	return codec.Blob{Type: "msgpack", Data: out}
}
