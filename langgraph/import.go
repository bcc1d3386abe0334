package langgraph

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
)

// Options govern Import and Compare.
type Options struct {
	// Progress, if not nil, is called after each imported checkpoint with
	// the number imported and the source's total.
	Progress func(done, total int)
	// SkipUnsupported imports the threads the import can read and lists the
	// others in Report.Skipped; without it, one such thread fails the whole
	// import with an *UnsupportedError listing them all.
	SkipUnsupported bool
	// DeltaReducers names the reducer of each DeltaChannel that is not a
	// message channel of the destination's Schema, by channel name. A
	// DeltaChannel without one makes its thread unsupported.
	DeltaReducers map[string]Reducer
	// Into is the form the threads are written in: IntoProtocol (the
	// default, "") or IntoMessages. DeltaReducers only matter to
	// IntoMessages (in the protocol's form LangGraph rebuilds its
	// DeltaChannels itself).
	Into Into
	// Key decrypts the values of a source written with LangGraph's
	// EncryptedSerializer (the bytes of LANGGRAPH_AES_KEY). Without it such
	// values make their threads unsupported, naming the key.
	Key []byte
	// OrphansAsRoots imports a checkpoint whose parent the source does not
	// hold (a history pruned or deleted in part) as a root, and lists it in
	// Report.Orphans. Without it such a checkpoint makes its thread
	// unsupported, the Problem naming the checkpoint and its missing parent:
	// an import keeps every parent link, or says why not.
	OrphansAsRoots bool
}

func (o Options) validate(schema engine.Schema) error {
	if o.Into != "" && o.Into != IntoProtocol && o.Into != IntoMessages {
		return fmt.Errorf("%w: Into is %q; an import writes %q or %q", engine.ErrInvalidArgument, o.Into, IntoProtocol, IntoMessages)
	}
	for ch, r := range o.DeltaReducers {
		if r != Concat {
			return fmt.Errorf("%w: DeltaReducers[%q] is %q; the reducers an import knows are %q (and, for the message channels of the Schema, LangGraph's message reducer)", engine.ErrInvalidArgument, ch, r, Concat)
		}
		if _, isMsg := schema[ch].(channels.Messages); isMsg {
			return fmt.Errorf("%w: DeltaReducers[%q]: %q is a message channel of the Schema and is rebuilt with LangGraph's message reducer", engine.ErrInvalidArgument, ch, ch)
		}
	}
	return nil
}

// The writes the import adds so that a checkpoint replays exactly (see
// the package documentation): their task and path sort after every task of
// LangGraph's (paths "", "~__pregel_pull, ...", "~~0000000001~..."), so they
// apply last.
const (
	importTaskID   = "~agentstate-import"
	importTaskPath = "~~~~agentstate-import"
)

// placeholderPrefix marks ids given to id-less messages of writes while
// matching them with the state's.
const placeholderPrefix = "\x00agentstate-import-"

// Import copies every thread of the LangGraph saver's storage at src (a
// SqliteSaver file of LangGraph.js or Python, or a PostgresSaver database
// given as a postgres:// URL) into db, in db's channel mode, in one
// transaction: it writes all of it or nothing. A thread id already in db is
// refused with engine.ErrConflict; a source it cannot read with
// ErrUnsupportedSource, and threads holding what it cannot read with an
// *UnsupportedError naming each (unless o.SkipUnsupported).
func Import(ctx context.Context, db *engine.DB, src string, o Options) (Report, error) {
	dbo := db.Options()
	if err := o.validate(dbo.Schema); err != nil {
		return Report{}, err
	}
	if err := ctx.Err(); err != nil {
		return Report{}, err
	}
	if o.Into != IntoMessages {
		return importProtocol(ctx, db, src, o)
	}
	s, threads, total, err := openImport(ctx, src)
	if err != nil {
		return Report{}, err
	}
	defer s.close()
	effort := codec.Small
	if dbo.Mode == channels.ModeFull {
		effort = codec.Fast
	}
	comp, err := codec.NewCompressor(effort, dbo.HistoryCacheBytes/8)
	if err != nil {
		return Report{}, err
	}
	prep := newPreparer(dbo.Schema, o.DeltaReducers)
	var rep Report
	err = db.Batch(ctx, func(b *engine.Batch) error {
		rep = newReport(s, dbo.Mode)
		rep.Into = string(IntoMessages)
		return importThreads(ctx, b, s, threads, total, o, &rep, true, func(th string) ([]op, *Report, error) {
			t, err := readThread(ctx, s, prep, th)
			if err != nil {
				return nil, nil, err
			}
			return planThread(t, dbo, comp, o.OrphansAsRoots)
		})
	})
	if err != nil {
		return Report{}, err
	}
	return rep, nil
}

// openImport opens the source at src for an import: its threads, and its
// number of checkpoints (for Options.Progress). A failed read of them closes
// the source again and is given as sourceError gives it.
func openImport(ctx context.Context, src string) (s source, threads []string, total int, err error) {
	s, err = openSource(ctx, src)
	if err != nil {
		return nil, nil, 0, err
	}
	if threads, err = s.threads(ctx); err == nil {
		if total, err = s.count(ctx); err == nil {
			return s, threads, total, nil
		}
	}
	err = sourceError(ctx, s, err)
	s.close()
	return nil, nil, 0, err
}

// openThreads opens the source at src and lists its threads, as Compare
// does: a failed list closes the source again and is returned as it is.
func openThreads(ctx context.Context, src string) (source, []string, error) {
	s, err := openSource(ctx, src)
	if err != nil {
		return nil, nil, err
	}
	threads, err := s.threads(ctx)
	if err != nil {
		s.close()
		return nil, nil, err
	}
	return s, threads, nil
}

// importThreads writes the threads into b in order, each as plan reads and
// plans it, and adds their counts to rep. A thread plan refuses with a
// *Problem is not written; without o.SkipUnsupported the first such makes
// the import fail with an *UnsupportedError listing them all (the rest are
// only planned, for the list), with it they go to rep.Skipped. Any other
// error of plan, or of writing, ends the import. newThread starts each
// thread with Batch.NewThread (the messages form; the protocol's calls add
// to a thread themselves). o.Progress hears of each checkpoint put.
func importThreads(ctx context.Context, b *engine.Batch, s source, threads []string, total int, o Options, rep *Report,
	newThread bool, plan func(th string) ([]op, *Report, error)) error {
	var problems []Problem
	done := 0
	for _, th := range threads {
		var ops []op
		var counts *Report
		err := threadProblem(th)
		if err == nil {
			ops, counts, err = plan(th)
		}
		var p *Problem
		if errors.As(err, &p) {
			problems = append(problems, *p)
			continue
		}
		if err != nil {
			return err
		}
		if len(problems) > 0 && !o.SkipUnsupported {
			continue // the import fails: only the list of problems goes on
		}
		if newThread {
			if err := b.NewThread(th); err != nil {
				return err
			}
		}
		for _, x := range ops {
			if err := x.run(b); err != nil {
				return fmt.Errorf("thread %q: %w", th, err)
			}
			if x.put != nil {
				done++
				if o.Progress != nil {
					o.Progress(done, total)
				}
			}
		}
		rep.add(counts)
		rep.Imported = append(rep.Imported, th)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(problems) > 0 {
		if !o.SkipUnsupported {
			return &UnsupportedError{Source: s.name(), Problems: problems, Importable: len(threads) - len(problems)}
		}
		rep.Skipped = problems
	}
	return nil
}

// sourceError is a failed read of the source: the context's error if it
// ended, ErrUnsupportedSource otherwise.
func sourceError(ctx context.Context, s source, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, engine.ErrTooLarge) {
		return fmt.Errorf("%s: %w", s.name(), err)
	}
	return fmt.Errorf("%w: %s: %v", ErrUnsupportedSource, s.name(), err)
}

func newReport(s source, mode channels.Mode) Report {
	return Report{Source: s.name(), Saver: s.saver(), Mode: string(mode), DeltaChannels: map[string]int{},
		Dropped: map[string]int{}, Blobs: map[string]int{}, Skipped: []Problem{}, Orphans: []Orphan{}}
}

// add merges one thread's counts.
func (r *Report) add(t *Report) {
	r.Threads++
	r.Namespaces += t.Namespaces
	r.Checkpoints += t.Checkpoints
	r.Writes += t.Writes
	r.Snapshots += t.Snapshots
	r.Overwrites += t.Overwrites
	r.IDsFilled += t.IDsFilled
	r.ParentsMissing += t.ParentsMissing
	r.Orphans = append(r.Orphans, t.Orphans...)
	r.Renumbered += t.Renumbered
	r.OrphanWrites += t.OrphanWrites
	r.Unversioned += t.Unversioned
	for _, m := range [][2]map[string]int{{r.DeltaChannels, t.DeltaChannels}, {r.Dropped, t.Dropped}, {r.Blobs, t.Blobs}} {
		for k, n := range m[1] {
			m[0][k] += n
		}
	}
}

func newPreparer(schema engine.Schema, reducers map[string]Reducer) *preparer {
	msg := map[string]bool{}
	for name, ch := range schema {
		if _, ok := ch.(channels.Messages); ok {
			msg[name] = true
		}
	}
	return &preparer{msg: msg, reducers: reducers, memo: map[string]memoMessage{}}
}

// readThread reads and prepares one thread; a *Problem says why it cannot.
func readThread(ctx context.Context, s source, prep *preparer, th string) (*thread, error) {
	raw, err := s.read(ctx, th)
	if err != nil {
		return nil, err
	}
	if len(raw.cps) == 0 {
		return nil, &Problem{ThreadID: th, Reason: "no checkpoint"}
	}
	return prep.prepare(raw)
}
