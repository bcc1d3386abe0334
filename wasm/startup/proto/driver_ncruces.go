//go:build js && wasm && ncruces

package main

import (
	"fmt"

	"github.com/ncruces/go-sqlite3"
)

// ncrucesDriver runs SQLite translated into this module, as the engine does
// today.
type ncrucesDriver struct {
	c     *sqlite3.Conn
	stmts []*sqlite3.Stmt
}

func newDriver() driver { return &ncrucesDriver{} }

func (d *ncrucesDriver) open(name string) (err error) {
	d.c, err = sqlite3.Open(name)
	return err
}

func (d *ncrucesDriver) prepare(q string) (int, error) {
	st, _, err := d.c.Prepare(q)
	if err != nil {
		return 0, err
	}
	d.stmts = append(d.stmts, st)
	return len(d.stmts) - 1, nil
}

func (d *ncrucesDriver) run(id int, args []any) ([][]any, error) {
	st := d.stmts[id]
	defer st.Reset()
	st.ClearBindings()
	for i, a := range args {
		var err error
		switch v := a.(type) {
		case nil:
			err = st.BindNull(i + 1)
		case int64:
			err = st.BindInt64(i+1, v)
		case float64:
			err = st.BindFloat(i+1, v)
		case string:
			err = st.BindText(i+1, v)
		case []byte:
			err = st.BindBlob(i+1, v)
		default:
			return nil, fmt.Errorf("cannot bind %T", a)
		}
		if err != nil {
			return nil, err
		}
	}
	var rows [][]any
	n := st.ColumnCount()
	for st.Step() {
		row := make([]any, n)
		for c := range n {
			switch st.ColumnType(c) {
			case sqlite3.INTEGER:
				row[c] = st.ColumnInt64(c)
			case sqlite3.FLOAT:
				row[c] = st.ColumnFloat(c)
			case sqlite3.TEXT:
				row[c] = st.ColumnText(c)
			case sqlite3.BLOB:
				row[c] = st.ColumnBlob(c, nil)
			}
		}
		rows = append(rows, row)
	}
	return rows, st.Err()
}

func (d *ncrucesDriver) close() error {
	for _, s := range d.stmts {
		s.Close()
	}
	return d.c.Close()
}

func (d *ncrucesDriver) function(name string, nArg int, fn func(args []any) (any, error)) error {
	return d.c.CreateFunction(name, nArg, sqlite3.DETERMINISTIC, func(ctx sqlite3.Context, arg ...sqlite3.Value) {
		args := make([]any, len(arg))
		for i, a := range arg {
			switch a.Type() {
			case sqlite3.INTEGER:
				args[i] = a.Int64()
			case sqlite3.FLOAT:
				args[i] = a.Float()
			case sqlite3.TEXT:
				args[i] = a.Text()
			case sqlite3.BLOB:
				args[i] = a.Blob(nil)
			}
		}
		res, err := fn(args)
		if err != nil {
			ctx.ResultError(err)
			return
		}
		switch v := res.(type) {
		case nil:
			ctx.ResultNull()
		case int64:
			ctx.ResultInt64(v)
		case float64:
			ctx.ResultFloat(v)
		case string:
			ctx.ResultText(v)
		case []byte:
			ctx.ResultBlob(v)
		}
	})
}
