// Package engine stores what an agent run leaves behind (checkpoints,
// message histories, a key-value store, run records, an event stream and
// thread metadata) in one database: an SQLite file (no cgo), SQLite provided
// by a JavaScript host, or a PostgreSQL schema. docs/contract.md states what
// each call promises; docs/format.md how it is stored.
//
// The API has three pages, one per audience: this package (the handle, its
// options and errors, LangGraph's protocol, the thread API and the four
// record handles), package [records] (the values the record handles take
// and return: store items, runs, events, thread records, token usage) and
// package [admin] (what operators' calls take and report: verify, retain,
// prune, export and import, convert, info and stats, inspection views).
// Both hold types only, as database/sql/driver does. A thread's channel
// mode is [channels.Mode].
//
// # The handle
//
// Open returns a *DB for a path (or Memory) with Options: the channel mode of
// new threads (channels.ModeFull stores every list whole, channels.ModeDelta
// stores each step's change with a snapshot every Options.SnapshotEvery
// steps), the history cache's size, timeouts. One handle serialises its
// writes on one writer connection and reads on a pool of readers; many
// handles and processes may share a file. Close waits for calls in flight.
//
// # The checkpoint protocol
//
// DB.Put, DB.PutWrites, DB.GetTuple, DB.List, DB.DeltaChannelHistory and
// DB.DeleteThread are LangGraph's BaseCheckpointSaver: a Config names a
// thread, namespace and checkpoint; a Checkpoint carries channel values and
// their versions; a Tuple is what reads return, with its Metadata and
// PendingWrite list. Each channel value is stored once per version, as a
// delta against the previous version when that is smaller. DB.Batch puts
// many checkpoints in one transaction (the LangGraph importer uses it).
//
// # The thread API
//
// DB.Commit applies one Step (a node's writes to message and value
// channels) on top of a thread's head; DB.State and DB.StateHistory read a
// State; DB.Fork, DB.Rollback, DB.UpdateState and DB.Compact move or rewrite
// a thread's history without losing the old branch. The message reducer and
// the delta fold live in package channels.
//
// # Records
//
// DB.Store (Store: namespaced items with TTL and filters, LangGraph's
// BaseStore), DB.Runs (Runs: one active run per thread, leases, token
// totals), DB.Events (Events: a per-thread gap-free sequence) and DB.Threads
// (Threads: metadata, status, owner scoping) share the file and its
// transactions with the checkpoints. Their values are package records'.
//
// # Maintenance and inspection
//
// DB.Verify checks every stored structure and reports problems; DB.Retain
// and DB.Prune thin or drop history under a policy; DB.Vacuum and
// DB.CheckpointWAL give space back; DB.Export and DB.Import move everything
// as a line-oriented dump; ConvertFile and DB.ConvertThread switch a file or
// a thread between full and delta mode; DB.Info and DB.Stats measure it.
// DB.ReadState (any checkpoint's state, LangGraph's threads included, as a
// StateView), DB.CheckpointLog, DB.ListThreads and DB.ThreadEvents are the
// read-only views the agentstate command prints. Their options and reports
// are package admin's.
//
// # Errors and limits
//
// Every failure wraps one of the sentinel errors (ErrInvalidArgument,
// ErrNotFound, ErrConflict, ErrBusy, ErrCorrupt, ErrTooLarge, ...) or is one
// of the typed errors that carry details (ActiveRunError, TransitionError,
// ModeMismatchError, HeldError). A refused call leaves the database as it
// was. MaxValueBytes, MaxListBytes and MaxCallBytes bound what one value,
// one list and one call may store.
package engine
