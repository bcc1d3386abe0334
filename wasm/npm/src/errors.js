// The package's error class, in a module of its own so that every other
// module (the engine, the file hosts, the saver and store) imports it
// without importing each other: the import graph has no circle
// (test/imports.test.js checks it).

/** Error thrown by the engine. `code` is one of NOT_FOUND, CONFLICT,
 * INVALID_ARGUMENT, INVALID_OPTION, CLOSED, READ_ONLY, MODE_MISMATCH,
 * SCHEMA_TOO_NEW, NOT_AGENTSTATE, CORRUPT, DISK_FULL, BUSY, INTERNAL,
 * CONNECTION_LOST, OUTCOME_UNKNOWN (PostgreSQL: a lost session; a COMMIT
 * without an answer, read before retrying), MISSING_DEPENDENCY (a
 * postgres:// URL without node-postgres installed). */
export class AgentStateError extends Error {
  constructor(message, code, options) {
    super(message, options);
    this.name = "AgentStateError";
    this.code = code;
  }
}
