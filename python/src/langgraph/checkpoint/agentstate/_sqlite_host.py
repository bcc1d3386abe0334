"""The SQLite host of the engine's WebAssembly module.

The engine (Go, compiled to a WASI reactor with the ``hostsqlite`` tag)
links no SQLite: it imports the functions of module ``agentstate_sqlite``,
which this file implements over `apsw <https://rogerbinns.github.io/apsw/>`_
(SQLite 3.54, the same release the npm package runs as ``sqlite3.wasm``).
The protocol is the npm package's (``wasm/npm/src/sqlite/host.js``): one
call per statement run, arguments read from and rows written into a buffer
in the module's memory, values as a tag byte (0 NULL, 1 INTEGER, 2 FLOAT,
3 TEXT, 4 BLOB) then int64/float64 or u32 length and bytes, a result as a
32-byte header then the rows.

The statements a transaction queues (the checkpoint, its values, the
seal: the driver's ``Queue``) come in one call with the statement after
them, ``run_batch(data, len, out, cap, flags, deadline)``: entries
``{stmt i32, argLen u32, arguments}`` at ``data``, run in order as ``run``
with DISCARD, the last one with ``flags``, its result written at ``out``
as ``run``'s. The first statement that fails stops the batch: its error
goes to ``out`` and the call returns ``-(1 + i)``, ``i`` its index; the
statements after it do not run. When the last one's first row needs a
larger buffer the call returns ``-(1 + count)``, the size needed a u32 at
``out`` (the row stays pending, for ``next``).

No busy handler is set: the engine retries a busy statement itself after
sleeping, so that two handles of one file in this module never wait on
each other inside one call.

A file that other code of this process opens through Python's ``sqlite3``
module (a shared file: DeerFlow's ``deerflow.db``) is opened through that
module's SQLite instead (``_stdlib_host``), since two copies of SQLite in
one process do not see each other's locks.
"""

from __future__ import annotations

import ctypes
import os
import struct
import time
from collections import OrderedDict
from typing import Any, Callable

import apsw

from . import _share, _stdlib_host
from .errors import HeldError, error_for

HEADER = 32
FIRST_ROW = 1
DISCARD = 2
_QUIET = 4  # run_batch: a statement before the last, whose header nobody reads
PROGRESS_OPS = 1000

SQLITE_ERROR = 1
SQLITE_NOMEM = 7
SQLITE_INTERRUPT = 9
SQLITE_READONLY = 8
SQLITE_IOERR = 10
SQLITE_CANTOPEN = 14
SQLITE_MISUSE = 21
# The extended code SQLite itself gives a write to a file that moved: the
# engine's driver reads it as ErrReplaced (engine.ErrFileReplaced).
SQLITE_READONLY_DBMOVED = SQLITE_READONLY | 4 << 8

FCNTL_FILE_POINTER = 7
FCNTL_JOURNAL_POINTER = 28
# The file descriptor of the unix VFS's file (struct unixFile: pMethod,
# pVfs, pInode, then int h), checked against the path at open before it is
# trusted.
_FD_OFFSET = 3 * ctypes.sizeof(ctypes.c_void_p)

_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")
_U32 = struct.Struct("<I")
_ERR = struct.Struct("<iiiI")
_HDR = struct.Struct("<BBxxIIxxxxqq")
_PREP = struct.Struct("<iiiii")
_ENTRY = struct.Struct("<iI")  # a run_batch entry: stmt, argLen

_READONLY_PREFIXES = ("SELECT", "VALUES", "EXPLAIN")


def _is_readonly(sql: str) -> bool:
    head = sql.lstrip().upper()
    return head.startswith(_READONLY_PREFIXES) and "RETURNING" not in head


def _message(e: BaseException) -> str:
    text = str(e)
    # apsw prefixes the class name ("SQLError: no such table: t").
    name = type(e).__name__ + ": "
    if text.startswith(name):
        text = text[len(name):]
    return text


def _first_statement(sql: str) -> int:
    """The length of the first complete statement of sql (with its ';'),
    or of the whole text when no ';' ends one."""
    start = 0
    while True:
        i = sql.find(";", start)
        if i < 0:
            return len(sql)
        if apsw.complete(sql[: i + 1]):
            return i + 1
        start = i + 1


def _only_comments(sql: str) -> bool:
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c.isspace() or c == ";":
            i += 1
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j + 1
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            return False
    return True


_TAG_INT = struct.Struct("<Bq").pack
_TAG_FLOAT = struct.Struct("<Bd").pack
_TAG_LEN = struct.Struct("<BI").pack


def _encode_row(row) -> bytes:
    """A row as the protocol's values (SQLiteHost._encode_value's encoding,
    with apsw's exact types dispatched inline: a result of many rows is most
    of a statement's cost in Python)."""
    parts: list = []
    ap = parts.append
    for v in row:
        t = type(v)
        if t is str:
            e = v.encode("utf-8", "surrogateescape")
            ap(_TAG_LEN(3, len(e)))
            ap(e)
        elif t is int:
            ap(_TAG_INT(1, v))
        elif v is None:
            ap(b"\x00")
        elif t is bytes:
            ap(_TAG_LEN(4, len(v)))
            ap(v)
        elif t is float:
            ap(_TAG_FLOAT(2, v))
        else:
            SQLiteHost._encode_value(parts, v)
    return b"".join(parts)


def _vfs_fd(db: apsw.Connection, op: int) -> int:
    """The descriptor of the file SQLite has open for op (the database,
    or its write-ahead log), or -1 when it has none."""
    if os.name != "posix":
        return -1  # another VFS (win32): its file has no such descriptor
    if isinstance(db, _stdlib_host.Connection):
        return db.vfs_fd(op)
    p = ctypes.c_void_p()
    try:
        if not db.file_control("main", op, ctypes.addressof(p)) or not p.value:
            return -1
    except apsw.Error:
        return -1
    if not ctypes.c_void_p.from_address(p.value).value:
        return -1  # not open
    return ctypes.c_int.from_address(p.value + _FD_OFFSET).value


class _Conn:
    __slots__ = ("db", "deadline", "progress", "aux", "path", "ident", "fds", "wal", "release")

    def __init__(self, db: apsw.Connection) -> None:
        self.db = db
        self.deadline = 0.0
        self.progress = False
        # Per-function state the Go side keeps for a constant argument (a
        # compiled filter), by (function id, that argument): apsw has no
        # sqlite3_set_auxdata, so the host remembers the id, a few at most.
        self.aux: OrderedDict[tuple[int, Any], int] = OrderedDict()
        # A file opened by path: the path, the open file's (device, inode),
        # whether the VFS's descriptors can be read (_vfs_fd), and the
        # function that withdraws this connection's record (_share).
        self.path = ""
        self.ident: tuple[int, int] | None = None
        self.fds = False
        self.wal: tuple[int, int, int] | None = None  # the log's (fd, device, inode)
        self.release: Callable[[], None] | None = None

    def watch(self, path: str) -> None:
        """Records the identity of the file this connection has open, so
        that replaced() can tell whether it is still the one at path."""
        self.path = path
        fd = _vfs_fd(self.db, FCNTL_FILE_POINTER)
        try:
            pi = os.stat(path)
            if fd >= 0:
                fi = os.fstat(fd)
                if (fi.st_dev, fi.st_ino) == (pi.st_dev, pi.st_ino):
                    self.fds = True
        except OSError:
            return  # no file to watch (it could not be checked): never replaced
        self.ident = (pi.st_dev, pi.st_ino)

    def replaced(self) -> str:
        """Why this connection's file is no longer the one at its path (it
        was deleted, another file moved over it, or its write-ahead log was
        deleted), or "" while it is: one stat of the path and one fstat of
        the log, a few µs. A check that cannot be made passes."""
        ident = self.ident
        if ident is None:
            return ""
        try:
            st = os.stat(self.path)
            if (st.st_dev, st.st_ino) != ident:
                raise FileNotFoundError
        except FileNotFoundError:
            return f"{self.path} was deleted, or another file was moved over it, after it was opened"
        except OSError:
            return ""
        if self.fds:
            # The log's descriptor is looked up once and kept while it still
            # names the same file (it is closed only with the connection or
            # a change of journal mode): one fstat per check.
            wal = self.wal
            try:
                st = os.fstat(wal[0]) if wal else None
                if st is None or (st.st_dev, st.st_ino) != wal[1:]:
                    self.wal = None
                    fd = _vfs_fd(self.db, FCNTL_JOURNAL_POINTER)
                    if fd < 0:
                        return ""
                    st = os.fstat(fd)
                    self.wal = (fd, st.st_dev, st.st_ino)
                if st.st_nlink == 0:
                    return f"{self.path}-wal, the write-ahead log of {self.path}, was deleted while open: commits would go to a file nobody else can see and be lost with this process"
            except OSError:
                self.wal = None
        return ""

    def evacuate(self) -> bool:
        """Runs when the file was found deleted or replaced: the commits in
        the write-ahead log belong to the file this connection has open, but
        the log is found by name, so the file now at the name would take
        them for its own. They are copied into the file they belong to
        (wherever it went) and the log emptied; other connections get a
        second to finish their reads (the engine's driver does the same).
        False when they could not all be copied."""
        db = self.db
        try:
            db.set_busy_timeout(1000)
            try:
                rows = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            finally:
                db.set_busy_timeout(0)
        except apsw.Error:
            return False
        # (busy, log frames, frames checkpointed)
        return not rows or (rows[0][0] == 0 and rows[0][1] == rows[0][2])


class _Stmt:
    __slots__ = ("conn", "sql", "cursor", "rows", "pending", "write")

    def __init__(self, conn: _Conn, sql: str) -> None:
        self.conn = conn
        self.sql = sql
        # 1: a write transaction begins (BEGIN IMMEDIATE, the driver's
        # Begin); 2: a VACUUM. Each first checks that the file is still the
        # one at its path (_Conn.replaced).
        head = sql.lstrip()[:15].upper()
        self.write = 1 if head.startswith("BEGIN IMMEDIATE") else 2 if head.startswith("VACUUM") else 0
        self.cursor: apsw.Cursor | None = None
        self.rows = None  # the iterator of a running statement
        self.pending: tuple | None = None  # a row read but not yet sent


class SQLiteHost:
    """The imports of module ``agentstate_sqlite`` for one module instance.

    ``base`` is set to the address of the instance's memory once it exists
    (the memory never moves, see _engine); ``call_go`` to a function calling
    the export ``agentstate_sql_function``.
    """

    def __init__(self) -> None:
        self.conns: dict[int, _Conn] = {}
        self.stmts: dict[int, _Stmt] = {}
        self._next_conn = 0
        self._next_stmt = 0
        self.base = 0
        self.call_go: Callable[[int, int, int, int], int] = lambda *a: -1
        self.cb_arg = 0
        self.cb_cap = 0
        self.cb_res = 0
        # A KeyboardInterrupt or SystemExit caught in a host function, or the
        # HeldError of an open refused by the sharing protocol (_share),
        # raised when the engine's call returns.
        self.pending: BaseException | None = None

    # ---- memory

    def _read(self, ptr: int, n: int) -> bytes:
        return ctypes.string_at(self.base + ptr, n)

    def _write(self, ptr: int, data: bytes) -> None:
        ctypes.memmove(self.base + ptr, data, len(data))

    def _error(self, ptr: int, cap: int, rc: int, extended: int, msg: str, offset: int = -1) -> int:
        if cap < 16:
            return -1
        m = msg.encode("utf-8", "replace")[: cap - 16]
        self._write(ptr, _ERR.pack(rc, extended, offset, len(m)) + m)
        return -1

    def _exc(self, ptr: int, cap: int, e: BaseException) -> int:
        if not isinstance(e, Exception):
            # KeyboardInterrupt, SystemExit: the statement stops as an
            # interrupt, the engine unwinds its call in order, and the
            # exception is raised again once the call has returned (a trap
            # through Go's stack would leave the engine unusable).
            if self.pending is None:
                self.pending = e
            return self._error(ptr, cap, SQLITE_INTERRUPT, SQLITE_INTERRUPT, f"interrupted by {type(e).__name__}")
        if isinstance(e, apsw.Error):
            rc = getattr(e, "result", SQLITE_ERROR)
            ext = getattr(e, "extendedresult", rc)
            if rc is None or rc < 0:
                rc = SQLITE_ERROR
            if ext is None or ext < 0:
                ext = rc
            return self._error(ptr, cap, rc & 0xFF, ext, _message(e), getattr(e, "error_offset", -1) or -1)
        if isinstance(e, MemoryError):
            return self._error(ptr, cap, SQLITE_NOMEM, SQLITE_NOMEM, "agentstate host: out of memory")
        if isinstance(e, UnicodeError):
            return self._error(ptr, cap, SQLITE_MISUSE, SQLITE_MISUSE, f"agentstate host: {e}")
        return self._error(ptr, cap, SQLITE_IOERR, SQLITE_IOERR, f"agentstate host: {type(e).__name__}: {e}")

    # ---- values

    @staticmethod
    def _decode_values(b: bytes, count: int = -1) -> list:
        out = []
        o, n = 0, len(b)
        while o < n and count != 0:
            t = b[o]
            o += 1
            if t == 1:
                out.append(_I64.unpack_from(b, o)[0])
                o += 8
            elif t == 2:
                out.append(_F64.unpack_from(b, o)[0])
                o += 8
            elif t == 3:
                ln = _U32.unpack_from(b, o)[0]
                out.append(b[o + 4 : o + 4 + ln].decode("utf-8"))
                o += 4 + ln
            elif t == 4:
                ln = _U32.unpack_from(b, o)[0]
                out.append(b[o + 4 : o + 4 + ln])
                o += 4 + ln
            else:
                out.append(None)
            count -= 1
        return out

    @staticmethod
    def _encode_value(parts: list, v: Any) -> int:
        if v is None:
            parts.append(b"\x00")
            return 1
        if isinstance(v, int):
            parts.append(b"\x01" + _I64.pack(v))
            return 9
        if isinstance(v, float):
            parts.append(b"\x02" + _F64.pack(v))
            return 9
        if isinstance(v, str):
            e = v.encode("utf-8", "surrogateescape")
            parts.append(b"\x03" + _U32.pack(len(e)))
            parts.append(e)
            return 5 + len(e)
        e = bytes(v)
        parts.append(b"\x04" + _U32.pack(len(e)))
        parts.append(e)
        return 5 + len(e)

    # ---- the imports

    def open(self, name_p, name_n, flags, vfs_p, vfs_n, buf, cap) -> int:
        release = None
        try:
            name = self._read(name_p, name_n).decode("utf-8")
            vfs = self._read(vfs_p, vfs_n).decode("utf-8") if vfs_n else None
            by_path = _share.by_path(name)
            if by_path:
                # A Node process cannot take SQLite's locks: it and this one
                # take turns on the file by records beside it (_share).
                try:
                    release = _share.register(name)
                except HeldError as e:
                    # Raised as it is once the engine's call returns; the
                    # engine sees a file it cannot open.
                    if self.pending is None:
                        self.pending = e
                    return self._error(buf, cap, SQLITE_CANTOPEN, SQLITE_CANTOPEN, str(e))
                except OSError as e:
                    return self._error(buf, cap, SQLITE_CANTOPEN, SQLITE_CANTOPEN, f"agentstate: register in {name}.natives: {e}")
            if vfs:
                db = apsw.Connection(name, flags=flags, vfs=vfs)
            elif by_path and _stdlib_host.wanted(name):
                # The SQLite of Python's sqlite3 module, for a file this
                # process also opens through it (_stdlib_host).
                db = _stdlib_host.Connection(name, flags)
            else:
                db = apsw.Connection(name, flags=flags)
            c = _Conn(db)
            c.release = release
            if by_path and not vfs:
                c.watch(name)
        except BaseException as e:  # noqa: BLE001 - every failure goes back as an SQLite error
            if release is not None:
                release()
            return self._exc(buf, cap, e)
        self._next_conn += 1
        self.conns[self._next_conn] = c
        return self._next_conn

    def close(self, conn) -> None:
        c = self.conns.pop(conn, None)
        if c is None:
            return
        for sid in [k for k, s in self.stmts.items() if s.conn is c]:
            self.stmts.pop(sid, None)
        try:
            why = c.replaced()
            if why:
                # SQLite itself does not checkpoint a moved file on close.
                copied = c.evacuate()
                # The close goes on (the connection and its records are
                # released), then is reported as the engine's Close reports
                # it natively: raised once the engine's call returns.
                if self.pending is None:
                    self.pending = error_for("FILE_REPLACED", f"agentstate: close: {why}; "
                        + ("the write-ahead log's commits were copied into the file this handle had open, wherever it is now"
                           if copied else "the write-ahead log's commits could not all be copied into the file this handle had open: the last ones may be lost"),
                    )
        finally:
            try:
                c.db.close(True)
            except apsw.Error:
                pass
            if c.release is not None:
                c.release()
                c.release = None

    def abandon(self) -> None:
        """Closes every connection of an instance that stopped in the middle
        of a call (a trap: _engine marks it dead), each open transaction
        rolled back: the engine will never end its call, and its write lock
        would otherwise refuse every other writer of the file for the rest
        of the process."""
        conns, self.conns = self.conns, {}
        self.stmts.clear()
        for c in conns.values():
            try:
                c.db.close(True)
            except Exception:  # noqa: BLE001 - closing what it can
                pass
            if c.release is not None:
                c.release()
                c.release = None

    def prepare(self, conn, buf, cap, sql_len) -> int:
        c = self.conns.get(conn)
        try:
            if c is None:
                raise apsw.MisuseError("agentstate host: no such connection")
            text = self._read(buf, sql_len).decode("utf-8")
            tail_chars = _first_statement(text)
            first = text[:tail_chars]
            tail = len(first.encode("utf-8"))
            if _only_comments(first):
                self._write(buf, _PREP.pack(0, tail, 0, 0, 0))
                return 1
            # Prepare now, so that an error (a missing table) is reported
            # by prepare, as SQLite's own prepare would: apsw prepares
            # before it checks the bindings, which it then finds missing.
            cur = c.db.cursor()
            try:
                cur.execute(first, explain=1)
            except apsw.BindingsError:
                pass
            finally:
                cur.close(True)
        except BaseException as e:  # noqa: BLE001
            return self._exc(buf, cap, e)
        self._next_stmt += 1
        sid = self._next_stmt
        self.stmts[sid] = _Stmt(c, first)
        self._write(buf, _PREP.pack(sid, tail, 0, 0, 1 if _is_readonly(first) else 0))
        return 0

    def _set_deadline(self, c: _Conn, deadline: float) -> None:
        if deadline > 0:
            c.deadline = deadline
            if not c.progress:
                c.db.set_progress_handler(lambda: time.time() * 1000 >= c.deadline, PROGRESS_OPS)
                c.progress = True
        elif c.progress:
            c.db.set_progress_handler(None)
            c.progress = False

    def run_batch(self, data, data_len, out, cap, flags, deadline) -> int:
        try:
            b = self._read(data, data_len)
        except BaseException as e:  # noqa: BLE001 - a MemoryError here would trap mid-transaction
            self._exc(out, cap, e)
            return -1
        dec = self._decode_values
        o = 0
        i = 0
        r = 0
        while o < data_len:
            sid, n = _ENTRY.unpack_from(b, o)
            o += 8
            s = self.stmts.get(sid)
            if s is None:
                self._error(out, cap, SQLITE_MISUSE, SQLITE_MISUSE, "agentstate host: no such statement")
                return -1 - i
            try:
                args = dec(b[o : o + n]) if n else ()
            except BaseException as e:  # noqa: BLE001
                self._exc(out, cap, e)
                return -1 - i
            o += n
            # Only the last statement's result is read.
            r = self._run(s, args, out, cap, flags if o >= data_len else DISCARD | _QUIET, deadline)
            if r < 0:
                if r <= -2:  # the last one's first row does not fit
                    self._write(out, _U32.pack(-r - 2))
                    return -2 - i
                return -1 - i
            i += 1
        return r

    def run(self, stmt, buf, cap, arg_len, flags, deadline) -> int:
        s = self.stmts.get(stmt)
        if s is None:
            return self._error(buf, cap, SQLITE_MISUSE, SQLITE_MISUSE, "agentstate host: no such statement")
        try:
            args = self._decode_values(self._read(buf, arg_len)) if arg_len else ()
        except BaseException as e:  # noqa: BLE001
            return self._exc(buf, cap, e)
        return self._run(s, args, buf, cap, flags, deadline)

    def _run(self, s: _Stmt, args, buf, cap, flags, deadline) -> int:
        """Runs s with args, its result (or error) written at buf."""
        c = s.conn
        try:
            self._set_deadline(c, deadline)
            s.pending = None
            s.rows = None
            cur = s.cursor
            if cur is None:
                cur = s.cursor = c.db.cursor()
            if s.write and c.ident is not None:
                return self._run_write(s, cur, buf, cap)
            cur.execute(s.sql, args)
            if flags & DISCARD:
                for _ in cur:
                    pass
                if flags & _QUIET:
                    return HEADER
                return self._header(buf, c, 0, 0, 0, HEADER)
            s.rows = iter(cur)
        except BaseException as e:  # noqa: BLE001
            s.rows = None
            return self._exc(buf, cap, e)
        return self._steps(s, buf, cap, flags)

    def _run_write(self, s: _Stmt, cur: apsw.Cursor, buf, cap) -> int:
        """BEGIN IMMEDIATE or VACUUM on a file opened by path: refused with
        READONLY_DBMOVED, before anything is written, when the file is no
        longer the one at its path (the engine's driver does the same
        natively), the log's commits first copied into their file."""
        c = s.conn
        if s.write == 1:
            try:
                cur.execute(s.sql)
            except apsw.Error as e:
                # SQLite may notice first, as a bare I/O error.
                why = c.replaced()
                if why:
                    c.evacuate()
                    return self._error(buf, cap, SQLITE_READONLY, SQLITE_READONLY_DBMOVED, why)
                return self._exc(buf, cap, e)
        why = c.replaced()
        if why:
            if s.write == 1:
                try:
                    c.db.execute("ROLLBACK")
                except apsw.Error:
                    pass
            c.evacuate()
            return self._error(buf, cap, SQLITE_READONLY, SQLITE_READONLY_DBMOVED, why)
        if s.write == 2:
            cur.execute(s.sql)
        return self._header(buf, c, 0, 0, 0, HEADER)

    def next(self, stmt, buf, cap, deadline) -> int:
        s = self.stmts.get(stmt)
        if s is None or (s.rows is None and s.pending is None):
            return self._error(buf, cap, SQLITE_MISUSE, SQLITE_MISUSE, "agentstate host: statement not running")
        self._set_deadline(s.conn, deadline)
        return self._steps(s, buf, cap, 0)

    def _header(self, buf, c: _Conn, status, nrows, ncols, end) -> int:
        # The last insert rowid (host.js writes it) is read by no caller
        # of the driver: 0 here, one apsw call less per statement.
        db = c.db
        self._write(buf, _HDR.pack(status, 1 if db.get_autocommit() else 0, nrows, ncols, db.changes(), 0))
        return end

    def _steps(self, s: _Stmt, buf, cap, flags) -> int:
        parts: list = []
        size = HEADER
        nrows = 0
        ncols = 0
        status = 0
        rows = s.rows
        enc = _encode_row
        try:
            while True:
                row = s.pending
                if row is None:
                    if rows is None:
                        break
                    row = next(rows, None)
                    if row is None:
                        s.rows = None
                        break
                ncols = len(row)
                e = enc(row)
                rs = len(e)
                if size + rs > cap:
                    s.pending = row
                    if nrows == 0:
                        return -(2 + HEADER + rs)
                    status = 1
                    break
                parts.append(e)
                size += rs
                s.pending = None
                nrows += 1
                if flags & FIRST_ROW:
                    status = 1
                    break
        except BaseException as e:  # noqa: BLE001
            s.rows = None
            s.pending = None
            return self._exc(buf, cap, e)
        if status == 0:
            s.rows = None
        if parts:
            data = b"".join(parts)
            ctypes.memmove(self.base + buf + HEADER, data, len(data))
        return self._header(buf, s.conn, status, nrows, ncols, size)

    def reset(self, stmt) -> None:
        s = self.stmts.get(stmt)
        if s is not None:
            s.rows = None
            s.pending = None
            if s.cursor is not None:
                try:
                    s.cursor.close(True)
                except apsw.Error:
                    pass
                s.cursor = None

    def finalize(self, stmt) -> None:
        self.reset(stmt)
        self.stmts.pop(stmt, None)

    def autocommit(self, conn) -> int:
        c = self.conns.get(conn)
        return 1 if c is None or c.db.get_autocommit() else 0

    def shm(self, conn) -> int:
        return 1

    def create_function(self, conn, name_p, name_n, n_arg, fn_id, buf, cap) -> int:
        c = self.conns.get(conn)
        try:
            if c is None:
                raise apsw.MisuseError("agentstate host: no such connection")
            name = self._read(name_p, name_n).decode("utf-8")
            c.db.create_scalar_function(name, self._go_function(c, fn_id), n_arg, deterministic=True)
        except BaseException as e:  # noqa: BLE001
            return self._exc(buf, cap, e)
        return 0

    def callback_buffer(self, arg, cap, res) -> None:
        self.cb_arg, self.cb_cap, self.cb_res = arg, cap, res

    def _go_function(self, c: _Conn, fn_id: int):
        enc = self._encode_value

        def call(*args):
            parts: list = []
            size = 0
            for v in args:
                size += enc(parts, v)
            if size > self.cb_cap:
                self.call_go(1, size, 0, 0)  # Go grows its buffer (callback_buffer)
            self._write(self.cb_arg, b"".join(parts))
            key = None
            aux = 0
            if args:
                last = args[-1]
                key = (fn_id, last if not isinstance(last, (bytearray, memoryview)) else bytes(last))
                aux = c.aux.get(key, 0)
                if aux:
                    c.aux.move_to_end(key)
            r = self.call_go(0, fn_id, len(args), aux)
            if r < 0:
                msg = self._read(self.cb_res + 4, -1 - r).decode("utf-8", "replace")
                raise apsw.SQLError(msg)
            out = self._read(self.cb_res, 4 + r)
            new_aux = _U32.unpack_from(out, 0)[0]
            if new_aux and key is not None:
                c.aux[key] = new_aux
                if len(c.aux) > 32:
                    _, old = c.aux.popitem(last=False)
                    self.call_go(2, old, 0, 0)
            v = self._decode_values(out[4:], 1)
            return v[0] if v else None

        return call

    def serialize(self, conn, schema_p, schema_n, buf, cap) -> int:
        c = self.conns.get(conn)
        try:
            if c is None:
                raise apsw.MisuseError("agentstate host: no such connection")
            data = c.db.serialize(self._read(schema_p, schema_n).decode("utf-8")) or b""
        except BaseException as e:  # noqa: BLE001
            return self._exc(buf, cap, e)
        if len(data) > cap:
            return -(2 + len(data))
        self._write(buf, data)
        return len(data)

    def deserialize(self, conn, schema_p, schema_n, data_p, data_n, read_only, buf, cap) -> int:
        c = self.conns.get(conn)
        try:
            if c is None:
                raise apsw.MisuseError("agentstate host: no such connection")
            c.db.deserialize(self._read(schema_p, schema_n).decode("utf-8"), self._read(data_p, data_n))
        except BaseException as e:  # noqa: BLE001
            return self._exc(buf, cap, e)
        return 0

    # name -> (params, results) in wasm types: "i" i32, "d" f64
    SIGNATURES = {
        "open": ("iiiiiii", "i"),
        "close": ("i", ""),
        "prepare": ("iiii", "i"),
        "run": ("iiiiid", "i"),
        "run_batch": ("iiiiid", "i"),
        "next": ("iiid", "i"),
        "reset": ("i", ""),
        "finalize": ("i", ""),
        "autocommit": ("i", "i"),
        "shm": ("i", "i"),
        "create_function": ("iiiiiii", "i"),
        "callback_buffer": ("iii", ""),
        "serialize": ("iiiii", "i"),
        "deserialize": ("iiiiiiii", "i"),
    }
