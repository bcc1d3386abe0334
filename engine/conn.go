package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/ncruces/go-sqlite3"
)

// conn is one SQLite connection of the pool with its cache of prepared
// statements. SQL text is always a constant of the surface that owns it, so
// the cache stays small.
type conn struct {
	c     *sqlite3.Conn
	stmts map[string]*sqlite3.Stmt
}

func newConn(c *sqlite3.Conn) *conn {
	return &conn{c: c, stmts: make(map[string]*sqlite3.Stmt)}
}

func (c *conn) close() error {
	for _, s := range c.stmts {
		s.Close()
	}
	c.stmts = nil
	return c.c.Close()
}

// prepare returns the cached statement for q, reset, with args bound.
func (c *conn) prepare(q string, args ...any) (*sqlite3.Stmt, error) {
	st, ok := c.stmts[q]
	if !ok {
		var tail string
		var err error
		st, tail, err = c.c.Prepare(q)
		if errors.Is(err, sqlite3.ERROR) {
			// Our SQL is constant and tested against the schema the
			// migrations create: a table or column it cannot find means
			// the file's schema text was damaged (or edited by hand).
			return nil, fmt.Errorf("%w: the file's schema is not the one this build creates: %w", ErrCorrupt, err)
		}
		if err != nil {
			return nil, err
		}
		if tail != "" {
			st.Close()
			return nil, fmt.Errorf("agentstate: internal: more than one statement in %q", q)
		}
		c.stmts[q] = st
	}
	if err := bind(st, args); err != nil {
		st.Reset()
		return nil, err
	}
	return st, nil
}

func bind(st *sqlite3.Stmt, args []any) error {
	st.ClearBindings()
	for i, a := range args {
		p := i + 1
		var err error
		switch v := a.(type) {
		case nil:
			err = st.BindNull(p)
		case string:
			err = st.BindText(p, v)
		case []byte:
			if v == nil {
				err = st.BindNull(p)
			} else {
				err = st.BindBlob(p, v)
			}
		case int:
			err = st.BindInt64(p, int64(v))
		case int64:
			err = st.BindInt64(p, v)
		case float64:
			err = st.BindFloat(p, v)
		case bool:
			err = st.BindBool(p, v)
		case *string:
			if v == nil {
				err = st.BindNull(p)
			} else {
				err = st.BindText(p, *v)
			}
		default:
			return fmt.Errorf("agentstate: internal: cannot bind %T", a)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// exec runs a statement that returns no rows.
func (c *conn) exec(q string, args ...any) error {
	st, err := c.prepare(q, args...)
	if err != nil {
		return err
	}
	err = st.Exec()
	st.Reset()
	return err
}

// query runs q and calls fn for each row. fn must not keep column slices
// (ColumnRawBlob/ColumnRawText) past its return.
func (c *conn) query(q string, args []any, fn func(st *sqlite3.Stmt) error) error {
	st, err := c.prepare(q, args...)
	if err != nil {
		return err
	}
	defer st.Reset()
	for st.Step() {
		if err := fn(st); err != nil {
			return err
		}
	}
	return st.Err()
}

// queryRow runs q and calls fn for the first row; found reports whether there was one.
func (c *conn) queryRow(q string, args []any, fn func(st *sqlite3.Stmt) error) (found bool, err error) {
	st, err := c.prepare(q, args...)
	if err != nil {
		return false, err
	}
	defer st.Reset()
	if st.Step() {
		if fn != nil {
			if err := fn(st); err != nil {
				return true, err
			}
		}
		return true, nil
	}
	return false, st.Err()
}

// queryInt64 returns the first column of the first row, or 0 without rows.
func (c *conn) queryInt64(q string, args ...any) (int64, error) {
	var n int64
	_, err := c.queryRow(q, args, func(st *sqlite3.Stmt) error {
		n = st.ColumnInt64(0)
		return nil
	})
	return n, err
}

// withCtx makes statements on c interruptible by ctx until the returned
// function is called.
func (c *conn) withCtx(ctx context.Context) func() {
	old := c.c.SetInterrupt(ctx)
	return func() { c.c.SetInterrupt(old) }
}

// copyBytes returns a copy of a column slice that outlives the row.
func copyBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}
