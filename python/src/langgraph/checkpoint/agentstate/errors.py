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
    )
}


def error_for(code: str, message: str) -> AgentStateError:
    cls = _BY_CODE.get(code, AgentStateError)
    e = cls(message)
    e.code = code
    return e
