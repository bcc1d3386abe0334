// Package channels is the pure state logic of agentstate: the message
// reducer with LangGraph's add_messages semantics, Overwrite and remove
// markers, the delta fold, the snapshot cadence and the order in which a
// step's writes apply. It does no I/O and knows nothing of SQL.
package channels
