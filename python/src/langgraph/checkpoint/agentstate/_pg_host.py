"""PostgreSQL for the engine module: the imports of module ``agentstate_pg``
over psycopg 3's libpq binding (``psycopg.pq``).

The engine (engine/internal/driver/hostpg, whose package comment has the
protocol) keeps the transaction logic, the types and the errors' meaning;
this host only opens sessions, runs a batch of statements in one round trip
(libpq's pipeline mode) and copies wire-format bytes in and out of the
module's memory. Every wait on the server is bounded by the call's deadline:
past it the session is given up (a cancel request goes to the server from
a thread of its own) and the engine dials a new one.

psycopg is an optional dependency (``langgraph-checkpoint-agentstate[postgres]``),
imported on the first connection.
"""

from __future__ import annotations

import ctypes
import select
import struct
import threading
import time
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

INSTALL = "pip install 'langgraph-checkpoint-agentstate[postgres]'"

_KIND_SERVER, _KIND_LOST, _KIND_DEADLINE, _KIND_UNAVAILABLE = 0, 1, 2, 3
_OP_PREPARE, _OP_RUN, _OP_SIMPLE = 0, 1, 2
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_HEAD = struct.Struct("<BBBI")  # op, result format, flags, name length
_PARAM = struct.Struct("<IB")  # a parameter's length and format
_U16 = struct.Struct("<H")
_I64 = struct.Struct("<q")
_NULL_BYTES = b"\xff\xff\xff\xff"
_NULL = 0xFFFFFFFF
_TX = {0: b"I", 1: b"T", 2: b"T", 3: b"E"}


_pq = None


def pq():
    """psycopg's libpq binding, or ImportError saying what to install."""
    global _pq
    if _pq is None:  # imported once: every round trip asks
        try:
            from psycopg import pq as m
        except ImportError as e:
            raise ImportError(f"agentstate: PostgreSQL URLs need psycopg 3: {INSTALL}") from e
        _pq = m
    return _pq


def is_url(path: str) -> bool:
    """Whether path names a PostgreSQL database rather than a file."""
    return path.startswith(("postgres://", "postgresql://"))


def redact(url: str) -> str:
    """url as messages show it: its password (in the user part or the
    query) replaced by ``xxxxx``, as the engine and the CLI show it."""
    if not is_url(url):
        return url
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            user, _, host = netloc.rpartition("@")
            if ":" in user:
                user = user.split(":", 1)[0] + ":xxxxx"
            netloc = user + "@" + host
        query = parts.query
        if query:
            q = parse_qsl(query, keep_blank_values=True)
            if any(k == "password" for k, _ in q):
                query = urlencode(quote_via=quote, query=[(k, "xxxxx" if k == "password" else v) for k, v in q])
        return urlunsplit(parts._replace(netloc=netloc, query=query))
    except ValueError:
        return url.split("://", 1)[0] + "://(unparsable URL)"


def open_url(url: str, schema: str | None) -> str:
    """The URL the engine opens: url with schema as the first schema of its
    search_path. Raises MissingDependencyError without psycopg."""
    from .errors import InvalidArgumentError, MissingDependencyError

    try:
        pq()
    except ImportError as e:
        raise MissingDependencyError(f"agentstate: {redact(url)}: {e}") from None
    if schema is None:
        return url
    if not isinstance(schema, str) or not schema:
        raise InvalidArgumentError("agentstate: schema must be a non-empty str")
    parts = urlsplit(url)
    q = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "search_path"]
    q.append(("search_path", '"' + schema.replace('"', '""') + '"'))
    return urlunsplit(parts._replace(query=urlencode(q, quote_via=quote)))


class _Gone(Exception):
    """The session is lost (kind 1) or past its deadline (kind 2)."""

    def __init__(self, kind: int, msg: str) -> None:
        super().__init__(msg)
        self.kind = kind


def _escape_option(v: str) -> str:
    return v.replace("\\", "\\\\").replace(" ", "\\ ")


_keywords: set[str] | None = None


def conninfo(url: str, params: list[tuple[str, str]]) -> str:
    """url with the engine's session settings, as libpq takes it: query
    parameters libpq does not know (search_path, as the native driver takes
    it) and the settings become ``-c`` options of the session."""
    global _keywords
    p = pq()
    if _keywords is None:
        _keywords = {d.keyword.decode() for d in p.Conninfo.get_defaults()}
    parts = urlsplit(url)
    keep: list[tuple[str, str]] = []
    settings: list[tuple[str, str]] = []
    options = ""
    for k, v in parse_qsl(parts.query, keep_blank_values=True):
        if k == "options":
            options = v
        elif k in _keywords:
            keep.append((k, v))
        else:
            settings.append((k, v))
    have = {k for k, _ in keep}
    for k, v in params:
        if k in _keywords:
            if k not in have:
                keep.append((k, v))
        else:
            settings.append((k, v))
    opts = " ".join([options] * bool(options) + [f"-c {_escape_option(k)}={_escape_option(v)}" for k, v in settings])
    if opts:
        keep.append(("options", opts))
    return urlunsplit(parts._replace(query=urlencode(keep, quote_via=quote)))


class _Session:
    __slots__ = ("conn", "pending")

    def __init__(self, conn) -> None:
        self.conn = conn
        self.pending: bytes | None = None


class PGHost:
    """The imports of module ``agentstate_pg`` for one module instance;
    ``base`` is the address of the instance's memory (set once it exists)."""

    SIGNATURES = {
        "connect": ("iiiiiid", "i"),
        "exec": ("iiiid", "i"),
        "take": ("iii", "i"),
        "close": ("i", ""),
    }

    def __init__(self) -> None:
        self.sessions: dict[int, _Session] = {}
        self._next = 0
        self.base = 0

    # ---- memory

    def _read(self, ptr: int, n: int) -> bytes:
        return ctypes.string_at(self.base + ptr, n)

    def _write(self, ptr: int, data: bytes) -> None:
        ctypes.memmove(self.base + ptr, data, len(data))

    def _error(self, buf: int, cap: int, kind: int, msg: str, state: bytes = b"", tx: bytes = b"I") -> int:
        m = msg.encode("utf-8", "replace")[: max(cap - 11, 0)]
        self._write(buf, bytes([kind]) + tx + state[:5].ljust(5, b"\0") + _U32.pack(len(m)) + m)
        return -1

    # ---- waiting

    @staticmethod
    def _wait(conn, deadline: float, write: bool = False) -> None:
        timeout = None
        if deadline > 0:
            timeout = deadline / 1000 - time.time()
            if timeout <= 0:
                raise _Gone(_KIND_DEADLINE, "agentstate: the call's deadline passed while the PostgreSQL server had not answered")
        fd = conn.socket
        r, w, _ = select.select([fd], [fd] if write else [], [], timeout)
        if not r and not w:
            raise _Gone(_KIND_DEADLINE, "agentstate: the call's deadline passed while the PostgreSQL server had not answered")

    def _flush(self, conn, deadline: float) -> None:
        while conn.flush() == 1:
            self._wait(conn, deadline, write=True)
            conn.consume_input()

    def _result(self, conn, deadline: float):
        while conn.is_busy():
            self._wait(conn, deadline)
            conn.consume_input()
        return conn.get_result()

    # ---- imports

    def connect(self, url_p, url_n, params_p, params_n, buf, cap, deadline) -> int:
        try:
            p = pq()
        except ImportError as e:
            return self._error(buf, cap, _KIND_UNAVAILABLE, str(e))
        raw = self._read(params_p, params_n).decode("utf-8").split("\0")
        params = list(zip(raw[0::2], raw[1::2]))
        conn = None
        try:
            info = conninfo(self._read(url_p, url_n).decode("utf-8"), params)
            conn = p.PGconn.connect_start(info.encode("utf-8"))
            while True:
                st = conn.connect_poll()
                if st == p.PollingStatus.OK:
                    break
                if st == p.PollingStatus.FAILED:
                    raise _Gone(_KIND_LOST, conn.get_error_message().strip() or "connection failed")
                self._wait(conn, deadline, write=st == p.PollingStatus.WRITING)
            conn.nonblocking = 1
        except _Gone as e:
            if conn is not None:
                conn.finish()
            return self._error(buf, cap, e.kind, str(e))
        except Exception as e:  # noqa: BLE001 - a URL libpq refuses, an unreachable host
            if conn is not None:
                conn.finish()
            return self._error(buf, cap, _KIND_LOST, str(e).strip() or type(e).__name__)
        self._next += 1
        self.sessions[self._next] = _Session(conn)
        enc = conn.parameter_status(b"server_encoding") or b""
        self._write(buf, _U32.pack(len(enc)) + enc)
        return self._next

    def close(self, sid) -> None:
        s = self.sessions.pop(sid, None)
        if s is not None:
            s.conn.finish()

    def abandon(self) -> None:
        """Closes every session of an instance that stopped in the middle
        of a call (a trap: _engine marks it dead). The engine will never
        end its call nor close its handles: a session left open would keep
        its transaction, its row locks and the advisory lock of its thread
        (every other writer of that thread, in any process, waits on it)
        until the process ends. Closing it makes the server roll back."""
        sessions, self.sessions = self.sessions, {}
        for s in sessions.values():
            try:
                s.conn.finish()
            except Exception:  # noqa: BLE001, S110 - closing what it can
                pass

    def take(self, sid, buf, cap) -> int:
        s = self.sessions.get(sid)
        if s is None or s.pending is None or len(s.pending) > cap:
            return self._error(buf, cap, _KIND_LOST, "agentstate: internal: no pending response")
        data, s.pending = s.pending, None
        self._write(buf, data)
        return len(data)

    def exec(self, sid, buf, cap, req_len, deadline) -> int:
        s = self.sessions.get(sid)
        if s is None:
            return self._error(buf, cap, _KIND_LOST, "agentstate: the session is closed")
        calls = self._parse(self._read(buf, req_len))
        conn = s.conn
        p = pq()
        try:
            if calls[0][0] == _OP_SIMPLE:
                err, results = self._simple(conn, calls[0][4], deadline)
            else:
                err, results = self._pipeline(conn, calls, deadline)
            tx = _TX.get(conn.transaction_status, b"I")
            if conn.status != p.ConnStatus.OK:
                raise _Gone(_KIND_LOST, conn.get_error_message().strip() or "the connection to the server was lost")
        except _Gone as e:
            self._give_up(sid, e.kind == _KIND_DEADLINE)
            return self._error(buf, cap, e.kind, str(e))
        except Exception as e:  # noqa: BLE001 - psycopg.OperationalError: the socket broke
            self._give_up(sid, False)
            return self._error(buf, cap, _KIND_LOST, str(e).strip() or type(e).__name__)
        if err is not None:
            state, msg = err
            if state[:2] == b"08" or state in (b"57P01", b"57P02", b"57P03"):
                # The server ended the session (a shutdown, a terminated
                # backend): the engine dials a new one.
                self._give_up(sid, False)
                return self._error(buf, cap, _KIND_LOST, msg, state, tx)
            return self._error(buf, cap, _KIND_SERVER, msg, state, tx)
        out = [tx]
        for (op, _fmt, flags, _name, _sql, _params), r in zip(calls, results):
            self._encode(out, op, flags, r)
        data = b"".join(out)
        if len(data) > cap:
            s.pending = data
            return -2 - len(data)
        self._write(buf, data)
        return len(data)

    def _give_up(self, sid: int, cancel: bool) -> None:
        s = self.sessions.pop(sid, None)
        if s is None:
            return
        conn = s.conn
        if cancel:
            # The server may still be running the statement (or waiting for
            # a lock): ask it to stop, on a connection of its own driven
            # without blocking by a daemon thread, which gives up after
            # _CANCEL_WAIT (a server that does not answer is no caller's
            # business).
            try:
                cc = conn.cancel_conn()
                cc.start()
                threading.Thread(target=_cancel, args=(cc,), daemon=True).start()
            except Exception:  # noqa: BLE001, S110 - libpq before 17: the server finds the session closed
                pass
        conn.finish()

    @staticmethod
    def _parse(req: bytes) -> list:
        (n,) = _U32.unpack_from(req, 0)
        at = 4
        calls = []
        for _ in range(n):
            op, fmt, flags, nl = _HEAD.unpack_from(req, at)
            at += 7
            name = req[at : at + nl]
            at += nl
            (sl,) = _U32.unpack_from(req, at)
            sql = req[at + 4 : at + 4 + sl]
            at += 4 + sl
            (np,) = _U16.unpack_from(req, at)
            at += 2
            vals, fmts = [None] * np, [0] * np
            for j in range(np):
                ln, fmts[j] = _PARAM.unpack_from(req, at)
                at += 5
                if ln != _NULL:
                    vals[j] = req[at : at + ln]
                    at += ln
            calls.append((op, fmt, flags, name, sql, (vals, fmts)))
        return calls

    def _simple(self, conn, sql: bytes, deadline: float):
        p = pq()
        conn.send_query(sql)
        self._flush(conn, deadline)
        err = None
        last = None
        while True:
            r = self._result(conn, deadline)
            if r is None:
                break
            if r.status == p.ExecStatus.FATAL_ERROR and err is None:
                err = _err(r)
            last = r
        return err, [last]

    def _pipeline(self, conn, calls: list, deadline: float):
        p = pq()
        conn.enter_pipeline_mode()
        try:
            n = 0
            for op, fmt, _flags, name, sql, (vals, fmts) in calls:
                if op == _OP_PREPARE:
                    conn.send_prepare(name, sql)
                    conn.send_describe_prepared(name)
                    n += 2
                else:
                    conn.send_query_prepared(name, vals, fmts, fmt)
                    n += 1
            conn.pipeline_sync()
            self._flush(conn, deadline)
            got: list = []
            err = None
            cur = None
            while True:
                r = self._result(conn, deadline)
                if r is None:
                    got.append(cur)
                    cur = None
                    continue
                st = r.status
                if st == p.ExecStatus.PIPELINE_SYNC:
                    break
                if st == p.ExecStatus.FATAL_ERROR and err is None:
                    err = _err(r)
                cur = r
        finally:
            if conn.status == p.ConnStatus.OK and conn.pipeline_status != 0:
                try:
                    conn.exit_pipeline_mode()
                except Exception:  # noqa: BLE001, S110 - the session is given up by the caller
                    pass
        if err is not None:
            return err, []
        results = []
        i = 0
        for op, *_ in calls:
            if op == _OP_PREPARE:
                results.append(got[i + 1])
                i += 2
            else:
                results.append(got[i])
                i += 1
        return None, results

    @staticmethod
    def _encode(out: list, op: int, flags: int, r) -> None:
        n = -1
        if op != _OP_PREPARE and r is not None:
            ct = r.command_tuples
            if ct is not None:
                n = ct
        nf = r.nfields if r is not None else 0
        out.append(_I64.pack(n))
        out.append(_U32.pack(nf))
        if nf:
            out.append(struct.pack(f"<{nf}I", *[r.ftype(i) for i in range(nf)]))
        if op == _OP_PREPARE:
            np = r.nparams
            out.append(_U32.pack(np))
            out.extend(_U32.pack(r.param_type(i)) for i in range(np))
        if not flags & 1 or r is None:
            out.append(_U32.pack(0))
            return
        nt = r.ntuples
        out.append(_U32.pack(nt))
        get = r.get_value
        pack = _U32.pack
        add = out.append
        for t in range(nt):
            for f in range(nf):
                v = get(t, f)
                if v is None:
                    add(_NULL_BYTES)
                else:
                    add(pack(len(v)))
                    add(v)


def _err(r) -> tuple[bytes, str]:
    p = pq()
    state = r.error_field(p.DiagnosticField.SQLSTATE) or b""
    msg = (r.error_field(p.DiagnosticField.MESSAGE_PRIMARY) or r.error_message or b"").decode("utf-8", "replace").strip()
    return state, msg


_CANCEL_WAIT = 10.0


def _cancel(cc) -> None:
    p = pq()
    end = time.monotonic() + _CANCEL_WAIT
    try:
        while True:
            st = cc.poll()
            if st in (p.PollingStatus.OK, p.PollingStatus.FAILED):
                break
            left = end - time.monotonic()
            if left <= 0:
                break
            fd = cc.socket
            if st == p.PollingStatus.WRITING:
                select.select([], [fd], [], left)
            else:
                select.select([fd], [], [], left)
    except Exception:  # noqa: BLE001, S110 - the server is gone: nothing to stop
        pass
    finally:
        cc.finish()
