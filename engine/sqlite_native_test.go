//go:build !js

package engine

import (
	"errors"

	"github.com/ncruces/go-sqlite3"
)

// rawSQL runs statements on a file with plain SQLite, not the engine.
func rawSQL(path string, stmts ...string) error {
	c, err := sqlite3.Open(path)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, s := range stmts {
		if err := c.Exec(s); err != nil {
			return err
		}
	}
	return nil
}

// sqliteLeak reports an error that is SQLite's own, not one of the engine's.
func sqliteLeak(err error) bool {
	var se *sqlite3.Error
	return errors.As(err, &se) || errors.Is(err, sqlite3.ERROR) || errors.Is(err, sqlite3.MISUSE) || errors.Is(err, sqlite3.RANGE)
}

// importHoldsAll says how one 256 MiB import transaction ends: natively
// it runs out of ncruces' 256 MiB heap per connection (ErrTooLarge).
const importHoldsAll = false

// hugeBlobBytes is a blob SQLite cannot hold: past ncruces' 256 MiB heap of a connection.
const hugeBlobBytes = 400_000_000
