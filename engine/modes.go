package engine

import (
	"context"
	"fmt"
	"strconv"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine/internal/driver"
)

const (
	metaMode  = "channel_mode"
	metaEvery = "snapshot_every"
)

func metaGet(c *conn, key string) (string, bool, error) {
	var v string
	found, err := c.queryRow(sqlMetaGet, []any{key}, func(st row) error { v = st.Text(0); return nil })
	return v, found, err
}

// fileMode reads the mode and K the file records; found is false for a file
// that never recorded one.
func fileMode(c *conn) (mode channels.Mode, every int, found bool, err error) {
	var m string
	m, found, err = metaGet(c, metaMode)
	mode = channels.Mode(m)
	if err != nil || !found {
		return "", 0, false, err
	}
	s, _, err := metaGet(c, metaEvery)
	if err != nil {
		return "", 0, false, err
	}
	every, err = strconv.Atoi(s)
	if err != nil || (mode != channels.ModeFull && mode != channels.ModeDelta) {
		return "", 0, false, fmt.Errorf("%w: the file records channel mode %q with K %q", ErrCorrupt, mode, s)
	}
	return mode, every, true, nil
}

// checkFileMode compares the handle's mode with the file's, records it in a
// file that has none, and resolves ModeAuto.
func (db *DB) checkFileMode(ctx context.Context, w *conn) error {
	restore := w.withCtx(ctx)
	defer restore()
	if db.fromBuildImage() {
		// The build's image records no mode and no one else sees this
		// database: record the handle's with nothing to read first (in
		// the js build the reads and the retry were a tenth of an open).
		if db.opts.Mode == channels.ModeAuto {
			db.opts.Mode, db.opts.SnapshotEvery = channels.ModeFull, DefaultOptions().SnapshotEvery
		}
		err := w.d.Begin(driver.TxWrite)
		if err == nil {
			if err = setFileMode(w, db.opts.Mode, db.opts.SnapshotEvery); err != nil {
				w.d.Rollback()
			} else {
				err = w.d.Commit()
			}
		}
		if err != nil {
			return openErr(db.path, wrapErr(ctx, err))
		}
		return nil
	}
	mode, every, found, err := fileMode(w)
	if err != nil {
		return openErr(db.path, wrapErr(ctx, err))
	}
	if db.opts.Mode == channels.ModeAuto {
		db.opts.Mode, db.opts.SnapshotEvery = channels.ModeFull, DefaultOptions().SnapshotEvery
		if found {
			db.opts.Mode, db.opts.SnapshotEvery = mode, every
			return nil
		}
	}
	if found {
		if mode != db.opts.Mode || (mode == channels.ModeDelta && every != db.opts.SnapshotEvery) {
			return modeMismatch("open", db.path, "", mode, every, db.opts.Mode, db.opts.SnapshotEvery)
		}
		return nil
	}
	if db.opts.ReadOnly {
		return nil
	}
	return db.retryBusy(ctx, func() error {
		if err := w.d.Begin(driver.TxWrite); err != nil {
			return err
		}
		if err := w.lock(fileModeLock); err != nil {
			w.d.Rollback()
			return err
		}
		// Another process may have recorded a mode since we looked.
		mode, every, found, err := fileMode(w)
		if err == nil && found && (mode != db.opts.Mode || (mode == channels.ModeDelta && every != db.opts.SnapshotEvery)) {
			mm := modeMismatch("open", db.path, "", mode, every, db.opts.Mode, db.opts.SnapshotEvery)
			mm.Race = true
			err = mm
		}
		if err == nil && !found {
			err = setFileMode(w, db.opts.Mode, db.opts.SnapshotEvery)
		}
		if err != nil {
			w.d.Rollback()
			return err
		}
		return w.d.Commit()
	})
}

// checkFileModeNow compares the handle's mode with the one the file
// records now, inside the write transaction of a call that creates a
// thread: another process may have converted the file since this handle
// opened (ConvertFile), and a thread created in the handle's old mode would
// mix modes in the file. Existing threads need no such check: their own
// mode is checked (checkThreadMode), and a conversion rewrites it.
func (db *DB) checkFileModeNow(c *conn) error {
	mode, every, found, err := fileMode(c)
	if err != nil || !found {
		return err
	}
	if mode != db.opts.Mode || (mode == channels.ModeDelta && every != db.opts.SnapshotEvery) {
		return modeMismatch("converted", db.path, "", mode, every, db.opts.Mode, db.opts.SnapshotEvery)
	}
	return nil
}

// fileModeLock is the lock key of the file's mode record; no thread id is
// empty.
const fileModeLock = ""

func setFileMode(c *conn, mode channels.Mode, every int) error {
	if err := c.exec(sqlMetaSet, metaMode, mode); err != nil {
		return err
	}
	return c.exec(sqlMetaSet, metaEvery, strconv.Itoa(every))
}

func describeMode(mode channels.Mode, every int) string {
	if mode == channels.ModeDelta {
		return fmt.Sprintf("delta mode with K=%d", every)
	}
	return "full mode"
}

// threadMode is the mode a thread was written in; found is false for a
// thread the thread API never wrote (LangGraph threads, new threads).
func threadMode(c *conn, thread string) (mode channels.Mode, every int, found bool, err error) {
	found, err = c.queryRow(sqlThreadMode, []any{thread}, func(st row) error {
		mode, every = channels.Mode(st.Text(0)), int(st.Int64(1))
		return nil
	})
	return mode, every, found, err
}

// checkThreadMode refuses to read or write a thread in a mode this handle
// cannot serve: a full handle cannot rebuild a delta thread, and no handle
// writes into a thread of the other mode (it would mix the two).
func (db *DB) checkThreadMode(c *conn, thread string, writing bool) error {
	mode, every, found, err := threadMode(c, thread)
	if err != nil || !found {
		return err
	}
	if mode == db.opts.Mode && (mode == channels.ModeFull || every == db.opts.SnapshotEvery || !writing) {
		return nil
	}
	if !writing && mode == channels.ModeFull {
		return nil // a delta handle reads full threads: their stored values seed every walk
	}
	// A file converted by another handle since this one opened rewrote its
	// threads' modes too: that is what to say, not "convert the thread",
	// which would undo the other handle's conversion.
	if err := db.checkFileModeNow(c); err != nil {
		return err
	}
	return modeMismatch("thread", db.path, thread, mode, every, db.opts.Mode, db.opts.SnapshotEvery)
}
