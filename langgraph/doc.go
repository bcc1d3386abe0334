// Package langgraph imports the threads that LangGraph's own checkpoint
// savers wrote into an agentstate file, through the engine's public API.
//
// # Sources
//
// Import reads a LangGraph.js SqliteSaver file (@langchain/langgraph-
// checkpoint-sqlite: tables checkpoints and writes, values in the "json"
// serde), a LangGraph Python SqliteSaver file (langgraph-checkpoint-sqlite:
// the same tables plus writes.task_path, values in the "msgpack" serde) and
// a LangGraph Python PostgresSaver database (langgraph-checkpoint-postgres,
// given as a postgres:// URL: checkpoints, checkpoint_blobs,
// checkpoint_writes, checkpoint_migrations). sqlite.go and postgres.go read
// them, serde.go and msgpack.go decode their values. A SqliteSaver file is
// only read: opened immutable unless it has a log to read, so nothing is
// created beside it.
//
// # Two forms
//
// By default (IntoProtocol, protocol.go) a thread is kept in the checkpoint
// protocol's form: every checkpoint stored with Batch.Put and its writes
// with Batch.PutWrites, the calls LangGraph's savers on the engine make
// (AgentStateSaver in JavaScript, the Python saver), every channel value and
// write as its serde type and exact bytes (rawread.go splits a SqliteSaver
// checkpoint document into its channels' bytes), so those savers resume the
// thread where the source left it and nothing is converted or dropped. Old
// formats' pending_sends move into the TASKS channel as LangGraph moves them
// on read; EncryptedSerializer values are decrypted with Options.Key
// (aes.go). Compare then checks every checkpoint byte for byte, SerdeJSON
// shows kept values as JSON, and Export (export.go) writes such threads back
// into a SqliteSaver file.
//
// # What becomes what in the messages form
//
// With IntoMessages, each thread, with every namespace (subgraphs),
// checkpoint id, parent, metadata and pending write (task id, task path,
// channel), is written with the protocol calls of an engine.Batch and handed
// to the thread API in the destination's mode (Batch.NewThread):
//
//   - the message channels of the destination's Schema ("messages" by
//     default) become lists of codec.Message, their writes
//     channels.MessageUpdate (messages.go), so the engine folds them: in
//     delta mode only every K-th update stores the list;
//   - every other channel value and write is stored as the engine's msgpack
//     when codec's values hold it, and otherwise as the source's own bytes
//     in a blob of the serde's type ("msgpack", "bytes", "bytearray"),
//     counted in Report.Blobs: Python's datetimes, UUIDs, sets, pydantic
//     models, dataclasses, enums, Sends, Interrupts, numpy arrays, bytes,
//     maps with non-string keys, non-finite floats;
//   - DeltaChannels (both LangGraphs store a snapshot every K updates and
//     only writes between) are rebuilt at every checkpoint as LangGraph
//     reads them (delta.go): with LangGraph's message reducer for message
//     channels, with the reducer Options.DeltaReducers names for others;
//   - channel versions are kept where they are unique in the thread, and
//     suffixed with the checkpoint id where a fork reused one (LangGraph.js
//     counts versions per branch; the engine keys values by version);
//   - where the writes a checkpoint consumed do not rebuild its message
//     list as the engine folds them (an update_state fork stores no writes,
//     a DeltaChannel walk reads writes a fork does not consume, LangGraph's
//     delta reducer ignores what add_messages refuses), a write Overwrite
//     with the checkpoint's list is added under its parent (task
//     "~agentstate-import"), so every checkpoint replays exactly. Messages
//     of writes that had no id (the reducer gave them one) get the id the
//     state shows.
//
// The whole import is one transaction: it writes everything or nothing.
// Threads it cannot read (a serde or extension it does not know, bytes that
// do not decode, a DeltaChannel without a reducer, a message channel holding
// something else) are listed, each with its thread, checkpoint and channel,
// in an *UnsupportedError; Options.SkipUnsupported imports the others.
//
// # Showing a thread as LangGraph shows it
//
// View (view.go) reads a checkpoint of a thread in the protocol's form as
// LangGraph's get_state shows its values: decoded from the serde, every
// LangChain message in one neutral form whichever language wrote it,
// DeltaChannels rebuilt, and at the head the pending writes of the
// finished tasks of a failed superstep applied. The CLI's state, history
// --values and export --states call it (docs/cli.md, "LangGraph threads").
//
// Compare checks the promise: every checkpoint of the destination reads as
// the source's (in the messages form, derived the same way). The package's tests check both
// against what LangGraph itself read back from the fixtures in
// testdata/langgraph.
package langgraph
