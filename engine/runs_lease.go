// Run leases: a run is owned by the process that created it while that
// process renews its lease; Reconcile ends the runs of owners that stopped.

package engine

import (
	"context"
	"math"
	"time"

	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/engine/records"
)

// Reconcile turns every active run whose owner is gone (its lease expired
// and it cannot be shown alive: contract §4) into an error with
// OrphanReason, and returns how many it changed; runs of this handle are
// never touched. Open runs it unless Options.ReconcileOnOpen is false, and
// the background loop every RunLease/3; a lock held past BusyTimeout fails
// it with ErrBusy.
func (r Runs) Reconcile(ctx context.Context) (int64, error) {
	if r.db.opts.ReadOnly {
		return 0, ErrReadOnly
	}
	me := r.Owner()
	var owners []string
	err := r.db.read(ctx, func(c *conn) error {
		owners = owners[:0]
		return c.query(sqlRunLapsedOwners, []any{me, r.db.nowUS()}, func(st row) error {
			owners = append(owners, st.Text(0))
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	if len(owners) == 0 {
		return 0, nil
	}
	// Locks are trusted only while this handle holds its own: one that
	// cannot (the server just lost every session, lock files are being
	// deleted) cannot tell a live owner whose lock went with its own from
	// a dead one, and waits until it holds again.
	if r.db.recs.hold != nil && !r.db.checkHold(ctx) {
		return 0, ctx.Err()
	}
	gone := owners[:0]
	for _, o := range owners {
		if !r.db.ownerAlive(ctx, o) {
			gone = append(gone, o)
		}
	}
	if len(gone) == 0 {
		return 0, nil
	}
	var n int64
	err = r.db.write(ctx, func(c *conn) error {
		n = 0
		now := r.db.nowUS()
		for _, o := range gone {
			// The lease is checked again under the lock: the owner may
			// have renewed it since the read.
			changed, err := c.execN(sqlRunReconcile, records.OrphanReason, now, o)
			if err != nil {
				return err
			}
			n += changed
		}
		return nil
	})
	return n, err
}

// ownerAlive reports whether a run owner is provably alive. An owner
// without a liveness lock (a closed handle, another host whose locks we
// cannot see, a platform without them) or whose probe fails is left to its
// lease.
func (db *DB) ownerAlive(ctx context.Context, owner string) bool {
	live := db.recs.live
	if owner == "" || live == nil {
		return false
	}
	p, err := live.Probe(ctx, owner)
	return err == nil && p == driver.PresenceAlive
}

// extendLeases runs at the end of a write transaction that held the lock
// for held: every lease that was valid when it began is extended by held,
// the time its owner could not renew it, so that a long write (a convert,
// an import, a retention over a big file) does not make live owners look
// dead to handles that rely on leases alone. Each owner keeps the lease it
// had left, whatever its RunLease.
func (db *DB) extendLeases(c *conn, held time.Duration) error {
	if held < minLeaseGrace || db.b.memory() {
		return nil
	}
	limit := int64(math.MaxInt64)
	if c.runsBefore >= 0 {
		limit = c.runsBefore
	}
	return c.exec(sqlRunExtendLeases, held.Microseconds(), db.nowUS()-held.Microseconds(), limit)
}

// keepInsertedLeases makes the lease extension of the current write
// transaction leave alone the runs it inserts (an import's, which keep the
// leases their export recorded): only rows that existed when it was called
// are extended.
func keepInsertedLeases(c *conn) error {
	n, err := c.queryInt64(sqlRunsMaxRowid)
	if err != nil {
		return err
	}
	c.runsBefore = n
	return nil
}

// minLeaseGrace is the shortest hold of the write lock that extends
// leases: a quarter of the shortest lease allowed.
const minLeaseGrace = 250 * time.Millisecond

// RenewLeases extends the lease of every active run this handle owns by
// Options.RunLease from now (the background loop does, every RunLease/3).
func (r Runs) RenewLeases(ctx context.Context) (int64, error) {
	owner := r.Owner()
	if owner == "" {
		return 0, nil
	}
	var n int64
	// Most ticks find nothing to renew: look first, so they never take the
	// write lock.
	err := r.db.read(ctx, func(c *conn) (err error) {
		n, err = c.queryInt64(sqlRunOwned, owner)
		return err
	})
	if err != nil || n == 0 {
		return 0, err
	}
	err = r.db.write(ctx, func(c *conn) error {
		changed, err := c.execN(sqlRunRenew, r.db.nowUS()+r.db.opts.RunLease.Microseconds(), owner)
		if err != nil {
			return err
		}
		n = changed
		return nil
	})
	return n, err
}
