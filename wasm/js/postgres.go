//go:build js && wasm && hostpg

package main

// The npm package's Node build with PostgreSQL (dist/agentstate-pg.wasm,
// loaded only for a postgres:// URL): the engine's pgBackend over the
// host's node-postgres client (src/pg/host.js), through
// engine/internal/driver/hostpg. dist/agentstate.wasm, which browsers and
// edge hosts load, is built without the tag and links none of it.
import _ "github.com/agentstate/agentstate/engine/postgres"
