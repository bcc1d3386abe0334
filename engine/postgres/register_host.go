//go:build wasip1 && hostsqlite

package postgres

import (
	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/engine/internal/driver/hostpg"
)

// The WebAssembly builds reach PostgreSQL through their host's client
// (engine/internal/driver/hostpg): the Python package's psycopg.
func init() { driver.RegisterServer("postgres", hostpg.Open) }
