package langgraph

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/agentstate/agentstate/engine"
)

func TestScratchImport(t *testing.T) {
	src := os.Getenv("SRC")
	if src == "" {
		t.Skip()
	}
	for _, mode := range []string{engine.ModeDelta} {
		db := openDst(t, mode, 10)
		start := time.Now()
		rep, err := Import(context.Background(), db, src, Options{})
		el := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d checkpoints in %v: %.0f/s; %+v", mode, rep.Checkpoints, el, float64(rep.Checkpoints)/el.Seconds(), rep.Blobs)
	}
}
