package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/internal/pgurl"
)

func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("verify", "verify [--thread T] [--max N] [--json] FILE", stdout)
	thread := fs.String("thread", "", "check only this thread's checkpoints and records (the SQLite and schema checks cover the file)")
	max := fs.Int("max", 1000, "list at most N problems")
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, err := parse(fs, args, "FILE")
	if err != nil {
		return err
	}
	if *max < 1 {
		return fs.usageErr("--max %d must be at least 1", *max)
	}
	db, err := openFile(ctx, pos[0], true)
	if err != nil {
		return err
	}
	defer db.Close()
	if *thread != "" {
		if err := requireThread(ctx, db, pos[0], *thread); err != nil {
			return argErr(fs, pos[0], err)
		}
	}
	prog := newProgress(stderr, *asJSON)
	rep, err := db.Verify(ctx, admin.VerifyOptions{ThreadID: *thread, MaxProblems: *max, Progress: func(done, total int) {
		prog.show("verify: %d/%d threads", done, total)
	}})
	prog.done()
	if err != nil {
		return inFile(pos[0], err)
	}
	if *asJSON {
		if err := printJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		for _, p := range rep.Problems {
			fmt.Fprintf(stdout, "%s: %s\n", pgurl.Redacted(pos[0]), p)
		}
		if rep.Truncated > 0 {
			fmt.Fprintf(stdout, "%s: %d more problems not listed (--max)\n", pgurl.Redacted(pos[0]), rep.Truncated)
		}
		if rep.OK {
			// Threads with checkpoints: a thread only a run, an event or a
			// thread record knows (which `threads` lists) has none to check.
			fmt.Fprintf(stdout, "%s: ok: %s with checkpoints, %s (%d replayed, %s compared, %d delta reads, %d not read back), %s, %s, %s, %s, %s, %s\n",
				pgurl.Redacted(pos[0]), count(rep.Threads, "thread"), count(rep.Checkpoints, "checkpoint"), rep.Replayed, count(rep.SnapshotsChecked, "snapshot"), rep.DeltaReads, rep.DeltaReadsSkipped,
				count(rep.Writes, "write"), count(rep.Blobs, "value"), count(rep.Runs, "run"), count(rep.Events, "event"), count(rep.ThreadRecords, "thread record"), count(rep.StoreItems, "store item"))
		}
	}
	if !rep.OK {
		return problemsError{fmt.Sprintf("%s: %d problems found", pgurl.Redacted(pos[0]), len(rep.Problems)+rep.Truncated)}
	}
	return nil
}

func runRetain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("retain", "retain [--thread T] [--keep-latest N] [--drop-branches] [--apply] [--json] FILE", stdout)
	thread := fs.String("thread", "", "only this thread (default every thread)")
	keep := fs.Int("keep-latest", 0, "keep only the newest N checkpoints of each namespace (0: keep all)")
	branches := fs.Bool("drop-branches", false, "drop checkpoints that are not ancestors of their namespace's head (abandoned forks)")
	apply := fs.Bool("apply", false, "do it (default: a dry run that changes nothing), then checkpoint the WAL")
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, err := parse(fs, args, "FILE")
	if err != nil {
		return err
	}
	if *keep < 0 {
		return fs.usageErr("--keep-latest %d is negative", *keep)
	}
	// A dry run too needs a writable handle: it runs retention in a
	// transaction that it rolls back, so the file stays as it was.
	db, err := openFile(ctx, pos[0], false)
	if err != nil {
		return err
	}
	defer db.Close()
	if *thread != "" {
		if err := requireThread(ctx, db, pos[0], *thread); err != nil {
			return argErr(fs, pos[0], err)
		}
	}
	prog := newProgress(stderr, *asJSON)
	res, err := db.Retain(ctx, admin.RetainOptions{ThreadID: *thread, KeepLatest: *keep, DropBranches: *branches, DryRun: !*apply,
		Progress: func(done, total int) { prog.show("retain: %d/%d threads", done, total) }})
	prog.done()
	if err != nil {
		return inFile(pos[0], err)
	}
	var before, after int64
	var wal *admin.WALStatus
	if *apply {
		before = storedSize(ctx, db, pos[0])
		st, err := db.CheckpointWAL(ctx)
		if err != nil {
			return inFile(pos[0], err)
		}
		wal = &st
		after = storedSize(ctx, db, pos[0])
	}
	if *asJSON {
		return printJSON(stdout, struct {
			admin.RetainReport
			FileBytesBefore int64 `json:"file_bytes_before,omitempty"`
			FileBytesAfter  int64 `json:"file_bytes_after,omitempty"`
			*admin.WALStatus
		}{res, before, after, wal})
	}
	verb, thin := "would remove", "would store"
	if *apply {
		verb, thin = "removed", "stored"
	}
	// Every byte freed has its cause on the line: whole values of version
	// delta chains turned into deltas free bytes without removing a row.
	line := fmt.Sprintf("%s %s (kept %d), %s (kept %d) and %s", verb, count(res.CheckpointsRemoved, "checkpoint"), res.CheckpointsKept,
		count(res.SnapshotsRemoved, "snapshot"), res.SnapshotsKept, count(res.WritesRemoved, "write"))
	if res.ValuesThinned > 0 {
		line += fmt.Sprintf(", and %s %s as version deltas", thin, count(res.ValuesThinned, "whole value"))
	}
	fmt.Fprintf(stdout, "%s: %s, in %s: %d bytes of stored data (%d of them by thinning)\n",
		pgurl.Redacted(pos[0]), line, count(res.Threads, "thread"), res.DataBytesFreed, res.BytesFreed)
	if *keep > 0 && res.CheckpointsKept > *keep {
		why := fmt.Sprintf("--keep-latest %d keeps the newest %d of each namespace of each thread (%s in %s)", *keep, *keep, count(res.Namespaces, "namespace"), count(res.Threads, "thread"))
		if res.CheckpointsSpared > 0 {
			why += fmt.Sprintf(", and %s stay because a kept checkpoint needs them to be rebuilt", count(res.CheckpointsSpared, "older checkpoint"))
		}
		fmt.Fprintf(stdout, "%s: kept %d checkpoints, not %d: %s\n", pgurl.Redacted(pos[0]), res.CheckpointsKept, *keep, why)
	}
	switch {
	case *apply && pgurl.Is(pos[0]):
		fmt.Fprintf(stdout, "%s: tables and indexes hold %d bytes (PostgreSQL reuses the space retention frees; agentstate vacuum gives it back)\n", pgurl.Redacted(pos[0]), after)
	case *apply:
		fmt.Fprintf(stdout, "%s: file bytes %d before the WAL checkpoint, %d after\n", pgurl.Redacted(pos[0]), before, after)
		walNote(stdout, pgurl.Redacted(pos[0]), *wal)
	default:
		fmt.Fprintf(stdout, "%s: dry run, nothing changed; run with --apply to do it\n", pgurl.Redacted(pos[0]))
	}
	return nil
}

// storedSize is the size of the file and its WAL, or on PostgreSQL of
// the schema's tables and indexes.
func storedSize(ctx context.Context, db *engine.DB, path string) int64 {
	if pgurl.Is(path) {
		in, err := db.Info(ctx)
		if err != nil {
			return 0
		}
		return in.FileBytes
	}
	return fileSize(path)
}

// fileSize is the size of the file and its WAL.
func fileSize(path string) int64 {
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func runVacuum(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("vacuum", "vacuum [--json] FILE", stdout)
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, err := parse(fs, args, "FILE")
	if err != nil {
		return err
	}
	db, err := openFile(ctx, pos[0], false)
	if err != nil {
		return err
	}
	defer db.Close()
	before := storedSize(ctx, db, pos[0])
	if err := db.Vacuum(ctx); err != nil {
		return inFile(pos[0], err)
	}
	wal, err := db.CheckpointWAL(ctx)
	if err != nil {
		return inFile(pos[0], err)
	}
	after := storedSize(ctx, db, pos[0])
	if *asJSON {
		return printJSON(stdout, map[string]any{"path": pgurl.Redacted(pos[0]), "bytes_before": before, "bytes_after": after,
			"wal_truncated": wal.Truncated, "wal_frames": wal.LogFrames, "wal_frames_copied": wal.CopiedFrames})
	}
	fmt.Fprintf(stdout, "%s: %d bytes before, %d after\n", pgurl.Redacted(pos[0]), before, after)
	if !pgurl.Is(pos[0]) {
		walNote(stdout, pgurl.Redacted(pos[0]), wal)
	}
	return nil
}

// walNote says when the write-ahead log could not be emptied, so that the
// sizes printed are not taken for the result.
func walNote(w io.Writer, path string, st admin.WALStatus) {
	if st.Truncated {
		return
	}
	fmt.Fprintf(w, "%s: the WAL could not be truncated: another process is reading the file (%d of %d pages copied into it); the file shrinks at the next checkpoint without readers (agentstate vacuum again, or when the last handle closes)\n",
		path, st.CopiedFrames, st.LogFrames)
}

func runConvert(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("convert", "convert --mode full|delta [--every K] [--thread T] [--json] FILE", stdout)
	mode := fs.String("mode", "", "the mode to convert to: full or delta (required)")
	every := fs.Int("every", 10, "delta snapshot cadence K")
	thread := fs.String("thread", "", "convert only this thread (the file keeps its mode; a delta thread needs a delta file)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, err := parse(fs, args, "FILE")
	if err != nil {
		return err
	}
	if channels.Mode(*mode) != channels.ModeFull && channels.Mode(*mode) != channels.ModeDelta {
		return fs.usageErr("--mode %q is not full or delta", *mode)
	}
	if *every < 1 {
		return fs.usageErr("--every %d must be at least 1", *every)
	}
	if err := existingFile(pos[0]); err != nil {
		return err
	}
	var rep admin.ConvertReport
	if *thread != "" {
		db, err := openFile(ctx, pos[0], false)
		if err != nil {
			return err
		}
		defer db.Close()
		if err := requireThread(ctx, db, pos[0], *thread); err != nil {
			return argErr(fs, pos[0], err)
		}
		rep, err = db.ConvertThread(ctx, *thread, channels.Mode(*mode))
		if err != nil {
			return inFile(pos[0], err)
		}
	} else {
		opts := engine.DefaultOptions()
		opts.ReconcileOnOpen = false
		rep, err = engine.ConvertFile(ctx, pos[0], &opts, channels.Mode(*mode), *every)
		if err != nil {
			return inFile(pos[0], err)
		}
	}
	if *asJSON {
		return printJSON(stdout, rep)
	}
	fmt.Fprintf(stdout, "%s: converted %s to %s: %s added, %d removed\n", pgurl.Redacted(pos[0]), count(rep.Threads, "thread"), *mode, count(rep.SnapshotsAdded, "snapshot"), rep.SnapshotsRemoved)
	return nil
}

func runUpgrade(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("upgrade", "upgrade [--json] FILE", stdout)
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, err := parse(fs, args, "FILE")
	if err != nil {
		return err
	}
	path := pos[0]
	if err := existingFile(path); err != nil {
		return err
	}
	// A read-only open succeeds exactly when there is nothing to upgrade.
	opts := engine.DefaultOptions()
	opts.ReadOnly, opts.Mode = true, channels.ModeAuto
	upgraded := false
	db, err := engine.Open(ctx, path, &opts)
	if errors.Is(err, engine.ErrSchemaTooOld) {
		upgraded = true
		db, err = openFile(ctx, path, false) // applies the missing migrations
	}
	if err != nil {
		return err
	}
	defer db.Close()
	in, err := db.Info(ctx)
	if err != nil {
		return inFile(path, err)
	}
	if *asJSON {
		return printJSON(stdout, map[string]any{"path": path, "schema_version": in.SchemaVersion, "upgraded": upgraded})
	}
	if upgraded {
		fmt.Fprintf(stdout, "%s: upgraded to schema version %d\n", path, in.SchemaVersion)
	} else {
		fmt.Fprintf(stdout, "%s: already at schema version %d, nothing to do\n", path, in.SchemaVersion)
	}
	return nil
}
