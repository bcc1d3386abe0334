package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentstate/agentstate/engine/internal/driver"
)

// Shared plumbing of the record surfaces (store, runs, events, threads):
// timestamps, identifier checks, page bounds and the per-handle state that
// start-up work and the background loop need.

// Timestamps of records are microseconds since the Unix epoch: integers sort
// and compare in indexes, and microseconds keep ordering meaningful for
// records written in one burst.
func (db *DB) nowUS() int64 { return db.opts.Now().UnixMicro() }

func fromUS(us int64) time.Time { return time.UnixMicro(us).UTC() }

// Page bounds shared by every list call: a bounded page is the only way a
// list leaves the engine.
const (
	maxPage     = 1000
	maxIDBytes  = 256
	maxTextLong = 1 << 16 // display names, error texts
)

// pageLimit applies a default to 0 and refuses what is out of 1..maxPage.
func pageLimit(what string, limit, def int) (int, error) {
	if limit == 0 {
		return def, nil
	}
	if limit < 0 || limit > maxPage {
		return 0, fmt.Errorf("%w: %s limit %d is outside 1..%d", ErrInvalidArgument, what, limit, maxPage)
	}
	return limit, nil
}

func pageOffset(what string, offset int) error {
	if offset < 0 {
		return fmt.Errorf("%w: %s offset %d is negative", ErrInvalidArgument, what, offset)
	}
	return nil
}

// checkID refuses identifiers that could not round-trip or be shown safely:
// empty, too long, invalid UTF-8 or holding control characters.
func checkID(what, s string) error {
	if s == "" {
		return fmt.Errorf("%w: missing %s", ErrInvalidArgument, what)
	}
	if len(s) > maxIDBytes {
		return fmt.Errorf("%w: %s %s is longer than %d bytes", ErrInvalidArgument, what, quoteCut(s), maxIDBytes)
	}
	if strings.ContainsFunc(s, unicode.IsControl) {
		return fmt.Errorf("%w: %s %s holds control characters", ErrInvalidArgument, what, quoteCut(s))
	}
	return checkText(what, s, maxIDBytes)
}

// checkText refuses text that is too long, not UTF-8, or holds control
// characters other than tab and newline.
func checkText(what, s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("%w: %s is longer than %d bytes", ErrInvalidArgument, what, max)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s %s is not valid UTF-8", ErrInvalidArgument, what, quoteCut(s))
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' {
			return fmt.Errorf("%w: %s %s holds control characters", ErrInvalidArgument, what, quoteCut(s))
		}
	}
	return nil
}

// cutRunes returns s cut to at most n characters (code points, as Python
// slices strings).
func cutRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// errStop ends a row loop early without being an error.
var errStop = errors.New("stop")

func ignoreStop(err error) error {
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// recordsState is what a read-write handle keeps for the record surfaces.
type recordsState struct {
	ownerID string // identifies this handle as the owner of the runs it creates
	// live proves this handle alive to other processes and probes theirs;
	// nil where the driver has no way (leases alone decide).
	live driver.Liveness
	// hold is this handle's liveness hold (Close releases it).
	hold driver.Hold
}

// noLiveness makes handles rely on leases alone, as on a platform without
// file locks; tests set it.
var noLiveness bool

func (db *DB) records() *recordsState { return &db.recs }

// checkHold makes sure this handle still holds its liveness lock, taking
// it again if it was lost (the server ended its session, someone deleted
// its lock file), and reports whether it holds it. holdLoop runs it every
// renewal interval (RunLease/3) whatever the lease loop waits for, so a
// live owner is without its lock for at most one renewal interval, always
// within a lease it renews; Reconcile runs it before it trusts any lock.
func (db *DB) checkHold(ctx context.Context) bool {
	if db.recs.hold == nil {
		return false
	}
	return db.recs.hold.Check(ctx) == nil
}

// startRecords runs at the end of Open on read-write handles: it gives the
// handle its run owner id, reconciles orphaned runs (unless disabled) and
// starts the background loop that renews this handle's run leases and, when
// configured, sweeps expired store items. The loop stops on Close.
func (db *DB) startRecords(ctx context.Context) error {
	db.recs.ownerID = db.opts.RunOwner + "#" + rand.Text()[:12]
	if live := db.b.liveness(); live != nil && !noLiveness {
		// Held before the handle can own a run, so that no run of it is
		// ever seen without it. A directory we cannot write to leaves the
		// handle with leases alone rather than failing Open.
		if hold, err := live.Hold(ctx, db.recs.ownerID); err == nil {
			db.recs.live, db.recs.hold = live, hold
			db.onClose(func() { hold.Release() })
		}
	}
	if db.opts.ReconcileOnOpen && !db.fromBuildImage() {
		// Another process's long write must not make Open fail: the
		// background loop reconciles on its next tick. (A database just
		// made from the build's image has no runs to reconcile.)
		if _, err := db.Runs().Reconcile(ctx); err != nil && !errors.Is(err, ErrBusy) {
			return fmt.Errorf("reconcile runs: %w", err)
		}
	}
	loopCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go db.recordsLoop(loopCtx, done)
	holdDone := make(chan struct{})
	go db.holdLoop(loopCtx, holdDone)
	db.onClose(func() {
		cancel()
		<-done
		<-holdDone
	})
	return nil
}

// holdLoop checks this handle's liveness hold every third of RunLease on
// a goroutine of its own: the lease loop's writes can wait for another
// process's lock for up to BusyTimeout, and a lock lost meanwhile (its
// file deleted, its session ended) must be taken again within a renewal
// interval all the same, so that the owner stays visibly alive while it
// waits to write.
func (db *DB) holdLoop(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	if db.recs.hold == nil {
		return
	}
	t := time.NewTicker(db.opts.RunLease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			db.checkHold(ctx)
		}
	}
}

// recordsLoop renews the leases of this handle's active runs (and turns
// other handles' expired runs into errors) every third of RunLease, and
// sweeps the store every StoreSweepInterval when that is set. Errors are
// left for the next tick: the loop must never take the process down.
func (db *DB) recordsLoop(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	lease := time.NewTicker(db.opts.RunLease / 3)
	defer lease.Stop()
	var sweep <-chan time.Time
	if db.opts.StoreSweepInterval > 0 {
		t := time.NewTicker(db.opts.StoreSweepInterval)
		defer t.Stop()
		sweep = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-lease.C:
			runs := db.Runs()
			runs.RenewLeases(ctx)
			runs.Reconcile(ctx)
		case <-sweep:
			db.Store().Sweep(ctx)
		}
	}
}
