// Package engine stores what an agent run leaves behind (checkpoints,
// message histories, a key-value store, run records, an event stream and
// thread metadata) in one database: an SQLite file (no cgo), SQLite provided
// by a JavaScript host, or a PostgreSQL schema. docs/contract.md states what
// each call promises; docs/format.md how it is stored.
//
// This page is the handle (Open, Options, DB, the errors), LangGraph's
// checkpoint protocol (Put, PutWrites, GetTuple, List, DeltaChannelHistory,
// DeleteThread, Batch), the thread API (Commit, State, StateHistory, Fork,
// Rollback, UpdateState, Compact) and the four record handles (DB.Store,
// DB.Runs, DB.Events, DB.Threads), which share the file and its
// transactions with the checkpoints. The values the record handles take
// and return are package [records]'; what the operators' calls (Verify,
// Retain, Prune, Export, Import, ConvertThread, Info, Stats and the
// read-only views) take and report is package [admin]'s; a thread's channel
// mode is [channels.Mode], whose package also holds the message reducer and
// the delta fold.
//
// Every failure wraps one of the sentinel errors (ErrInvalidArgument,
// ErrNotFound, ErrConflict, ErrBusy, ...) or is a typed error that carries
// details; a refused call leaves the database as it was.
package engine
