"""An open agentstate database: one handle of the engine, shared by the
saver and the store that use it."""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any

from . import _engine
from .errors import ClosedError, InvalidArgumentError, NotAgentStateError, NotFoundError

_MODES = ("full", "delta", "auto")


class Database:
    """One open file (or an in-memory database) of the engine.

    Args:
        path: the file, created if missing; ``":memory:"`` (the default) for a
            private in-memory database.
        mode: the channel mode of a new file, ``"full"`` or ``"delta"`` (with
            ``every``, the snapshot cadence K); ``"auto"`` or ``None`` opens
            an existing file in the mode it records and creates a new one in
            full mode. The mode is the file's for good. It changes how the
            engine stores LangGraph ``DeltaChannel`` values and the thread
            API's message lists; LangGraph's default channels are stored as
            values with version deltas in either mode.
        read_only: open without writing (the file must exist and be current).
        busy_timeout_ms: how long a call waits for another process's write
            lock before it fails (default 5000).
        cache_bytes: the engine's history cache (default 64 MiB; 0 turns it
            off).
        store_default_ttl_minutes, store_refresh_on_read,
        store_sweep_interval_minutes: the store's TTL settings.
        auto_retain: snapshot retention as delta snapshots are written (and
            as puts store large whole values, docs/contract.md §2.5);
            default on, so a delta thread's storage stays linear; False
            keeps every snapshot (N^2/K).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        *,
        mode: str | None = None,
        every: int | None = None,
        read_only: bool = False,
        busy_timeout_ms: int | None = None,
        cache_bytes: int | None = None,
        store_default_ttl_minutes: float | None = None,
        store_refresh_on_read: bool | None = None,
        store_sweep_interval_minutes: float | None = None,
        auto_retain: bool | None = None,
    ) -> None:
        if mode is not None and mode not in _MODES:
            raise InvalidArgumentError(f"agentstate: mode must be one of {', '.join(_MODES)} or None, got {mode!r}")
        p = os.fspath(path)
        if not isinstance(p, str):
            raise InvalidArgumentError("agentstate: path must be a str or os.PathLike[str]")
        req: dict[str, Any] = {}
        if p != ":memory:":
            if p == "":
                raise InvalidArgumentError("agentstate: path is empty (use ':memory:' for an in-memory database)")
            _check_file_path(p)
            req["path"] = os.path.abspath(p)
            req["name"] = p
            req["disk"] = True
        if mode is not None:
            req["mode"] = mode
        if every is not None:
            req["every"] = int(every)
        if read_only:
            req["readOnly"] = True
        if busy_timeout_ms is not None:
            req["busyTimeoutMs"] = int(busy_timeout_ms)
        if cache_bytes is not None:
            req["cacheBytes"] = int(cache_bytes)
        if store_default_ttl_minutes is not None:
            req["storeDefaultTtlMs"] = float(store_default_ttl_minutes) * 60_000
        if store_refresh_on_read is not None:
            req["storeRefreshOnRead"] = bool(store_refresh_on_read)
        if store_sweep_interval_minutes is not None:
            req["storeSweepIntervalMs"] = float(store_sweep_interval_minutes) * 60_000
        if auto_retain is not None:
            req["autoRetain"] = bool(auto_retain)
        self.path = p
        self._engine = _engine.engine()
        res, _ = self._engine.call(0, "open", req)
        self._h: int | None = res["h"]
        self.mode: str = res["mode"]
        self.every: int = res["every"]
        self.auto_retain: bool = res["autoRetain"]
        self._lock = threading.Lock()
        self._forks = _engine._forks
        self._finalizer = weakref.finalize(self, _close_handle, self._engine, self._h, self._forks)

    def call(self, op: str, req: Any = None, bufs: list[bytes] | tuple = ()) -> tuple[Any, list[bytes]]:
        h = self._h
        if h is None:
            raise ClosedError(f"agentstate: {self.path} is closed")
        if self._forks != _engine._forks:
            raise ClosedError(f"agentstate: {self.path}: the process forked after this handle was opened: open the file again in the child")
        return self._engine.call(h, op, req, bufs)

    @property
    def closed(self) -> bool:
        return self._h is None

    def close(self) -> None:
        """Closes the handle; later calls raise ClosedError. Closing twice is
        no error. In a child forked after the handle was opened it only
        marks it closed: the handle is the parent's."""
        if self._forks != _engine._forks:
            self._h = None
            self._finalizer.detach()
            return
        with self._lock:
            h, self._h = self._h, None
        if h is not None:
            self._finalizer.detach()
            self._engine.call(h, "close")

    def info(self) -> dict[str, Any]:
        """What ``agentstate info`` shows: schema, mode, sizes, rows."""
        return self.call("info")[0]


_SQLITE_MAGIC = b"SQLite format 3\x00"


def _check_file_path(path: str) -> None:
    """Refuses, before anything is created beside it, a path that cannot be
    a database file, as the native engine does (the host's files are the
    host's to look at): a directory, a file in a directory that does not
    exist (the file is created, not its directory), a file that is not an
    SQLite database. What cannot be told (no permission to look) is left to
    SQLite."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        d = os.path.dirname(os.path.abspath(path))
        if not os.path.exists(d):
            raise NotFoundError(
                f"agentstate: open {path}: directory {d} does not exist (a file is created, not its directory)"
            ) from None
        return
    except OSError:
        return
    import stat as _stat

    if _stat.S_ISDIR(st.st_mode):
        raise InvalidArgumentError(f"agentstate: open {path}: it is a directory, not a database file")
    try:
        with open(path, "rb") as f:
            head = f.read(len(_SQLITE_MAGIC))
    except OSError:
        return
    if head and head != _SQLITE_MAGIC[: len(head)] or 0 < len(head) < len(_SQLITE_MAGIC):
        raise NotAgentStateError(f"agentstate: {path} is not an SQLite database (it begins {head!r})")


def _close_handle(engine: _engine.Engine, h: int, forks: int) -> None:
    if forks != _engine._forks:
        return  # the parent's handle, in a forked child: the parent closes it
    try:
        engine.call(h, "close")
    except Exception:  # noqa: BLE001 - at exit or collection: nothing to report to
        pass
