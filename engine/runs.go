package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"iter"
	"math"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/engine/records"
)

// Runs is the run-record surface of a DB (contract §4, DeerFlow's RunStore): one
// record per run with its status, model, token usage and summary. Get one
// with DB.Runs; it only holds the handle. The database itself keeps at most
// one run per thread active (pending or running), across processes.
type Runs struct{ db *DB }

// Runs returns the run-record surface of db.
func (db *DB) Runs() Runs { return Runs{db} }

// idempotencyLock prefixes an idempotency key to name its lock.
const idempotencyLock = "idempotency key "

// maxSummaryChars caps first_human_message and last_ai_message, in characters.
const maxSummaryChars = 2000

// ActiveRunError reports that a thread already has an active run. It
// matches ErrConflict.
type ActiveRunError struct {
	ThreadID string
	RunID    string // the active run
	Status   records.RunStatus
	Reason   string // why an interrupt could not take it
}

func (e *ActiveRunError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("%v: thread %q already has an active run %q (%s) %s", ErrConflict, e.ThreadID, e.RunID, e.Status, e.Reason)
	}
	return fmt.Sprintf("%v: thread %q already has an active run %q (%s)", ErrConflict, e.ThreadID, e.RunID, e.Status)
}

// Unwrap makes errors.Is(err, ErrConflict) hold.
func (e *ActiveRunError) Unwrap() error { return ErrConflict }

// TransitionError reports a status change the run's lifecycle forbids. It
// matches ErrConflict.
type TransitionError struct {
	RunID    string
	From, To records.RunStatus
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("%v: run %q cannot move from %s to %s", ErrConflict, e.RunID, e.From, e.To)
}

// Unwrap makes errors.Is(err, ErrConflict) hold.
func (e *TransitionError) Unwrap() error { return ErrConflict }

func isActive(status records.RunStatus) bool {
	return status == records.RunPending || status == records.RunRunning
}

func checkStatus(status records.RunStatus) error {
	switch status {
	case records.RunPending, records.RunRunning, records.RunSuccess, records.RunError, records.RunTimeout, records.RunInterrupted:
		return nil
	}
	return fmt.Errorf("%w: run status %s (want pending, running, success, error, timeout or interrupted)", ErrInvalidArgument, quoteCut(status))
}

// allowed reports whether a run may move from one status to another:
// forward from pending to running, from either to any terminal status, and
// to itself. A terminal status is final, but for DeerFlow's rollback path:
// an interrupted run (the cancel acknowledged) may end as an error.
func allowed(from, to records.RunStatus) bool {
	switch {
	case from == to:
		return true
	case from == records.RunPending:
		return to != records.RunPending
	case from == records.RunRunning:
		return to != records.RunPending
	case from == records.RunInterrupted:
		return to == records.RunError
	}
	return false
}

// Owner returns the id this handle records as the owner of the runs it
// creates: Options.RunOwner plus a suffix unique to the handle. It is empty
// on read-only handles, which cannot create runs.
func (r Runs) Owner() string { return r.db.records().ownerID }

// existingRun finds the run a Create returns instead of making one: the
// run of that id (on the same thread, or ErrConflict), or the run holding
// its idempotency key on any thread (taking the key's lock first, so a
// create with the same key on another thread waits for this one).
func existingRun(c *conn, nr records.NewRun, out *records.Run) (found bool, err error) {
	scan := func(st row) error {
		*out, err = scanRun(st)
		return err
	}
	if found, err = c.queryRow(sqlRunGet, []any{nr.RunID}, scan); err != nil || found {
		if err == nil && out.ThreadID != nr.ThreadID {
			err = fmt.Errorf("%w: run id %q belongs to another thread", ErrConflict, nr.RunID)
		}
		return found, err
	}
	if nr.IdempotencyKey == "" {
		return false, nil
	}
	if err := c.lock(idempotencyLock + nr.IdempotencyKey); err != nil {
		return false, err
	}
	return c.queryRow(sqlRunByKey, []any{nr.IdempotencyKey}, scan)
}

// Create inserts a run, or returns the one of the same run id or idempotency
// key (keys span threads). A thread's active run fails StrategyReject with an
// *ActiveRunError; StrategyInterrupt and StrategyRollback interrupt it in the
// same transaction (records.NewRun says when they cannot).
func (r Runs) Create(ctx context.Context, nr records.NewRun) (records.Created, error) {
	if nr.RunID == "" {
		nr.RunID = newRecordID()
	}
	if nr.Status == "" {
		nr.Status = records.RunPending
	}
	if nr.MultitaskStrategy == "" {
		nr.MultitaskStrategy = records.StrategyReject
	}
	if err := checkNewRun(nr); err != nil {
		return records.Created{}, err
	}
	md, err := encodeMap("run metadata", nr.Metadata)
	if err != nil {
		return records.Created{}, err
	}
	kw, err := encodeMap("run kwargs", nr.Kwargs)
	if err != nil {
		return records.Created{}, err
	}
	// The new run is returned as a Get would return it: decoded maps, not
	// the caller's.
	storedMD, err := decodeMap("run metadata", md)
	if err != nil {
		return records.Created{}, err
	}
	storedKW, err := decodeMap("run kwargs", kw)
	if err != nil {
		return records.Created{}, err
	}
	var key any
	if nr.IdempotencyKey != "" {
		key = nr.IdempotencyKey
	}
	var out records.Created
	err = r.db.write(ctx, func(c *conn) error {
		out = records.Created{}
		if err := c.lock(nr.ThreadID); err != nil {
			return err
		}
		if found, err := existingRun(c, nr, &out.Run); err != nil || found {
			return err
		}
		now := r.db.nowUS()
		var a activeRow
		if _, err := c.queryRow(sqlRunActive, []any{nr.ThreadID}, func(st row) error {
			a = activeRow{st.Text(0), records.RunStatus(st.Text(1)), st.Text(2), st.Text(3), st.Null(4), st.Int64(4)}
			return nil
		}); err != nil {
			return err
		}
		if a.runID != "" {
			if nr.MultitaskStrategy == records.StrategyReject {
				return &ActiveRunError{ThreadID: nr.ThreadID, RunID: a.runID, Status: a.status}
			}
			if why := a.untakable(nr, now); why != "" {
				return &ActiveRunError{ThreadID: nr.ThreadID, RunID: a.runID, Status: a.status, Reason: why}
			}
			reason := fmt.Sprintf("interrupted by run %s (multitask_strategy %s)", nr.RunID, nr.MultitaskStrategy)
			if err := c.exec(sqlRunInterrupt, reason, now, a.runID, nullText(nr.Worker)); err != nil {
				return err
			}
			out.Interrupted = a.runID
		}
		owner := r.Owner()
		lease := now + r.db.opts.RunLease.Microseconds()
		created := now
		if !nr.CreatedAt.IsZero() {
			created = nr.CreatedAt.UnixMicro()
		}
		err = c.exec(sqlRunInsert, nr.RunID, nr.ThreadID, nr.AssistantID, nr.UserID, nr.Status, nr.ModelName,
			nr.MultitaskStrategy, md, kw, created, now, key, owner, lease,
			nullText(nr.OperationKind), nullText(nr.Worker), nullTime(nr.WorkerLease), "", nil)
		if errors.Is(err, driver.ErrUnique) {
			// The checks above run under the write lock, so this is the
			// index doing its job against a writer that bypassed them.
			return fmt.Errorf("%w: run %q on thread %q: %v", ErrConflict, nr.RunID, nr.ThreadID, err)
		}
		if err != nil {
			return err
		}
		out.New = true
		out.Run = records.Run{
			RunID: nr.RunID, ThreadID: nr.ThreadID, AssistantID: nr.AssistantID, UserID: nr.UserID,
			Status: nr.Status, ModelName: nr.ModelName, MultitaskStrategy: nr.MultitaskStrategy,
			Metadata: storedMD, Kwargs: storedKW, CreatedAt: fromUS(created), UpdatedAt: fromUS(now),
			IdempotencyKey: nr.IdempotencyKey, Owner: owner,
			RunWorker: records.RunWorker{OperationKind: nr.OperationKind, Worker: nr.Worker, WorkerLease: timeUS(nullTime(nr.WorkerLease))},
		}
		return nil
	})
	if err != nil {
		return records.Created{}, err
	}
	return out, nil
}

func checkNewRun(nr records.NewRun) error {
	if err := checkID("run id", nr.RunID); err != nil {
		return err
	}
	if err := checkID("thread id", nr.ThreadID); err != nil {
		return err
	}
	for _, f := range []struct{ what, v string }{
		{"assistant id", nr.AssistantID}, {"user id", nr.UserID}, {"model name", nr.ModelName}, {"idempotency key", nr.IdempotencyKey},
		{"operation kind", nr.OperationKind}, {"worker", nr.Worker},
	} {
		if err := checkText(f.what, f.v, maxIDBytes); err != nil {
			return err
		}
	}
	if !isActive(nr.Status) {
		return fmt.Errorf("%w: a run is created pending or running, not %s", ErrInvalidArgument, quoteCut(nr.Status))
	}
	switch nr.MultitaskStrategy {
	case records.StrategyReject, records.StrategyInterrupt, records.StrategyRollback:
	default:
		return fmt.Errorf("%w: multitask strategy %s (want reject, interrupt or rollback; enqueue is not supported because a thread has at most one active run)", ErrInvalidArgument, quoteCut(nr.MultitaskStrategy))
	}
	return nil
}

// newRecordID returns a random UUID (version 4) in its usual text form.
func newRecordID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// encodeMap encodes an optional map; nil stays NULL.
func encodeMap(what string, m map[string]any) ([]byte, error) {
	if m == nil {
		return nil, nil
	}
	return encodeValue(what, m)
}

// decodeMap decodes an optional map column.
func decodeMap(what string, b []byte) (map[string]any, error) {
	if b == nil {
		return nil, nil
	}
	var m map[string]any
	if err := codec.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", undecodable(err), what, err)
	}
	return m, nil
}

func scanRun(st row) (records.Run, error) {
	run := records.Run{
		RunID:             st.Text(0),
		ThreadID:          st.Text(1),
		AssistantID:       st.Text(2),
		UserID:            st.Text(3),
		Status:            records.RunStatus(st.Text(4)),
		ModelName:         st.Text(5),
		MultitaskStrategy: records.Strategy(st.Text(6)),
		Error:             st.Text(9),
		CreatedAt:         fromUS(st.Int64(10)),
		UpdatedAt:         fromUS(st.Int64(11)),
		IdempotencyKey:    st.Text(23),
		Owner:             st.Text(24),
		RunWorker: records.RunWorker{
			OperationKind:     st.Text(25),
			Worker:            st.Text(26),
			WorkerLease:       timeAt(st, 27),
			StopReason:        st.Text(28),
			CancelAction:      st.Text(29),
			CancelRequestedAt: timeAt(st, 30),
		},
		RunTotals: records.RunTotals{
			TotalInputTokens:  st.Int64(12),
			TotalOutputTokens: st.Int64(13),
			TotalTokens:       st.Int64(14),
			LLMCallCount:      st.Int64(15),
			LeadAgentTokens:   st.Int64(16),
			SubagentTokens:    st.Int64(17),
			MiddlewareTokens:  st.Int64(18),
			MessageCount:      st.Int64(20),
			FirstHumanMessage: st.Text(21),
			LastAIMessage:     st.Text(22),
		},
	}
	var err error
	if run.Metadata, err = decodeMap("run metadata", st.Blob(7)); err != nil {
		return run, err
	}
	if run.Kwargs, err = decodeMap("run kwargs", st.Blob(8)); err != nil {
		return run, err
	}
	if b := st.Blob(19); b != nil {
		if err := codec.Unmarshal(b, &run.TokenUsageByModel); err != nil {
			return run, fmt.Errorf("%w: token usage of run %q: %w", undecodable(err), run.RunID, err)
		}
	}
	return run, nil
}

// Get returns the run, or an error matching ErrNotFound.
func (r Runs) Get(ctx context.Context, runID string) (records.Run, error) {
	if err := checkID("run id", runID); err != nil {
		return records.Run{}, err
	}
	var run records.Run
	var found bool
	err := r.db.read(ctx, func(c *conn) (err error) {
		found, err = c.queryRow(sqlRunGet, []any{runID}, func(st row) error {
			run, err = scanRun(st)
			return err
		})
		return err
	})
	if err != nil {
		return records.Run{}, err
	}
	if !found {
		return records.Run{}, fmt.Errorf("%w: run %s", ErrNotFound, quoteCut(runID))
	}
	return run, nil
}

// runPage is how many runs List reads per snapshot.
const runPage = 100

// List yields the runs of a thread, newest first, in pages of 100 each read
// in its own snapshot (a run created meanwhile may or may not appear, none twice).
func (r Runs) List(ctx context.Context, threadID string) iter.Seq2[records.Run, error] {
	return func(yield func(records.Run, error) bool) {
		if err := checkID("thread id", threadID); err != nil {
			yield(records.Run{}, err)
			return
		}
		afterCreated, afterRowid := int64(math.MaxInt64), int64(math.MaxInt64)
		for {
			page := make([]records.Run, 0, runPage)
			err := r.db.read(ctx, func(c *conn) error {
				return c.query(sqlRunPage, []any{threadID, afterCreated, afterRowid, runPage}, func(st row) error {
					run, err := scanRun(st)
					if err != nil {
						return err
					}
					page = append(page, run)
					afterCreated, afterRowid = st.Int64(31), st.Int64(32)
					return nil
				})
			})
			if err != nil {
				yield(records.Run{}, err)
				return
			}
			for _, run := range page {
				if !yield(run, nil) {
					return
				}
			}
			if len(page) < runPage {
				return
			}
		}
	}
}

// SetStatus moves a run to status with errText as its error. A change its
// lifecycle forbids is a *TransitionError and writes nothing; setting the
// terminal status a run has already changes nothing.
func (r Runs) SetStatus(ctx context.Context, runID string, status records.RunStatus, errText string) error {
	if err := checkID("run id", runID); err != nil {
		return err
	}
	if err := checkStatus(status); err != nil {
		return err
	}
	if err := checkText("run error", errText, maxTextLong); err != nil {
		return err
	}
	return r.db.write(ctx, func(c *conn) error {
		from, err := r.transition(c, runID, status)
		if err != nil || (from == status && !isActive(status)) {
			return err
		}
		now := r.db.nowUS()
		return c.exec(sqlRunSetStatus, status, errText, now, r.Owner(), now+r.db.opts.RunLease.Microseconds(), runID)
	})
}

// transition reads the run's status and checks the move to status.
func (r Runs) transition(c *conn, runID string, status records.RunStatus) (records.RunStatus, error) {
	var from records.RunStatus
	found, err := c.queryRow(sqlRunStatus, []any{runID}, func(st row) error {
		from = records.RunStatus(st.Text(0))
		return nil
	})
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("%w: run %s", ErrNotFound, quoteCut(runID))
	}
	if !allowed(from, status) {
		return from, &TransitionError{RunID: runID, From: from, To: status}
	}
	return from, nil
}

// Complete ends a run: its terminal status, error text, token totals and
// message summary in one write. The status must be terminal and reachable
// from the run's current one (completing with the status the run already
// has, as after an interrupt, records the totals).
func (r Runs) Complete(ctx context.Context, runID string, status records.RunStatus, errText string, t records.RunTotals) error {
	if err := checkID("run id", runID); err != nil {
		return err
	}
	if err := checkStatus(status); err != nil {
		return err
	}
	if isActive(status) {
		return fmt.Errorf("%w: Complete needs a terminal status, not %s", ErrInvalidArgument, status)
	}
	if err := checkText("run error", errText, maxTextLong); err != nil {
		return err
	}
	for name, n := range map[string]int64{
		"total_input_tokens": t.TotalInputTokens, "total_output_tokens": t.TotalOutputTokens,
		"total_tokens": t.TotalTokens, "llm_call_count": t.LLMCallCount, "lead_agent_tokens": t.LeadAgentTokens,
		"subagent_tokens": t.SubagentTokens, "middleware_tokens": t.MiddlewareTokens, "message_count": t.MessageCount,
	} {
		if n < 0 {
			return fmt.Errorf("%w: %s %d is negative", ErrInvalidArgument, name, n)
		}
	}
	var byModel []byte
	if len(t.TokenUsageByModel) > 0 {
		var in, out, total int64
		for model, u := range t.TokenUsageByModel {
			if err := checkID("model name", model); err != nil {
				return err
			}
			if u.Input < 0 || u.Output < 0 || u.Total < 0 {
				return fmt.Errorf("%w: negative token count for model %s", ErrInvalidArgument, quoteCut(model))
			}
			in, out, total = addTokens(in, u.Input), addTokens(out, u.Output), addTokens(total, u.Total)
		}
		if t.TotalInputTokens == 0 {
			t.TotalInputTokens = in
		}
		if t.TotalOutputTokens == 0 {
			t.TotalOutputTokens = out
		}
		if t.TotalTokens == 0 {
			t.TotalTokens = total
		}
		var err error
		if byModel, err = encodeValue("token usage by model", t.TokenUsageByModel); err != nil {
			return fmt.Errorf("%w: token usage by model: %v", ErrInvalidArgument, err)
		}
	}
	first, last := cutRunes(t.FirstHumanMessage, maxSummaryChars), cutRunes(t.LastAIMessage, maxSummaryChars)
	return r.db.write(ctx, func(c *conn) error {
		if _, err := r.transition(c, runID, status); err != nil {
			return err
		}
		return c.exec(sqlRunComplete, status, errText, r.db.nowUS(),
			t.TotalInputTokens, t.TotalOutputTokens, t.TotalTokens, t.LLMCallCount,
			t.LeadAgentTokens, t.SubagentTokens, t.MiddlewareTokens, byModel,
			t.MessageCount, first, last, runID)
	})
}

// addTokens adds two non-negative counts, saturating instead of wrapping.
func addTokens(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Delete removes a run record; a missing run is ErrNotFound.
func (r Runs) Delete(ctx context.Context, runID string) error {
	if err := checkID("run id", runID); err != nil {
		return err
	}
	return r.db.write(ctx, func(c *conn) error {
		changed, err := c.execN(sqlRunDelete, runID)
		if err != nil {
			return err
		}
		if changed == 0 {
			return fmt.Errorf("%w: run %s", ErrNotFound, quoteCut(runID))
		}
		return nil
	})
}

// SetModelName sets the model of a run (ErrNotFound if it is missing).
func (r Runs) SetModelName(ctx context.Context, runID, model string) error {
	if err := checkID("run id", runID); err != nil {
		return err
	}
	if err := checkText("model name", model, maxIDBytes); err != nil {
		return err
	}
	return r.db.write(ctx, func(c *conn) error {
		changed, err := c.execN(sqlRunSetModel, model, r.db.nowUS(), runID)
		if err != nil {
			return err
		}
		if changed == 0 {
			return fmt.Errorf("%w: run %s", ErrNotFound, quoteCut(runID))
		}
		return nil
	})
}

// Progress records an active run's running totals (docs/records.md).
func (r Runs) Progress(ctx context.Context, runID string, p records.RunProgress) error {
	if err := checkID("run id", runID); err != nil {
		return err
	}
	for name, n := range map[string]*int64{
		"total_input_tokens": p.TotalInputTokens, "total_output_tokens": p.TotalOutputTokens,
		"total_tokens": p.TotalTokens, "llm_call_count": p.LLMCallCount, "lead_agent_tokens": p.LeadAgentTokens,
		"subagent_tokens": p.SubagentTokens, "middleware_tokens": p.MiddlewareTokens, "message_count": p.MessageCount,
	} {
		if n != nil && *n < 0 {
			return fmt.Errorf("%w: %s %d is negative", ErrInvalidArgument, name, *n)
		}
	}
	var byModel []byte
	if p.TokenUsageByModel != nil {
		for model, u := range p.TokenUsageByModel {
			if err := checkID("model name", model); err != nil {
				return err
			}
			if u.Input < 0 || u.Output < 0 || u.Total < 0 {
				return fmt.Errorf("%w: negative token count for model %s", ErrInvalidArgument, quoteCut(model))
			}
		}
		var err error
		if byModel, err = encodeValue("token usage by model", p.TokenUsageByModel); err != nil {
			return fmt.Errorf("%w: token usage by model: %v", ErrInvalidArgument, err)
		}
	}
	text := func(s *string) any {
		if s == nil {
			return nil
		}
		return cutRunes(*s, maxSummaryChars)
	}
	num := func(n *int64) any {
		if n == nil {
			return nil
		}
		return *n
	}
	return r.db.write(ctx, func(c *conn) error {
		var status records.RunStatus
		found, err := c.queryRow(sqlRunStatus, []any{runID}, func(st row) error {
			status = records.RunStatus(st.Text(0))
			return nil
		})
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: run %s", ErrNotFound, quoteCut(runID))
		}
		if !isActive(status) {
			return &TransitionError{RunID: runID, From: status, To: status}
		}
		return c.exec(sqlRunProgress, r.db.nowUS(),
			num(p.TotalInputTokens), num(p.TotalOutputTokens), num(p.TotalTokens), num(p.LLMCallCount),
			num(p.LeadAgentTokens), num(p.SubagentTokens), num(p.MiddlewareTokens), byModel,
			num(p.MessageCount), text(p.FirstHumanMessage), text(p.LastAIMessage), runID)
	})
}

// ListActive returns every thread's active runs, oldest first.
func (r Runs) ListActive(ctx context.Context, q records.ActiveQuery) ([]records.Run, error) {
	limit, err := pageLimit("active runs", q.Limit, maxPage)
	if err != nil {
		return nil, err
	}
	before := int64(math.MaxInt64)
	if !q.Before.IsZero() {
		before = q.Before.UnixMicro()
	}
	out := []records.Run{}
	err = r.db.read(ctx, func(c *conn) error {
		var leaseBefore int64
		if !q.WorkerLeaseBefore.IsZero() {
			leaseBefore = q.WorkerLeaseBefore.UnixMicro()
		}
		return c.query(sqlRunsActive, []any{q.PendingOnly, before, limit, q.RunsOnly, leaseBefore != 0, leaseBefore}, func(st row) error {
			run, err := scanRun(st)
			out = append(out, run)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
