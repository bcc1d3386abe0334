//go:build js || (wasip1 && hostsqlite)

package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
)

// What crosses the bridge: JSON, with typed blobs as {"t": type, "b": n}
// where n indexes the byte arrays sent beside the JSON. LangGraph.js
// serialises its own values (serde.dumpsTyped), so the engine stores those
// bytes unread and returns them as they came.

type wBlob struct {
	T string `json:"t"`
	B int    `json:"b"`
}

type wCheckpoint struct {
	V        int                          `json:"v"`
	ID       string                       `json:"id"`
	TS       string                       `json:"ts"`
	Values   map[string]wBlob             `json:"values"`
	Versions map[string]string            `json:"versions"`
	Seen     map[string]map[string]string `json:"seen"`
	Updated  *[]string                    `json:"updated,omitempty"`
}

type wWrite struct {
	TaskID   string `json:"taskId"`
	Channel  string `json:"channel"`
	Value    wBlob  `json:"value"`
	TaskPath string `json:"taskPath"`
	Idx      int    `json:"idx"`
}

type wTuple struct {
	Config     engine.Config  `json:"config"`
	Checkpoint wCheckpoint    `json:"checkpoint"`
	Metadata   map[string]any `json:"metadata"`
	Parent     *engine.Config `json:"parent,omitempty"`
	Writes     []wWrite       `json:"writes"`
}

type wHistory struct {
	Seed   *wBlob   `json:"seed,omitempty"`
	Writes []wWrite `json:"writes"`
}

// in resolves blob references of a request.
type in struct{ bufs [][]byte }

func (i in) blob(w wBlob) (codec.Blob, error) {
	if w.B < 0 || w.B >= len(i.bufs) {
		return codec.Blob{}, errArg("blob reference %d out of range (%d buffers)", w.B, len(i.bufs))
	}
	return codec.Blob{Type: w.T, Data: i.bufs[w.B]}, nil
}

func (o *Out) blob(b codec.Blob) wBlob { return wBlob{T: b.Type, B: o.add(b.Data)} }

func (o *Out) writes(ws []engine.PendingWrite) []wWrite {
	res := make([]wWrite, len(ws))
	for i, w := range ws {
		res[i] = wWrite{TaskID: w.TaskID, Channel: w.Channel, Value: o.blob(w.Value), TaskPath: w.TaskPath, Idx: w.Idx}
	}
	return res
}

func (o *Out) histories(hist map[string]engine.History) map[string]wHistory {
	res := make(map[string]wHistory, len(hist))
	for ch, hh := range hist {
		w := wHistory{Writes: o.writes(hh.Writes)}
		if hh.Seed != nil {
			s := o.blob(*hh.Seed)
			w.Seed = &s
		}
		res[ch] = w
	}
	return res
}

func (o *Out) tuple(t engine.Tuple) wTuple {
	cp := t.Checkpoint
	values := make(map[string]wBlob, len(cp.ChannelValues))
	for ch, b := range cp.ChannelValues {
		values[ch] = o.blob(b)
	}
	w := wTuple{
		Config: t.Config,
		Checkpoint: wCheckpoint{
			V: cp.V, ID: cp.ID, TS: cp.TS, Values: values,
			Versions: cp.ChannelVersions, Seen: cp.VersionsSeen,
		},
		Metadata: t.Metadata,
		Parent:   t.ParentConfig,
		Writes:   o.writes(t.PendingWrites),
	}
	if cp.UpdatedChannels != nil {
		u := cp.UpdatedChannels
		w.Checkpoint.Updated = &u
	}
	return w
}

// decodeJSON decodes a request. Numbers in free-form maps (metadata,
// filters, store values) become int64 when they are integers and float64
// otherwise, the same on every path, so equality filters match what was
// stored.
func decodeJSON(b []byte, v any) error {
	if len(b) == 0 {
		b = []byte("{}")
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			// Say which argument, in the request's own names, instead of
			// "cannot unmarshal number into Go struct field wStoreOp.ops.key".
			return errArg("request: %s must be %s, not a JSON %s", te.Field, jsonKind(te.Type), te.Value)
		}
		return errArg("request: %v", err)
	}
	return nil
}

// jsonKind names what a request field of Go type t is in JSON.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a " + t.String()
}

// numbers replaces json.Number values inside a decoded free-form value
// (codec.JSONNumbers); a number no float64 holds is the caller's error.
func numbers(v any) (any, error) {
	n, err := codec.JSONNumbers(v)
	if err != nil {
		return nil, errArg("%v", err)
	}
	return n, nil
}

func numbersMap(m map[string]any) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	v, err := numbers(m)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

func (c wCheckpoint) engine(i in) (engine.Checkpoint, error) {
	cp := engine.Checkpoint{
		V: c.V, ID: c.ID, TS: c.TS,
		ChannelValues:   make(map[string]codec.Blob, len(c.Values)),
		ChannelVersions: c.Versions,
		VersionsSeen:    c.Seen,
	}
	if cp.ChannelVersions == nil {
		cp.ChannelVersions = map[string]string{}
	}
	if cp.VersionsSeen == nil {
		cp.VersionsSeen = map[string]map[string]string{}
	}
	if c.Updated != nil {
		cp.UpdatedChannels = append([]string{}, *c.Updated...)
	}
	for ch, w := range c.Values {
		b, err := i.blob(w)
		if err != nil {
			return cp, fmt.Errorf("channel %q: %w", ch, err)
		}
		cp.ChannelValues[ch] = b
	}
	return cp, nil
}
