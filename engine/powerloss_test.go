//go:build !js

// Native only: it cuts power under SQLite through ncruces VFSes (faultvfs),
// which GOOS=js builds do not link.

package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine/internal/faultvfs"
	"github.com/ncruces/go-sqlite3/vfs"
)

// The power-loss tests run the workload through faultvfs, a VFS that
// remembers every write not yet synced and, at a chosen moment, cuts the
// power: the writes not synced are lost (all of them, or a random subset,
// as a disk cache may flush some). After the cut the file is opened as
// usual and must be consistent and hold a prefix of the steps: each step
// whole or absent, nothing after a missing step, and every step that was
// durable (synced, or committed under SyncFull) there.

const powerVFS = "agentstate-powerloss"

var (
	powerOnce sync.Once
	powerFS   *faultvfs.VFS
	powerMu   sync.Mutex // one scenario at a time uses the VFS
)

func powerVFSFor(t *testing.T) *faultvfs.VFS {
	powerOnce.Do(func() {
		powerFS = faultvfs.New()
		vfs.Register(powerVFS, powerFS)
	})
	powerMu.Lock()
	t.Cleanup(powerMu.Unlock)
	return powerFS
}

func powerURI(path string) string { return "file:" + path + "?vfs=" + powerVFS }

// powerTrial is one file's life: epochs of work through the faulty VFS, each
// ending in a power cut, each followed by a check through the plain VFS.
type powerTrial struct {
	path    string
	opts    Options
	loss    faultvfs.Loss
	durable int // the last step known synced before the cut
	tried   int // the last step whose Commit was called
	head    int // the head after the last check
}

// epoch opens the file through the faulty VFS with a cut armed after
// crashAt more writes/syncs (0: the cut comes after maxSteps), runs the
// workload and cuts the power. It says where the cut came: "open", "work"
// or "after".
func (p *powerTrial) epoch(fs *faultvfs.VFS, w relWork, crashAt int64, maxSteps int) (string, error) {
	ctx := context.Background()
	fs.CrashAfter(crashAt)
	db, err := Open(ctx, powerURI(p.path), &p.opts)
	if err != nil {
		if !fs.Crashed() {
			return "", fmt.Errorf("open before the cut: %w", err)
		}
		return "open", nil // the power went during Open
	}
	p.tried = p.head
	err = runWorkload(ctx, db, w, crashThread, maxSteps, func(kind string, a ...any) {
		switch kind {
		case "C":
			n := a[0].(int)
			if p.opts.Synchronous == SyncFull {
				p.durable = n
			}
			if fs.Unsynced() == 0 {
				p.durable = n // nothing written since the last sync
			}
		}
	})
	// Commit of step tried+1 may have been under way at the cut.
	if st, serr := db.State(ctx, Config{ThreadID: crashThread}); serr == nil {
		p.tried = max(p.tried, relN(st.Metadata)+1)
	} else {
		p.tried = maxSteps
	}
	if err != nil && !fs.Crashed() {
		db.Close()
		return "", fmt.Errorf("workload before the cut: %w", err)
	}
	where := "after"
	if fs.Crashed() {
		where = "work"
	}
	fs.Crash()
	db.Close() // fails to checkpoint: the power is gone
	return where, nil
}

func TestPowerLoss(t *testing.T) {
	skipShort(t, "replays power losses for seconds")
	sqliteOnly(t, "drops an SQLite file's unsynced writes through a faulting VFS")
	fs := powerVFSFor(t)
	seed := relSeed(t)
	rng := rand.New(rand.NewPCG(seed, 2))
	w := relWork{seed: seed}
	trials := relScale(24, 6, 300)
	var cutsInOpen, cutsInWork, cutsAfter, stepsLost, droppedAll, keptAll int
	for i := range trials {
		o := DefaultOptions()
		o.Synchronous = []string{SyncNormal, SyncFull}[i%2]
		o.Mode = []channels.Mode{channels.ModeFull, channels.ModeDelta}[i/2%2]
		o.SnapshotEvery, o.AutoRetain = 4, o.Mode == channels.ModeDelta
		o.ReconcileOnOpen = false
		p := &powerTrial{path: filepath.Join(t.TempDir(), "p.db"), opts: o, loss: faultvfs.Loss(i / 4 % 2)}
		name := fmt.Sprintf("trial %d (%s, %s, loss %d)", i, o.Synchronous, o.Mode, p.loss)
		for e := range 3 {
			// A cut anywhere in the next few hundred writes and syncs:
			// in Open's recovery, mid-commit, mid-checkpoint, or (0) after
			// the last step.
			crashAt := int64(rng.IntN(400))
			where, err := p.epoch(fs, w, crashAt, p.head+5+rng.IntN(40))
			if err != nil {
				t.Fatalf("%s epoch %d: %v", name, e, err)
			}
			switch where {
			case "open":
				cutsInOpen++
			case "work":
				cutsInWork++
			default:
				cutsAfter++
			}
			before := p.tried
			dropped, kept, err := fs.PowerCycle(p.loss, rng)
			droppedAll, keptAll = droppedAll+dropped, keptAll+kept
			if err != nil {
				t.Fatal(err)
			}
			if err := p.check(w); err != nil {
				t.Fatalf("%s epoch %d (cut at op %d, %d unsynced writes dropped, %d kept): %v", name, e, crashAt, dropped, kept, err)
			}
			if where != "open" {
				stepsLost += max(0, before-1-p.head)
			}
		}
	}
	t.Logf("%d trials x 3 power cuts: %d in Open, %d mid-work, %d after the last step; %d unsynced writes dropped, %d kept; %d returned steps lost (allowed under SyncNormal)",
		trials, cutsInOpen, cutsInWork, cutsAfter, droppedAll, keptAll, stepsLost)
}

// check opens the file through the OS VFS and checks the prefix promise.
func (p *powerTrial) check(w relWork) error {
	ctx := context.Background()
	db, err := Open(ctx, p.path, &p.opts)
	if err != nil {
		return fmt.Errorf("open after the cut: %w", err)
	}
	defer db.Close()
	if ps := relVerify(ctx, db); len(ps) > 0 {
		return fmt.Errorf("the file does not verify:\n%s", strings.Join(ps, "\n"))
	}
	rep, err := checkWorkThread(ctx, db, w, crashThread, 0)
	if err != nil {
		return err
	}
	if rep.Head < p.durable || rep.Head > max(p.tried, p.head) {
		return fmt.Errorf("the head is step %d; durable were %d, tried up to %d", rep.Head, p.durable, p.tried)
	}
	e, err := checkWorkEvents(ctx, db, w, crashThread)
	if err != nil {
		return err
	}
	if e > rep.Head || e < rep.Head-1 {
		return fmt.Errorf("events up to step %d for a head at step %d: not a prefix", e, rep.Head)
	}
	p.head, p.durable = rep.Head, min(p.durable, rep.Head)
	return nil
}

// TestSynchronousPromises pins down what each Synchronous setting promises
// on power loss, with every unsynced write lost: NORMAL keeps exactly the
// steps made before the last WAL checkpoint, FULL keeps every step that
// returned.
func TestSynchronousPromises(t *testing.T) {
	sqliteOnly(t, "cuts power under an SQLite file through a faulting VFS")
	fs := powerVFSFor(t)
	w := relWork{seed: 7}
	for _, tc := range []struct {
		sync string
		want int
	}{{SyncNormal, 4}, {SyncFull, 9}} {
		t.Run(tc.sync, func(t *testing.T) {
			ctx := context.Background()
			o := DefaultOptions()
			o.Synchronous = tc.sync
			o.ReconcileOnOpen = false
			path := filepath.Join(t.TempDir(), "s.db")
			db, err := Open(ctx, powerURI(path), &o)
			if err != nil {
				t.Fatal(err)
			}
			for n := 1; n <= 9; n++ {
				if _, err := db.Commit(ctx, crashThread, w.step(crashThread, n, "")); err != nil {
					t.Fatal(err)
				}
				if n == 4 {
					if _, err := db.CheckpointWAL(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			fs.Crash()
			db.Close()
			if _, _, err := fs.PowerCycle(faultvfs.DropAll, nil); err != nil {
				t.Fatal(err)
			}
			db = openTest(t, path, &o)
			mustVerify(t, db, "after the cut")
			rep, err := checkWorkThread(ctx, db, w, crashThread, 0)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Head != tc.want {
				t.Fatalf("synchronous=%s: %d steps survived the power cut, want %d", tc.sync, rep.Head, tc.want)
			}
		})
	}
}

// A bad Synchronous value fails Open.
func TestSynchronousValidated(t *testing.T) {
	o := DefaultOptions()
	o.Synchronous = "extra; DROP TABLE x"
	_, err := Open(context.Background(), testPath(t, filepath.Join(t.TempDir(), "x.db")), &o)
	if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "Synchronous") {
		t.Fatalf("err = %v, want ErrInvalidOption naming Synchronous", err)
	}
}
