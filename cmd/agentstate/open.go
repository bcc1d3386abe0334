package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/internal/pgurl"
	"github.com/agentstate/agentstate/langgraph"
)

// afterCommand runs when the command has returned (and closed its DB):
// the removal of a snapshot's copy. noteTo is where notes about how a file
// was opened go (the command's stderr).
var (
	afterCommand []func()
	noteTo       io.Writer
)

// openFile opens an existing agentstate file (or a PostgreSQL URL) in the
// mode it records; readOnly for commands that must not change it.
func openFile(ctx context.Context, path string, readOnly bool) (*engine.DB, error) {
	if err := existingFile(path); err != nil {
		return nil, err
	}
	opts := engine.DefaultOptions()
	opts.ReadOnly, opts.Mode = readOnly, channels.ModeAuto
	if !readOnly {
		// Maintenance must not turn other processes' runs into errors.
		opts.ReconcileOnOpen = false
	}
	db, err := engine.Open(ctx, path, &opts)
	if held, ok := heldByNode(err); ok && readOnly {
		// A Node process has the file: read a consistent copy of it
		// (snapshot.go) rather than refuse.
		db, cleanup, err := openSnapshot(ctx, path, held, noteTo)
		if err != nil {
			return nil, err
		}
		afterCommand = append(afterCommand, cleanup)
		return db, nil
	}
	if errors.Is(err, engine.ErrNotAgentstate) && langgraph.Probe(ctx, path) == nil {
		// A LangGraph saver's file: the command that reads it.
		dst := strings.TrimSuffix(path, filepath.Ext(path)) + ".agentstate.db"
		return nil, fmt.Errorf("%w\n%s is a LangGraph SqliteSaver file: copy its threads into an agentstate file with: agentstate import-langgraph %s %s",
			err, path, shellQuote(path), shellQuote(dst))
	}
	if readOnly && errors.Is(err, engine.ErrSchemaTooOld) {
		// Not every refusal of a read-only Open (ErrReadOnly) is an older
		// schema: a file with no schema yet, a log that cannot be read
		// without creating its -shm are said as the engine says them.
		return nil, fmt.Errorf("%s was written by an older agentstate (this one has schema version %d) and a read-only command does not upgrade it; upgrade it in place with: agentstate upgrade %s",
			pgurl.Redacted(path), engine.SchemaVersion, shellQuote(pgurl.Redacted(path)))
	}
	return db, err
}

// existingFile refuses what cannot be an agentstate file before SQLite
// sees it (it would say "disk I/O error" about a directory). A PostgreSQL
// URL passes: the server answers for it.
func existingFile(path string) error {
	if pgurl.Is(path) {
		return nil
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: no such file", path)
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s is a directory, not an agentstate file", path)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", path)
	case fi.Size() == 0:
		return fmt.Errorf("%s is empty (0 bytes): it holds no agentstate data yet", path)
	}
	return nil
}

// notDir refuses a directory where a command creates or opens a file.
func notDir(path string) error {
	if pgurl.Is(path) {
		return nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory, not an agentstate file", path)
	}
	return nil
}

// inFile names the file in an error that does not already name it.
func inFile(path string, err error) error {
	path = pgurl.Redacted(path)
	if err == nil || strings.Contains(err.Error(), path) {
		return err
	}
	return fmt.Errorf("%s: %w", path, err)
}

// printJSON writes v as one line of JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// printIndented writes v as indented JSON.
func printIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// problemsError makes a command exit 1 after it printed what it found.
type problemsError struct{ msg string }

func (e problemsError) Error() string { return e.msg }

// metaFlags collects repeated --meta key=value flags; a value that parses
// as JSON is that value (true, 3, "x"), anything else a string.
type metaFlags map[string]any

func (m metaFlags) String() string { return "" }

func (m metaFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	var x any
	if err := json.Unmarshal([]byte(v), &x); err != nil {
		x = v
	}
	m[k] = x
	return nil
}

func clipText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
