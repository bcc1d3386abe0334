//go:build js || (wasip1 && hostsqlite)

package bridge

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentstate/agentstate/engine"
)

// The requests as encoding/json read them before the parser of fastjson.go.
type jsonPut struct {
	Config      engine.Config     `json:"config"`
	Checkpoint  wCheckpoint       `json:"checkpoint"`
	Metadata    map[string]any    `json:"metadata"`
	NewVersions map[string]string `json:"newVersions"`
}

type jsonPutWrites struct {
	Config engine.Config `json:"config"`
	Writes []struct {
		Channel string `json:"channel"`
		Value   wBlob  `json:"value"`
	} `json:"writes"`
	TaskID   string `json:"taskId"`
	TaskPath string `json:"taskPath"`
}

// TestFastJSONReadsWhatEncodingJSONReads: the same requests, the same
// values, and an error where encoding/json has one.
func TestFastJSONReadsWhatEncodingJSONReads(t *testing.T) {
	puts := []string{
		``,
		`null`,
		`{}`,
		`{"config":{"thread_id":"t","checkpoint_ns":"","checkpoint_id":"c1"},"checkpoint":{"v":4,"id":"c2","ts":"2026-01-01T00:00:00Z",` +
			`"values":{"messages":{"t":"json","b":0},"__start__":{"t":"json","b":1}},"versions":{"messages":"00000000000000000000000000000002.0.5","x":"1"},` +
			`"seen":{"agent":{"messages":"1"},"__input__":{}},"updated":["messages"]},` +
			`"metadata":{"source":"loop","step":3,"f":1.5,"big":12345678901234567890,"neg":-2,"e":1e3,"parents":{},"l":[1,"a",null,true,{"x":0.25}]},` +
			`"newVersions":{"messages":"00000000000000000000000000000002.0.5"}}`,
		`{"checkpoint":{"updated":null,"values":null,"seen":{"a":null}},"metadata":null,"newVersions":{"a":null}}`,
		` {"config" : {"thread_id" : "\u00e9\ud83d\ude00\ud800x\"\\\/\b\f\n\r\t"} } `,
		"{\"config\":{\"thread_id\":\"bad \xff utf8 \xe2\x82\"}}",
		`{"config":{"thread_id":"t"}} trailing`,
		`{"config":{"thread_id":1}}`,
		`{"checkpoint":{"v":"4"}}`,
		`{"checkpoint":{"v":4.5}}`,
		`{"checkpoint":{"v":1e2}}`,
		`{"checkpoint":{"versions":{"a":1}}}`,
		`{"checkpoint":{"updated":["a",2]}}`,
		`{"metadata":[]}`,
		`[]`,
		`"x"`,
		`{"config":`,
		`{"config":{"thread_id":"t"}`,
		`{"a":01}`,
		`{"a":-}`,
		`{"a":1.}`,
		`{"a":"\x"}`,
		`{"a":"\u12"}`,
		`{"a":tru}`,
		"{\"a\":\"ctl\x01\"}",
		`{"a" 1}`,
		`{"a":1,}`,
		`{"a":[1,]}`,
		`{"metadata":{"n":1e400}}`,
	}
	for _, text := range puts {
		var want jsonPut
		wantErr := decodeJSON([]byte(text), &want)
		if wantErr == nil {
			var err error
			want.Metadata, err = numbersMap(want.Metadata)
			wantErr = err
		}
		var got putRequest
		m, gotErr := parseRequest([]byte(text))
		if gotErr == nil {
			got, gotErr = readPut(m)
		}
		if (wantErr == nil) != (gotErr == nil) {
			t.Errorf("put %q: error %v, encoding/json's %v", text, gotErr, wantErr)
			continue
		}
		if wantErr != nil {
			continue
		}
		if !reflect.DeepEqual(got.Config, want.Config) || !reflect.DeepEqual(got.Metadata, want.Metadata) ||
			!reflect.DeepEqual(nilEmpty(got.NewVersions), nilEmpty(want.NewVersions)) || !sameCheckpoint(got.Checkpoint, want.Checkpoint) {
			t.Errorf("put %q:\n got %#v\nwant %#v", text, got, want)
		}
	}
	writes := []string{
		`{"config":{"thread_id":"t","checkpoint_ns":"ns","checkpoint_id":"c"},"writes":[{"channel":"messages","value":{"t":"json","b":0}},{"channel":"x","value":{"t":"bytes","b":1}}],"taskId":"task","taskPath":"~__pregel_pull, agent"}`,
		`{"writes":null}`,
		`{"writes":[null]}`,
		`{"writes":[{"value":{"b":"0"}}]}`,
		`{"writes":{}}`,
		`{"taskId":7}`,
	}
	for _, text := range writes {
		var want jsonPutWrites
		wantErr := decodeJSON([]byte(text), &want)
		var got putWritesRequest
		m, gotErr := parseRequest([]byte(text))
		if gotErr == nil {
			got, gotErr = readPutWrites(m)
		}
		if (wantErr == nil) != (gotErr == nil) {
			t.Errorf("putWrites %q: error %v, encoding/json's %v", text, gotErr, wantErr)
			continue
		}
		if wantErr != nil {
			continue
		}
		ok := got.Config == want.Config && got.TaskID == want.TaskID && got.TaskPath == want.TaskPath && len(got.Writes) == len(want.Writes)
		for k := 0; ok && k < len(got.Writes); k++ {
			ok = got.Writes[k].Channel == want.Writes[k].Channel && got.Writes[k].Value == want.Writes[k].Value
		}
		if !ok {
			t.Errorf("putWrites %q:\n got %#v\nwant %#v", text, got, want)
		}
	}
}

func nilEmpty[M ~map[K]V, K comparable, V any](m M) M {
	if len(m) == 0 {
		return nil
	}
	return m
}

func sameCheckpoint(a, b wCheckpoint) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb) && (a.Updated == nil) == (b.Updated == nil)
}
