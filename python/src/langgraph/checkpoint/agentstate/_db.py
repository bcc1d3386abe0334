"""An open agentstate database: one handle of the engine, shared by the
saver and the store that use it."""

from __future__ import annotations

import os
import shlex
import sys
import threading
import warnings
import weakref
from typing import TYPE_CHECKING, Any

from . import _engine, _pg_host, _stdlib_host
from .errors import ClosedError, InvalidArgumentError, InvalidOptionError, NotAgentStateError, NotFoundError

if TYPE_CHECKING:
    from .records import Events, Runs, Threads

_MODES = ("full", "delta", "auto")
_PG_TIMEOUT_MS = 30_000  # a PostgreSQL call's default deadline: a server that stops answering never hangs it


class Database:
    """One open file (or an in-memory database) of the engine.

    Args:
        path: the file, created if missing; ``":memory:"`` (the default) for a
            private in-memory database; or a ``postgresql://`` URL (needs
            psycopg 3: the ``[postgres]`` extra; docs/postgresql.md).
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
        synchronous: what a returned commit survives: ``"normal"`` (the
            default: the process's end; on power loss, or a PostgreSQL
            server's crash with ``synchronous_commit=off``, its last commits
            may go, never part of one) or ``"full"`` (power loss too; on
            PostgreSQL ``synchronous_commit=on``). docs/contract.md.
        shared: live in an SQLite file that other tools' tables share (the
            one ``deerflow.db`` of DeerFlow's ``database.backend: sqlite``,
            beside its SQLAlchemy and alembic tables): agentstate's tables
            and indexes are named ``agentstate_*``, its header is the
            ``agentstate_header`` table, and the file's header, settings and
            other tables are left alone (docs/format.md, "Shared files").
            A file that holds ``agentstate_header`` opens as shared without
            it; a file of agentstate's own opens as one with it. Not for
            ``":memory:"``. ``Database.shared`` says what the file is. A
            shared file is opened through Python's ``sqlite3`` module (see
            ``sqlite``), so the other tool may write it from this process
            too (SQLAlchemy, aiosqlite; docs/contract.md 5.1).
        sqlite: the copy of SQLite a file is opened with: ``"stdlib"``, the
            one of Python's ``sqlite3`` module (and so of SQLAlchemy and
            aiosqlite in this process, which must share its locks);
            ``"apsw"``, the package's own (SQLite 3.54); ``None`` (the
            default), stdlib for a shared file, and for an existing file not
            of agentstate's own once this process has imported ``sqlite3``
            (the engine's first look at it, and its refusal, go through the
            app's copy too), apsw otherwise. A
            file keeps the library it is open with in this process: a
            different explicit choice is refused (``InvalidArgumentError``).
            ``Database.sqlite`` says which it is.
        schema: with a URL, the PostgreSQL schema the tables live in (first
            in the search_path; it must exist).
        pool_size: with a URL, how many writer sessions the handle may open
            (default 4); readers take one more.
        timeout_ms: with a URL, each call's deadline (default 30000; 0 for
            none): a server that stops answering fails the call with
            ``TimeoutError_`` then, and the session is given up.
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
        synchronous: str | None = None,
        shared: bool = False,
        sqlite: str | None = None,
        schema: str | None = None,
        pool_size: int | None = None,
        timeout_ms: int | None = None,
    ) -> None:
        if mode is not None and mode not in _MODES:
            raise InvalidArgumentError(f"agentstate: mode must be one of {', '.join(_MODES)} or None, got {mode!r}")
        p = os.fspath(path)
        if not isinstance(p, str):
            raise InvalidArgumentError("agentstate: path must be a str or os.PathLike[str]")
        req: dict[str, Any] = {}
        url = _pg_host.is_url(p)
        if (schema is not None or pool_size is not None or timeout_ms is not None) and not url:
            raise InvalidArgumentError("agentstate: schema, pool_size and timeout_ms are for postgresql:// URLs")
        if url:
            # A PostgreSQL database (docs/postgresql.md); messages show the
            # URL without its password.
            req["path"] = _pg_host.open_url(p, schema)
            p = req["name"] = _pg_host.redact(p)
            if pool_size is not None:
                if isinstance(pool_size, bool) or not isinstance(pool_size, int) or not 1 <= pool_size <= 64:
                    raise InvalidOptionError(f"agentstate: pool_size must be an int in 1..64, got {pool_size!r}")
                req["writeConns"] = pool_size
            if timeout_ms is not None and (isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < 0):
                raise InvalidOptionError(f"agentstate: timeout_ms must be an int >= 0 (0: no deadline), got {timeout_ms!r}")
            req["timeoutMs"] = _PG_TIMEOUT_MS if timeout_ms is None else timeout_ms
        elif p != ":memory:":
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
        if synchronous is not None:
            if synchronous not in ("normal", "full"):
                raise InvalidOptionError(f"agentstate: synchronous must be 'normal' or 'full', got {synchronous!r}")
            req["synchronous"] = synchronous
        if shared:
            req["shared"] = True
        req["host"] = "python"  # the engine's advice in this package's terms
        self.path = p
        self._engine = _engine.engine()
        self.sqlite: str | None = None
        release = None
        _stdlib_host.check(sqlite)
        if p != ":memory:" and not url:
            self.sqlite, release = _stdlib_host.claim(req["path"], sqlite, shared)
        try:
            res, _ = self._engine.call(0, "open", req)
            if sqlite is None and self.sqlite == "apsw" and res.get("shared"):
                # A shared file opened without shared=True: again through
                # Python's sqlite3, unless this process has it open already.
                release()
                self._engine.call(res["h"], "close")
                self.sqlite, release = _stdlib_host.claim(req["path"], None, True)
                res, _ = self._engine.call(0, "open", req)
        except NotAgentStateError as e:
            if release is not None:
                release()
            if p != ":memory:" and not url and _is_langgraph_sqlite(p, self.sqlite):
                raise NotAgentStateError(
                    f"{e}\n{p} is a LangGraph SqliteSaver file: copy its threads into an agentstate file with the "
                    f"agentstate CLI (go install ./cmd/agentstate in a clone of the repository): "
                    f"agentstate import-langgraph {shlex.quote(p)} {shlex.quote(os.path.splitext(p)[0] + '.agentstate.db')}"
                ) from None
            raise
        except BaseException:
            if release is not None:
                release()
            raise
        self._h: int | None = res["h"]
        self.mode: str = res["mode"]
        self.every: int = res["every"]
        self.auto_retain: bool = res["autoRetain"]
        self.shared: bool = bool(res.get("shared", False))
        if self.shared and self.sqlite == "apsw" and "sqlite3" in sys.modules:
            # Two copies of SQLite in one process do not lock each other
            # out (docs/contract.md 5.1): measured, they lose writes.
            warnings.warn(
                f"agentstate: {p} is a shared file opened through apsw's SQLite and this process has imported "
                "Python's sqlite3 module: if this process also opens the file through it (SQLAlchemy, "
                "aiosqlite), the two copies of SQLite do not lock each other out and writes can be lost; "
                "open it with sqlite='stdlib' (docs/contract.md, 5.1)"
                + (f"; not here: {why}" if (why := _stdlib_host.available()) else ""),
                RuntimeWarning,
                stacklevel=2,
            )
        self._lock = threading.Lock()
        self._forks = _engine._forks
        self._release = release
        self._finalizer = weakref.finalize(self, _close_handle, self._engine, self._h, self._forks, release)

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
            try:
                self._engine.call(h, "close")
            finally:
                if self._release is not None:
                    self._release()

    def info(self) -> dict[str, Any]:
        """What ``agentstate info`` shows: schema, mode, sizes, rows."""
        return self.call("info")[0]

    @property
    def runs(self) -> Runs:
        """The run records of this database (:class:`.records.Runs`)."""
        from .records import Runs

        return Runs(self)

    @property
    def events(self) -> Events:
        """The event stream of this database (:class:`.records.Events`)."""
        from .records import Events

        return Events(self)

    @property
    def threads(self) -> Threads:
        """The thread records of this database (:class:`.records.Threads`)."""
        from .records import Threads

        return Threads(self)


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


def _is_langgraph_sqlite(path: str, lib: str | None = "apsw") -> bool:
    """Whether path holds the tables of LangGraph's SqliteSaver (read only,
    the schema alone), read through the library lib the file was opened
    with."""
    try:
        if lib == "stdlib":
            con = _stdlib_host.connect_ro(path)
            try:
                names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            finally:
                con.close()
            return {"checkpoints", "writes"} <= names
        import apsw

        con = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
        try:
            names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            con.close()
    except Exception:  # noqa: BLE001 - no hint then
        return False
    return {"checkpoints", "writes"} <= names


def _close_handle(engine: _engine.Engine, h: int, forks: int, release=None) -> None:
    if forks != _engine._forks:
        return  # the parent's handle, in a forked child: the parent closes it
    # The garbage collector runs finalizers at any allocation, also inside an
    # engine call on this thread (which holds the engine's reentrant lock):
    # a close made there would overwrite that call's buffers and answer. It
    # is made from another thread instead, once the call has released the lock.
    owned = getattr(engine.lock, "_is_owned", None)
    if owned is not None and owned():
        try:
            threading.Thread(target=_close_now, args=(engine, h, release), daemon=True).start()
        except RuntimeError:  # the interpreter is exiting: the process frees it
            pass
        return
    _close_now(engine, h, release)


def _close_now(engine: _engine.Engine, h: int, release=None) -> None:
    try:
        engine.call(h, "close")
    except Exception:  # noqa: BLE001 - at exit or collection: nothing to report to
        pass
    finally:
        if release is not None:
            release()  # the file's library choice, once its connections are closed
