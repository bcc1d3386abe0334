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
	{"checkpoints", `SELECT count(*), coalesce(sum(octet_length(thread_id) + octet_length(checkpoint_ns) + octet_length(checkpoint_id)
		+ coalesce(octet_length(parent_id), 0) + coalesce(octet_length(run_id), 0) + octet_length(checkpoint) + octet_length(metadata)), 0)
		FROM checkpoints`},
	{"channel_blobs", `SELECT count(*), coalesce(sum(octet_length(b.thread_id) + octet_length(b.checkpoint_ns) + octet_length(b.channel)
		+ octet_length(b.version) + octet_length(b.checkpoint_id) + octet_length(b.type) + coalesce(octet_length(b.data), 0)), 0)
		FROM blobs b LEFT JOIN thread_modes m ON m.thread_id = b.thread_id WHERE m.mode IS NOT 'delta'`},
	{"snapshots", `SELECT count(*), coalesce(sum(octet_length(b.thread_id) + octet_length(b.checkpoint_ns) + octet_length(b.channel)
		+ octet_length(b.version) + octet_length(b.checkpoint_id) + octet_length(b.type) + coalesce(octet_length(b.data), 0)), 0)
		FROM blobs b JOIN thread_modes m ON m.thread_id = b.thread_id WHERE m.mode = 'delta'`},
	{"writes", `SELECT count(*), coalesce(sum(octet_length(thread_id) + octet_length(checkpoint_ns) + octet_length(checkpoint_id)
		+ octet_length(task_id) + 8 + octet_length(channel) + octet_length(type) + coalesce(octet_length(data), 0)
		+ coalesce(octet_length(consumed_by), 0) + octet_length(task_path) + coalesce(octet_length(run_id), 0)), 0)
		FROM writes`},
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
