package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/internal/pgurl"
	"github.com/agentstate/agentstate/langgraph"
)

// stdin is what import reads; tests replace it.
var stdin io.Reader = os.Stdin

func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("export", "export [--thread T] [--states [--reducer CHANNEL=R]...] [--quiet] [--json] FILE > dump.jsonl", stdout)
	thread := fs.String("thread", "", "export only this thread (its checkpoints, values, writes, record, runs and events)")
	states := fs.Bool("states", false, "instead of a dump, each thread's latest state (root namespace) as state --json prints it, one JSON line per thread; not for import")
	reducers := viewReducers{}
	fs.Var(reducers, "reducer", "with --states: the reducer of a LangGraph channel the file does not name (see state); repeatable")
	quiet := fs.Bool("quiet", false, "no progress and no summary on stderr")
	asJSON := fs.Bool("json", false, "the output is JSON lines anyway; like --quiet")
	pos, err := parse(fs, args, "FILE")
	if err != nil {
		return err
	}
	*quiet = *quiet || *asJSON
	if len(reducers) > 0 && !*states {
		return fs.usageErr("--reducer needs --states")
	}
	db, err := openFile(ctx, pos[0], true)
	if err != nil {
		return err
	}
	defer db.Close()
	if *states {
		return exportStates(ctx, db, pos[0], *thread, reducers, stdout)
	}
	if *thread != "" {
		// Before writing anything: a dump of nothing would look complete.
		if err := requireThread(ctx, db, pos[0], *thread); err != nil {
			return argErr(fs, pos[0], err)
		}
	}
	prog := newProgress(stderr, *quiet)
	rep, err := db.Export(ctx, stdout, admin.ExportOptions{ThreadID: *thread, Progress: func(done, total int64) {
		prog.show("export: %d/%d rows", done, total)
	}})
	prog.done()
	if err != nil {
		return inFile(pos[0], err)
	}
	if *thread != "" && rep.Total == 0 {
		return fmt.Errorf("%s: %w: thread %q has no rows", pgurl.Redacted(pos[0]), engine.ErrNotFound, *thread)
	}
	if !*quiet {
		fmt.Fprintf(stderr, "agentstate export: %d rows from %s (%s)\n", rep.Total, pgurl.Redacted(pos[0]), rowCounts(rep.Rows))
	}
	return nil
}

// exportStates writes each thread's head state (root namespace), as state
// --json shows it, one line per thread with a checkpoint, in thread order.
func exportStates(ctx context.Context, db *engine.DB, path, thread string, reducers viewReducers, stdout io.Writer) error {
	one := func(id string) error {
		v, err := readView(ctx, db, engine.Config{ThreadID: id}, reducers)
		if errors.Is(err, engine.ErrNotFound) && thread == "" {
			return nil // a thread of records only
		}
		if err != nil {
			return inFile(path, err)
		}
		return printJSON(stdout, v)
	}
	if thread != "" {
		if err := requireThread(ctx, db, path, thread); err != nil {
			return inFile(path, err)
		}
		return one(thread)
	}
	for offset := 0; ; offset += 1000 {
		list, err := db.ListThreads(ctx, admin.ThreadListOptions{Limit: 1000, Offset: offset})
		if err != nil {
			return inFile(path, err)
		}
		for _, t := range list {
			if t.Checkpoints == 0 {
				continue
			}
			if err := one(t.ThreadID); err != nil {
				return err
			}
		}
		if len(list) < 1000 {
			return nil
		}
	}
}

func rowCounts(m map[string]int64) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %d", n, m[n])
	}
	if s == "" {
		return "nothing"
	}
	return s
}

func runImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("import", "import [--user U] [--json] FILE < dump.jsonl", stdout)
	user := fs.String("user", "", "the only user the dump may speak for: refuse thread records and runs of anyone else")
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, err := parse(fs, args, "FILE")
	if err != nil {
		return err
	}
	if err := notDir(pos[0]); err != nil {
		return err
	}
	prog := newProgress(stderr, *asJSON)
	opts := engine.DefaultOptions()
	opts.ReconcileOnOpen = false
	created := !exists(pos[0])
	rep, err := engine.ImportFile(ctx, pos[0], stdin, &opts, admin.ImportOptions{User: *user, Progress: func(lines int64) {
		prog.show("import: %d lines", lines)
	}})
	prog.done()
	if err != nil {
		// A file another process created and holds meanwhile is not ours
		// to remove.
		if _, held := errors.AsType[*engine.HeldError](err); created && !held {
			removeFile(pos[0])
		}
		return inFile(pgurl.Redacted(pos[0]), fmt.Errorf("import from stdin: %w", err))
	}
	if *asJSON {
		return printJSON(stdout, rep)
	}
	fmt.Fprintf(stdout, "%s: imported %d rows (%s), %s; the imported threads verify\n", pgurl.Redacted(pos[0]), rep.Total, rowCounts(rep.Rows), rep.Mode)
	return nil
}

func runImportLangGraph(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("import-langgraph", "import-langgraph [--into protocol|messages] [--mode full|delta] [--every K] [--skip-unsupported] [--orphans-as-roots] [--delta-reducer CHANNEL=concat]... [--json] SRC DST", stdout)
	into := fs.String("into", string(langgraph.IntoProtocol), "protocol: keep LangGraph's values and writes as its serde's bytes, for the savers to resume; messages: convert them into the thread API's messages (for Go programs; drops fields those have no place for)")
	mode := fs.String("mode", "", "channel mode of a new DST: full or delta (default delta; an existing DST keeps its own)")
	every := fs.Int("every", 10, "delta snapshot cadence K of a new DST")
	skip := fs.Bool("skip-unsupported", false, "import the threads that can be read and list the others, instead of importing nothing")
	orphans := fs.Bool("orphans-as-roots", false, "import a checkpoint whose parent is not in SRC (a pruned history) as a root, and list it; without it such a checkpoint makes its thread unsupported")
	reducers := reducerFlags{}
	fs.Var(reducers, "delta-reducer", "the reducer of a DeltaChannel that is not a message channel: CHANNEL=concat (list concatenation); repeatable")
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, err := parse(fs, args, "SRC", "DST")
	if err != nil {
		return err
	}
	if *mode != "" && channels.Mode(*mode) != channels.ModeFull && channels.Mode(*mode) != channels.ModeDelta {
		return fs.usageErr("--mode %q is not full or delta", *mode)
	}
	if *every < 1 {
		return fs.usageErr("--every %d must be at least 1", *every)
	}
	if langgraph.Into(*into) != langgraph.IntoProtocol && langgraph.Into(*into) != langgraph.IntoMessages {
		return fs.usageErr("--into %q is not protocol or messages", *into)
	}
	if len(reducers) > 0 && langgraph.Into(*into) != langgraph.IntoMessages {
		return fs.usageErr("--delta-reducer is for --into messages; in the protocol's form LangGraph rebuilds its DeltaChannels itself")
	}
	src, dst := pos[0], pos[1]
	if err := checkLangGraphImport(ctx, src, dst); err != nil {
		return err
	}
	opts := engine.DefaultOptions()
	opts.ReconcileOnOpen = false
	opts.Mode, opts.SnapshotEvery = channels.ModeDelta, *every
	if *mode != "" {
		opts.Mode = channels.Mode(*mode)
	}
	created := !exists(dst)
	if !created && *mode == "" {
		opts.Mode = channels.ModeAuto
	}
	db, err := engine.Open(ctx, dst, &opts)
	if err != nil {
		return err
	}
	defer db.Close()
	prog := newProgress(stderr, *asJSON)
	lo := langgraph.Options{SkipUnsupported: *skip, OrphansAsRoots: *orphans, DeltaReducers: reducers, Into: langgraph.Into(*into),
		Key: []byte(os.Getenv(langgraph.EncryptionKeyEnv)), Progress: func(done, total int) {
			prog.show("import-langgraph: %d/%d checkpoints", done, total)
		}}
	rep, err := langgraph.Import(ctx, db, src, lo)
	prog.done()
	if err != nil {
		if created {
			db.Close()
			removeFile(dst)
		}
		return inFile(dst, explainUnsupported(err, *skip, lo.Into))
	}
	// The promise of the import, checked: the result verifies and every
	// checkpoint reads as in the source. If not, the destination is put
	// back as it was: a new file removed, the imported threads of an
	// existing one deleted.
	undo := func() {
		if created {
			db.Close()
			removeFile(dst)
			return
		}
		for _, th := range rep.Imported {
			db.DeleteThread(context.WithoutCancel(ctx), th)
		}
	}
	vr, err := db.Verify(ctx, admin.VerifyOptions{})
	if err != nil {
		undo()
		return inFile(dst, err)
	}
	lo.Progress = nil
	checked, diffs, err := langgraph.Compare(ctx, db, src, lo)
	if err != nil {
		undo()
		return inFile(dst, err)
	}
	if !vr.OK || len(diffs) > 0 {
		defer undo()
	}
	if *asJSON {
		if err := printJSON(stdout, struct {
			langgraph.Report
			Verified  bool             `json:"verified"`
			Problems  []admin.Problem  `json:"problems"`
			Compared  int              `json:"compared"`
			Differing []langgraph.Diff `json:"differing"`
		}{rep, vr.OK, vr.Problems, checked, diffs}); err != nil {
			return err
		}
	} else {
		printLangGraphImport(stdout, dst, rep, vr, checked, diffs)
	}
	if !vr.OK || len(diffs) > 0 {
		return problemsError{fmt.Sprintf("%s: the import does not verify (%d problems) or differs from %s (%d checkpoints); the import was undone", pgurl.Redacted(dst), len(vr.Problems), rep.Source, len(diffs))}
	}
	return nil
}

// checkLangGraphImport checks import-langgraph's SRC and DST before DST is
// opened: SRC a file or a PostgreSQL URL that holds a LangGraph saver's
// storage (with a hint when it is an agentstate file), DST not a directory.
func checkLangGraphImport(ctx context.Context, src, dst string) error {
	isURL := strings.HasPrefix(src, "postgres://") || strings.HasPrefix(src, "postgresql://")
	if !isURL {
		if err := existingFile(src); err != nil {
			return err
		}
	}
	if err := notDir(dst); err != nil {
		return err
	}
	// The source is checked before DST is opened (or created): an error
	// about the source names the source.
	if err := langgraph.Probe(ctx, src); err != nil {
		if !isURL {
			if db, oerr := openFile(ctx, src, true); oerr == nil {
				db.Close()
				err = fmt.Errorf("%w\n%s is an agentstate file already: use it as it is, or copy it with: agentstate export %s | agentstate import %s",
					err, src, shellQuote(src), shellQuote(dst))
			}
		}
		return inFile(pgurl.Redacted(src), err)
	}
	return nil
}

// explainUnsupported adds to an import's error, when it is an
// UnsupportedError and skip (--skip-unsupported) is not set, that nothing
// was imported and what the flags would do.
func explainUnsupported(err error, skip bool, into langgraph.Into) error {
	var ue *langgraph.UnsupportedError
	if errors.As(err, &ue) && !skip {
		if ue.Importable == 0 {
			err = fmt.Errorf("%w\nnothing was imported", err)
		} else {
			err = fmt.Errorf("%w\nnothing was imported; --skip-unsupported imports the other %d threads", err, ue.Importable)
		}
		if into == langgraph.IntoMessages {
			err = fmt.Errorf("%w; without --into messages the import keeps LangGraph's values as they are (the checkpoint protocol's form)", err)
		}
	}
	return err
}

// printLangGraphImport prints what import-langgraph did: what it imported,
// what it kept, dropped or skipped, and what verifying and comparing found.
func printLangGraphImport(stdout io.Writer, dst string, rep langgraph.Report, vr admin.VerifyReport, checked int, diffs []langgraph.Diff) {
	if rep.Into == string(langgraph.IntoProtocol) {
		fmt.Fprintf(stdout, "%s: imported %d threads (%d namespaces, %d checkpoints, %d writes) from %s in the checkpoint protocol's form, values kept as LangGraph's serde wrote them: %s\n",
			pgurl.Redacted(dst), rep.Threads, rep.Namespaces, rep.Checkpoints, rep.Writes, rep.Source, rowCounts(intCounts(rep.Blobs)))
		if rep.Unversioned > 0 {
			fmt.Fprintf(stdout, "%s: %d empty values of channels without a version not stored (a saver on agentstate stores none; LangGraph starts such a channel empty)\n", pgurl.Redacted(dst), rep.Unversioned)
		}
	} else {
		fmt.Fprintf(stdout, "%s: imported %d threads (%d namespaces, %d checkpoints, %d writes) from %s in %s mode: %d message lists stored, %d overwrites added, %d message ids filled in\n",
			pgurl.Redacted(dst), rep.Threads, rep.Namespaces, rep.Checkpoints, rep.Writes, rep.Source, rep.Mode, rep.Snapshots, rep.Overwrites, rep.IDsFilled)
	}
	if len(rep.DeltaChannels) > 0 {
		fmt.Fprintf(stdout, "%s: DeltaChannels rebuilt from their snapshots and writes, by reducer: %s\n", pgurl.Redacted(dst), rowCounts(intCounts(rep.DeltaChannels)))
	}
	if len(rep.Blobs) > 0 && rep.Into == string(langgraph.IntoMessages) {
		fmt.Fprintf(stdout, "%s: values kept as the source's serde bytes (the engine's values cannot hold them), by what they hold: %s\n", pgurl.Redacted(dst), rowCounts(intCounts(rep.Blobs)))
	}
	if len(rep.Dropped) > 0 {
		fmt.Fprintf(stdout, "%s: message fields without a place in agentstate's messages, dropped: %s\n", pgurl.Redacted(dst), rowCounts(intCounts(rep.Dropped)))
	}
	if rep.OrphanWrites > 0 {
		fmt.Fprintf(stdout, "%s: %d writes of checkpoints the source does not hold, not imported\n", pgurl.Redacted(dst), rep.OrphanWrites)
	}
	if rep.Renumbered > 0 {
		fmt.Fprintf(stdout, "%s: %d writes stored at another index than the source's (their order kept)\n", pgurl.Redacted(dst), rep.Renumbered)
	}
	for _, p := range rep.Skipped {
		fmt.Fprintf(stdout, "%s: skipped %s\n", pgurl.Redacted(dst), p)
	}
	for _, o := range rep.Orphans {
		fmt.Fprintf(stdout, "%s: thread %q namespace %q checkpoint %q imported as a root: its parent %q is not in %s (--orphans-as-roots)\n",
			pgurl.Redacted(dst), o.ThreadID, o.CheckpointNS, o.CheckpointID, o.Parent, rep.Source)
	}
	for _, p := range vr.Problems {
		fmt.Fprintf(stdout, "%s: %s\n", pgurl.Redacted(dst), p)
	}
	for _, d := range diffs {
		fmt.Fprintf(stdout, "%s: thread %q namespace %q checkpoint %q: %s\n", pgurl.Redacted(dst), d.ThreadID, d.CheckpointNS, d.CheckpointID, d.Message)
	}
	if vr.OK && len(diffs) == 0 {
		but := ""
		if len(rep.Orphans) > 0 {
			but = fmt.Sprintf(" (but for the %d parents listed above, which it does not hold)", len(rep.Orphans))
		}
		fmt.Fprintf(stdout, "%s: verified, and all %d checkpoints read as in %s%s\n", pgurl.Redacted(dst), checked, rep.Source, but)
	}
}

func runExportLangGraph(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("export-langgraph", "export-langgraph [--layout python|js] [--thread T] [--json] SRC DST", stdout)
	layout := fs.String("layout", "", "python (langgraph-checkpoint-sqlite) or js (@langchain/langgraph-checkpoint-sqlite); default: the one the values' serde calls for")
	thread := fs.String("thread", "", "export only this thread")
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, err := parse(fs, args, "SRC", "DST")
	if err != nil {
		return err
	}
	if *layout != "" && *layout != langgraph.LayoutPython && *layout != langgraph.LayoutJS {
		return fs.usageErr("--layout %q is not python or js", *layout)
	}
	src, dst := pos[0], pos[1]
	if err := notDir(dst); err != nil {
		return err
	}
	db, err := openFile(ctx, src, true)
	if err != nil {
		return err
	}
	defer db.Close()
	rep, err := langgraph.Export(ctx, db, dst, langgraph.ExportOptions{Layout: *layout, ThreadID: *thread})
	if err != nil {
		if errors.Is(err, engine.ErrConflict) || errors.Is(err, engine.ErrInvalidArgument) {
			return inFile(dst, err)
		}
		return inFile(src, err)
	}
	if *asJSON {
		return printJSON(stdout, rep)
	}
	fmt.Fprintf(stdout, "%s: wrote %d threads (%d checkpoints, %d writes) of %s as a LangGraph %s SqliteSaver file\n",
		dst, rep.Threads, rep.Checkpoints, rep.Writes, src, map[string]string{langgraph.LayoutPython: "Python", langgraph.LayoutJS: "JS"}[rep.Layout])
	return nil
}

// reducerFlags collects repeated --delta-reducer CHANNEL=REDUCER flags.
type reducerFlags map[string]langgraph.Reducer

func (m reducerFlags) String() string { return "" }

func (m reducerFlags) Set(s string) error {
	ch, r, ok := strings.Cut(s, "=")
	if !ok || ch == "" || langgraph.Reducer(r) != langgraph.Concat {
		return fmt.Errorf("%q is not CHANNEL=%s", s, langgraph.Concat)
	}
	m[ch] = langgraph.Reducer(r)
	return nil
}

func intCounts(m map[string]int) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = int64(v)
	}
	return out
}

// exists reports whether path is a file, or a PostgreSQL schema that holds
// an agentstate database already.
func exists(path string) bool {
	if pgurl.Is(path) {
		db, err := openFile(context.Background(), path, true)
		if err == nil {
			db.Close()
		}
		return err == nil
	}
	_, err := os.Stat(path)
	return err == nil
}

// removeFile deletes a file this command created, with its WAL and
// shared-memory files. A PostgreSQL schema is left as it is: the failed
// import wrote nothing in it (its tables remain, empty).
func removeFile(path string) {
	if pgurl.Is(path) {
		return
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		os.Remove(p)
	}
}
