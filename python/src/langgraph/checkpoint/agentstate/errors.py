"""Errors of the agentstate engine, by the code the engine gives them (the
same codes as the npm package's ``AgentStateError.code``)."""

from __future__ import annotations


class AgentStateError(Exception):
    """An error of the agentstate engine; ``code`` says which kind."""

    code = "INTERNAL"

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class NotFoundError(AgentStateError, KeyError):
    code = "NOT_FOUND"

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class ConflictError(AgentStateError):
    code = "CONFLICT"


class InvalidArgumentError(AgentStateError, ValueError):
    code = "INVALID_ARGUMENT"


class InvalidOptionError(AgentStateError, ValueError):
    code = "INVALID_OPTION"


class ClosedError(AgentStateError):
    code = "CLOSED"


class ReadOnlyError(AgentStateError):
    code = "READ_ONLY"


class ModeMismatchError(AgentStateError):
    code = "MODE_MISMATCH"


class SchemaTooNewError(AgentStateError):
    code = "SCHEMA_TOO_NEW"


class NotAgentStateError(AgentStateError):
    code = "NOT_AGENTSTATE"


class CorruptError(AgentStateError):
    code = "CORRUPT"


class DiskFullError(AgentStateError, OSError):
    """The disk or the user's quota is full; the call wrote nothing."""

    code = "DISK_FULL"

    def __str__(self) -> str:  # OSError would format its args
        return str(self.args[0]) if self.args else ""


class TimeoutError_(AgentStateError, TimeoutError):
    code = "TIMEOUT"


class BusyError(AgentStateError):
    """Another connection or process held what the call needed (the write
    lock past the busy timeout, or the file itself: HeldError). Nothing was
    written; retry later."""

    code = "BUSY"


class HeldError(BusyError):
    """The file is open in a process that takes turns with this one rather
    than share SQLite's locks (the npm package in Node): ``holder`` is its
    record (``runtime``, ``pid``, ``host``, ``since``, ``program``),
    ``record`` the file beside the database that holds it, ``stale`` true
    when that process could not be checked (the message then says which
    file to remove if it is gone). Nothing was written. The npm package
    reports the same as code BUSY with ``holder`` set."""

    def __init__(self, message: str, code: str | None = None, *, holder: dict | None = None, record: str = "", stale: bool = False) -> None:
        super().__init__(message, code)
        self.holder = holder or {}
        self.record = record
        self.stale = stale


class FileReplacedError(AgentStateError):
    """The database file was deleted or replaced (another file moved over
    it, or it moved away), or its write-ahead log deleted, while this
    handle had it open: every write is refused before writing (the engine's
    ErrFileReplaced); the log's commits were first copied into the file
    they belong to. Close the handle and open the path again."""

    code = "FILE_REPLACED"


class ConnectionLostError(AgentStateError, ConnectionError):
    """The session with the PostgreSQL server ended (a restart, a stopped
    server, a terminated session, a network error): nothing of the call was
    written, unless the error is an :class:`OutcomeUnknownError`. The next
    call dials a new session."""

    code = "CONNECTION_LOST"


class OutcomeUnknownError(AgentStateError):
    """A write's COMMIT was sent to the PostgreSQL server and no answer came
    (the deadline passed, the connection broke): it may have committed or
    not. Read before retrying (docs/contract.md §7)."""

    code = "OUTCOME_UNKNOWN"


class MissingDependencyError(AgentStateError, ImportError):
    """What the call needs is an optional dependency that is not installed;
    the message says what to install (PostgreSQL URLs need psycopg 3:
    ``pip install 'langgraph-checkpoint-agentstate[postgres]'``)."""

    code = "MISSING_DEPENDENCY"


_BY_CODE = {
    c.code: c
    for c in (
        NotFoundError,
        ConflictError,
        InvalidArgumentError,
        InvalidOptionError,
        ClosedError,
        ReadOnlyError,
        ModeMismatchError,
        SchemaTooNewError,
        NotAgentStateError,
        CorruptError,
        DiskFullError,
        TimeoutError_,
        BusyError,
        FileReplacedError,
        ConnectionLostError,
        OutcomeUnknownError,
        MissingDependencyError,
    )
}


def error_for(code: str, message: str) -> AgentStateError:
    cls = _BY_CODE.get(code, AgentStateError)
    e = cls(message)
    e.code = code
    return e
