package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
)

var fuzzDeltaDB fuzzDB

// FuzzStoredDeltas plants a chain of three stored values with hostile
// bytes, encodings and base links (as a damaged file would hold them) and
// reads it through every call that reads, rebases or checks values: no
// panic, only typed errors, and a put on top of a damaged chain still
// stores its value (whole) and reads it back.
//
// fuzz budget: 300 (each input writes a chain and reads it through every call; .ci/run reads this line)
func FuzzStoredDeltas(f *testing.F) {
	v1 := bytes.Repeat([]byte(`{"m":"hello world"},`), 40)
	v2 := append(bytes.Clone(v1), `{"m":"more"}`...)
	v3 := append(bytes.Clone(v2), `{"m":"and more"}`...)
	d2, _ := codec.Diff(nil, v1, v2)
	d3, _ := codec.Diff(nil, v2, v3)
	f.Add(v1, d2, d3, byte(0x28), byte(0x00))                 // a valid chain: plain, delta, delta
	f.Add(v1, d2, d3, byte(0x28), byte(0x05))                 // bases pointing elsewhere
	f.Add([]byte{0x03, 0xff}, d2, d3, byte(0x29), byte(0x00)) // a packed whole value that does not inflate
	f.Add(v1, d3, d2, byte(0x3f), byte(0x1b))                 // unknown encodings, loops
	f.Fuzz(func(t *testing.T, whole, da, db2 []byte, encs, links byte) {
		h := fuzzDeltaDB.get(t)
		ctx := context.Background()
		th := fmt.Sprintf("d%d", fuzzDeltaDB.calls)
		vers := []string{"v1", "v2", "v3"}
		data := [][]byte{whole, da, db2}
		err := h.write(ctx, func(c *conn) error {
			var prev string
			for i, id := range []string{"a", "b", "c"} {
				var parent any
				if prev != "" {
					parent = prev
				}
				cpb, _ := codec.Marshal(storedCheckpoint{V: 4, ChannelVersions: map[string]string{"messages": vers[i]}})
				md, _ := codec.Marshal(map[string]any{"step": int64(i)})
				if err := c.exec(`INSERT INTO checkpoints(thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint, metadata) VALUES (?, '', ?, ?, ?, ?)`, th, id, parent, cpb, md); err != nil {
					return err
				}
				enc := int64(encs>>(2*i)) & 3
				var base any
				if l := int(links>>(2*i)) & 3; l < 3 && enc == encDelta {
					base = vers[l]
				} else if enc == encDelta && i > 0 {
					base = vers[i-1]
				}
				if err := c.exec(`INSERT INTO blobs(thread_id, checkpoint_ns, channel, version, checkpoint_id, type, data, enc, base) VALUES (?, '', 'messages', ?, ?, 'json', ?, ?, ?)`,
					th, vers[i], id, nonNil(data[i]), enc, base); err != nil {
					return err
				}
				prev = id
			}
			return nil
		})
		if err != nil {
			t.Fatalf("plant the chain: %v", err)
		}
		check := func(call string, err error) { t.Helper(); checkRefusal(t, call, err, ErrCorrupt, ErrFormatTooNew) }
		for _, id := range []string{"a", "b", "c"} {
			_, err := h.GetTuple(ctx, Config{ThreadID: th, CheckpointID: id})
			check("GetTuple", err)
		}
		for _, err := range h.List(ctx, ListOptions{ThreadID: th}) {
			check("List", err)
		}
		_, err = h.DeltaChannelHistory(ctx, Config{ThreadID: th, CheckpointID: "c"}, []string{MessagesChannel})
		check("DeltaChannelHistory", err)
		// A put on top of the chain diffs against it or, when it is
		// damaged, stores its value whole: either way it reads back.
		next := append(bytes.Clone(v3), `{"m":"new"}`...)
		cfg, err := h.Put(ctx, Config{ThreadID: th, CheckpointID: "c"}, Checkpoint{V: 4, ID: "d", ChannelVersions: map[string]string{"messages": "v4"},
			ChannelValues: map[string]codec.Blob{"messages": {Type: "json", Data: next}}}, nil, map[string]string{"messages": "v4"})
		if err != nil {
			t.Fatalf("Put on a planted chain: %v", err)
		}
		if tup, err := h.GetTuple(ctx, cfg); err != nil || !bytes.Equal(tup.Checkpoint.ChannelValues["messages"].Data, next) {
			t.Fatalf("the put value reads back %v", err)
		}
		_, err = h.Export(ctx, io.Discard, admin.ExportOptions{ThreadID: th})
		check("Export", err)
		_, err = h.Retain(ctx, admin.RetainOptions{ThreadID: th})
		check("Retain", err)
		_, err = h.Prune(ctx, []string{th}, admin.PruneKeepLatest)
		check("Prune", err)
		rep, err := h.Verify(ctx, admin.VerifyOptions{ThreadID: th})
		if err != nil {
			t.Fatalf("Verify of a planted chain: %v", err)
		}
		_ = rep
		if err := h.DeleteThread(ctx, th); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("DeleteThread: %v", err)
		}
	})
}
