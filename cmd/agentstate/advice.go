package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/engine/admin"
)

// modeAdvice says what a channel mode mismatch means in the CLI's terms,
// with a command that fixes it as printed.
func modeAdvice(mm *engine.ModeMismatchError) string {
	have, want := describeMode(mm.Mode, mm.Every), describeMode(mm.WantMode, mm.WantEvery)
	path := shellQuote(mm.Path)
	switch mm.Op {
	case "import":
		if mm.Thread != "" {
			return fmt.Sprintf("channel mode mismatch: thread %q of the dump is in %s and %s is in %s, so the file could not write it; convert the thread in the source file (%s) and export it again",
				mm.Thread, have, mm.Path, want, convertCommand("SOURCE", mm.Thread, mm.WantMode, 0))
		}
		return fmt.Sprintf("channel mode mismatch: the dump is in %s and %s is in %s; convert the file to the dump's mode first (%s), then import again, or import into a new file",
			want, mm.Path, have, convertCommand(path, "", mm.WantMode, mm.WantEvery))
	case "converted":
		return fmt.Sprintf("channel mode mismatch: %s was converted to %s by another process while this one had it open; run the command again", mm.Path, have)
	case "thread":
		return fmt.Sprintf("channel mode mismatch: thread %q of %s is in %s and the file is in %s; convert the thread first: %s",
			mm.Thread, mm.Path, have, want, convertCommand(path, mm.Thread, mm.WantMode, 0))
	case "convert":
		return fmt.Sprintf("channel mode mismatch: %s is in %s, which cannot hold a delta thread; convert the whole file instead: %s",
			mm.Path, have, convertCommand(path, "", channels.ModeDelta, mm.WantEvery))
	}
	if mm.Race {
		return fmt.Sprintf("channel mode mismatch: %s was just created in %s by another process, not in %s; run the command again", mm.Path, have, want)
	}
	return fmt.Sprintf("channel mode mismatch: %s is in %s, not %s; convert it first: %s",
		mm.Path, have, want, convertCommand(path, "", mm.WantMode, mm.WantEvery))
}

func convertCommand(quotedPath, thread string, mode channels.Mode, every int) string {
	cmd := "agentstate convert " + quotedPath
	if thread != "" {
		cmd += " --thread " + shellQuote(thread)
	}
	cmd += " --mode " + string(mode)
	if mode == channels.ModeDelta && every > 0 {
		cmd += fmt.Sprintf(" --every %d", every)
	}
	return cmd
}

func describeMode(mode channels.Mode, every int) string {
	if mode == channels.ModeDelta {
		return fmt.Sprintf("delta mode with K=%d", every)
	}
	return string(mode) + " mode"
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:@%+=,-]+$`)

// shellQuote quotes s for a POSIX shell, so that a suggested command works
// when pasted as printed.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// requireThread fails with ErrNotFound when no surface of the file knows
// the thread (no thread record, checkpoint, run or event): a command about
// one thread then exits 1 like state and history do, instead of printing
// an empty answer.
func requireThread(ctx context.Context, db *engine.DB, path, thread string) error {
	if _, err := db.Threads().Get(ctx, engine.AnyOwner, thread); err == nil {
		return nil
	} else if !errors.Is(err, engine.ErrNotFound) {
		return inFile(path, err)
	}
	for _, err := range db.CheckpointLog(ctx, thread, admin.LogOptions{Limit: 1}) {
		return inFile(path, err)
	}
	for _, err := range db.Runs().List(ctx, thread) {
		return inFile(path, err)
	}
	evs, err := db.ThreadEvents(ctx, thread, 0, 1)
	if err != nil || len(evs) > 0 {
		return inFile(path, err)
	}
	return fmt.Errorf("%s: %w: no thread %q in the file (no checkpoint, thread record, run or event)", path, engine.ErrNotFound, thread)
}

// argErr makes an engine refusal of the command's own arguments a usage
// error (exit 2); anything else names the file, a stored value too large
// to read (ErrTooLarge, which matches ErrInvalidArgument, and ErrCorrupt)
// too.
func argErr(fs *flagSet, path string, err error) error {
	if errors.Is(err, engine.ErrInvalidArgument) && !errors.Is(err, engine.ErrCorrupt) {
		return fs.usageErr("%s", errorText(err))
	}
	return inFile(path, err)
}
