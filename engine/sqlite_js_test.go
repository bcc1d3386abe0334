//go:build js

package engine

import (
	"errors"

	"github.com/agentstate/agentstate/engine/internal/driver/hostsqlite"
)

// rawSQL runs statements on a file with plain SQLite, not the engine.
func rawSQL(path string, stmts ...string) error {
	c, err := hostsqlite.Open(path, hostsqlite.Options{Create: true})
	if err != nil {
		return err
	}
	defer c.Close()
	if err := walLocking(c); err != nil {
		return err
	}
	for _, s := range stmts {
		if err := c.ExecScript(s, nil); err != nil {
			return err
		}
	}
	return nil
}

// sqliteLeak reports an error that is SQLite's own, not one of the engine's.
func sqliteLeak(err error) bool {
	var se *hostsqlite.Error
	return errors.As(err, &se)
}

// importHoldsAll says how one 256 MiB import transaction ends: the host
// SQLite (its heap capped at 512 MiB for all connections) commits it, its pages spilled to
// the WAL file, so the same import succeeds.
const importHoldsAll = true

// hugeBlobBytes is a blob SQLite cannot hold: past the 512 MiB the package gives the host SQLite (src/sqlite/loader.js).
const hugeBlobBytes = 600_000_000
