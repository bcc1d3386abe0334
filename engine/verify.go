package engine

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
)

// VerifyOptions select what Verify checks.
type VerifyOptions struct {
	// ThreadID limits the checks of checkpoints and records to one thread;
	// the SQLite integrity check and the schema checks always cover the
	// whole file.
	ThreadID string
	// MaxProblems caps the problems reported (the rest are counted in
	// Truncated). Default 1000; must be >= 0.
	MaxProblems int
	// Progress, if not nil, is called after each thread with the number of
	// threads checked and the total.
	Progress func(done, total int)
}

// Problem is one thing wrong in a file. String gives it as one line that
// names where it is.
type Problem struct {
	// Kind is one of: integrity, schema, mode, checkpoint, parent, write,
	// blob, replay, run, event, thread, store.
	Kind         string `json:"kind"`
	ThreadID     string `json:"thread_id,omitempty"`
	CheckpointNS string `json:"checkpoint_ns,omitempty"`
	CheckpointID string `json:"checkpoint_id,omitempty"`
	Message      string `json:"message"`
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.Kind)
	b.WriteString(": ")
	if p.ThreadID != "" {
		fmt.Fprintf(&b, "thread %q ", p.ThreadID)
	}
	if p.CheckpointNS != "" {
		fmt.Fprintf(&b, "namespace %q ", p.CheckpointNS)
	}
	if p.CheckpointID != "" {
		fmt.Fprintf(&b, "checkpoint %q ", p.CheckpointID)
	}
	if b.Len() > len(p.Kind)+2 {
		s := strings.TrimSuffix(b.String(), " ")
		b.Reset()
		b.WriteString(s)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// VerifyReport is what Verify found and how much it checked.
type VerifyReport struct {
	Path     string    `json:"path"`
	OK       bool      `json:"ok"`
	Problems []Problem `json:"problems"`
	// Truncated counts problems found past MaxProblems and not listed.
	Truncated int `json:"truncated"`

	Threads     int `json:"threads"`
	Checkpoints int `json:"checkpoints"`
	Writes      int `json:"writes"`
	Blobs       int `json:"blobs"`
	// Replayed counts checkpoints of thread-API threads whose state was
	// rebuilt from their parent and writes; SnapshotsChecked the stored
	// values compared with that rebuild; DeltaReads the checkpoints read
	// back through the delta history walk and compared, DeltaReadsSkipped
	// those replayed but not read back that way (past the 16th checkpoint
	// after a stored value, only every power of two and the heads are).
	Replayed          int `json:"replayed"`
	SnapshotsChecked  int `json:"snapshots_checked"`
	DeltaReads        int `json:"delta_reads"`
	DeltaReadsSkipped int `json:"delta_reads_skipped"`
	Runs              int `json:"runs"`
	Events            int `json:"events"`
	ThreadRecords     int `json:"thread_records"`
	StoreItems        int `json:"store_items"`
}

// Verify checks a file without changing it: SQLite's integrity check, the
// schema version, the tables and indexes against those this build creates,
// the recorded modes, that every checkpoint and stored value
// decodes, every parent exists, every write belongs to a checkpoint (and
// every seal to one of its children), every stored channel value is named
// by a checkpoint, and, for threads of the thread API, that every
// checkpoint's state rebuilds from its parent's state and the writes it
// consumed, equals its stored value where it has one, and reads the same
// through the delta history walk. It also checks the records: runs (status,
// one active run per thread), events (seq positive, counter not behind),
// threads and store items decode. Problems are returned in the report;
// the error is for failures to read at all (a closed DB, a cancelled ctx).
func (db *DB) Verify(ctx context.Context, o VerifyOptions) (VerifyReport, error) {
	if o.MaxProblems < 0 {
		return VerifyReport{}, fmt.Errorf("%w: MaxProblems %d is negative", ErrInvalidArgument, o.MaxProblems)
	}
	if o.MaxProblems == 0 {
		o.MaxProblems = 1000
	}
	v := &verifier{db: db, o: o, seed: maphash.MakeSeed(), rep: VerifyReport{Path: db.path, Problems: []Problem{}}}
	if err := v.run(ctx); err != nil {
		return VerifyReport{}, err
	}
	v.rep.OK = len(v.rep.Problems) == 0 && v.rep.Truncated == 0
	return v.rep, nil
}

type verifier struct {
	db  *DB
	o   VerifyOptions
	c   *conn
	rep VerifyReport
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

func (v *verifier) add(p Problem) {
	if len(v.rep.Problems) >= v.o.MaxProblems {
		v.rep.Truncated++
		return
	}
	v.rep.Problems = append(v.rep.Problems, p)
}

func (v *verifier) addf(kind, thread, ns, id, format string, args ...any) {
	v.add(Problem{Kind: kind, ThreadID: thread, CheckpointNS: ns, CheckpointID: id, Message: fmt.Sprintf(format, args...)})
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
		n, err := v.c.queryInt64(`SELECT count(*) FROM schema_history`)
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
	case mode == ModeDelta && every < 1:
		v.addf("mode", "", "", "", "the file records K=%d, must be >= 1", every)
	}
	return v.c.query(`SELECT thread_id, mode, every FROM thread_modes ORDER BY thread_id`, nil, func(st row) error {
		th, m, k := st.Text(0), Mode(st.Text(1)), int(st.Int64(2))
		if v.o.ThreadID != "" && th != v.o.ThreadID {
			return nil
		}
		switch {
		case m != ModeFull && m != ModeDelta:
			v.addf("mode", th, "", "", "thread mode %q is neither full nor delta", m)
		case m == ModeDelta && k < 1:
			v.addf("mode", th, "", "", "delta thread with K=%d, must be >= 1", k)
		case found && mode == ModeFull && m == ModeDelta:
			v.addf("mode", th, "", "", "delta thread in a full-mode file: a full handle cannot read it (agentstate convert FILE --thread %s --mode full)", th)
		}
		return nil
	})
}

// catalogue compares the file's tables, indexes and triggers with those the
// migrations create: a damaged byte in their SQL text (a column renamed) or
// a hand-made change makes reads fail or misbehave, so each is a problem.
func (v *verifier) catalogue() error {
	want, err := expectedSchema()
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
			v.unreadable[name] = true
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

// vcp is one checkpoint as verify sees it.
type vcp struct {
	ns, id, parent string
	hasParent      bool
	versions       map[string]string
	ok             bool // decoded
}

type vwrite struct {
	ns, cp, task, channel, typ, consumedBy, taskPath string
	idx                                              int
	data                                             []byte
	loadErr                                          error
	sealed                                           bool
}

type nsKey struct{ ns, id string }

func (v *verifier) thread(th string) error {
	c := v.c
	cps := map[nsKey]*vcp{}
	var order []*vcp
	err := c.query(`SELECT checkpoint_ns, checkpoint_id, parent_id, checkpoint, metadata FROM checkpoints WHERE thread_id = ?`, []any{th},
		func(st row) error {
			cp := &vcp{ns: st.Text(0), id: st.Text(1), hasParent: !st.Null(2), parent: st.Text(2), ok: true}
			var sc storedCheckpoint
			if err := codec.Unmarshal(st.Blob(3), &sc); err != nil {
				v.addf("checkpoint", th, cp.ns, cp.id, "does not decode: %v", err)
				cp.ok = false
			}
			cp.versions = sc.ChannelVersions
			var md map[string]any
			if err := codec.Unmarshal(st.Blob(4), &md); err != nil {
				v.addf("checkpoint", th, cp.ns, cp.id, "metadata does not decode: %v", err)
			}
			cps[nsKey{cp.ns, cp.id}] = cp
			order = append(order, cp)
			return nil
		})
	if err != nil {
		return err
	}
	v.rep.Checkpoints += len(order)
	slices.SortFunc(order, func(a, b *vcp) int {
		if c := strings.Compare(a.ns, b.ns); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	for _, cp := range order {
		if !cp.hasParent {
			continue
		}
		if _, ok := cps[nsKey{cp.ns, cp.parent}]; !ok {
			v.addf("parent", th, cp.ns, cp.id, "parent %q does not exist", cp.parent)
		} else if cp.parent >= cp.id {
			v.addf("parent", th, cp.ns, cp.id, "does not sort after its parent %q", cp.parent)
		}
	}

	// Writes: each belongs to a checkpoint, each seal names a child of it.
	var writes []*vwrite
	err = c.query(`SELECT checkpoint_ns, checkpoint_id, task_id, idx, channel, type, consumed_by, task_path, enc, data FROM writes WHERE thread_id = ?`, []any{th},
		func(st row) error {
			w := &vwrite{ns: st.Text(0), cp: st.Text(1), task: st.Text(2), idx: int(st.Int64(3)), channel: st.Text(4),
				typ: st.Text(5), sealed: !st.Null(6), consumedBy: st.Text(6), taskPath: st.Text(7)}
			w.data, w.loadErr = loadWrite(st, 8)
			writes = append(writes, w)
			return nil
		})
	if err != nil {
		return err
	}
	v.rep.Writes += len(writes)
	for _, w := range writes {
		where := fmt.Sprintf("write of task %q idx %d to %q", w.task, w.idx, w.channel)
		if w.loadErr != nil {
			v.addf("write", th, w.ns, w.cp, "%s: its stored bytes do not read: %v", where, w.loadErr)
		}
		if _, ok := cps[nsKey{w.ns, w.cp}]; !ok {
			v.addf("write", th, w.ns, w.cp, "%s belongs to no checkpoint (orphan write)", where)
		}
		if w.sealed {
			child, ok := cps[nsKey{w.ns, w.consumedBy}]
			switch {
			case !ok:
				v.addf("write", th, w.ns, w.cp, "%s is sealed by checkpoint %q, which does not exist", where, w.consumedBy)
			case !child.hasParent || child.parent != w.cp:
				v.addf("write", th, w.ns, w.cp, "%s is sealed by checkpoint %q, which is not a child of its checkpoint", where, w.consumedBy)
			}
		}
		switch {
		case w.typ == "":
			v.addf("write", th, w.ns, w.cp, "%s has no type tag", where)
		case w.typ == codec.TypeMsgpack && w.loadErr == nil:
			var x any
			if err := codec.Unmarshal(w.data, &x); err != nil {
				v.addf("write", th, w.ns, w.cp, "%s does not decode: %v", where, err)
			}
		}
	}

	// Channel values: each is named by a checkpoint's versions, and its
	// owner (if it survives) has that version.
	named := map[[3]string]bool{}
	for _, cp := range order {
		for ch, ver := range cp.versions {
			named[[3]string{cp.ns, ch, ver}] = true
		}
	}
	mode, _, ours, err := threadMode(c, th)
	if err != nil {
		return err
	}
	var blobs []*blobRef
	err = c.query(`SELECT checkpoint_ns, channel, version, checkpoint_id, type, enc, base FROM blobs WHERE thread_id = ?`, []any{th}, func(st row) error {
		blobs = append(blobs, &blobRef{ns: st.Text(0), ch: st.Text(1), ver: st.Text(2), owner: st.Text(3), typ: st.Text(4),
			enc: st.Int64(5), base: st.Text(6), hasBase: !st.Null(6)})
		return nil
	})
	if err != nil {
		return err
	}
	v.rep.Blobs += len(blobs)
	for _, b := range blobs {
		where := fmt.Sprintf("value of channel %q version %q", b.ch, b.ver)
		if !named[[3]string{b.ns, b.ch, b.ver}] {
			v.addf("blob", th, b.ns, b.owner, "%s is named by no checkpoint (orphan value)", where)
		}
		if owner, ok := cps[nsKey{b.ns, b.owner}]; ok && owner.ok && owner.versions[b.ch] != b.ver {
			v.addf("blob", th, b.ns, b.owner, "%s is stored by this checkpoint, whose version of the channel is %q", where, owner.versions[b.ch])
		}
		if b.typ == "" {
			v.addf("blob", th, b.ns, b.owner, "%s has no type tag", where)
		}
	}
	// Every value rebuilds: each delta applies to its base (lengths and
	// checksums), no base is missing, no chain loops; and values of the
	// engine's type that the replay below does not decode are decoded here.
	err = v.values(th, blobs, func(b *blobRef, data []byte) {
		_, inSchema := v.db.opts.Schema[b.ch]
		if b.typ == codec.TypeMsgpack && !(ours && inSchema) {
			var x any
			if err := codec.Unmarshal(data, &x); err != nil {
				v.addf("blob", th, b.ns, b.owner, "value of channel %q version %q does not decode: %v", b.ch, b.ver, err)
			}
		}
	})
	if err != nil {
		return err
	}
	if ours {
		return v.replay(th, mode, order, cps, writes)
	}
	return nil
}

// blobRef is a stored channel value as verify sees it.
type blobRef struct {
	ns, ch, ver, owner, typ string
	enc                     int64
	base                    string
	hasBase                 bool
	visited                 bool
}

// values rebuilds every stored value of a thread, chain by chain, one delta
// at a time (codec.Patch, which checks the base's length and checksum and
// the result's checksum), calling check with each value that rebuilds. A
// delta is applied to its base as soon as the base is known and the base
// is dropped after its last delta, so a long chain costs two values of
// memory, not the chain.
func (v *verifier) values(th string, blobs []*blobRef, check func(b *blobRef, data []byte)) error {
	type chainKey struct{ ns, ch string }
	byVer := map[chainKey]map[string]*blobRef{}
	for _, b := range blobs {
		k := chainKey{b.ns, b.ch}
		if byVer[k] == nil {
			byVer[k] = map[string]*blobRef{}
		}
		byVer[k][b.ver] = b
	}
	where := func(b *blobRef) string { return fmt.Sprintf("value of channel %q version %q", b.ch, b.ver) }
	children := map[*blobRef][]*blobRef{}
	var roots, broken []*blobRef
	for _, b := range blobs {
		switch {
		case b.enc == encPlain || b.enc == encPacked:
			if b.hasBase {
				v.addf("blob", th, b.ns, b.owner, "%s is stored whole (encoding %d) but names a base version %q", where(b), b.enc, b.base)
			}
			roots = append(roots, b)
		case b.enc == encDelta:
			base, ok := byVer[chainKey{b.ns, b.ch}][b.base]
			switch {
			case !b.hasBase:
				v.addf("blob", th, b.ns, b.owner, "%s is a delta without a base version", where(b))
				b.visited = true
				broken = append(broken, b)
			case !ok:
				v.addf("blob", th, b.ns, b.owner, "%s is a delta of version %q, which is not stored (a dangling base)", where(b), b.base)
				b.visited = true
				broken = append(broken, b)
			default:
				children[base] = append(children[base], b)
			}
		default:
			v.addf("blob", th, b.ns, b.owner, "%s has an unknown encoding %d", where(b), b.enc)
			b.visited = true
			broken = append(broken, b)
		}
	}
	// What follows a value that cannot be rebuilt cannot be either.
	for _, b := range broken {
		v.skipChain(th, b, children, where)
	}
	data := func(b *blobRef) ([]byte, error) {
		var d []byte
		_, err := v.c.queryRow(`SELECT data FROM blobs WHERE thread_id=? AND checkpoint_ns=? AND channel=? AND version=?`, []any{th, b.ns, b.ch, b.ver}, func(st row) error {
			d = copyBytes(st.Blob(0))
			return nil
		})
		return d, err
	}
	type frame struct {
		b    *blobRef
		val  codec.DeltaBase
		next int
	}
	for _, r := range roots {
		r.visited = true
		stored, err := data(r)
		if err != nil {
			return err
		}
		body, err := unpack(valueKey{th, r.ns, r.ch}, r.ver, storedVal{enc: r.enc, data: stored})
		if err != nil {
			v.addf("blob", th, r.ns, r.owner, "%s does not inflate: %v", where(r), err)
			v.skipChain(th, r, children, where)
			continue
		}
		check(r, body)
		stack := []frame{{b: r, val: codec.NewDeltaBase(body)}}
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			kids := children[top.b]
			if top.next == len(kids) {
				stack = stack[:len(stack)-1]
				continue
			}
			kid := kids[top.next]
			top.next++
			kid.visited = true
			base := top.val
			if top.next == len(kids) {
				stack = stack[:len(stack)-1] // the base's last delta: let it go
			}
			d, err := data(kid)
			if err != nil {
				return err
			}
			val, err := base.Patch(nil, d, MaxListBytes)
			if err != nil {
				v.addf("blob", th, kid.ns, kid.owner, "%s does not apply to its base version %q: %v", where(kid), kid.base, err)
				v.skipChain(th, kid, children, where)
				continue
			}
			check(kid, val.Bytes())
			stack = append(stack, frame{b: kid, val: val})
		}
	}
	for _, b := range blobs {
		if !b.visited {
			v.addf("blob", th, b.ns, b.owner, "%s is a delta whose chain of bases loops and reaches no whole value", where(b))
		}
	}
	return nil
}

// skipChain reports the deltas after one that cannot be rebuilt (each
// delta has one base, so they form a tree).
func (v *verifier) skipChain(th string, b *blobRef, children map[*blobRef][]*blobRef, where func(*blobRef) string) {
	todo := []*blobRef{b}
	for len(todo) > 0 {
		x := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, k := range children[x] {
			if k.visited {
				continue
			}
			k.visited = true
			v.addf("blob", th, k.ns, k.owner, "%s cannot be rebuilt: its base version %q does not", where(k), x.ver)
			todo = append(todo, k)
		}
	}
}

// replay rebuilds every checkpoint of a thread-API thread from its parent's
// state and the writes it consumed (the oracle of contract §2.4), compares that
// with the stored value where there is one, and with what the delta walk
// reads where there is none.
func (v *verifier) replay(th string, mode Mode, order []*vcp, cps map[nsKey]*vcp, writes []*vwrite) error {
	c := v.c
	type sealKey struct{ ns, cp, child, channel string }
	sealed := map[sealKey][]*vwrite{}
	for _, w := range writes {
		if w.sealed {
			k := sealKey{w.ns, w.cp, w.consumedBy, w.channel}
			sealed[k] = append(sealed[k], w)
		}
	}
	names := slices.Sorted(maps.Keys(v.db.opts.Schema))
	// A checkpoint's rebuilt state is kept only until its last child has
	// been replayed: all of them, kept, were a list per checkpoint (a
	// thread of 100,000 messages passed 20 GB).
	kids := map[nsKey]int{}
	for _, cp := range order {
		if cp.hasParent {
			kids[nsKey{cp.ns, cp.parent}]++
		}
	}
	state := map[nsKey]map[string]*replayState{} // rebuilt state per checkpoint with children to come
	broken := map[nsKey]bool{}                   // state unknown (a problem was reported on the way)
	// steps counts, per checkpoint with children to come and channel, the
	// checkpoints since the last one that stores the channel's value: how
	// far the delta history walk of the read path goes back from there.
	steps := map[nsKey]map[string]int{}
	for _, cp := range order {
		k := nsKey{cp.ns, cp.id}
		if !cp.ok {
			broken[k] = true
			continue
		}
		var parent map[string]*replayState
		var parentSteps map[string]int
		lastChild := false // the parent's folders may be taken over, not copied
		if cp.hasParent {
			pk := nsKey{cp.ns, cp.parent}
			if _, ok := cps[pk]; !ok || broken[pk] {
				broken[k] = true
				continue
			}
			parent = state[pk]
			parentSteps = steps[pk]
			if kids[pk]--; kids[pk] == 0 {
				delete(state, pk)
				delete(steps, pk)
				lastChild = true
			}
		}
		values := map[string]*replayState{}
		mySteps := map[string]int{}
		bad := false
		for _, name := range names {
			ch := v.db.opts.Schema[name]
			var ws []channels.TaskWrite
			foldable := true
			if cp.hasParent {
				for _, w := range sealed[sealKey{cp.ns, cp.parent, cp.id, name}] {
					if w.typ != codec.TypeMsgpack {
						v.addf("replay", th, cp.ns, cp.id, "channel %q: write of task %q has type %q, which the thread API cannot fold", name, w.task, w.typ)
						foldable = false
						continue
					}
					u, err := ch.DecodeUpdate(w.data)
					if err != nil {
						v.addf("replay", th, cp.ns, cp.id, "channel %q: write of task %q idx %d does not decode: %v", name, w.task, w.idx, err)
						foldable = false
						continue
					}
					ws = append(ws, channels.TaskWrite{TaskID: w.taskPath + "\x00" + w.task, Idx: w.idx, Value: u})
				}
			}
			var rs *replayState
			if foldable {
				ordered, err := channels.OrderStep(ch, ws)
				if err == nil {
					rs, err = parent[name].next(ch, ordered, lastChild)
				}
				if err != nil {
					v.addf("replay", th, cp.ns, cp.id, "channel %q: the writes it consumed do not apply to its parent's state: %v", name, err)
					foldable = false
				}
			}
			ver, has := cp.versions[name]
			stored, held, err := v.storedValue(th, cp, name, ver, has)
			if err != nil {
				return err
			}
			switch {
			case held && stored == nil:
				bad = true // decode problem already reported
			case held:
				if foldable && cp.hasParent {
					v.rep.SnapshotsChecked++
					replayed := rs.get()
					if !reflect.DeepEqual(normalizeState(stored), normalizeState(replayed)) {
						v.addf("replay", th, cp.ns, cp.id, "channel %q: the stored value (%s) differs from its parent's state plus the writes it consumed (%s)", name, describeValue(stored), describeValue(replayed))
					}
				}
				values[name] = &replayState{value: stored, made: true}
			case !foldable:
				bad = true
			default:
				values[name] = rs
				if !has {
					continue
				}
				if mode == ModeFull && cp.hasParent && (parentVersion(cps, cp, name) != ver) {
					v.addf("replay", th, cp.ns, cp.id, "channel %q: a full-mode checkpoint that changed the channel (version %q) stores no value for it", name, ver)
				}
				n := parentSteps[name] + 1
				mySteps[name] = n
				if !readPathChecked(n, kids[k] == 0) {
					v.rep.DeltaReadsSkipped++
					continue
				}
				// The read path: the delta history walk from the file.
				e, err := walk(c, cpKey{th, cp.ns, cp.id}, name)
				if err != nil {
					v.addf("replay", th, cp.ns, cp.id, "channel %q: the history walk fails: %v", name, err)
					bad = true
					continue
				}
				read, err := v.foldHistory(name, ch, e.hist)
				if err != nil {
					v.addf("replay", th, cp.ns, cp.id, "channel %q: its history does not fold: %v", name, err)
					bad = true
					continue
				}
				v.rep.DeltaReads++
				if replayed := rs.get(); !reflect.DeepEqual(normalizeState(read), normalizeState(replayed)) {
					v.addf("replay", th, cp.ns, cp.id, "channel %q: the delta walk reads %s, its replay gives %s", name, describeValue(read), describeValue(replayed))
				}
			}
		}
		if bad {
			broken[k] = true
			continue
		}
		if kids[k] > 0 {
			state[k] = values
			steps[k] = mySteps
		}
		v.rep.Replayed++
	}
	return nil
}

// replayState is a channel's replayed state at a checkpoint: its value,
// or, for a channels.Stepper (the message list), a folder whose value is
// made only when something compares it. Folding each checkpoint's writes
// onto its parent's value rebuilt the list's index at every checkpoint,
// O(messages) each; a folder taken over from parent to child along a
// chain keeps it.
type replayState struct {
	value  any
	made   bool
	folder channels.StepFolder
}

// get returns the state's value.
func (r *replayState) get() any {
	if r == nil {
		return nil
	}
	if !r.made {
		r.value, r.made = r.folder.Value(), true
	}
	return r.value
}

// next is the state after a step of updates onto r (nil: the channel is
// empty). The last child of a checkpoint takes r's folder over; the
// others start one from r's value.
func (r *replayState) next(ch channels.Channel, updates []any, lastChild bool) (*replayState, error) {
	st, ok := ch.(channels.Stepper)
	if !ok {
		v, err := channels.Fold(ch, r.get(), updates)
		return &replayState{value: v, made: true}, err
	}
	var f channels.StepFolder
	if r != nil && r.folder != nil && lastChild {
		f, r.folder = r.folder, nil
	} else {
		var err error
		if f, err = st.Start(r.get()); err != nil {
			return nil, err
		}
	}
	if err := f.Step(updates); err != nil {
		return nil, err
	}
	return &replayState{folder: f}, nil
}

// readPathChecked says whether verify reads a checkpoint that stores no
// value of a channel back through the delta history walk, n checkpoints
// after the last one that stores it, and compares it with the replay.
// The walk goes back those n checkpoints, so reading every one costs
// O(n^2) per stretch, and retention leaves stretches of thousands (a
// 10,000-checkpoint thread took 14 minutes); the replay itself, which
// checks every checkpoint's state against every stored value, stays
// whole. So the walk is checked for the first 16 checkpoints of each
// stretch, at every power of two after that, and at every head (a
// checkpoint without children: what a reader of the thread reads first):
// O(n) in all.
func readPathChecked(n int, head bool) bool {
	return head || n <= 16 || n&(n-1) == 0
}

func parentVersion(cps map[nsKey]*vcp, cp *vcp, ch string) string {
	if p, ok := cps[nsKey{cp.ns, cp.parent}]; ok {
		return p.versions[ch]
	}
	return ""
}

// storedValue decodes the value stored for a schema channel at cp's version,
// if any: held reports a stored value, and value is nil when it did not
// decode (a problem is then reported).
func (v *verifier) storedValue(th string, cp *vcp, name, ver string, has bool) (value any, held bool, err error) {
	if !has {
		return nil, false, nil
	}
	b, held, err := readValue(v.c, valueKey{th, cp.ns, name}, ver)
	if errors.Is(err, ErrCorrupt) {
		return nil, true, nil // reported by values
	}
	if err != nil || !held {
		return nil, held, err
	}
	typ, data := b.Type, b.Data
	if typ != codec.TypeMsgpack {
		v.addf("blob", th, cp.ns, cp.id, "channel %q holds a value of type %q, which the thread API did not write", name, typ)
		return nil, true, nil
	}
	x, err := v.db.opts.Schema[name].DecodeState(data)
	if err != nil {
		v.addf("blob", th, cp.ns, cp.id, "channel %q version %q does not decode: %v", name, ver, err)
		return nil, true, nil
	}
	return x, true, nil
}

// foldHistory folds a delta history as the read path does. Decoded seeds
// are kept: consecutive checkpoints mostly share one.
func (v *verifier) foldHistory(name string, ch channels.Channel, h History) (any, error) {
	var seed any
	if h.Seed != nil {
		if h.Seed.Type != codec.TypeMsgpack {
			return nil, fmt.Errorf("seed of type %q is not ours to fold", h.Seed.Type)
		}
		k := seedKey{name, maphash.Bytes(v.seed, h.Seed.Data), len(h.Seed.Data)}
		s, ok := v.seeds[k]
		if !ok {
			var err error
			if s, err = ch.DecodeState(h.Seed.Data); err != nil {
				return nil, err
			}
			if v.seeds == nil || len(v.seeds) > 64 {
				v.seeds = map[seedKey]any{}
			}
			v.seeds[k] = s
		}
		seed = s
	}
	ups := make([]any, len(h.Writes))
	for i, w := range h.Writes {
		if w.Value.Type != codec.TypeMsgpack {
			return nil, fmt.Errorf("write of task %q has type %q, which is not ours to fold", w.TaskID, w.Value.Type)
		}
		u, err := ch.DecodeUpdate(w.Value.Data)
		if err != nil {
			return nil, fmt.Errorf("write of task %q: %w", w.TaskID, err)
		}
		ups[i] = u
	}
	return channels.Fold(ch, seed, ups)
}

// normalizeState makes an empty message list and a missing one compare
// equal (a fold of nothing onto nothing is an empty list).
func normalizeState(x any) any {
	if ms, ok := x.([]codec.Message); ok && len(ms) == 0 {
		return nil
	}
	return x
}

func describeValue(x any) string {
	switch v := x.(type) {
	case nil:
		return "nothing"
	case []codec.Message:
		if len(v) == 0 {
			return "0 messages"
		}
		return fmt.Sprintf("%d messages, last %q", len(v), v[len(v)-1].ID)
	}
	return fmt.Sprintf("a %T", x)
}

var runStatuses = map[RunStatus]bool{RunPending: true, RunRunning: true, RunSuccess: true, RunError: true, RunTimeout: true, RunInterrupted: true}

func (v *verifier) runs() error {
	active := map[string]string{}
	q := `SELECT run_id, thread_id, status, metadata, kwargs, token_usage_by_model, created_at, updated_at FROM runs WHERE ?1 = '' OR thread_id = ?1 ORDER BY run_id`
	return v.c.query(q, []any{v.o.ThreadID}, func(st row) error {
		v.rep.Runs++
		id, th, status := st.Text(0), st.Text(1), RunStatus(st.Text(2))
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
		return nil
	})
}

func (v *verifier) events() error {
	last := map[string]int64{}
	err := v.c.query(`SELECT thread_id, last_seq FROM event_seqs WHERE ?1 = '' OR thread_id = ?1`, []any{v.o.ThreadID}, func(st row) error {
		last[st.Text(0)] = st.Int64(1)
		return nil
	})
	if err != nil {
		return err
	}
	q := `SELECT thread_id, seq, run_id, event_type, category, content, metadata FROM events WHERE ?1 = '' OR thread_id = ?1 ORDER BY thread_id, seq`
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

var threadStatuses = map[ThreadStatus]bool{ThreadIdle: true, ThreadBusy: true, ThreadInterrupted: true, ThreadError: true}

func (v *verifier) threadRecords() error {
	q := `SELECT thread_id, status, metadata, pinned FROM threads WHERE ?1 = '' OR thread_id = ?1 ORDER BY thread_id`
	return v.c.query(q, []any{v.o.ThreadID}, func(st row) error {
		v.rep.ThreadRecords++
		th := st.Text(0)
		if s := ThreadStatus(st.Text(1)); !threadStatuses[s] {
			v.addf("thread", th, "", "", "unknown status %q", s)
		}
		var md map[string]any
		if b := st.Blob(2); b != nil {
			if err := codec.Unmarshal(b, &md); err != nil {
				v.addf("thread", th, "", "", "metadata does not decode: %v", err)
				return nil
			}
		}
		if isPinned(md) != (int(st.Int64(3)) != 0) {
			v.addf("thread", th, "", "", "pinned column %d disagrees with metadata", int(st.Int64(3)))
		}
		return nil
	})
}

func (v *verifier) store() error {
	if v.o.ThreadID != "" {
		return nil // store items belong to no thread
	}
	return v.c.query(`SELECT namespace, key, value FROM store_items ORDER BY namespace, key`, nil, func(st row) error {
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
