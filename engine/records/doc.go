// Package records holds the values of the engine's four record handles
// (engine.DB's Store, Runs, Events and Threads): store items and the
// operations of a store batch, runs and their token totals, events and
// their queries, thread records and their statuses.
//
// It holds types and constants only, as database/sql/driver does for
// database/sql: the calls that take and return them are methods of the
// handles in package engine, whose documentation (and docs/records.md)
// says what each promises.
package records
