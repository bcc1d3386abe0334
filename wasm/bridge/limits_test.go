//go:build js || (wasip1 && hostsqlite)

package bridge

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
)

// packedAtLeast must never count more than the engine's msgpack of the
// value: a value it refuses is one the engine would refuse.
func TestPackedAtLeastIsALowerBound(t *testing.T) {
	for _, js := range []string{
		`{}`, `{"a":1}`, `{"a":[1,2.5,-3e10,true,false,null]}`,
		`{"s":"plain ascii text"}`, `{"s":"\u00e9\u4e2d\ud83d\ude00\ud800 lone"}`,
		`{"s":"esc \n\t\"\\\/ \u0000"}`, `{"deep":{"a":{"b":[{"c":"d"}]}}, "k" : [ 1 , "x" ] }`,
		`{"n":[0,1,127,128,65536,-1,-129,1.5,12345678901234567890]}`,
	} {
		var v map[string]any
		d := json.NewDecoder(strings.NewReader(js))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		v, err := numbersMap(v)
		if err != nil {
			t.Fatal(err)
		}
		b, err := codec.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := packedAtLeast([]byte(js), 1<<30); got > len(b) {
			t.Errorf("%s: counted %d bytes, its msgpack has %d", js, got, len(b))
		}
	}
}

// A store value past MaxValueBytes is refused by its JSON, naming the
// limit, as the engine names it; one within it is left to the engine.
func TestCheckValueJSON(t *testing.T) {
	big := `{"v":"` + strings.Repeat("x", engine.MaxValueBytes+1) + `"}`
	err := checkValueJSON("store value for key \"k\"", []byte(big))
	if !errors.Is(err, engine.ErrTooLarge) || !strings.Contains(err.Error(), "MaxValueBytes") {
		t.Fatalf("got %v, want ErrTooLarge naming MaxValueBytes", err)
	}
	// Escapes that decode to less than the limit: not refused here.
	escaped := `{"v":"` + strings.Repeat(`\n`, engine.MaxValueBytes/2) + `"}`
	if err := checkValueJSON("v", []byte(escaped)); err != nil {
		t.Fatalf("a value of %d bytes decoded was refused: %v", engine.MaxValueBytes/2, err)
	}
}
