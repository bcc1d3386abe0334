package engine

import (
	"fmt"
	"hash/maphash"
	"strings"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
)

// importRules enforces, row by row and at the end, the rules under which
// Import merges a dump into a file that may hold data already (see Import):
// a dump adds whole threads and never writes into one the file has, speaks
// only for the user it was allowed to, leaves every thread writable (event
// counters past the imported seqs, modes this file can write), and the
// result verifies, or nothing changes.
type importRules struct {
	db    *DB
	user  string        // ImportOptions.User
	mode  channels.Mode // the dump's mode and K (the file's, checked before)
	every int

	threads map[string]bool // threads of the dump, each checked absent from the file
	order   []string
	events  map[string]bool // threads with imported events
	store   [][2]string     // imported store keys
	// storeImported and ranImported are the store keys and run ids
	// imported so far: one found in the file is a duplicate of the dump.
	storeImported map[[2]string]bool
	ranImported   map[string]bool
	// keys are the idempotency keys imported so far; sharedKeys: the dump
	// is older than schema version 10, when keys were unique per thread.
	keys       map[string]bool
	sharedKeys bool
}

func newImportRules(db *DB, h exportHeader, user string) *importRules {
	return &importRules{db: db, user: user, mode: h.Mode, every: h.SnapshotEvery,
		threads: map[string]bool{}, events: map[string]bool{}, storeImported: map[[2]string]bool{}, ranImported: map[string]bool{},
		keys: map[string]bool{}, sharedKeys: h.SchemaVersion < keysUniqueSince}
}

// keysUniqueSince is the schema version (migration 10) since which a run's
// idempotency key is unique in the database.
const keysUniqueSince = 10

// runKey checks a run's idempotency key against the file's and the dump's:
// a dump made since version 10 may not bring a key the file has (or name
// one twice); an older dump's run loses a key taken already, as migration
// 10 does to a file's runs after the first.
func (g *importRules) runKey(c *conn, t *exportTable, args []any, run string) error {
	key := colOf(t, args, "idempotency_key")
	if key == "" {
		return nil
	}
	var other string
	taken := g.keys[key]
	if !taken {
		found, err := c.queryRow(sqlRunByKey, []any{key}, func(r row) error { other = r.Text(0); return nil })
		if err != nil {
			return err
		}
		taken = found
	}
	switch {
	case !taken:
		g.keys[key] = true
	case g.sharedKeys:
		for i, col := range t.cols {
			if col.name == "idempotency_key" {
				args[i] = nil
			}
		}
	case other == "":
		return fmt.Errorf("%w: idempotency key %s appears twice in the dump (run %q)", ErrBadExport, quoteCut(key), run)
	default:
		return fmt.Errorf("%w: run %q has idempotency key %s, which run %q in %s has already; keys are unique in a database", ErrConflict, run, quoteCut(key), other, g.db.path)
	}
	return nil
}

func colOf(t *exportTable, args []any, name string) string {
	for i, c := range t.cols {
		if c.name == name {
			s, _ := args[i].(string)
			return s
		}
	}
	return ""
}

func colIntOf(t *exportTable, args []any, name string) int64 {
	for i, c := range t.cols {
		if c.name == name {
			n, _ := args[i].(int64)
			return n
		}
	}
	return 0
}

// row checks one row before it is inserted.
func (g *importRules) row(c *conn, t *exportTable, args []any, thread string) error {
	if t.threadCol != "" {
		if thread == "" {
			return fmt.Errorf("%w: a %s row has an empty thread id", ErrBadExport, t.name)
		}
		if !g.threads[thread] {
			// Checked before the first row of the thread goes in, so what
			// is found was there before the import.
			var table string
			found, err := c.queryRow(sqlThreadAnywhere, []any{thread}, func(r row) error { table = r.Text(0); return nil })
			if err != nil {
				return err
			}
			if found {
				return fmt.Errorf("%w: thread %q exists in %s already (%s); an import adds whole threads and never writes into an existing one", ErrConflict, thread, g.db.path, table)
			}
			g.threads[thread] = true
			g.order = append(g.order, thread)
		}
	}
	switch t.name {
	case "threads":
		if u := colOf(t, args, "user_id"); g.user != "" && u != g.user {
			return fmt.Errorf("%w: the thread record of %q belongs to user %q, and this import speaks for user %q only", ErrConflict, thread, u, g.user)
		}
	case "runs":
		run := colOf(t, args, "run_id")
		if u := colOf(t, args, "user_id"); g.user != "" && u != "" && u != g.user {
			return fmt.Errorf("%w: run %q of thread %q belongs to user %q, and this import speaks for user %q only", ErrConflict, run, thread, u, g.user)
		}
		// Run ids are keyed across threads: say which, not SQLite's
		// "UNIQUE constraint failed".
		if g.ranImported[run] {
			return fmt.Errorf("%w: run %q appears twice in the dump", ErrBadExport, run)
		}
		var other string
		found, err := c.queryRow(sqlRunsImportThread, []any{run}, func(r row) error { other = r.Text(0); return nil })
		if err != nil {
			return err
		}
		if found {
			return fmt.Errorf("%w: run %q (of thread %q in the dump) exists in %s already, in thread %q; an import never overwrites a run", ErrConflict, run, thread, g.db.path, other)
		}
		g.ranImported[run] = true
		return g.runKey(c, t, args, run)
	case "thread_modes":
		mode, every := channels.Mode(colOf(t, args, "mode")), int(colIntOf(t, args, "every"))
		if mode != channels.ModeFull && (mode != g.mode || every != g.every) {
			return modeMismatch("import", g.db.path, thread, mode, every, g.mode, g.every)
		}
	case "events":
		g.events[thread] = true
	case "store_items":
		k := [2]string{colOf(t, args, "namespace"), colOf(t, args, "key")}
		if g.storeImported[k] {
			return fmt.Errorf("%w: store item %s in namespace %q appears twice in the dump", ErrBadExport, quoteCut(k[1]), k[0])
		}
		found, err := c.queryRow(sqlStoreImportExists, []any{k[0], k[1]}, func(row) error { return nil })
		if err != nil {
			return err
		}
		if found {
			return fmt.Errorf("%w: store item %s in namespace %q exists in %s already; an import never overwrites a store item (delete it first, or import into another file)",
				ErrConflict, quoteCut(k[1]), k[0], g.db.path)
		}
		g.store = append(g.store, k)
		g.storeImported[k] = true
	case "store_vectors":
		// The dump lists vectors after the items: each belongs to one.
		k := [2]string{colOf(t, args, "namespace"), colOf(t, args, "key")}
		if !g.storeImported[k] {
			return fmt.Errorf("%w: a vector of store item %s in namespace %q, which the dump does not hold", ErrBadExport, quoteCut(k[1]), k[0])
		}
	}
	return nil
}

// finish runs after the last row, in the same transaction: it advances the
// event counters of the imported threads past their seqs and verifies what
// was imported; a problem fails the import, which then changes nothing.
func (g *importRules) finish(c *conn) error {
	if len(g.store) > 0 {
		if err := c.exec(sqlStoreVectorsLink); err != nil {
			return err
		}
	}
	for th := range g.events {
		if err := c.exec(sqlEventSeqPastMax, th); err != nil {
			return err
		}
	}
	v := &verifier{db: g.db, o: admin.VerifyOptions{MaxProblems: 10}, seed: maphash.MakeSeed(), c: c, fixed: true,
		rep: admin.VerifyReport{Path: g.db.path, Problems: []admin.Problem{}}}
	for _, th := range g.order {
		v.o.ThreadID = th
		for _, check := range []struct {
			kind string
			fn   func() error
		}{{"checkpoint", func() error { return v.thread(th) }}, {"run", v.runs}, {"event", v.events}, {"thread", v.threadRecords}} {
			if err := check.fn(); err != nil {
				v.addf(check.kind, th, "", "", "cannot be read: %v", err)
			}
		}
	}
	for _, k := range g.store {
		var data []byte
		if _, err := c.queryRow(sqlStoreImportValue, []any{k[0], k[1]}, func(r row) error {
			data = copyBytes(r.Blob(0))
			return nil
		}); err != nil {
			return err
		}
		var x map[string]any
		if err := codec.Unmarshal(data, &x); err != nil {
			v.addf("store", "", "", "", "item %q in namespace %q does not decode as a map: %v", k[1], k[0], err)
		}
	}
	if len(v.rep.Problems) == 0 {
		return nil
	}
	var lines []string
	for _, p := range v.rep.Problems {
		lines = append(lines, p.String())
	}
	if v.rep.Truncated > 0 {
		lines = append(lines, fmt.Sprintf("and %d more", v.rep.Truncated))
	}
	return fmt.Errorf("%w: the imported rows do not verify, nothing was imported: %s", ErrBadExport, strings.Join(lines, "; "))
}
