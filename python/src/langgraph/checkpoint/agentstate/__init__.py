"""LangGraph's checkpoint saver and store on the agentstate engine.

The engine is agentstate's Go engine compiled to WebAssembly (a WASI
reactor shipped in this package), run in this process by wasmtime, with
SQLite from apsw. One file holds checkpoints, pending writes and the
store, and the agentstate CLI, the Go API and the npm package read it too.

    from langgraph.checkpoint.agentstate import AgentStateSaver, AgentStateStore

    with AgentStateSaver.from_conn_string("agent.db") as saver:
        graph = builder.compile(checkpointer=saver)
"""

from ._db import Database
from .errors import (
    AgentStateError,
    BusyError,
    ClosedError,
    ConflictError,
    ConnectionLostError,
    CorruptError,
    DiskFullError,
    FileReplacedError,
    HeldError,
    InvalidArgumentError,
    InvalidOptionError,
    MissingDependencyError,
    ModeMismatchError,
    NotAgentStateError,
    NotFoundError,
    OutcomeUnknownError,
    ReadOnlyError,
    SchemaTooNewError,
)
from .saver import AgentStateSaver, MissingThreadIdError
from .store import AgentStateStore

__all__ = [
    "AgentStateError",
    "AgentStateSaver",
    "AgentStateStore",
    "BusyError",
    "ClosedError",
    "ConflictError",
    "ConnectionLostError",
    "CorruptError",
    "Database",
    "DiskFullError",
    "FileReplacedError",
    "HeldError",
    "InvalidArgumentError",
    "InvalidOptionError",
    "MissingDependencyError",
    "MissingThreadIdError",
    "ModeMismatchError",
    "NotAgentStateError",
    "NotFoundError",
    "OutcomeUnknownError",
    "ReadOnlyError",
    "SchemaTooNewError",
]
