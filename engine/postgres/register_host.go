//go:build (wasip1 && hostsqlite) || (js && hostpg)

package postgres

import (
	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/engine/internal/driver/hostpg"
)

// The WebAssembly builds reach PostgreSQL through their host's client
// (engine/internal/driver/hostpg): the Python package's psycopg, the npm
// package's node-postgres (its Node build, dist/agentstate-pg.wasm).
func init() { driver.RegisterServer("postgres", hostpg.Open) }
