package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/records"
)

// Threads is the thread-list surface of a DB (contract §4, DeerFlow's
// ThreadMetaStore): owner, display name, status and free metadata of each
// thread. Get one with DB.Threads; it only holds the handle. Every call is
// scoped to an Owner: another owner's thread is not found, never returned,
// changed or deleted; admin tools pass AnyOwner.
type Threads struct{ db *DB }

// Threads returns the thread-list surface of db.
func (db *DB) Threads() Threads { return Threads{db} }

// Owner scopes a Threads call to one user, or (AnyOwner) to every user. The
// zero Owner is refused, so a forgotten owner never means "everyone".
type Owner struct {
	id  string
	any bool
}

// User scopes a call to the threads of user id (must not be empty).
func User(id string) Owner { return Owner{id: id} }

// AnyOwner scopes a call to every thread, whoever owns it: for admin tools.
// Threads created with AnyOwner belong to no user.
var AnyOwner = Owner{any: true}

// String names the owner for messages.
func (o Owner) String() string {
	if o.any {
		return "any owner"
	}
	return fmt.Sprintf("user %q", o.id)
}

func (o Owner) check() error {
	if o.any {
		return nil
	}
	if o.id == "" {
		return fmt.Errorf("%w: no owner given: use engine.User(id), or engine.AnyOwner for admin tools", ErrInvalidArgument)
	}
	return checkID("owner", o.id)
}

func checkThreadStatus(s records.ThreadStatus) error {
	switch s {
	case records.ThreadIdle, records.ThreadBusy, records.ThreadInterrupted, records.ThreadError:
		return nil
	}
	return fmt.Errorf("%w: thread status %s (want idle, busy, interrupted or error)", ErrInvalidArgument, quoteCut(s))
}

func ownerArgs(o Owner, threadID string) []any { return []any{threadID, o.any, o.id} }

// isPinned reads the pin flag search orders by: metadata "pinned" or
// DeerFlow's "deerflow_pinned" (what its frontend writes) set to true.
func isPinned(md map[string]any) bool { return md["pinned"] == true || md["deerflow_pinned"] == true }

// Create inserts a thread owned by owner. A thread id already in use (by
// anyone) fails with ErrConflict.
func (t Threads) Create(ctx context.Context, owner Owner, nt records.NewThread) (records.Thread, error) {
	if err := owner.check(); err != nil {
		return records.Thread{}, err
	}
	if nt.ThreadID == "" {
		nt.ThreadID = newRecordID()
	}
	if nt.Status == "" {
		nt.Status = records.ThreadIdle
	}
	if err := checkID("thread id", nt.ThreadID); err != nil {
		return records.Thread{}, err
	}
	if err := checkText("assistant id", nt.AssistantID, maxIDBytes); err != nil {
		return records.Thread{}, err
	}
	if err := checkText("display name", nt.DisplayName, maxTextLong); err != nil {
		return records.Thread{}, err
	}
	if err := checkThreadStatus(nt.Status); err != nil {
		return records.Thread{}, err
	}
	md, err := encodeMap("thread metadata", nt.Metadata)
	if err != nil {
		return records.Thread{}, err
	}
	stored, err := decodeMap("thread metadata", md) // what a Get will return
	if err != nil {
		return records.Thread{}, err
	}
	var now int64
	err = t.db.write(ctx, func(c *conn) error {
		now = t.db.nowUS()
		changed, err := c.execN(sqlThreadInsert, nt.ThreadID, nt.AssistantID, owner.id, nt.DisplayName, nt.Status, md,
			isPinned(stored), now, now)
		if err != nil {
			return err
		}
		if changed == 0 {
			return fmt.Errorf("%w: thread id %s is already in use", ErrConflict, quoteCut(nt.ThreadID))
		}
		return nil
	})
	if err != nil {
		return records.Thread{}, err
	}
	return records.Thread{
		ThreadID: nt.ThreadID, AssistantID: nt.AssistantID, UserID: owner.id, DisplayName: nt.DisplayName,
		Status: nt.Status, Metadata: stored, CreatedAt: fromUS(now), UpdatedAt: fromUS(now),
	}, nil
}

// Get returns the thread, or ErrNotFound if it does not exist or belongs to
// another owner.
func (t Threads) Get(ctx context.Context, owner Owner, threadID string) (records.Thread, error) {
	if err := t.check(owner, threadID); err != nil {
		return records.Thread{}, err
	}
	var th records.Thread
	var found bool
	err := t.db.read(ctx, func(c *conn) (err error) {
		found, err = c.queryRow(sqlThreadGet, ownerArgs(owner, threadID), func(st row) error {
			th, err = scanThread(st)
			return err
		})
		return err
	})
	if err != nil {
		return records.Thread{}, err
	}
	if !found {
		return records.Thread{}, notFoundThread(owner, threadID)
	}
	return th, nil
}

func (t Threads) check(owner Owner, threadID string) error {
	if err := owner.check(); err != nil {
		return err
	}
	return checkID("thread id", threadID)
}

func notFoundThread(owner Owner, threadID string) error {
	return fmt.Errorf("%w: thread %s for %v", ErrNotFound, quoteCut(threadID), owner)
}

func scanThread(st row) (records.Thread, error) {
	th := records.Thread{
		ThreadID:    st.Text(0),
		AssistantID: st.Text(1),
		UserID:      st.Text(2),
		DisplayName: st.Text(3),
		Status:      records.ThreadStatus(st.Text(4)),
		CreatedAt:   fromUS(st.Int64(6)),
		UpdatedAt:   fromUS(st.Int64(7)),
	}
	var err error
	th.Metadata, err = decodeMap("thread metadata", st.Blob(5))
	return th, err
}

// Search returns at most q.Limit of the owner's threads matching q: pinned
// threads first, then the most recently updated.
func (t Threads) Search(ctx context.Context, owner Owner, q records.ThreadQuery) ([]records.Thread, error) {
	if err := owner.check(); err != nil {
		return nil, err
	}
	filter, err := compileMetadataFilter(q.Metadata)
	if err != nil {
		return nil, err
	}
	var status any
	if q.Status != "" {
		if err := checkThreadStatus(q.Status); err != nil {
			return nil, err
		}
		status = q.Status
	}
	limit, err := pageLimit("thread search", q.Limit, 100)
	if err != nil {
		return nil, err
	}
	if err := pageOffset("thread search", q.Offset); err != nil {
		return nil, err
	}
	var fb any
	if filter != nil {
		fb = filter.encoded
	}
	var owned any
	if !owner.any {
		owned = owner.id
	}
	sql := [2][2]string{
		{sqlThreadSearchAny, sqlThreadSearchAnyFiltered},
		{sqlThreadSearchOwner, sqlThreadSearchOwnerFiltered},
	}[b2i(!owner.any)][b2i(filter != nil)]
	out := make([]records.Thread, 0, min(limit, 64))
	err = t.db.read(ctx, func(c *conn) error {
		return c.query(sql, []any{status, owned, fb, limit, q.Offset}, func(st row) error {
			th, err := scanThread(st)
			out = append(out, th)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SetDisplayName sets the thread's display name (its title in thread lists);
// SyncTitle sets it from the thread's "title" channel.
func (t Threads) SetDisplayName(ctx context.Context, owner Owner, threadID, name string) error {
	if err := t.check(owner, threadID); err != nil {
		return err
	}
	if err := checkText("display name", name, maxTextLong); err != nil {
		return err
	}
	return t.update(ctx, owner, threadID, sqlThreadName, name)
}

// SetStatus sets the thread's status: idle, busy, interrupted or error.
func (t Threads) SetStatus(ctx context.Context, owner Owner, threadID string, status records.ThreadStatus) error {
	if err := t.check(owner, threadID); err != nil {
		return err
	}
	if err := checkThreadStatus(status); err != nil {
		return err
	}
	return t.update(ctx, owner, threadID, sqlThreadStatus, string(status))
}

// SetOwner moves a thread to user newOwner; owner must own it or be AnyOwner.
func (t Threads) SetOwner(ctx context.Context, owner Owner, threadID, newOwner string) error {
	if err := t.check(owner, threadID); err != nil {
		return err
	}
	if err := checkID("new owner", newOwner); err != nil {
		return err
	}
	return t.update(ctx, owner, threadID, sqlThreadOwner, newOwner)
}

func (t Threads) update(ctx context.Context, owner Owner, threadID, sql, value string) error {
	return t.db.write(ctx, func(c *conn) error {
		changed, err := c.execN(sql, threadID, owner.any, owner.id, value, t.db.nowUS())
		if err != nil {
			return err
		}
		if changed == 0 {
			return notFoundThread(owner, threadID)
		}
		return nil
	})
}

// MergeMetadata sets the keys of patch in the thread's metadata (a shallow
// merge: other keys stay; a nil value is stored as null). With touch, the
// thread's updated_at moves to now; without, list order is kept.
func (t Threads) MergeMetadata(ctx context.Context, owner Owner, threadID string, patch map[string]any, touch bool) error {
	if err := t.check(owner, threadID); err != nil {
		return err
	}
	if _, err := encodeMap("thread metadata", patch); err != nil {
		return err
	}
	return t.db.write(ctx, func(c *conn) error {
		if err := c.lock(threadID); err != nil {
			return err
		}
		var md map[string]any
		found, err := c.queryRow(sqlThreadGet, ownerArgs(owner, threadID), func(st row) (err error) {
			md, err = decodeMap("thread metadata", st.Blob(5))
			return err
		})
		if err != nil {
			return err
		}
		if !found {
			return notFoundThread(owner, threadID)
		}
		merged := make(map[string]any, len(md)+len(patch))
		maps.Copy(merged, md)
		maps.Copy(merged, patch)
		b, err := encodeMap("thread metadata", merged)
		if err != nil {
			return err
		}
		var updated any
		if touch {
			updated = t.db.nowUS()
		}
		return c.exec(sqlThreadMeta, threadID, owner.any, owner.id, b, isPinned(merged), updated)
	})
}

// Delete removes the thread's list record (not its checkpoints, runs or
// events, which have their own deletes). Another owner's thread is
// ErrNotFound.
func (t Threads) Delete(ctx context.Context, owner Owner, threadID string) error {
	if err := t.check(owner, threadID); err != nil {
		return err
	}
	return t.db.write(ctx, func(c *conn) error {
		changed, err := c.execN(sqlThreadDelete, ownerArgs(owner, threadID)...)
		if err != nil {
			return err
		}
		if changed == 0 {
			return notFoundThread(owner, threadID)
		}
		return nil
	})
}

// TitleChannel is the state channel whose value SyncTitle copies into a
// thread's display name.
const TitleChannel = "title"

// SyncTitle sets the thread's display name to the value of the "title"
// channel of its latest root checkpoint, as DeerFlow does at the end of a
// run. The value may be the thread API's (msgpack) or LangGraph's ("json"
// serde); a thread without a title, or with a title that is not a non-empty
// string, keeps its name and reports changed == false.
func (t Threads) SyncTitle(ctx context.Context, owner Owner, threadID string) (title string, changed bool, err error) {
	if err := t.check(owner, threadID); err != nil {
		return "", false, err
	}
	if _, err := t.Get(ctx, owner, threadID); err != nil {
		return "", false, err
	}
	tup, err := t.db.GetTuple(ctx, Config{ThreadID: threadID})
	if errors.Is(err, ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	b, ok := tup.Checkpoint.ChannelValues[TitleChannel]
	if !ok {
		return "", false, nil
	}
	var v any
	switch b.Type {
	case codec.TypeMsgpack:
		err = b.Decode(&v)
	case "json":
		err = json.Unmarshal(b.Data, &v)
	default:
		return "", false, nil
	}
	s, isString := v.(string)
	if err != nil || !isString || s == "" {
		return "", false, nil
	}
	if err := t.SetDisplayName(ctx, owner, threadID, cutRunes(s, maxTextLong)); err != nil {
		return "", false, err
	}
	return s, true, nil
}
