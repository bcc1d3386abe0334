package engine

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPutWithWritesIsPutThenPutWrites: a put and the writes of its tasks in
// one transaction leave the file as Put followed by PutWrites per task do
// (tuples with their pending writes, delta histories of the children, which
// the history cache serves), a refused task stores nothing of its own and
// stops nothing else, and a refused put stores nothing at all.
func TestPutWithWritesIsPutThenPutWrites(t *testing.T) {
	apart := openTest(t, Memory, nil)
	together := openTest(t, Memory, nil)
	parent := Config{ThreadID: "t"}
	for i := 1; i <= 12; i++ {
		id := fmt.Sprintf("%04d", i)
		v := fmt.Sprintf("%d", i)
		c := cp(id, map[string]string{"messages": "1", "title": v}, map[string]string{"title": fmt.Sprintf(`"title %d"`, i)})
		if i%5 == 1 {
			c.ChannelValues["messages"] = jb(fmt.Sprintf(`["snapshot at %d"]`, i))
			c.ChannelVersions["messages"] = v
		}
		nv := map[string]string{"title": v}
		if _, ok := c.ChannelValues["messages"]; ok {
			nv["messages"] = c.ChannelVersions["messages"]
		}
		tasks := [][]PendingWrite{
			{{TaskID: "agent-" + id, TaskPath: "~agent", Channel: "messages", Value: jb(fmt.Sprintf(`[%d]`, i))},
				{TaskID: "agent-" + id, Channel: "title", Value: jb(`"t"`)}},
			{{TaskID: "tool-" + id, TaskPath: "~tool", Channel: "messages", Value: jb(fmt.Sprintf(`["tool %d"]`, i))}},
			{{TaskID: "bad-" + id, Channel: "", Value: jb(`1`)}}, // refused: an empty channel name
		}
		got := mustPut(t, apart, parent, c, nil, nv)
		for _, task := range tasks[:2] {
			ws := make([]Write, len(task))
			for k, w := range task {
				ws[k] = Write{Channel: w.Channel, Value: w.Value}
			}
			if err := apart.PutWrites(bg, got, ws, task[0].TaskID, task[0].TaskPath); err != nil {
				t.Fatal(err)
			}
		}
		refused, err := together.PutWithWrites(bg, parent, c, nil, nv, tasks)
		if err != nil {
			t.Fatal(err)
		}
		if refused[0] != nil || refused[1] != nil || !errors.Is(refused[2], ErrInvalidArgument) {
			t.Fatalf("step %d: refused %v, want only the third task (invalid argument)", i, refused)
		}
		if diff := cmp.Diff(mustGet(t, apart, got), mustGet(t, together, got)); diff != "" {
			t.Fatalf("step %d: tuple (-apart +together):\n%s", i, diff)
		}
		ha, err := apart.DeltaChannelHistory(bg, got, []string{"messages"})
		if err != nil {
			t.Fatal(err)
		}
		ht, err := together.DeltaChannelHistory(bg, got, []string{"messages"})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(ha, ht); diff != "" {
			t.Fatalf("step %d: delta history (-apart +together):\n%s", i, diff)
		}
		parent = got
	}
	// A put refused in its transaction (its parent is missing) stores
	// neither itself nor any write.
	orphan := cp("9999", map[string]string{"title": "99"}, map[string]string{"title": `"x"`})
	_, err := together.PutWithWrites(bg, Config{ThreadID: "t", CheckpointID: "0500"}, orphan, nil, map[string]string{"title": "99"},
		[][]PendingWrite{{{TaskID: "x", Channel: "messages", Value: jb(`1`)}}})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("put under a missing parent: %v, want not found", err)
	}
	if _, err := together.GetTuple(bg, Config{ThreadID: "t", CheckpointID: "9999"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the refused put's checkpoint: %v, want not found", err)
	}
	in, err := together.Info(bg)
	if err != nil {
		t.Fatal(err)
	}
	if ina, _ := apart.Info(bg); in.Rows["writes"] != ina.Rows["writes"] {
		t.Fatalf("writes rows %d, want %d: the refused put left writes", in.Rows["writes"], ina.Rows["writes"])
	}
}
