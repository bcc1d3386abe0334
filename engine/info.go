package engine

import (
	"context"
	"os"
	"time"

	"github.com/agentstate/agentstate/engine/internal/driver"
)

// Info describes the file behind a DB.
type Info struct {
	Path          string           `json:"path"`
	SchemaVersion int              `json:"schema_version"`
	ApplicationID int64            `json:"application_id"`
	Mode          string           `json:"mode"`
	SnapshotEvery int              `json:"snapshot_every"`
	PageSize      int64            `json:"page_size"`
	PageCount     int64            `json:"page_count"`
	FreePages     int64            `json:"free_pages"`
	FileBytes     int64            `json:"file_bytes"`
	WALBytes      int64            `json:"wal_bytes"`
	Rows          map[string]int64 `json:"rows"`
}

// Info reads the schema version, header fields, sizes and the row count of
// every table. It only reads.
func (db *DB) Info(ctx context.Context) (Info, error) {
	in := Info{Path: db.path, Mode: db.opts.Mode, SnapshotEvery: db.opts.SnapshotEvery, Rows: map[string]int64{}}
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
		return Info{}, err
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
// it, so the file's size on disk is the database's size.
func (db *DB) CheckpointWAL(ctx context.Context) error {
	if db.b.memory() {
		return nil
	}
	return db.exclusive(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
}

// Vacuum rebuilds the file without its free pages (retention frees pages
// for reuse; Vacuum gives them back to the file system).
func (db *DB) Vacuum(ctx context.Context) error {
	return db.exclusive(ctx, "VACUUM")
}

// exclusive runs one statement on the writer connection outside any
// transaction (checkpoints and VACUUM cannot run inside one).
func (db *DB) exclusive(ctx context.Context, q string) error {
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
	if err := c.exec(q); err != nil {
		return wrapErr(ctx, err)
	}
	if held := time.Since(began); held >= minLeaseGrace && !db.b.memory() {
		// The statement kept other writers out; give the runs whose leases
		// were valid when it began a full lease, in a transaction of their
		// own (this one could not run inside it).
		if err := c.d.Begin(driver.TxWrite); err != nil {
			return wrapErr(ctx, err)
		}
		if err := db.extendLeases(c, held); err != nil {
			c.d.Rollback()
			return wrapErr(ctx, err)
		}
		return wrapErr(ctx, c.d.Commit())
	}
	return nil
}
