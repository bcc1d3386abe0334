package engine

import (
	"context"
	"fmt"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine/admin"
)

// The surfaces Stats reports, in order. SQLite's dbstat table is not
// compiled into the driver, so sizes are sums of the stored lengths.
// "snapshots" are the channel values of delta-mode threads; "channel_blobs"
// every other stored channel value.
var statsSurfaces = []struct{ name, sql string }{
	{"checkpoints", sqlCheckpointsStats},
	{"channel_blobs", sqlBlobsStats},
	{"snapshots", sqlSnapshotsStats},
	{"writes", sqlWritesStats},
	{"store", sqlStoreStats},
	{"runs", sqlRunsStats},
	{"events", sqlEventsStats},
	{"threads", sqlThreadsStats},
}

// Stats reads Info and the size of every surface, and lists the largest
// threads (at most largest of them; 0 for none). It only reads.
func (db *DB) Stats(ctx context.Context, largest int) (admin.Stats, error) {
	if largest < 0 {
		return admin.Stats{}, fmt.Errorf("%w: negative thread count %d", ErrInvalidArgument, largest)
	}
	in, err := db.Info(ctx)
	if err != nil {
		return admin.Stats{}, err
	}
	s := admin.Stats{Info: in, Surfaces: []admin.SurfaceStats{}, LargestThreads: []admin.ThreadSize{}}
	err = db.read(ctx, func(c *conn) error {
		for _, q := range statsSurfaces {
			ss := admin.SurfaceStats{Name: q.name}
			_, err := c.queryRow(q.sql, nil, func(st row) error {
				ss.Rows, ss.Bytes = st.Int64(0), st.Int64(1)
				return nil
			})
			if err != nil {
				return fmt.Errorf("%s: %w", q.name, err)
			}
			s.Surfaces = append(s.Surfaces, ss)
		}
		if largest == 0 {
			return nil
		}
		return c.query(sqlLargestThreads, []any{largest}, func(st row) error {
			s.LargestThreads = append(s.LargestThreads, admin.ThreadSize{
				ThreadID: st.Text(0), Mode: channels.Mode(st.Text(1)), Checkpoints: st.Int64(2), Bytes: st.Int64(3),
			})
			return nil
		})
	})
	if err != nil {
		return admin.Stats{}, err
	}
	s.HistoryCache = db.CacheStats()
	s.HistoryCache.MaxBytes = db.opts.HistoryCacheBytes
	return s, nil
}

// dataBytes is the total of the surfaces' byte counts, for reports of what
// an operation freed.
func dataBytes(c *conn) (int64, error) {
	var total int64
	for _, q := range statsSurfaces {
		_, err := c.queryRow(q.sql, nil, func(st row) error {
			total += st.Int64(1)
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	return total, nil
}
