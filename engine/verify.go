package engine

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strings"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/engine/records"
)

// Verify checks a file without changing it: the schema, every checkpoint,
// value, write and seal, that every thread-API state rebuilds from its
// parent's, and the records (docs/cli.md, "What verify checks", lists it
// all). Problems are returned in the report; the error is for failures to
// read at all (a closed DB, a cancelled ctx).
func (db *DB) Verify(ctx context.Context, o admin.VerifyOptions) (admin.VerifyReport, error) {
	if o.MaxProblems < 0 {
		return admin.VerifyReport{}, fmt.Errorf("%w: MaxProblems %d is negative", ErrInvalidArgument, o.MaxProblems)
	}
	if o.MaxProblems == 0 {
		o.MaxProblems = 1000
	}
	v := &verifier{db: db, o: o, seed: maphash.MakeSeed(), rep: admin.VerifyReport{Path: db.path, Problems: []admin.Problem{}}}
	if err := v.run(ctx); err != nil {
		return admin.VerifyReport{}, err
	}
	v.rep.OK = len(v.rep.Problems) == 0 && v.rep.Truncated == 0
	return v.rep, nil
}

type verifier struct {
	db  *DB
	o   admin.VerifyOptions
	c   *conn
	rep admin.VerifyReport
	// fixed: c is a connection inside a transaction of the caller (an
	// import verifying what it wrote), not one phase opens on its own.
	fixed bool

	seed  maphash.Seed
	seeds map[seedKey]any

	// unreadable are the tables the catalogue found missing or replaced
	// by something else (a view: it may be a recursive one that never
	// ends). The checks that read them are skipped, and say so.
	unreadable map[string]bool
}

// reads reports whether the tables a check of kind reads are tables as
// this build creates them; when one is not, the check is reported as not
// made (the schema problem says why) and skipped.
func (v *verifier) reads(kind, thread string, tables ...string) bool {
	for _, t := range tables {
		if v.unreadable[t] {
			v.addf(kind, thread, "", "", "not checked: %q is not the table this build creates (see the schema problems)", t)
			return false
		}
	}
	return true
}

type seedKey struct {
	channel string
	hash    uint64
	size    int
}

func (v *verifier) add(p admin.Problem) {
	if len(v.rep.Problems) >= v.o.MaxProblems {
		v.rep.Truncated++
		return
	}
	v.rep.Problems = append(v.rep.Problems, p)
}

func (v *verifier) addf(kind, thread, ns, id, format string, args ...any) {
	v.add(admin.Problem{Kind: kind, ThreadID: thread, CheckpointNS: ns, CheckpointID: id, Message: fmt.Sprintf(format, args...)})
}

// failed records an error that stopped a check; a context error stops
// all, and so does one that says nothing of the data (the server cancelled
// the statement, the connection broke, a lock was held too long): the
// check could not run, which is not a problem of the data.
func (v *verifier) failed(kind, thread string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrClosed) {
		return err
	}
	if errors.Is(err, ErrInterrupted) || errors.Is(err, ErrConnectionLost) || errors.Is(err, ErrBusy) {
		return fmt.Errorf("verify could not run its %s check: %w", kind, err)
	}
	v.addf(kind, thread, "", "", "cannot be read: %v", err)
	return nil
}

// phase runs one check in its own read transaction, so that damage that
// stops one check (SQLite may abandon a transaction on a corrupt page)
// does not stop the others; such damage is reported as a problem.
func (v *verifier) phase(ctx context.Context, kind, thread string, fn func() error) error {
	if v.fixed {
		if err := fn(); err != nil {
			return v.failed(kind, thread, err)
		}
		return nil
	}
	err := v.db.read(ctx, func(c *conn) error {
		v.c = c
		return fn()
	})
	if err != nil {
		return v.failed(kind, thread, err)
	}
	return nil
}

func (v *verifier) run(ctx context.Context) error {
	// A server keeps its own pages: SQLite's integrity_check has no
	// counterpart there (the server's data checksums, if enabled, are its
	// business), and its catalogue check is the server backend's.
	if v.db.server() == nil {
		before := len(v.rep.Problems) + v.rep.Truncated
		err := v.db.read(ctx, func(c *conn) error { v.c = c; return v.integrity() })
		if err != nil && (!errors.Is(err, ErrCorrupt) || len(v.rep.Problems)+v.rep.Truncated == before) {
			// A corrupt file may also fail the check's transaction; the lines
			// the check printed say more than that failure.
			if err := v.failed("integrity", "", err); err != nil {
				return err
			}
		}
	}
	if err := v.phase(ctx, "schema", "", v.schema); err != nil {
		return err
	}
	threads, err := v.threads(ctx)
	if err != nil {
		return err
	}
	if !v.reads("checkpoint", v.o.ThreadID, "checkpoints", "writes", "blobs", "thread_modes") {
		threads = nil
	}
	for i, th := range threads {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := v.phase(ctx, "checkpoint", th, func() error { return v.thread(th) }); err != nil {
			return err
		}
		if v.o.Progress != nil {
			v.o.Progress(i+1, len(threads))
		}
	}
	v.rep.Threads = len(threads)
	for _, check := range []struct {
		kind   string
		fn     func() error
		tables []string
	}{
		{"run", v.runs, []string{"runs"}},
		{"event", v.events, []string{"events", "event_seqs"}},
		{"thread", v.threadRecords, []string{"threads"}},
		{"store", v.store, []string{"store_items"}},
		{"vector", v.vectors, []string{"store_items", "store_vectors"}},
	} {
		if !v.reads(check.kind, v.o.ThreadID, check.tables...) {
			continue
		}
		if err := v.phase(ctx, check.kind, v.o.ThreadID, check.fn); err != nil {
			return err
		}
	}
	return nil
}

func (v *verifier) integrity() error {
	err := v.c.query("PRAGMA integrity_check", nil, func(st row) error {
		// SQLite prefixes the first line with the database's name.
		for _, line := range strings.Split(st.Text(0), "\n") {
			if line != "ok" && line != "" && !strings.HasPrefix(line, "*** in database ") {
				v.addf("integrity", "", "", "", "%s", line)
			}
		}
		return nil
	})
	return err
}

func (v *verifier) schema() error {
	st, err := readFileState(v.c)
	if err != nil {
		return err
	}
	if st.appID != ApplicationID {
		v.addf("schema", "", "", "", "application id is 0x%08x, want 0x%08x", st.appID, ApplicationID)
	}
	if st.version != int64(SchemaVersion) {
		v.addf("schema", "", "", "", "schema version is %d, this build writes %d", st.version, SchemaVersion)
	}
	catalogue := v.catalogue
	if sb := v.db.server(); sb != nil {
		catalogue = func() error { return sb.verify(v) }
	}
	if err := catalogue(); err != nil {
		return err
	}
	if v.reads("schema", "", "schema_history") {
		n, err := v.c.queryInt64(sqlSchemaVerify)
		if err != nil {
			return err
		}
		if n != st.version {
			v.addf("schema", "", "", "", "schema_history records %d migrations for schema version %d", n, st.version)
		}
	}
	if !v.reads("mode", "", "meta", "thread_modes") {
		return nil
	}
	mode, every, found, err := fileMode(v.c)
	switch {
	case err != nil:
		v.addf("mode", "", "", "", "%v", err)
	case !found:
		v.addf("mode", "", "", "", "the file records no channel mode")
	case mode == channels.ModeDelta && every < 1:
		v.addf("mode", "", "", "", "the file records K=%d, must be >= 1", every)
	}
	return v.c.query(sqlThreadModesVerify, nil, func(st row) error {
		th, m, k := st.Text(0), channels.Mode(st.Text(1)), int(st.Int64(2))
		if v.o.ThreadID != "" && th != v.o.ThreadID {
			return nil
		}
		switch {
		case m != channels.ModeFull && m != channels.ModeDelta:
			v.addf("mode", th, "", "", "thread mode %q is neither full nor delta", m)
		case m == channels.ModeDelta && k < 1:
			v.addf("mode", th, "", "", "delta thread with K=%d, must be >= 1", k)
		case found && mode == channels.ModeFull && m == channels.ModeDelta:
			v.addf("mode", th, "", "", "delta thread in a full-mode file: a full handle cannot read it (agentstate convert FILE --thread %s --mode full)", th)
		}
		return nil
	})
}

// catalogue compares the file's tables, indexes and triggers with those the
// migrations create: a damaged byte in their SQL text (a column renamed) or
// a hand-made change makes reads fail or misbehave, so each is a problem.
func (v *verifier) catalogue() error {
	expected := expectedSchema
	if v.db.shared {
		expected = expectedSharedSchema
	}
	want, err := expected()
	if err != nil {
		return fmt.Errorf("agentstate: internal: build the expected schema: %w", err)
	}
	got, err := readSchema(v.c)
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		w := want[name]
		g, ok := got[name]
		switch {
		case !ok:
			v.addf("schema", "", "", "", "%s %q is missing", w.typ, name)
		case g.typ != w.typ:
			v.addf("schema", "", "", "", "%s %q is a %s in this file: %q", w.typ, name, g.typ, g.sql)
		case g != w:
			v.addf("schema", "", "", "", "%s %q differs from the one this build creates: %q", w.typ, name, g.sql)
		}
		if w.typ == "table" && (!ok || g.typ != "table") {
			if v.unreadable == nil {
				v.unreadable = map[string]bool{}
			}
			// The checks name the engine's tables, without a shared
			// file's prefix.
			v.unreadable[strings.TrimPrefix(name, sharedPrefixIf(v.db.shared))] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[name]; !ok {
			v.addf("schema", "", "", "", "%s %q was not created by agentstate", got[name].typ, name)
		}
	}
	return nil
}

// threads lists the threads to check: those of every checkpoint table,
// each read on its own so that one damaged table does not hide the others.
func (v *verifier) threads(ctx context.Context) ([]string, error) {
	if v.o.ThreadID != "" {
		return []string{v.o.ThreadID}, nil
	}
	seen := map[string]bool{}
	for _, table := range []string{"checkpoints", "writes", "blobs"} {
		if v.unreadable[table] {
			continue // the thread checks report it
		}
		err := v.phase(ctx, "checkpoint", "", func() error {
			// The table name is one of three constants.
			err := v.c.query(`SELECT DISTINCT thread_id FROM `+table, nil, func(st row) error {
				seen[st.Text(0)] = true
				return nil
			})
			if err != nil {
				return fmt.Errorf("table %s: %w", table, err)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

var runStatuses = map[records.RunStatus]bool{records.RunPending: true, records.RunRunning: true, records.RunSuccess: true, records.RunError: true, records.RunTimeout: true, records.RunInterrupted: true}

func (v *verifier) runs() error {
	active := map[string]string{}
	q := sqlRunsVerify
	return v.c.query(q, []any{v.o.ThreadID}, func(st row) error {
		v.rep.Runs++
		id, th, status := st.Text(0), st.Text(1), records.RunStatus(st.Text(2))
		msg := func(format string, args ...any) {
			v.addf("run", th, "", "", "run %q: "+format, append([]any{id}, args...)...)
		}
		if !runStatuses[status] {
			msg("unknown status %q", status)
		}
		if isActive(status) {
			if other, ok := active[th]; ok {
				msg("is %s while run %q is active too", status, other)
			}
			active[th] = id
		}
		for i, col := range []string{"metadata", "kwargs", "token usage by model"} {
			if b := st.Blob(3 + i); b != nil {
				var x any
				if err := codec.Unmarshal(b, &x); err != nil {
					msg("%s does not decode: %v", col, err)
				}
			}
		}
		if st.Int64(7) < st.Int64(6) {
			msg("updated before it was created")
		}
		if a := st.Text(8); !st.Null(8) && a != "interrupt" && a != "rollback" {
			msg("unknown cancel action %q", a)
		}
		return nil
	})
}

func (v *verifier) events() error {
	last := map[string]int64{}
	err := v.c.query(sqlEventSeqsVerify, []any{v.o.ThreadID}, func(st row) error {
		last[st.Text(0)] = st.Int64(1)
		return nil
	})
	if err != nil {
		return err
	}
	q := sqlEventsVerify
	prevThread, prevSeq := "", int64(0)
	err = v.c.query(q, []any{v.o.ThreadID}, func(st row) error {
		v.rep.Events++
		th, seq := st.Text(0), st.Int64(1)
		msg := func(format string, args ...any) {
			v.addf("event", th, "", "", "event seq %d: "+format, append([]any{seq}, args...)...)
		}
		if seq < 1 {
			msg("seq must be positive")
		}
		if th == prevThread && seq <= prevSeq {
			msg("seq does not increase after %d", prevSeq)
		}
		prevThread, prevSeq = th, seq
		if n, ok := last[th]; ok && seq > n {
			msg("is beyond the thread's seq counter %d; the next event would reuse a seq", n)
		}
		if t := st.Text(3); t == "" || len([]rune(t)) > 32 {
			msg("event type %q must be 1..32 characters", t)
		}
		if cat := st.Text(4); cat == "" || len([]rune(cat)) > 16 {
			msg("category %q must be 1..16 characters", cat)
		}
		for i, col := range []string{"content", "metadata"} {
			if b := st.Blob(5 + i); b != nil {
				var x any
				if err := codec.Unmarshal(b, &x); err != nil {
					msg("%s does not decode: %v", col, err)
				}
			}
		}
		return nil
	})
	return err
}

var threadStatuses = map[records.ThreadStatus]bool{records.ThreadIdle: true, records.ThreadBusy: true, records.ThreadInterrupted: true, records.ThreadError: true}

func (v *verifier) threadRecords() error {
	q := sqlThreadsVerify
	return v.c.query(q, []any{v.o.ThreadID}, func(st row) error {
		v.rep.ThreadRecords++
		th := st.Text(0)
		if s := records.ThreadStatus(st.Text(1)); !threadStatuses[s] {
			v.addf("thread", th, "", "", "unknown status %q", s)
		}
		var md map[string]any
		if b := st.Blob(2); b != nil {
			if err := codec.Unmarshal(b, &md); err != nil {
				v.addf("thread", th, "", "", "metadata does not decode: %v", err)
				return nil
			}
		}
		// A file written before deerflow_pinned pinned a thread keeps that
		// thread's column at the old rule (pinned alone) until its metadata
		// is next updated: both agree with the metadata.
		if col := int(st.Int64(3)) != 0; col != isPinned(md) && col != (md["pinned"] == true) {
			v.addf("thread", th, "", "", "pinned column %d disagrees with metadata", int(st.Int64(3)))
		}
		return nil
	})
}

func (v *verifier) store() error {
	if v.o.ThreadID != "" {
		return nil // store items belong to no thread
	}
	return v.c.query(sqlStoreVerify, nil, func(st row) error {
		v.rep.StoreItems++
		ns, key := st.Text(0), st.Text(1)
		if ns == "" {
			v.addf("store", "", "", "", "item %q has an empty namespace", key)
		}
		var x map[string]any
		if err := codec.Unmarshal(st.Blob(2), &x); err != nil {
			v.addf("store", "", "", "", "item %q in namespace %q does not decode: %v", key, ns, err)
		}
		return nil
	})
}
