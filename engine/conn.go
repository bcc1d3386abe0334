package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/engine/records"
)

// row is the current row of a query, read by column index.
type row = driver.Row

// conn is one connection of a handle's pool: the driver's connection and
// the helpers the surfaces write their SQL against.
type conn struct {
	d driver.Conn
	// runsBefore, when >= 0, limits the lease extension at the end of the
	// current write transaction to runs with a rowid up to it (see
	// keepInsertedLeases); -1 otherwise.
	runsBefore int64
	// hc is the handle's cache (nil for a connection of no handle); the
	// last values of version-delta chains live there (valuedelta_cache.go).
	hc     *historyCache
	writer bool
	// pending holds the values this write transaction stored, for the
	// cache once it commits.
	pending map[valueKey]*baseEntry
	// tr translates the engine's SQL (SQLite's dialect) for a server
	// backend; nil for SQLite, which pays nothing for it.
	tr func(q string, args []any) (string, []any, error)
	// shared: a connection to a shared SQLite file (shared.go); tr then
	// gives our objects their sharedPrefix names.
	shared bool
}

func (c *conn) close() error { return c.d.Close() }

// schemaErr marks a statement that names what the database lacks: our SQL
// is constant and tested against the schema the migrations create, so a
// table or column it cannot find means the schema text was damaged (or
// edited by hand).
func schemaErr(err error) error {
	if errors.Is(err, driver.ErrSchema) {
		return fmt.Errorf("%w: the file's schema is not the one this build creates: %w", ErrCorrupt, err)
	}
	return err
}

// exec runs a statement that returns no rows.
func (c *conn) exec(q string, args ...any) error {
	_, err := c.execN(q, args...)
	return err
}

// execN runs a statement that returns no rows and reports how many rows it
// changed.
func (c *conn) execN(q string, args ...any) (int64, error) {
	plainArgs(args)
	if c.tr != nil {
		var err error
		if q, args, err = c.tr(q, args); err != nil {
			return 0, err
		}
	}
	n, err := c.d.Exec(q, args...)
	return n, schemaErr(err)
}

// plainArgs turns the engine's typed strings among args into the plain
// strings the drivers bind, in place.
func plainArgs(args []any) {
	for i, a := range args {
		switch v := a.(type) {
		case channels.Mode:
			args[i] = string(v)
		case records.RunStatus:
			args[i] = string(v)
		case records.Strategy:
			args[i] = string(v)
		case records.ThreadStatus:
			args[i] = string(v)
		}
	}
}

// query runs q and calls fn for each row. fn must not keep byte slices of
// the row (Blob) past its return.
func (c *conn) query(q string, args []any, fn func(r row) error) error {
	plainArgs(args)
	if c.tr != nil {
		var err error
		if q, args, err = c.tr(q, args); err != nil {
			return err
		}
	}
	return schemaErr(c.d.Query(q, args, fn))
}

// queryLast is query for the last statement of a read transaction: a driver
// with a round trip to save sends the COMMIT with it (driver.LastQuerier).
func (c *conn) queryLast(q string, args []any, fn func(r row) error) error {
	lq, ok := c.d.(driver.LastQuerier)
	if !ok {
		return c.query(q, args, fn)
	}
	plainArgs(args)
	if c.tr != nil {
		var err error
		if q, args, err = c.tr(q, args); err != nil {
			return err
		}
	}
	return schemaErr(lq.QueryLast(q, args, fn))
}

// queue runs a statement of the current write transaction whose failure
// fails the transaction whatever its kind (driver.Conn.Queue): on a server
// it travels with the next statement, saving a round trip.
func (c *conn) queue(q string, args ...any) error {
	plainArgs(args)
	if c.tr != nil {
		var err error
		if q, args, err = c.tr(q, args); err != nil {
			return err
		}
	}
	return schemaErr(c.d.Queue(q, args...))
}

// lock serialises the rest of the current write transaction with every
// other write transaction that locks key (a thread id): the guarantee of
// driver.Conn.Lock, which SQLite's single writer gives for free.
func (c *conn) lock(key string) error { return c.d.Lock(key) }

// queryRow runs q and calls fn for the first row; found reports whether there was one.
func (c *conn) queryRow(q string, args []any, fn func(r row) error) (found bool, err error) {
	err = c.query(q, args, func(r row) error {
		found = true
		if fn != nil {
			if err := fn(r); err != nil {
				return err
			}
		}
		return errStop
	})
	return found, ignoreStop(err)
}

// queryInt64 returns the first column of the first row, or 0 without rows.
func (c *conn) queryInt64(q string, args ...any) (int64, error) {
	var n int64
	_, err := c.queryRow(q, args, func(r row) error {
		n = r.Int64(0)
		return nil
	})
	return n, err
}

// withCtx makes statements on c interruptible by ctx until the returned
// function is called.
func (c *conn) withCtx(ctx context.Context) func() { return c.d.Interrupt(ctx) }

// copyBytes returns a copy of a column slice that outlives the row.
func copyBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}
