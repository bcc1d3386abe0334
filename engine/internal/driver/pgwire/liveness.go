package pgwire

import "time"

// The SQL of both drivers' driver.Liveness (engine/internal/driver/pg/liveness.go
// says why it is built so): a session-level advisory lock per owner, the
// owner's name bound as $1.

// ReleaseWait bounds the unlock of a hold's release: long enough for a
// loaded server, so that an owner that closed is gone for others at once.
// (The engine gives the unlock of its migrations' lock as long.)
const ReleaseWait = 2 * time.Second

// OwnerKey is the lock's number for owner $1 in the session's schema.
const OwnerKey = `hashtextextended('agentstate owner/' || current_schema() || '/' || $1::text, 0)`

// NoIdleTimeout runs on every session of liveness: a hold sits idle
// between checks, and a server's idle_session_timeout (PostgreSQL 14 and
// later; older servers have no such setting, and this does nothing there)
// would end it and drop the lock.
const NoIdleTimeout = `SELECT set_config(name, '0', false) FROM pg_catalog.pg_settings WHERE name = 'idle_session_timeout'`

// HeldSQL asks whether this session holds owner $1's lock.
const HeldSQL = `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
		AND objsubid = 1 AND (classid::bigint << 32 | objid::bigint) = ` + OwnerKey + `)`

// LockSQL takes owner $1's lock, waiting for it.
const LockSQL = `SELECT pg_advisory_lock(` + OwnerKey + `)`

// UnlockSQL gives owner $1's lock back.
const UnlockSQL = `SELECT pg_advisory_unlock(` + OwnerKey + `)`

// ProbeSQL is true when another session holds owner $1's lock, in one
// round trip: a free lock is taken and given back at once.
const ProbeSQL = `SELECT CASE WHEN pg_try_advisory_lock(` + OwnerKey + `) THEN NOT pg_advisory_unlock(` + OwnerKey + `) ELSE true END`
