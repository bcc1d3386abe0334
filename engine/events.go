package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/records"
)

// Events is a DB's per-thread event stream (contract §4, DeerFlow's
// RunEventStore). Get one with DB.Events; it only holds the handle. A
// thread's seqs increase strictly and never repeat, across processes.
type Events struct {
	db *DB
	// traceLimit, when not 0, replaces Options.TraceContentLimit for the
	// puts of this value (WithTraceContentLimit).
	traceLimit int
	// user, when not "", is the only writer whose events reads, counts
	// and deletes see (ForUser).
	user string
}

// ForUser: reads, counts and deletes see only userID's events ("": all).
func (e Events) ForUser(userID string) Events {
	e.user = userID
	return e
}

// WithTraceContentLimit: its own bound on trace contents (docs/records.md).
func (e Events) WithTraceContentLimit(limit int) Events {
	e.traceLimit = limit
	return e
}

// Events returns the event surface of db.
func (db *DB) Events() Events { return Events{db: db} }

const (
	maxEventTypeChars = 32
	maxCategoryChars  = 16
)

// eventRow is a validated, encoded event ready to insert.
type eventRow struct {
	ev       records.Event
	content  []byte
	metadata []byte
	taskID   any
}

// Put stores one event and returns it with its seq and creation time.
func (e Events) Put(ctx context.Context, ev records.Event) (records.Event, error) {
	out, err := e.PutBatch(ctx, []records.Event{ev})
	if err != nil {
		return records.Event{}, err
	}
	return out[0], nil
}

// PutBatch stores events of one thread atomically, with consecutive seqs in
// the order given, and returns them as stored. A batch naming two threads,
// or holding one bad event, is refused whole.
func (e Events) PutBatch(ctx context.Context, evs []records.Event) ([]records.Event, error) {
	if len(evs) == 0 {
		return []records.Event{}, nil
	}
	rows, err := e.prepare(evs)
	if err != nil {
		return nil, err
	}
	err = e.db.write(ctx, func(c *conn) error { return e.insert(c, rows) })
	if err != nil {
		return nil, err
	}
	out := make([]records.Event, len(rows))
	for i := range rows {
		out[i] = rows[i].ev
	}
	return out, nil
}

// PutIfAbsent stores ev unless its thread holds one of its run and type (it
// returns that one and false), atomically: two callers never both insert.
func (e Events) PutIfAbsent(ctx context.Context, ev records.Event) (records.Event, bool, error) {
	rows, err := e.prepare([]records.Event{ev})
	if err != nil {
		return records.Event{}, false, err
	}
	var existing records.Event
	var found bool
	err = e.db.write(ctx, func(c *conn) error {
		if err := c.lock(ev.ThreadID); err != nil {
			return err
		}
		found, err = c.queryRow(sqlEventFind, []any{ev.ThreadID, ev.RunID, ev.EventType}, func(st row) error {
			existing, err = scanEvent(st)
			return err
		})
		if err != nil || found {
			return err
		}
		return e.insert(c, rows)
	})
	if err != nil {
		return records.Event{}, false, err
	}
	if found {
		return existing, false, nil
	}
	return rows[0].ev, true, nil
}

// prepare validates and encodes a batch; it never changes the callers' maps.
func (e Events) prepare(evs []records.Event) ([]eventRow, error) {
	limit := e.db.opts.TraceContentLimit
	if e.traceLimit < 0 {
		return nil, fmt.Errorf("%w: trace content limit %d is negative", ErrInvalidArgument, e.traceLimit)
	}
	if e.traceLimit > 0 {
		limit = e.traceLimit
	}
	rows := make([]eventRow, len(evs))
	budget := callBudget{what: "the event batch"}
	for i, ev := range evs {
		if err := checkEvent(ev); err != nil {
			if len(evs) > 1 {
				return nil, fmt.Errorf("event %d: %w", i, err)
			}
			return nil, err
		}
		if ev.ThreadID != evs[0].ThreadID {
			return nil, fmt.Errorf("%w: event %d is for thread %s, the batch for %s: one thread per batch", ErrInvalidArgument, i, quoteCut(ev.ThreadID), quoteCut(evs[0].ThreadID))
		}
		what := "event"
		if len(evs) > 1 {
			what = fmt.Sprintf("event %d", i)
		}
		if ev.Category == records.CategoryTrace && limit > 0 {
			var err error
			if ev.Content, ev.Metadata, err = cutTrace(ev.Content, ev.Metadata, limit); err != nil {
				return nil, fmt.Errorf("%w: %s content: %w", ErrInvalidArgument, what, err)
			}
		}
		if ev.Metadata != nil {
			ev.Metadata = maps.Clone(ev.Metadata)
		}
		r := eventRow{ev: ev}
		var err error
		if r.content, err = encodeValue(what+" content", ev.Content); err != nil {
			return nil, err
		}
		if r.metadata, err = encodeMap(what+" metadata", ev.Metadata); err != nil {
			return nil, err
		}
		if err := budget.add(len(r.content) + len(r.metadata)); err != nil {
			return nil, err
		}
		if t, ok := ev.Metadata["task_id"].(string); ok {
			r.taskID = t
		}
		rows[i] = r
	}
	return rows, nil
}

func checkEvent(ev records.Event) error {
	if err := checkID("thread id", ev.ThreadID); err != nil {
		return err
	}
	if err := checkText("run id", ev.RunID, maxIDBytes); err != nil {
		return err
	}
	if err := checkShort("event type", ev.EventType, maxEventTypeChars); err != nil {
		return err
	}
	if err := checkText("user id", ev.UserID, maxIDBytes); err != nil {
		return err
	}
	return checkShort("event category", ev.Category, maxCategoryChars)
}

// checkShort checks a required short name, counted in characters.
func checkShort(what, s string, maxChars int) error {
	if s == "" {
		return fmt.Errorf("%w: missing %s", ErrInvalidArgument, what)
	}
	if n := utf8.RuneCountInString(s); n > maxChars {
		return fmt.Errorf("%w: %s %s has %d characters, at most %d allowed", ErrInvalidArgument, what, quoteCut(s), n, maxChars)
	}
	return checkText(what, s, 4*maxChars)
}

// cutTrace bounds a trace's content to limit UTF-8 bytes, cutting on a rune
// boundary, and records the cut in a copy of the metadata. Structured
// content that would not fit is stored as its JSON text, cut the same way.
// Content nested too deep to store (or cyclic) is refused: printing it
// would not end.
func cutTrace(content any, md map[string]any, limit int) (any, map[string]any, error) {
	s, isString := content.(string)
	if !isString {
		if content == nil {
			return content, md, nil
		}
		_, err := codec.MarshalMax(content, limit)
		if err == nil {
			return content, md, nil
		}
		if errors.Is(err, codec.ErrTooLarge) {
			// Cut short: see whether the whole would nest too deep.
			_, err = codec.Marshal(content)
		}
		if errors.Is(err, codec.ErrTooDeep) {
			return nil, nil, err
		}
		j, err := json.Marshal(content)
		if err != nil {
			j = fmt.Appendf(nil, "%v", content)
		}
		s = string(j)
	}
	if len(s) <= limit {
		if isString {
			return content, md, nil
		}
		return s, withCut(md, len(s)), nil
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], withCut(md, len(s)), nil
}

func withCut(md map[string]any, original int) map[string]any {
	out := make(map[string]any, len(md)+2)
	maps.Copy(out, md)
	out[records.MetaContentTruncated] = true
	out[records.MetaOriginalByteLength] = int64(original)
	return out
}

// insert gives rows consecutive seqs after the thread's last and stores them.
func (e Events) insert(c *conn, rows []eventRow) error {
	thread := rows[0].ev.ThreadID
	// Serial per thread, so that seqs commit in order: a reader paging
	// after a seq never misses one that commits later.
	if err := c.lock(thread); err != nil {
		return err
	}
	var last int64
	if _, err := c.queryRow(sqlEventSeq, []any{thread, len(rows)}, func(st row) error {
		last = st.Int64(0)
		return nil
	}); err != nil {
		return err
	}
	now := e.db.nowUS()
	seq := last - int64(len(rows))
	for i := range rows {
		seq++
		r := &rows[i]
		at := now
		if !r.ev.CreatedAt.IsZero() {
			// A time the caller recorded (a journal replayed, an import) is kept.
			at = r.ev.CreatedAt.UnixMicro()
		}
		r.ev.Seq, r.ev.CreatedAt = seq, fromUS(at)
		if err := c.exec(sqlEventInsert, thread, seq, r.ev.RunID, r.ev.EventType, r.ev.Category,
			r.content, r.metadata, r.taskID, at, nullText(r.ev.UserID)); err != nil {
			return err
		}
	}
	return nil
}

func scanEvent(st row) (records.Event, error) {
	ev := records.Event{
		ThreadID:  st.Text(0),
		Seq:       st.Int64(1),
		RunID:     st.Text(2),
		EventType: st.Text(3),
		Category:  st.Text(4),
		CreatedAt: fromUS(st.Int64(7)),
		UserID:    st.Text(8),
	}
	if b := st.Blob(5); b != nil {
		if err := codec.Unmarshal(b, &ev.Content); err != nil {
			return ev, fmt.Errorf("%w: content of event %d of thread %q: %w", undecodable(err), ev.Seq, ev.ThreadID, err)
		}
	}
	var err error
	ev.Metadata, err = decodeMap("event metadata", st.Blob(6))
	return ev, err
}

// ListMessages returns a page of the thread's events of category message,
// in ascending seq order (see MessageQuery). It is one indexed query.
func (e Events) ListMessages(ctx context.Context, threadID string, q records.MessageQuery) ([]records.Event, error) {
	if err := checkID("thread id", threadID); err != nil {
		return nil, err
	}
	limit, err := pageLimit("messages", q.Limit, 50)
	if err != nil {
		return nil, err
	}
	sql, args, desc := sqlMessagesLatest, []any{threadID, e.user, e.user, limit}, true
	switch {
	case q.BeforeSeq != nil && q.AfterSeq != nil:
		return nil, fmt.Errorf("%w: messages: give BeforeSeq or AfterSeq, not both", ErrInvalidArgument)
	case q.BeforeSeq != nil:
		sql, args = sqlMessagesBefore, []any{threadID, e.user, e.user, *q.BeforeSeq, limit}
	case q.AfterSeq != nil:
		sql, args, desc = sqlMessagesAfter, []any{threadID, e.user, e.user, *q.AfterSeq, limit}, false
	}
	out, err := e.list(ctx, sql, args, limit)
	if desc {
		slices.Reverse(out)
	}
	return out, err
}

// ListRunMessages is ListMessages for one run (docs/records.md).
func (e Events) ListRunMessages(ctx context.Context, threadID, runID string, q records.MessageQuery) ([]records.Event, error) {
	if err := checkID("thread id", threadID); err != nil {
		return nil, err
	}
	if err := checkText("run id", runID, maxIDBytes); err != nil {
		return nil, err
	}
	limit, err := pageLimit("messages", q.Limit, 50)
	if err != nil {
		return nil, err
	}
	sql, args, desc := sqlRunMessagesLatest, []any{threadID, runID, e.user, e.user, limit}, true
	switch {
	case q.BeforeSeq != nil && q.AfterSeq != nil:
		return nil, fmt.Errorf("%w: messages: give BeforeSeq or AfterSeq, not both", ErrInvalidArgument)
	case q.BeforeSeq != nil:
		sql, args = sqlRunMessagesBefore, []any{threadID, runID, e.user, e.user, *q.BeforeSeq, limit}
	case q.AfterSeq != nil:
		sql, args, desc = sqlRunMessagesAfter, []any{threadID, runID, e.user, e.user, *q.AfterSeq, limit}, false
	}
	out, err := e.list(ctx, sql, args, limit)
	if desc {
		slices.Reverse(out)
	}
	return out, err
}

// maxVisibleRuns bounds the runs one LastVisibleAISeq call looks at.
const maxVisibleRuns = 1000

// LastVisibleAISeq: each run's last AI reply a user sees (docs/records.md).
func (e Events) LastVisibleAISeq(ctx context.Context, threadID string, runIDs []string) (map[string]int64, error) {
	if err := checkID("thread id", threadID); err != nil {
		return nil, err
	}
	if len(runIDs) > maxVisibleRuns {
		return nil, fmt.Errorf("%w: %d runs, at most %d per call", ErrInvalidArgument, len(runIDs), maxVisibleRuns)
	}
	for _, r := range runIDs {
		if err := checkText("run id", r, maxIDBytes); err != nil {
			return nil, err
		}
	}
	const page = 64
	out := make(map[string]int64)
	err := e.db.read(ctx, func(c *conn) error {
		for _, run := range runIDs {
			if _, done := out[run]; done {
				continue
			}
			below := int64(math.MaxInt64)
			for {
				n, found := 0, false
				err := c.query(sqlRunAIReplies, []any{threadID, run, e.user, e.user, below, page}, func(st row) error {
					n++
					if found {
						return nil
					}
					ev, err := scanEvent(st)
					if err != nil {
						return err
					}
					below = ev.Seq
					caller, _ := ev.Metadata["caller"].(string)
					if !strings.HasPrefix(caller, "middleware:") {
						out[run], found = ev.Seq, true
					}
					return nil
				})
				if err != nil {
					return err
				}
				if found || n < page {
					break
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ListRunEvents returns a page of one run's events (see RunEventQuery).
func (e Events) ListRunEvents(ctx context.Context, threadID, runID string, q records.RunEventQuery) ([]records.Event, error) {
	if err := checkID("thread id", threadID); err != nil {
		return nil, err
	}
	if err := checkText("run id", runID, maxIDBytes); err != nil {
		return nil, err
	}
	limit, err := pageLimit("run events", q.Limit, 100)
	if err != nil {
		return nil, err
	}
	if q.AfterSeq < 0 {
		return nil, fmt.Errorf("%w: negative seq cursor", ErrInvalidArgument)
	}
	var types, task any
	if len(q.Types) > 0 {
		for _, t := range q.Types {
			if err := checkShort("event type", t, maxEventTypeChars); err != nil {
				return nil, err
			}
		}
		// The list travels as one bound JSON text, read by json_each.
		b, _ := json.Marshal(q.Types)
		types = string(b)
	}
	if q.TaskID != "" {
		if err := checkText("task id", q.TaskID, maxIDBytes); err != nil {
			return nil, err
		}
		task = q.TaskID
	}
	return e.list(ctx, sqlRunEvents, []any{threadID, runID, q.AfterSeq, types, task, limit, e.user}, limit)
}

func (e Events) list(ctx context.Context, sql string, args []any, limit int) ([]records.Event, error) {
	out := make([]records.Event, 0, min(limit, 64))
	err := e.db.read(ctx, func(c *conn) error {
		return c.query(sql, args, func(st row) error {
			ev, err := scanEvent(st)
			out = append(out, ev)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CountMessages returns how many events of category message the thread holds.
func (e Events) CountMessages(ctx context.Context, threadID string) (int64, error) {
	if err := checkID("thread id", threadID); err != nil {
		return 0, err
	}
	var n int64
	err := e.db.read(ctx, func(c *conn) (err error) {
		n, err = c.queryInt64(sqlMessagesCount, threadID, e.user, e.user)
		return err
	})
	return n, err
}

// DeleteThread deletes every event of a thread and returns how many. The
// thread's seq counter goes with them (not with ForUser): seqs restart at 1.
func (e Events) DeleteThread(ctx context.Context, threadID string) (int64, error) {
	if err := checkID("thread id", threadID); err != nil {
		return 0, err
	}
	var n int64
	err := e.db.write(ctx, func(c *conn) error {
		if err := c.lock(threadID); err != nil {
			return err
		}
		changed, err := c.execN(sqlEventsDeleteThread, threadID, e.user, e.user)
		if err != nil || e.user != "" {
			// Other users' events stay, and so does the counter.
			n = changed
			return err
		}
		n = changed
		return c.exec(sqlEventSeqDelete, threadID)
	})
	return n, err
}

// DeleteRun deletes one run's events, returns how many; seqs keep counting.
func (e Events) DeleteRun(ctx context.Context, threadID, runID string) (int64, error) {
	if err := checkID("thread id", threadID); err != nil {
		return 0, err
	}
	if err := checkText("run id", runID, maxIDBytes); err != nil {
		return 0, err
	}
	var n int64
	err := e.db.write(ctx, func(c *conn) error {
		if err := c.lock(threadID); err != nil {
			return err
		}
		changed, err := c.execN(sqlEventsDeleteRun, threadID, runID, e.user, e.user)
		if err != nil {
			return err
		}
		n = changed
		return nil
	})
	return n, err
}
