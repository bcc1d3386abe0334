// Reading checkpoints back: GetTuple, List, and loading a page of tuples
// with their channel values and pending writes.

package engine

import (
	"context"
	"fmt"
	"iter"

	"github.com/agentstate/agentstate/codec"
)

// GetTuple returns the checkpoint cfg names, or the latest of its thread and
// namespace when cfg.CheckpointID is empty, with its metadata, parent config
// and pending writes in (task_path, task_id, idx) order. A missing
// checkpoint is ErrNotFound.
func (db *DB) GetTuple(ctx context.Context, cfg Config) (Tuple, error) {
	if err := validateThread(cfg); err != nil {
		return Tuple{}, err
	}
	var out []Tuple
	err := db.read(ctx, func(c *conn) error {
		q, args := sqlGetLatest, []any{cfg.ThreadID, cfg.CheckpointNS}
		if cfg.CheckpointID != "" {
			q, args = sqlGetByID, append(args, cfg.CheckpointID)
		}
		var err error
		// The read's last query carries its COMMIT (driver.LastQuerier).
		out, err = loadTuplesEnd(c, q, args, true, true, true)
		return err
	})
	if err != nil {
		return Tuple{}, err
	}
	if len(out) == 0 {
		if cfg.CheckpointID == "" {
			return Tuple{}, fmt.Errorf("%w: no checkpoint in thread %q (namespace %q)", ErrNotFound, cfg.ThreadID, cfg.CheckpointNS)
		}
		return Tuple{}, fmt.Errorf("%w: checkpoint %q of thread %q (namespace %q)", ErrNotFound, cfg.CheckpointID, cfg.ThreadID, cfg.CheckpointNS)
	}
	return out[0], nil
}

// loadTuples runs a checkpoint query (columns as in sqlGetByID) and fills in
// channel values and pending writes with one query each for all rows, so a
// page of any size costs three queries.
func loadTuples(c *conn, q string, args []any) ([]Tuple, error) {
	return loadTuplesWith(c, q, args, true, true)
}

// loadTuplesWith is loadTuples that can leave channel values (then
// ChannelValues is nil) and pending writes out, for callers that may not
// need them.
func loadTuplesWith(c *conn, q string, args []any, values, pending bool) ([]Tuple, error) {
	return loadTuplesEnd(c, q, args, values, pending, false)
}

// loadTuplesEnd is loadTuplesWith; with last, a read transaction's last
// query (the pending writes, when asked for) may end it.
func loadTuplesEnd(c *conn, q string, args []any, values, pending, last bool) ([]Tuple, error) {
	var tuples []Tuple
	err := c.query(q, args, func(st row) error {
		t, err := scanCheckpoint(st)
		if err != nil {
			return err
		}
		tuples = append(tuples, t)
		return nil
	})
	if err != nil || len(tuples) == 0 {
		return tuples, err
	}
	if values {
		if err := loadValues(c, tuples); err != nil {
			return nil, err
		}
	} else {
		for i := range tuples {
			tuples[i].Checkpoint.ChannelValues = nil
		}
	}
	if pending {
		if err := loadPendingWrites(c, tuples, last); err != nil {
			return nil, err
		}
	}
	return tuples, nil
}

func scanCheckpoint(st row) (Tuple, error) {
	t := Tuple{Config: Config{ThreadID: st.Text(0), CheckpointNS: st.Text(1), CheckpointID: st.Text(2)}}
	if !st.Null(3) {
		t.ParentConfig = &Config{ThreadID: t.Config.ThreadID, CheckpointNS: t.Config.CheckpointNS, CheckpointID: st.Text(3)}
	}
	var sc storedCheckpoint
	if err := codec.Unmarshal(st.Blob(4), &sc); err != nil {
		return t, fmt.Errorf("%w: checkpoint %q of thread %q: %w", undecodable(err), t.Config.CheckpointID, t.Config.ThreadID, err)
	}
	var md map[string]any
	if err := codec.Unmarshal(st.Blob(5), &md); err != nil {
		return t, fmt.Errorf("%w: metadata of checkpoint %q of thread %q: %w", undecodable(err), t.Config.CheckpointID, t.Config.ThreadID, err)
	}
	if md == nil {
		md = map[string]any{}
	}
	t.Metadata = md
	t.Checkpoint = Checkpoint{
		V: sc.V, ID: t.Config.CheckpointID, TS: sc.TS,
		ChannelValues: map[string]codec.Blob{}, ChannelVersions: sc.ChannelVersions, VersionsSeen: sc.VersionsSeen,
	}
	if t.Checkpoint.ChannelVersions == nil {
		t.Checkpoint.ChannelVersions = map[string]string{}
	}
	if t.Checkpoint.VersionsSeen == nil {
		t.Checkpoint.VersionsSeen = map[string]map[string]string{}
	}
	if sc.HasUpdated {
		t.Checkpoint.UpdatedChannels = sc.UpdatedChannels
		if t.Checkpoint.UpdatedChannels == nil {
			t.Checkpoint.UpdatedChannels = []string{}
		}
	}
	t.PendingWrites = []PendingWrite{}
	return t, nil
}

func loadValues(c *conn, tuples []Tuple) error {
	var keys [][4]string
	var owner []int
	for i, t := range tuples {
		for ch, v := range t.Checkpoint.ChannelVersions {
			keys = append(keys, [4]string{t.Config.ThreadID, t.Config.CheckpointNS, ch, v})
			owner = append(owner, i)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	arg, err := jsonArg(keys)
	if err != nil {
		return err
	}
	// Values stored as deltas or packed are rebuilt after the query, a
	// chain at a time.
	var reads []*valueRead
	var readOwner []int
	err = c.query(sqlPageValues, []any{arg}, func(st row) error {
		j := int(st.Int64(0))
		i := owner[j]
		if enc := st.Int64(4); enc != encPlain {
			reads = append(reads, &valueRead{key: valueKey{keys[j][0], keys[j][1], keys[j][2]}, version: keys[j][3],
				stored: storedVal{typ: st.Text(2), enc: enc, base: st.Text(5), owner: st.Text(6), data: copyBytes(st.Blob(3))}})
			readOwner = append(readOwner, i)
			return nil
		}
		tuples[i].Checkpoint.ChannelValues[st.Text(1)] = codec.Blob{Type: st.Text(2), Data: copyBytes(st.Blob(3))}
		return nil
	})
	if err != nil || len(reads) == 0 {
		return err
	}
	if err := readValues(c, reads); err != nil {
		return err
	}
	for n, r := range reads {
		tuples[readOwner[n]].Checkpoint.ChannelValues[r.key.ch] = codec.Blob{Type: r.stored.typ, Data: r.value}
	}
	return nil
}

func loadPendingWrites(c *conn, tuples []Tuple, last bool) error {
	var sql string
	var args []any
	if len(tuples) == 1 {
		cfg := tuples[0].Config
		sql, args = sqlTupleWrites, []any{cfg.ThreadID, cfg.CheckpointNS, cfg.CheckpointID}
	} else {
		keys := make([][3]string, len(tuples))
		for i, t := range tuples {
			keys[i] = [3]string{t.Config.ThreadID, t.Config.CheckpointNS, t.Config.CheckpointID}
		}
		arg, err := jsonArg(keys)
		if err != nil {
			return err
		}
		sql, args = sqlPageWrites, []any{arg}
	}
	run := c.query
	if last {
		run = c.queryLast
	}
	err := run(sql, args, func(st row) error {
		i := int(st.Int64(0))
		data, err := loadWrite(st, 4)
		if err != nil {
			return err
		}
		tuples[i].PendingWrites = append(tuples[i].PendingWrites, PendingWrite{
			TaskID: st.Text(1), Channel: st.Text(2),
			Value:    codec.Blob{Type: st.Text(3), Data: data},
			TaskPath: st.Text(6), Idx: int(st.Int64(7)),
		})
		return nil
	})
	for i := range tuples {
		sortWrites(tuples[i].PendingWrites)
	}
	return err
}

// ListOptions select the checkpoints List returns.
type ListOptions struct {
	// ThreadID limits the listing to one thread; empty lists every thread.
	ThreadID string
	// Namespace limits the listing to one namespace ("" is the root); nil
	// lists every namespace.
	Namespace *string
	// Filter keeps checkpoints whose metadata equals every entry: keys are
	// metadata keys, dotted keys reach nested fields, values compare with
	// their type (1 is not true, null is not missing).
	Filter map[string]any
	// Before keeps checkpoints whose id sorts strictly before it.
	Before string
	// Limit caps the number of tuples; 0 means no cap.
	Limit int
}

// listPage is how many checkpoints one query of List reads at most, and
// listFirstPage how many its first query reads. Each later page is sized
// from the bytes the pages before held, so that a page holds about
// listPageBytes of values and writes: a long thread of large values
// (whole message lists of tens of MB each) is read a few checkpoints at a
// time instead of listPage at once, which ran wasm32's 4 GiB out.
const (
	listPage      = 64
	listFirstPage = 8
	listPageBytes = 16 << 20
)

// tupleBytes is what a tuple's values and pending writes hold.
func tupleBytes(t *Tuple) int {
	n := 0
	for _, b := range t.Checkpoint.ChannelValues {
		n += len(b.Data)
	}
	for _, w := range t.PendingWrites {
		n += len(w.Value.Data)
	}
	return n
}

// nextListPage sizes List's next page from the one it has read.
func nextListPage(page []Tuple) int {
	total := 0
	for i := range page {
		total += tupleBytes(&page[i])
	}
	if total == 0 {
		return listPage
	}
	avg := total / len(page)
	return max(1, min(listPage, listPageBytes/max(avg, 1)))
}

// listQuery assembles List's query from constant fragments, chosen by which
// options are set, so each shape can use its index; every value is bound.
func listQuery(thread, ns, bound, filter bool) string {
	q := sqlListBase
	if thread {
		q += ` AND thread_id = :thread`
	}
	if ns {
		q += ` AND checkpoint_ns = :ns`
	}
	if bound {
		// The first term lets SQLite seek; the row value breaks ties
		// between threads and namespaces that share an id.
		q += ` AND checkpoint_id <= :id AND (checkpoint_id, thread_id, checkpoint_ns) < (:id, :bthread, :bns)`
	}
	if filter {
		q += ` AND agentstate_meta_match(metadata, :filter)`
	}
	return q + ` ORDER BY checkpoint_id DESC, thread_id DESC, checkpoint_ns DESC LIMIT :limit`
}

// List yields checkpoints newest first (by id), with metadata, parent
// config and pending writes. It reads a page at a time, each page in a fixed
// number of queries (never one per checkpoint). A filter key that is not a
// plain dotted identifier is refused with ErrInvalidArgument before any
// query runs.
func (db *DB) List(ctx context.Context, opts ListOptions) iter.Seq2[Tuple, error] {
	return func(yield func(Tuple, error) bool) {
		var filter any
		if len(opts.Filter) > 0 {
			f, err := encodeFilter(opts.Filter)
			if err != nil {
				yield(Tuple{}, err)
				return
			}
			filter = f
		}
		if opts.Limit < 0 {
			yield(Tuple{}, fmt.Errorf("%w: negative limit %d", ErrInvalidArgument, opts.Limit))
			return
		}
		var cursor *Config
		if opts.Before != "" {
			// Strictly older ids: (id, thread, ns) < (Before, "", "").
			cursor = &Config{CheckpointID: opts.Before}
		}
		left := opts.Limit
		size := listFirstPage
		for {
			n := size
			if opts.Limit > 0 {
				n = min(n, left)
			}
			q := listQuery(opts.ThreadID != "", opts.Namespace != nil, cursor != nil, filter != nil)
			var args []any
			if opts.ThreadID != "" {
				args = append(args, opts.ThreadID)
			}
			if opts.Namespace != nil {
				args = append(args, *opts.Namespace)
			}
			if cursor != nil {
				args = append(args, cursor.CheckpointID, cursor.ThreadID, cursor.CheckpointNS)
			}
			if filter != nil {
				args = append(args, filter)
			}
			args = append(args, n)
			var page []Tuple
			err := db.read(ctx, func(c *conn) error {
				var err error
				page, err = loadTuples(c, q, args)
				return err
			})
			if err != nil {
				yield(Tuple{}, err)
				return
			}
			for _, t := range page {
				if !yield(t, nil) {
					return
				}
			}
			if len(page) < n {
				return
			}
			if opts.Limit > 0 {
				if left -= len(page); left <= 0 {
					return
				}
			}
			last := page[len(page)-1].Config
			cursor = &last
			size = nextListPage(page)
		}
	}
}
