package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/agentstate/agentstate/engine"
)

// A read-only command on a file a JavaScript process (the npm package in
// Node) has open. The two kinds of process cannot share SQLite's locks or
// WAL-index (Node takes no POSIX locks and keeps its WAL-index in memory),
// so the CLI does not open the file: it copies it, with its -wal, into a
// private directory and reads the copy. A copy taken while Node writes is
// consistent when neither of the two things that rewrite bytes a reader
// has already relied on happened while it was taken (docs/cli.md, "A file
// a Node process has open"):
//
//   - a checkpoint writing pages into the database file: the kernel's
//     file-change notification (inotify) on the database file must report
//     no write from before the copy starts until it ends;
//   - a restart of the log, which rewrites it from its start: the log's
//     32-byte header (its salts change on every restart) must be the same
//     before the copy, in the copy, and after it.
//
// Frames Node appends while the log is copied are harmless: SQLite's
// recovery of the copy keeps the frames up to the last commit whose
// checksum chain is whole, and a frame Node was writing, or rewrote within
// its open transaction, breaks the chain after the last complete commit.
// The copy is then what Node had committed at some moment. Node's files
// are only read. An attempt that sees either event is thrown away and
// taken again; after snapshotAttempts the command fails with a
// *snapshotError saying why.

// copyHook, when set (tests), runs in each attempt after the log's header
// is read and before the file is copied: where a writer's checkpoint or
// restart of its log would race the copy.
var copyHook func()

// snapshotRetries counts the copies thrown away (for the tests' logs).
var snapshotRetries int

const (
	snapshotAttempts = 40
	walHeaderSize    = 32
)

// snapshotError says why no consistent copy of a file Node holds could be
// had; it wraps the engine's refusal (ErrConflict, naming the holder).
type snapshotError struct {
	held *engine.HeldError
	why  string
}

func (e *snapshotError) Error() string {
	return fmt.Sprintf("%v; and no consistent copy of it could be read: %s", e.held, e.why)
}

func (e *snapshotError) Unwrap() error { return e.held }

// heldByNode returns the refusal of an Open because a live JavaScript
// process on this host has the file open, the case a snapshot can serve.
func heldByNode(err error) (*engine.HeldError, bool) {
	var held *engine.HeldError
	if !errors.As(err, &held) || held.Stale != "" {
		return nil, false
	}
	return held, held.Holder.Runtime == "node"
}

// openSnapshot copies path (and its -wal) consistently into a new private
// directory and opens the copy read-only; cleanup, after the DB is closed,
// removes the directory.
func openSnapshot(ctx context.Context, path string, held *engine.HeldError, stderr io.Writer) (*engine.DB, func(), error) {
	dir, err := os.MkdirTemp("", "agentstate-snapshot-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	copyPath := filepath.Join(dir, filepath.Base(path))
	why := ""
	for attempt := 0; attempt < snapshotAttempts; attempt++ {
		if err := ctx.Err(); err != nil {
			cleanup()
			return nil, nil, err
		}
		if attempt > 0 {
			time.Sleep(time.Duration(min(5*attempt, 50)) * time.Millisecond)
		}
		ok, reason, err := copyConsistent(path, copyPath)
		if err != nil {
			cleanup()
			return nil, nil, &snapshotError{held, err.Error()}
		}
		if !ok {
			why = reason
			snapshotRetries++
			continue
		}
		opts := engine.DefaultOptions()
		opts.ReadOnly = true
		opts.Mode = "auto"
		db, err := engine.Open(ctx, copyPath, &opts)
		if err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("%s: a copy of the file (it is open in %s): %w", path, holderText(held.Holder), err)
		}
		if stderr != nil {
			fmt.Fprintf(stderr, "note: %s is open in %s; this reads a consistent copy of it taken now (Node's files are only read)\n", path, holderText(held.Holder))
		}
		return db, cleanup, nil
	}
	cleanup()
	return nil, nil, &snapshotError{held, fmt.Sprintf("%d attempts in a row each saw Node %s while copying; try again when it writes less, or close it there", snapshotAttempts, why)}
}

func holderText(h engine.Holder) string {
	s := h.Runtime
	if h.Program != "" {
		s += " (" + h.Program + ")"
	}
	if h.PID != 0 {
		s += fmt.Sprintf(" pid %d", h.PID)
	}
	return s
}

// walHeader returns the first 32 bytes of a log (nil: no log, or an empty one).
func walHeader(wal string) ([]byte, error) {
	f, err := os.Open(wal)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, walHeaderSize)
	n, err := io.ReadFull(f, b)
	if n == 0 || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, nil // being created or truncated: compared as absent
	}
	return b, err
}

// journalMagic starts a rollback journal that holds a transaction.
var journalMagic = []byte{0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7}

// liveJournal reports whether a rollback journal holds a transaction.
func liveJournal(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, len(journalMagic))
	_, err = io.ReadFull(f, b)
	return err == nil && bytes.Equal(b, journalMagic)
}

// copyBytes copies src to dst; a missing src is an empty copy's absence.
func copyBytes(src, dst string) (bool, error) {
	in, err := os.Open(src)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return false, err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return false, err
	}
	return true, out.Close()
}

// copyConsistent is one attempt: ok when the copy is consistent; otherwise
// reason says what Node did meanwhile.
func copyConsistent(path, dst string) (ok bool, reason string, err error) {
	w, err := watchWrites(path)
	if err != nil {
		return false, "", err
	}
	defer w.close()
	for _, p := range []string{dst, dst + "-wal", dst + "-shm"} {
		os.Remove(p)
	}
	h1, err := walHeader(path + "-wal")
	if err != nil {
		return false, "", err
	}
	if copyHook != nil {
		copyHook()
	}
	if has, err := copyBytes(path, dst); err != nil || !has {
		if err == nil {
			err = fmt.Errorf("%s disappeared", path)
		}
		return false, "", err
	}
	hasWAL, err := copyBytes(path+"-wal", dst+"-wal")
	if err != nil {
		return false, "", err
	}
	h3, err := walHeader(path + "-wal")
	if err != nil {
		return false, "", err
	}
	var hc []byte
	if hasWAL {
		if hc, err = walHeader(dst + "-wal"); err != nil {
			return false, "", err
		}
	}
	if wrote, err := w.wrote(); err != nil {
		return false, "", err
	} else if wrote {
		return false, "write into the database file (a checkpoint)", nil
	}
	if !bytes.Equal(h1, h3) || !bytes.Equal(h1, hc) {
		return false, "start its log again (after a checkpoint)", nil
	}
	if liveJournal(path + "-journal") {
		// A file in rollback-journal mode mid-transaction: its pages
		// may be the new ones before the transaction is final.
		return false, "hold a transaction open in a rollback journal", nil
	}
	if !hasWAL || hc == nil {
		os.Remove(dst + "-wal")
	}
	return true, "", nil
}
