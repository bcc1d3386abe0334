package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/agentstate/agentstate/engine"
)

// stdin is what import reads; tests replace it.
var stdin io.Reader = os.Stdin

func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("export", "export [--thread T] [--quiet] [--json] FILE > dump.jsonl", stdout)
	thread := fs.String("thread", "", "export only this thread (its checkpoints, values, writes, record, runs and events)")
	quiet := fs.Bool("quiet", false, "no progress and no summary on stderr")
	asJSON := fs.Bool("json", false, "the output is JSON lines anyway; like --quiet")
	pos, err := parse(fs, args, "FILE")
	if err != nil {
		return err
	}
	*quiet = *quiet || *asJSON
	db, err := openFile(ctx, pos[0], true)
	if err != nil {
		return err
	}
	defer db.Close()
	if *thread != "" {
		// Before writing anything: a dump of nothing would look complete.
		if err := requireThread(ctx, db, pos[0], *thread); err != nil {
			return argErr(fs, pos[0], err)
		}
	}
	prog := newProgress(stderr, *quiet)
	rep, err := db.Export(ctx, stdout, engine.ExportOptions{ThreadID: *thread, Progress: func(done, total int64) {
		prog.show("export: %d/%d rows", done, total)
	}})
	prog.done()
	if err != nil {
		return inFile(pos[0], err)
	}
	if *thread != "" && rep.Total == 0 {
		return fmt.Errorf("%s: %w: thread %q has no rows", pos[0], engine.ErrNotFound, *thread)
	}
	if !*quiet {
		fmt.Fprintf(stderr, "agentstate export: %d rows from %s (%s)\n", rep.Total, pos[0], rowCounts(rep.Rows))
	}
	return nil
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
	rep, err := engine.ImportFile(ctx, pos[0], stdin, &opts, engine.ImportOptions{User: *user, Progress: func(lines int64) {
		prog.show("import: %d lines", lines)
	}})
	prog.done()
	if err != nil {
		if created {
			removeFile(pos[0])
		}
		return inFile(pos[0], fmt.Errorf("import from stdin: %w", err))
	}
	if *asJSON {
		return printJSON(stdout, rep)
	}
	fmt.Fprintf(stdout, "%s: imported %d rows (%s), %s; the imported threads verify\n", pos[0], rep.Total, rowCounts(rep.Rows), rep.Mode)
	return nil
}

func runImportLangGraph(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("import-langgraph", "import-langgraph [--mode full|delta] [--every K] [--json] SRC DST", stdout)
	mode := fs.String("mode", "", "channel mode of a new DST: full or delta (default delta; an existing DST keeps its own)")
	every := fs.Int("every", 10, "delta snapshot cadence K of a new DST")
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, err := parse(fs, args, "SRC", "DST")
	if err != nil {
		return err
	}
	if *mode != "" && *mode != engine.ModeFull && *mode != engine.ModeDelta {
		return fs.usageErr("--mode %q is not full or delta", *mode)
	}
	if *every < 1 {
		return fs.usageErr("--every %d must be at least 1", *every)
	}
	src, dst := pos[0], pos[1]
	if err := existingFile(src); err != nil {
		return err
	}
	if err := notDir(dst); err != nil {
		return err
	}
	opts := engine.DefaultOptions()
	opts.ReconcileOnOpen = false
	opts.Mode, opts.SnapshotEvery = engine.ModeDelta, *every
	if *mode != "" {
		opts.Mode = *mode
	}
	created := !exists(dst)
	if !created && *mode == "" {
		opts.Mode = engine.ModeAuto
	}
	db, err := engine.Open(ctx, dst, &opts)
	if err != nil {
		return err
	}
	defer db.Close()
	prog := newProgress(stderr, *asJSON)
	rep, err := db.ImportLangGraph(ctx, src, engine.LangGraphOptions{Progress: func(done, total int) {
		prog.show("import-langgraph: %d/%d checkpoints", done, total)
	}})
	prog.done()
	if err != nil {
		if created {
			db.Close()
			removeFile(dst)
		}
		return inFile(dst, err)
	}
	// The promise of the import, checked: the result verifies and every
	// checkpoint reads as in the source.
	vr, err := db.Verify(ctx, engine.VerifyOptions{})
	if err != nil {
		return inFile(dst, err)
	}
	checked, diffs, err := db.CompareLangGraph(ctx, src)
	if err != nil {
		return inFile(dst, err)
	}
	if *asJSON {
		if err := printJSON(stdout, struct {
			engine.LangGraphReport
			Verified  bool                   `json:"verified"`
			Problems  []engine.Problem       `json:"problems"`
			Compared  int                    `json:"compared"`
			Differing []engine.LangGraphDiff `json:"differing"`
		}{rep, vr.OK, vr.Problems, checked, diffs}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "%s: imported %d threads (%d namespaces, %d checkpoints, %d writes) from %s in %s mode: %d message lists stored, %d overwrites added, %d message ids filled in\n",
			dst, rep.Threads, rep.Namespaces, rep.Checkpoints, rep.Writes, src, rep.Mode, rep.Snapshots, rep.Overwrites, rep.IDsFilled)
		if len(rep.Dropped) > 0 {
			fmt.Fprintf(stdout, "%s: message fields without a place in agentstate's messages, dropped: %s\n", dst, rowCounts(intCounts(rep.Dropped)))
		}
		for _, p := range vr.Problems {
			fmt.Fprintf(stdout, "%s: %s\n", dst, p)
		}
		for _, d := range diffs {
			fmt.Fprintf(stdout, "%s: thread %q namespace %q checkpoint %q: %s\n", dst, d.ThreadID, d.CheckpointNS, d.CheckpointID, d.Message)
		}
		if vr.OK && len(diffs) == 0 {
			fmt.Fprintf(stdout, "%s: verified, and all %d checkpoints read as in %s\n", dst, checked, src)
		}
	}
	if !vr.OK || len(diffs) > 0 {
		return problemsError{fmt.Sprintf("%s: the import does not verify (%d problems) or differs from %s (%d checkpoints)", dst, len(vr.Problems), src, len(diffs))}
	}
	return nil
}

func intCounts(m map[string]int) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = int64(v)
	}
	return out
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// removeFile deletes a file this command created, with its WAL and
// shared-memory files.
func removeFile(path string) {
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		os.Remove(p)
	}
}
