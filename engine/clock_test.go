package engine

import (
	"path/filepath"
	"testing"
	"time"
)

// TestForkAfterClockWentBack: a handle whose clock is an hour behind the
// one that wrote a thread (the clock was stepped back before a restart, or
// another process's clock is behind) forks an older checkpoint, or commits
// on one: the new checkpoint must become the thread's head, and the next
// commit must build on it.
func TestForkAfterClockWentBack(t *testing.T) {
	for _, how := range []string{"Fork", "Commit on an older checkpoint"} {
		t.Run(how, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "clock.db")
			ahead := DefaultOptions()
			ahead.Now = func() time.Time { return time.Now().Add(time.Hour) }
			a := openTest(t, path, &ahead)
			w := relWork{seed: 4}
			var cfgs []Config
			for n := 1; n <= 3; n++ {
				c, err := a.Commit(rctx, "t", w.step("t", n, ""))
				if err != nil {
					t.Fatal(err)
				}
				cfgs = append(cfgs, c)
			}
			a.Close()

			b := openTest(t, path, nil)
			var branch Config
			var err error
			if how == "Fork" {
				branch, err = b.Fork(rctx, cfgs[0])
			} else {
				step := w.step("t", 2, "")
				step.Parent = cfgs[0].CheckpointID
				branch, err = b.Commit(rctx, "t", step)
			}
			if err != nil {
				t.Fatal(err)
			}
			head, err := b.State(rctx, Config{ThreadID: "t"})
			if err != nil {
				t.Fatal(err)
			}
			if head.Config.CheckpointID != branch.CheckpointID {
				t.Fatalf("after %s with the clock an hour back, the head is %s (step %d), not the new checkpoint %s",
					how, head.Config.CheckpointID, relN(head.Metadata), branch.CheckpointID)
			}
			next, err := b.Commit(rctx, "t", w.step("t", 9, ""))
			if err != nil {
				t.Fatal(err)
			}
			tuple, err := b.GetTuple(rctx, next)
			if err != nil {
				t.Fatal(err)
			}
			if tuple.ParentConfig == nil || tuple.ParentConfig.CheckpointID != branch.CheckpointID {
				t.Fatalf("the next commit built on %v, not on the new checkpoint %s", tuple.ParentConfig, branch.CheckpointID)
			}
			mustVerify(t, b, "after the clock went back")
		})
	}
}
