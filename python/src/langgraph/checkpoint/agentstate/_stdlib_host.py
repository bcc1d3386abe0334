"""SQLite for the engine from Python's own ``sqlite3`` module.

The host (``_sqlite_host``) runs the engine's statements over apsw, which
bundles its own copy of SQLite. A file that another tool of the same
process writes through Python's ``sqlite3`` module (SQLAlchemy's
``pysqlite``, ``aiosqlite``: DeerFlow's ``deerflow.db``) must not be opened
by a second copy of SQLite in that process: SQLite keeps the POSIX locks of
a file in a table per library copy, POSIX locks do not exclude each other
within one process, and closing a descriptor drops every lock the process
holds on the file, so the two copies can each believe they hold the write
lock (docs/contract.md 5.1). Connections to such a file are opened here
instead, through ``sqlite3``: the same library, the same lock table, as
SQLAlchemy's connections.

``Connection`` is the part of ``apsw.Connection`` the host uses, over a
``sqlite3.Connection`` in autocommit (``isolation_level=None``: the
engine's BEGIN and COMMIT pass through as they are) with no busy handler
(``timeout=0``: the engine retries a busy statement itself). Errors are
raised as ``apsw.Error`` with SQLite's (extended) result code from
``sqlite_errorcode``, so the host reports them as it reports apsw's.

Which files use it is decided per file and process (``claim``): the first
open of a file in this process chooses, later opens of it while it is open
follow, and an explicit choice that differs from the one in use is refused,
so one file is never open through both copies at once.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable
from urllib.parse import quote

import apsw

from .errors import InvalidArgumentError, InvalidOptionError

# The oldest SQLite whose SQL the engine runs on (its migrations and
# statements, tested on 3.40.1, Debian 12's): RETURNING (3.35), "->>"
# (3.38). Functions of later releases are supplied below.
MIN_VERSION = (3, 38, 0)

SQLITE_ERROR = 1
SQLITE_MISUSE = 21
OPEN_READONLY = 0x01
OPEN_CREATE = 0x04

LIBRARIES = ("stdlib", "apsw")
APPLICATION_ID = 0x41675374  # "AgSt": a file of agentstate's own (engine.ApplicationID)


class _Error(apsw.Error):
    """An error of the sqlite3 module, as the host reads apsw's."""

    def __init__(self, msg: str, code: int, offset: int = -1) -> None:
        super().__init__(msg)
        self.result = code & 0xFF
        self.extendedresult = code
        self.error_offset = offset


def _sqlite3():
    import sqlite3

    return sqlite3


def available() -> str:
    """"" when Python's sqlite3 module can run the engine, else why not."""
    if sys.version_info < (3, 11):
        # The engine classifies errors by SQLite's codes (a busy statement
        # is retried): Python 3.10's sqlite3 errors carry none.
        return f"Python {sys.version_info[0]}.{sys.version_info[1]}'s sqlite3 module gives no SQLite error codes (sqlite_errorcode, Python 3.11)"
    try:
        sqlite3 = _sqlite3()
    except ImportError as e:
        return f"Python's sqlite3 module cannot be imported ({e})"
    v = tuple(sqlite3.sqlite_version_info)
    if v < MIN_VERSION:
        return (
            f"Python's sqlite3 module links SQLite {sqlite3.sqlite_version}; the engine needs "
            f"{'.'.join(map(str, MIN_VERSION))} or later"
        )
    return ""


def _octet_length(v: Any) -> Any:
    # SQLite 3.43's octet_length: bytes of a text's UTF-8 or of a blob.
    if v is None:
        return None
    if isinstance(v, bytes):
        return len(v)
    return len(str(v).encode("utf-8", "surrogateescape"))


class Connection:
    __slots__ = ("con", "fn_error", "tc", "path")

    def __init__(self, name: str, flags: int) -> None:
        sqlite3 = _sqlite3()
        mode = "ro" if flags & OPEN_READONLY else "rwc" if flags & OPEN_CREATE else "rw"
        self.path = os.path.realpath(os.path.abspath(name))
        uri = "file:" + quote(self.path, safe="/") + "?mode=" + mode
        self.fn_error: BaseException | None = None
        self.tc = 0
        try:
            self.con = sqlite3.connect(
                uri, uri=True, timeout=0, isolation_level=None, check_same_thread=False, cached_statements=512
            )
        except sqlite3.Error as e:
            raise self._convert(e) from None
        if sqlite3.sqlite_version_info < (3, 43, 0):
            self.con.create_function("octet_length", 1, _octet_length, deterministic=True)

    def _convert(self, e: BaseException) -> BaseException:
        """e as the host reports it: an apsw.Error with SQLite's code, or
        what a function of the engine raised inside the statement."""
        fe, self.fn_error = self.fn_error, None
        if fe is not None:
            return fe
        sqlite3 = _sqlite3()
        if not isinstance(e, sqlite3.Error):
            return e
        code = getattr(e, "sqlite_errorcode", None)
        if not isinstance(code, int) or code <= 0:
            # Raised by the module itself (bindings, a closed connection).
            code = SQLITE_MISUSE if isinstance(e, (sqlite3.ProgrammingError, sqlite3.InterfaceError)) else SQLITE_ERROR
        return _Error(str(e), code)

    # ---- apsw.Connection's calls, as the host makes them

    def cursor(self) -> _Cursor:
        return _Cursor(self)

    def execute(self, sql: str, args: Any = ()) -> _Cursor:
        return _Cursor(self).execute(sql, args)

    def changes(self) -> int:
        # The rows the last statement changed (the engine has no triggers).
        return self.con.total_changes - self.tc

    def get_autocommit(self) -> bool:
        return not self.con.in_transaction

    def set_progress_handler(self, fn: Callable[[], Any] | None, n: int = 0) -> None:
        self.con.set_progress_handler(fn, n)

    def set_busy_timeout(self, ms: int) -> None:
        self.execute(f"PRAGMA busy_timeout = {int(ms)}").fetchall()

    def create_scalar_function(self, name: str, fn: Callable, n_arg: int, deterministic: bool = True) -> None:
        # The sqlite3 module replaces what a function raises by "user-defined
        # function raised exception": it is kept and raised instead.
        def call(*args):
            try:
                return fn(*args)
            except BaseException as e:
                self.fn_error = e
                raise

        try:
            self.con.create_function(name, n_arg, call, deterministic=deterministic)
        except _sqlite3().Error as e:
            raise self._convert(e) from None

    def vfs_fd(self, op: int) -> int:
        """A descriptor of this process open on the file (op 7) or on its
        write-ahead log (op 28), or -1: the module has no
        sqlite3_file_control, so it is found in /proc/self/fd (Linux; -1
        elsewhere, and the host then checks the path alone). Any of them
        serves, one of a deleted log first: the host compares the one it
        gets with the file at the path, and looks again when it no longer
        names the same file."""
        target = self.path + ("-wal" if op == 28 else "")
        try:
            fds = os.listdir("/proc/self/fd")
        except OSError:
            return -1
        found = -1
        for f in fds:
            try:
                link = os.readlink("/proc/self/fd/" + f)
            except OSError:
                continue
            if link == target + " (deleted)":
                return int(f)
            if link == target and found < 0:
                found = int(f)
        return found

    def serialize(self, schema: str) -> bytes:
        try:
            return self.con.serialize(name=schema)
        except _sqlite3().Error as e:
            raise self._convert(e) from None

    def deserialize(self, schema: str, data: bytes) -> None:
        try:
            self.con.deserialize(data, name=schema)
        except _sqlite3().Error as e:
            raise self._convert(e) from None

    def close(self, force: bool = False) -> None:
        self.con.close()


class _Cursor:
    __slots__ = ("conn", "cur")

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.cur = None

    def execute(self, sql: str, args: Any = (), explain: int = 0) -> _Cursor:
        c = self.conn
        sqlite3 = _sqlite3()
        if explain:
            # Prepare only, so that prepare reports a missing table: EXPLAIN
            # compiles the statement and runs nothing of it; bindings it
            # lacks are found after it compiled.
            head = sql.lstrip()[:7].upper()
            try:
                c.con.execute(sql if head == "EXPLAIN" else "EXPLAIN " + sql).close()
            except sqlite3.ProgrammingError as e:
                if "binding" not in str(e).lower():
                    raise c._convert(e) from None
            except sqlite3.Error as e:
                raise c._convert(e) from None
            return self
        c.fn_error = None
        c.tc = c.con.total_changes
        if self.cur is None:
            self.cur = c.con.cursor()
        try:
            self.cur.execute(sql, args)
        except BaseException as e:
            raise c._convert(e) from None
        return self

    def __iter__(self):
        cur = self.cur
        if cur is None:
            return
        conn = self.conn
        try:
            yield from cur
        except BaseException as e:
            raise conn._convert(e) from None

    def fetchall(self) -> list:
        return list(self)

    def close(self, force: bool = False) -> None:
        cur, self.cur = self.cur, None
        if cur is not None:
            cur.close()


# ---- which files go through Python's sqlite3

_lock = threading.Lock()
_files: dict[str, list] = {}  # real path -> [library, handles open]


def _key(path: str) -> str:
    return os.path.realpath(os.path.abspath(path))


def check(want: str | None) -> None:
    if want is not None and want not in LIBRARIES:
        raise InvalidOptionError(f"agentstate: sqlite must be one of {', '.join(LIBRARIES)} or None, got {want!r}")


def connect_ro(path: str, timeout: float = 1.0):
    """A read-only sqlite3 connection to the file at path."""
    return _sqlite3().connect("file:" + quote(_key(path), safe="/") + "?mode=ro", uri=True, timeout=timeout)


def _not_ours(path: str) -> bool:
    """Whether this process may hold the existing file at path through
    Python's sqlite3 and it is not a file of agentstate's own (a shared
    file, or another tool's that the engine will refuse): then even the
    engine's first look at it goes through that library, since opening and
    closing it through apsw's would drop the locks sqlite3's connections
    hold. Read through sqlite3 itself, so the look is safe too."""
    if "sqlite3" not in sys.modules or not os.path.exists(path):
        return False
    sqlite3 = _sqlite3()
    try:
        con = connect_ro(path)
        try:
            return con.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID
        finally:
            con.close()
    except sqlite3.Error:
        return True  # unreadable now: the engine decides, through sqlite3


def claim(path: str, want: str | None, shared: bool) -> tuple[str, Callable[[], None]]:
    """Chooses the SQLite library of an open of the file at path and holds
    that choice while the handle is open: returns the library and the
    function that lets it go. want: "stdlib", "apsw" or None (stdlib for a
    shared file, or a file not of agentstate's own when this process has
    imported sqlite3; apsw otherwise). A file open in this process keeps its
    library: None follows it, a different explicit choice is refused."""
    check(want)
    key = _key(path)
    with _lock:
        held = _files.get(key)
        if held is not None:
            if want is not None and want != held[0]:
                raise InvalidArgumentError(
                    f"agentstate: {path} is open in this process through the {held[0]} SQLite library: "
                    f"a second copy of SQLite (sqlite={want!r}) would not see its locks; "
                    f"close it first or open it with sqlite={held[0]!r}"
                )
            lib = held[0]
        else:
            lib = want or ("stdlib" if shared or _not_ours(path) else "apsw")
        if lib == "stdlib":
            why = available()
            if why:
                if want is None and held is None:
                    lib = "apsw"  # nothing of this process can share the file through it then
                else:
                    raise InvalidOptionError(f"agentstate: sqlite='stdlib' for {path}: {why}")
        if held is None:
            held = _files[key] = [lib, 0]
        held[1] += 1

    done = False

    def release() -> None:
        nonlocal done
        with _lock:
            if done:
                return
            done = True
            h = _files.get(key)
            if h is not None:
                h[1] -= 1
                if h[1] <= 0:
                    del _files[key]

    return lib, release


def wanted(name: str) -> bool:
    """Whether the host opens name (a path) through Python's sqlite3."""
    if not _files:
        return False
    h = _files.get(_key(name))
    return h is not None and h[0] == "stdlib"
