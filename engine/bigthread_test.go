package engine

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
)

// BenchmarkBigThread builds and walks one long thread, for measuring memory
// and time outside the unit tests (docs/memory.md): a benchmark, so that
// only -bench runs it, and only when AGENTSTATE_BIG names a file:
//
//	go test -c -o /tmp/engine.test ./engine
//	AGENTSTATE_BIG=/tmp/big.db AGENTSTATE_BIG_N=100000 /tmp/engine.test -test.run '^$' -test.bench 'BigThread/build' -test.benchtime 1x
//	AGENTSTATE_BIG=/tmp/big.db /usr/bin/time -v /tmp/engine.test -test.run '^$' -test.bench 'BigThread/history' -test.benchtime 1x
//
// build commits N steps of one message each (delta mode, K=10, AutoRetain)
// to thread "big"; history walks StateHistory over all of them (the newest
// AGENTSTATE_BIG_LIMIT if set: each state is rebuilt, so a walk of all is
// quadratic in time); verify runs DB.Verify on the file.
func BenchmarkBigThread(b *testing.B) {
	path := os.Getenv("AGENTSTATE_BIG")
	if path == "" {
		b.Skip("AGENTSTATE_BIG is not set")
	}
	b.Run("build", func(b *testing.B) {
		n, err := strconv.Atoi(os.Getenv("AGENTSTATE_BIG_N"))
		if err != nil {
			b.Fatalf("AGENTSTATE_BIG_N: %v", err)
		}
		o := DefaultOptions()
		o.Mode, o.SnapshotEvery, o.AutoRetain = channels.ModeDelta, 10, true
		db, err := Open(bg, path, &o)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		for i := range n {
			m := codec.Message{ID: fmt.Sprintf("m%06d", i), Type: codec.Human, Content: fmt.Sprintf("message %d of a long thread, with some words in it to be stored", i)}
			if _, err := db.Commit(bg, "big", Step{Tasks: []TaskWrites{say("t", m)}}); err != nil {
				b.Fatalf("commit %d: %v", i, err)
			}
			if i%10000 == 0 {
				b.Logf("%d commits", i)
			}
		}
	})
	openReadOnly := func(b *testing.B) *DB {
		o := DefaultOptions()
		o.Mode, o.ReadOnly = channels.ModeAuto, true
		db, err := Open(bg, path, &o)
		if err != nil {
			b.Fatal(err)
		}
		return db
	}
	b.Run("history", func(b *testing.B) {
		db := openReadOnly(b)
		defer db.Close()
		limit, _ := strconv.Atoi(os.Getenv("AGENTSTATE_BIG_LIMIT")) // 0: all
		n, last := 0, -1
		for s, err := range db.StateHistory(bg, "big", HistoryOptions{Limit: limit}) {
			if err != nil {
				b.Fatal(err)
			}
			ms, _ := s.Values[MessagesChannel].([]codec.Message)
			if last >= 0 && len(ms) != last-1 {
				b.Fatalf("checkpoint %s holds %d messages after one of %d", s.Config.CheckpointID, len(ms), last)
			}
			last = len(ms)
			n++
		}
		b.Logf("%d states; cache %+v", n, db.CacheStats())
	})
	b.Run("verify", func(b *testing.B) {
		db := openReadOnly(b)
		defer db.Close()
		rep, err := db.Verify(bg, admin.VerifyOptions{})
		if err != nil || !rep.OK {
			b.Fatalf("verify: %v %+v", err, rep.Problems)
		}
		b.Logf("%d checkpoints verified", rep.Checkpoints)
	})
}
