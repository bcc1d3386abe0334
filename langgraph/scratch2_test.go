package langgraph

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
)

func TestScratchDump(t *testing.T) {
	src := os.Getenv("SRC")
	if src == "" {
		t.Skip()
	}
	s, err := openSource(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := s.read(context.Background(), "bench-00000")
	if err != nil {
		t.Fatal(err)
	}
	for i, cp := range raw.cps[:9] {
		vals := map[string]any{}
		for k, v := range cp.values {
			vals[k], _ = pyJSON(v)
		}
		b, _ := json.Marshal(map[string]any{"id": cp.id, "v": cp.v, "ts": cp.ts, "versions": cp.versions, "seen": cp.seen, "updated": cp.updated, "md": cp.metadata, "values": vals})
		fmt.Println(i, string(b))
		for _, w := range raw.writes[cpKey{"", cp.id}] {
			wv, _ := pyJSON(w.value)
			b, _ := json.Marshal(wv)
			fmt.Printf("   W %s %s %d %s %s\n", w.task, w.path, w.idx, w.channel, b)
		}
	}
}
