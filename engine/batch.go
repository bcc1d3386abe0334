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

// Batch runs fn inside one write transaction: the calls fn makes on b
// commit together when fn returns nil. When fn returns an error or panics,
// or a call on b failed after it began writing (every later call then
// returns that error), nothing is applied. Calls refused before they write
// leave the batch usable. Each call has its DB counterpart's limits; the
// batch is not bound by MaxCallBytes.
//
// fn holds the writer connection: other writes of db made inside fn wait for
// the batch (in a GOOS=js build, reads too), and reads inside fn do not see
// its writes.
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

// NewThread records threadID, which must have no checkpoint yet
// (ErrConflict), as a thread of the thread API in the handle's mode, as
// Commit does for the threads it starts. What the batch then stores for it
// must be what the thread API stores: states as codec.Marshal, writes as the
// channel encodes updates, in delta mode the counters of channels.SetCounters.
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
