package engine

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/engine/internal/driver"
)

// Info reads the schema version, header fields, sizes and the row count of
// every table. It only reads.
func (db *DB) Info(ctx context.Context) (admin.Info, error) {
	in := admin.Info{Path: db.path, Mode: db.opts.Mode, SnapshotEvery: db.opts.SnapshotEvery, Shared: db.shared, Rows: map[string]int64{}}
	err := db.read(ctx, func(c *conn) error {
		v, err := c.queryInt64("PRAGMA user_version")
		if err != nil {
			return err
		}
		in.SchemaVersion = int(v)
		for _, p := range []struct {
			q   string
			dst *int64
		}{
			{"PRAGMA application_id", &in.ApplicationID},
			{"PRAGMA page_size", &in.PageSize},
			{"PRAGMA page_count", &in.PageCount},
			{"PRAGMA freelist_count", &in.FreePages},
		} {
			if *p.dst, err = c.queryInt64(p.q); err != nil {
				return err
			}
		}
		var tables []string
		err = c.query("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name", nil,
			func(st row) error { tables = append(tables, st.Text(0)); return nil })
		if err != nil {
			return err
		}
		for _, t := range tables {
			// Table names come from sqlite_master, not from a caller, and are
			// quoted as identifiers.
			n, err := c.queryInt64(`SELECT count(*) FROM "` + t + `"`)
			if err != nil {
				return err
			}
			in.Rows[t] = n
		}
		return nil
	})
	if err != nil {
		return admin.Info{}, err
	}
	if !db.b.memory() {
		if fi, err := os.Stat(db.path); err == nil {
			in.FileBytes = fi.Size()
		}
		if fi, err := os.Stat(db.path + "-wal"); err == nil {
			in.WALBytes = fi.Size()
		}
	} else {
		in.FileBytes = in.PageSize * in.PageCount
	}
	return in, nil
}

// CheckpointWAL copies the write-ahead log into the main file and truncates
// it, so the file's size on disk is the database's size, and reports what it
// could do. A connection (of this or another process) that is reading keeps
// the log from being emptied until its read ends: the checkpoint waits for
// it up to BusyTimeout, then gives up with Truncated false (not an error);
// the file then shrinks at a later checkpoint.
func (db *DB) CheckpointWAL(ctx context.Context) (admin.WALStatus, error) {
	if db.b.memory() {
		return admin.WALStatus{Truncated: true}, nil
	}
	var st admin.WALStatus
	err := db.exclusive(ctx, "PRAGMA wal_checkpoint(TRUNCATE)", func(r row) error {
		st = admin.WALStatus{Truncated: r.Int64(0) == 0, LogFrames: r.Int64(1), CopiedFrames: r.Int64(2)}
		return nil
	})
	return st, err
}

// Vacuum rebuilds the file without its free pages (retention frees pages
// for reuse; Vacuum gives them back to the file system). The rebuilt file
// goes through the write-ahead log: CheckpointWAL after it says
// whether the file on disk has shrunk.
// A shared file is refused (ErrInvalidArgument; docs/format.md).
func (db *DB) Vacuum(ctx context.Context) error {
	if db.shared {
		return fmt.Errorf("%w: %s is a shared file: VACUUM would rebuild the other tools' tables too; agentstate leaves that to the file's owner (retention's freed pages are reused without it)", ErrInvalidArgument, db.path)
	}
	return db.exclusive(ctx, "VACUUM", nil)
}

// exclusive runs one statement on the writer connection outside any
// transaction (checkpoints and VACUUM cannot run inside one); fn, if not
// nil, reads its first row.
func (db *DB) exclusive(ctx context.Context, q string, fn func(row) error) error {
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	c, release, err := db.acquire(ctx, db.writer)
	if err != nil {
		return err
	}
	defer release()
	// A write transaction checks that the file is still the one at its
	// path; VACUUM and checkpoints run outside one, so check first.
	if err := c.d.Begin(driver.TxWrite); err != nil {
		return wrapErr(ctx, err)
	}
	if err := c.d.Rollback(); err != nil {
		return wrapErr(ctx, err)
	}
	began := time.Now()
	if _, err := c.queryRow(q, nil, fn); err != nil {
		return wrapErr(ctx, err)
	}
	if held := time.Since(began); held >= minLeaseGrace && !db.b.memory() {
		// The statement kept other writers out; give the time it held the
		// lock back to the leases that were valid when it began, in a
		// transaction of its own (this one could not run inside it).
		if err := c.d.Begin(driver.TxWrite); err != nil {
			return wrapErr(ctx, err)
		}
		c.runsBefore = -1
		if err := db.extendLeases(c, held); err != nil {
			c.d.Rollback()
			return wrapErr(ctx, err)
		}
		return wrapErr(ctx, c.d.Commit())
	}
	return nil
}
