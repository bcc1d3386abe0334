package engine

import (
	"context"
	"errors"
	"fmt"
)

// Batch groups checkpoint-protocol calls that must commit together, such as
// an import of threads written elsewhere: either every call of the batch is
// in the file afterwards, or none is. It is only valid inside the function
// given to DB.Batch, and not safe for concurrent use.
type Batch struct {
	db      *DB
	ctx     context.Context
	c       *conn
	err     error // the first failed call: the batch commits nothing after it
	threads map[string]bool
}

// Batch runs fn inside one write transaction. The Put, PutWrites and
// NewThread calls fn makes on b commit together when fn returns nil; when fn
// returns an error, or a call on b failed after it began writing (whatever
// fn returns after it), nothing is applied and Batch returns that error.
// Such a failure spoils the batch: every later call returns it, because the
// call may have written part of its rows. Calls refused before they write
// (invalid arguments, NewThread's ErrConflict and ErrModeMismatch) leave
// the batch usable.
//
// Each call is held to the limits of its DB counterpart; the batch as a
// whole is not bound by MaxCallBytes: past about 150 MiB of large values in
// its transaction it fails with ErrTooLarge and changes nothing. If fn
// panics, the batch is rolled back and the panic continues.
//
// fn holds the file's only writer connection: other write calls of db
// made inside fn wait for the batch to end (and so would wait for their
// context), and reads inside fn do not see the batch's writes. In a GOOS=js
// build a handle has one connection for reads and writes alike, so there
// reads made inside fn wait for the batch too.
func (db *DB) Batch(ctx context.Context, fn func(b *Batch) error) error {
	b := &Batch{db: db, ctx: ctx, threads: map[string]bool{}}
	err := db.write(ctx, func(c *conn) error {
		b.c = c
		defer func() {
			// fn is the caller's code: if it panics, the transaction is
			// rolled back before the panic goes on, so the connection goes
			// back to the pool clean.
			if r := recover(); r != nil {
				c.d.Rollback()
				panic(r)
			}
		}()
		err := fn(b)
		if b.err != nil {
			return b.err
		}
		return err
	})
	b.c = nil
	if b.err == nil {
		b.err = errors.New("agentstate: Batch used after its function returned")
	}
	// The caches may hold what an earlier state of these threads derived.
	for th := range b.threads {
		db.purge(th)
	}
	return err
}

// call runs one call of the batch, or refuses it when the batch is over or
// spoiled.
func (b *Batch) call(thread string, fn func() error) error {
	if b.err != nil {
		return b.err
	}
	if b.c == nil {
		return errors.New("agentstate: Batch used after its function returned")
	}
	if err := b.ctx.Err(); err != nil {
		b.err = err
		return err
	}
	b.threads[thread] = true
	if err := fn(); err != nil {
		b.err = err
		return err
	}
	return nil
}

// Put is DB.Put inside the batch: it stores checkpoint cp as a child of
// cfg.CheckpointID, writing the channels of newVersions, and seals the
// parent's writes that no earlier child consumed. Its values are held to
// the same limits (MaxListBytes each, MaxCallBytes in all).
func (b *Batch) Put(cfg Config, cp Checkpoint, md Metadata, newVersions map[string]string) (Config, error) {
	p, err := preparePutValues(cfg, cp, md, newVersions)
	if err != nil {
		return Config{}, err // refused before touching the file: the batch goes on
	}
	err = b.call(cfg.ThreadID, func() error { return p.run(b.c) })
	if err != nil {
		return Config{}, err
	}
	return Config{ThreadID: cfg.ThreadID, CheckpointNS: cfg.CheckpointNS, CheckpointID: cp.ID}, nil
}

// PutWrites is DB.PutWrites inside the batch: the writes of one task under
// checkpoint cfg.CheckpointID, each at its position (special channels at
// their fixed indexes), within MaxValueBytes each and MaxCallBytes in all. The next Put of a child of that checkpoint seals
// them, as it seals writes stored before the batch.
func (b *Batch) PutWrites(cfg Config, writes []Write, taskID, taskPath string) error {
	if err := validateWrites(cfg, writes, taskID); err != nil {
		return err
	}
	return b.call(cfg.ThreadID, func() error {
		return putWritesTx(b.c, cfg, writes, taskID, taskPath, nil, false)
	})
}

// NewThread records threadID, which must have no checkpoint yet, as a
// thread of the thread API in the handle's mode (Options.Mode and
// SnapshotEvery), as Commit does for the threads it starts: State, Commit,
// StateHistory and ReadState then rebuild its Schema channels from the
// values and writes the batch stores, and Verify replays them. Those must
// be what the thread API stores: a channel's state as codec.Marshal (or
// codec.MarshalCompressed) of its value, its writes as the channel encodes
// updates (channels.MessageUpdate.Encode for messages), and in delta mode
// the snapshot counters in the metadata (channels.SetCounters). A thread
// that has checkpoints already is ErrConflict; a file another handle
// converted to another mode since this one opened, ErrModeMismatch.
func (b *Batch) NewThread(threadID string) error {
	if err := validateThread(Config{ThreadID: threadID}); err != nil {
		return err
	}
	// Both refusals come before anything is written: they leave the batch
	// usable.
	var refused error
	err := b.call(threadID, func() error {
		// Another handle may have converted the file since this one opened:
		// a thread in the handle's old mode would mix the two.
		if err := b.db.checkFileModeNow(b.c); err != nil {
			refused = err
			return nil
		}
		found, err := b.c.queryRow(sqlThreadExists, []any{threadID}, nil)
		if err != nil {
			return err
		}
		if found {
			refused = fmt.Errorf("%w: thread %q already exists in %s", ErrConflict, threadID, b.db.path)
			return nil
		}
		return b.c.exec(sqlSetThreadMod, threadID, b.db.opts.Mode, b.db.opts.SnapshotEvery)
	})
	if err == nil {
		err = refused
	}
	return err
}
