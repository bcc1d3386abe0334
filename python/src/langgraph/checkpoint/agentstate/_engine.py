"""The agentstate engine in this process: its WebAssembly module run by
wasmtime, with SQLite from ``_sqlite_host``.

One module instance serves every handle of the process (the engine keeps
a table of open databases, as in the npm package). The instance runs one
call at a time: calls from several threads take turns on a lock.

Compiling the module takes seconds, so the compiled form is kept in a
cache directory that ``pip install`` fills (``_cache``: keyed by the
module's hash, wasmtime's version and the machine, each entry's digest
checked before it is mapped, only a directory this user owns and no one
else can write trusted); ``AGENTSTATE_CACHE_DIR=off`` disables it.
"""

from __future__ import annotations

import ctypes
import json
import os
import struct
import threading
import types
import _signal
from importlib import resources
from typing import Any

import wasmtime

from . import _cache, _fastcall
from ._pg_host import PGHost
from ._sqlite_host import SQLiteHost
from .errors import AgentStateError, error_for

_U32 = struct.Struct("<I")
_U32x2 = struct.Struct("<II")
# A request buffer in the module larger than this is the call's: the module
# does not keep it for the next request (wasm/reactor/main.go, keepBytes).
_KEEP_BYTES = 1 << 20
# The layout of the module's results this host reads (wasm/reactor/main.go,
# resultFormat): 2, byte arrays given by address.
_RESULT_FORMAT = 2
_MODULE_NAME = "agentstate.wasm"


def _module_bytes() -> bytes:
    path = os.environ.get("AGENTSTATE_WASM")
    if path:
        with open(path, "rb") as f:
            return f.read()
    try:
        return resources.files(__package__).joinpath(_MODULE_NAME).read_bytes()
    except FileNotFoundError:
        raise RuntimeError(
            "agentstate: the engine module agentstate.wasm is missing from the package: "
            "install it with `pip install ./python` from a clone (which builds it with Go), "
            "or set AGENTSTATE_WASM to a built module"
        ) from None


def _compile(engine: wasmtime.Engine, wasm: bytes) -> wasmtime.Module:
    """The compiled module, from the cache when it holds it (_cache)."""
    return _cache.compile_cached(engine, wasm)


# ---- signals during calls
#
# Python runs a signal's handler in the main thread at the next bytecode
# boundary, and during a call that is inside a host function (a ctypes
# callback under wasmtime), possibly before its ``try:``. An exception raised
# there (Ctrl-C's KeyboardInterrupt) escapes the callback: ctypes prints
# "Exception ignored", wasmtime gets no trap and an unset result, and the
# engine runs on with garbage (double frees, segfaults). So while the main
# thread runs a call, the Python handlers of these signals are swapped for
# one that only notes the signal; the call runs to its end, and the noted
# signals' own handlers run once it has returned, in the order the signals
# came (KeyboardInterrupt raised there, asyncio's handler cancelling its
# task there). The running statement is not stopped: a call is
# milliseconds, and a statement stopped halfway left the engine's
# transaction open (issue 38). Handlers run only in the main thread, so
# calls of other threads need none of this. Swapping costs two
# sigaction(2) calls per call (docs/python.md has the measurement).
_DEFERRED = tuple(
    int(getattr(_signal, n))
    for n in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGALRM", "SIGUSR1", "SIGUSR2", "SIGCHLD", "SIGWINCH", "SIGVTALRM", "SIGPROF")
    if hasattr(_signal, n)
)
_MAIN_THREAD = threading.main_thread().ident
_get_ident = threading.get_ident
_getsignal = _signal.getsignal
_setsignal = _signal.signal
_MethodType = types.MethodType


class _Deferral:
    """The handlers swapped for one call of the main thread, and the
    signals that arrived meanwhile."""

    __slots__ = ("saved", "noted", "active")

    def __init__(self) -> None:
        self.saved: list[tuple[int, Any]] = []
        self.noted: list[tuple[int, Any]] = []
        self.active = True

    def note(self, signum: int, frame: Any) -> None:
        if self.active:
            self.noted.append((signum, frame))
            return
        # Left in place after the call: a handler that ran while the others
        # were put back raised (signal.signal runs pending handlers first),
        # and the rest stayed swapped. Put the real one back and run it.
        for s, h in self.saved:
            if s == signum:
                try:
                    _setsignal(s, h)
                except (ValueError, OSError):  # pragma: no cover
                    pass
                h(signum, frame)
                return

    def swap(self) -> None:
        note = self.note
        saved = self.saved
        try:
            for s in _DEFERRED:
                h = _getsignal(s)
                if type(h) is _MethodType and h.__func__ is _NOTE:
                    h = h.__self__.real(s)  # one left behind (see note)
                if callable(h):
                    saved.append((s, h))
                    _setsignal(s, note)
        except BaseException:
            # A handler that ran here (a signal from just before the call)
            # raised: the call does not start, the handlers are put back.
            self.restore()
            self.noted.clear()
            raise

    def real(self, signum: int) -> Any:
        for s, h in self.saved:
            if s == signum:
                return h
        return _signal.SIG_DFL

    def restore(self) -> None:
        self.active = False
        for s, h in self.saved:
            try:
                _setsignal(s, h)
            except (ValueError, OSError):  # pragma: no cover - a handler that cannot be set back
                pass

    def deliver(self) -> None:
        """Runs the noted signals' handlers, each signal once (as Python
        does for a signal that arrives twice before it looks), in the order
        they came: the first to raise ends the caller's call
        (KeyboardInterrupt)."""
        handlers = dict(self.saved)
        noted, self.noted = self.noted, []
        seen: list[int] = []
        for s, frame in noted:
            if s in seen:
                continue
            seen.append(s)
            h = handlers.get(s)
            if callable(h):
                try:
                    h(s, frame)
                except BaseException:
                    # Other signals are not lost: sent again to this process,
                    # their handlers run as Python runs them.
                    for s2, _ in noted:
                        if s2 not in seen:
                            seen.append(s2)
                            _signal.raise_signal(s2)
                    raise


_NOTE = _Deferral.note


class Engine:
    """The module instance and its calls."""

    def __init__(self) -> None:
        # The configuration the build step compiled the cache's entry with
        # (_cache.engine_config); a forked child has no compile threads
        # (see _before_fork), so it compiles on one.
        cfg = _cache.engine_config(parallel=not _forks)
        if os.environ.get("AGENTSTATE_PERFMAP"):
            cfg.profiler = "perfmap"  # /tmp/perf-PID.map for `perf record` (docs/python.md)
        self._wasm_engine = wasmtime.Engine(cfg)
        module = _compile(self._wasm_engine, _module_bytes())
        self._store = wasmtime.Store(self._wasm_engine)
        wasi = wasmtime.WasiConfig()
        wasi.inherit_stderr()
        if os.environ.get("AGENTSTATE_TRACE"):
            wasi.inherit_stdout()  # the engine prints each call's time
        env = [(k, v) for k, v in os.environ.items() if k.startswith("AGENTSTATE_") or k in ("GOGC", "GOMEMLIMIT")]
        if env:
            wasi.env = env
        self._store.set_wasi(wasi)
        linker = wasmtime.Linker(self._wasm_engine)
        linker.define_wasi()
        self.host = host = SQLiteHost()
        self._keep = []
        for name, (params, results) in SQLiteHost.SIGNATURES.items():
            func, keep = _fastcall.host_func(self._store, params, results, getattr(host, name))
            self._keep.append(keep)
            linker.define(self._store, "agentstate_sqlite", name, func)
        self.pg_host = pg = PGHost()  # PostgreSQL URLs, over psycopg when installed (_pg_host)
        for name, (params, results) in PGHost.SIGNATURES.items():
            func, keep = _fastcall.host_func(self._store, params, results, getattr(pg, name))
            self._keep.append(keep)
            linker.define(self._store, "agentstate_pg", name, func)
        self._instance = linker.instantiate(self._store, module)
        ex = self._instance.exports(self._store)
        self._memory: wasmtime.Memory = ex["memory"]
        self._base = base = ctypes_addr(self._memory.data_ptr(self._store))
        host.base = pg.base = base
        host.call_go = _fastcall.Export(self._store, ex["agentstate_sql_function"], 4, "i")
        self._buffer = _fastcall.Export(self._store, ex["agentstate_buffer"], 1, "i")
        self._call = _fastcall.Export(self._store, ex["agentstate_call"], 2, "I")
        self._buf_ptr = 0
        self._buf_cap = 0
        self.lock = threading.RLock()
        self.dead: str | None = None
        self._deferral: _Deferral | None = None
        d = _Deferral() if _get_ident() == _MAIN_THREAD else None
        if d is not None:
            d.swap()
        try:
            ex["_initialize"](self._store)
        finally:
            if d is not None:
                d.restore()
                d.deliver()
        fmt = ex["agentstate_format"](self._store) if "agentstate_format" in ex else 1  # after _initialize: Go runs no export before it
        if fmt != _RESULT_FORMAT:
            # Results of another layout would be misread (a crash, not an
            # error): the module is of another build than this package.
            raise RuntimeError(
                f"agentstate: the engine module gives results of format {fmt}, this package reads format {_RESULT_FORMAT}: "
                "it is of another build (AGENTSTATE_WASM set to an older module?); rebuild it from the same checkout"
            )

    def call(self, h: int, op: str, req: Any = None, bufs: list[bytes] | tuple = ()) -> tuple[Any, list[bytes]]:
        """Runs op on handle h; returns the result's JSON value and byte arrays."""
        text = json.dumps(req if req is not None else {}, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError as e:
            # A lone surrogate (a thread id, a key) is no text the engine can
            # store: passed on, it would read back as U+FFFD, another id.
            raise error_for("INVALID_ARGUMENT", f"agentstate: {op}: a string in the request is not valid Unicode ({e.reason} at {e.start})") from None
        return self.call_raw(h, op, data, bufs)

    def call_raw(self, h: int, op: str, text: bytes, bufs: list[bytes] | tuple = ()) -> tuple[Any, list[bytes]]:
        opb = op.encode()
        # The request goes into the module's memory part by part: the byte
        # arrays (LangGraph's serialised values, a whole message list on the
        # default channel) are copied once, not joined first.
        # The request's JSON text is copied once, into the module's memory,
        # not joined with its small head and tail first (a 100 MB store
        # value was one more 100 MB copy).
        head = _U32.pack(len(opb)) + opb + _U32.pack(len(text))
        tail = _U32.pack(len(bufs))
        if any(type(b) is not bytes for b in bufs):
            bufs = [bytes(b) for b in bufs]  # memmove takes bytes; len counts bytes
        n = len(head) + len(text) + 4 + 4 * len(bufs)
        for b in bufs:
            n += len(b)
        d = None
        try:
            with self.lock:
                if self.dead is not None:
                    raise error_for("CLOSED", f"agentstate: this handle cannot be used: {self.dead}")
                if _get_ident() == _MAIN_THREAD and self._deferral is None:
                    d = _Deferral()
                    d.swap()  # a KeyboardInterrupt raised here leaves every handler as it was
                    self._deferral = d
                try:
                    res, exc = self._run(h, n, head, text, tail, bufs)
                finally:
                    if d is not None:
                        self._deferral = None
                        d.restore()
        finally:
            if d is not None and d.noted:
                d.deliver()  # after the call, in order: KeyboardInterrupt raised here
        if exc is not None:
            raise exc
        if isinstance(res, AgentStateError):
            raise res
        return json.loads(res[0]), res[1]

    def _run(self, h: int, n: int, head: bytes, text: bytes, tail: bytes, bufs: list[bytes] | tuple) -> tuple[Any, BaseException | None]:
        if n > self._buf_cap:
            self._buf_ptr = self._buffer(n) & 0xFFFFFFFF
            self._buf_cap = max(n, 64 << 10)
        base = self._base
        at = base + self._buf_ptr
        memmove = ctypes_memmove
        for part in (head, text, tail):
            memmove(at, part, len(part))
            at += len(part)
        pack = _U32.pack
        for b in bufs:
            ln = len(b)
            memmove(at, pack(ln), 4)
            memmove(at + 4, b, ln)
            at += 4 + ln
        if self._buf_cap > _KEEP_BYTES:
            # The module takes a buffer this large (it reads the request in
            # place and drops it after the call): ask for a new one next time.
            self._buf_cap = 0
        try:
            r = self._call(h, n)
        except wasmtime.ExitTrap as e:
            self.dead = f"exit {e.code}"
            self.host.abandon()
            self.pg_host.abandon()
            raise error_for("INTERNAL", f"agentstate: the engine exited ({e.code})") from None
        except BaseException as e:
            # A trap unwound the engine's stack (a bug, or an exception a
            # host function let through): its state is unknown, so this
            # instance takes no more calls; the next handle opened starts
            # a new one. Its SQLite connections and PostgreSQL sessions
            # are closed now, any write transaction rolled back (and its
            # locks released): the call that held it never ends.
            self.dead = (str(e).splitlines() or ["trap"])[0]
            self.host.abandon()
            self.pg_host.abandon()
            if isinstance(e, wasmtime.Trap):
                raise error_for("INTERNAL", f"agentstate: the engine stopped: {e}") from None
            raise
        ptr, ln = (r >> 32) & 0xFFFFFFFF, r & 0xFFFFFFFF
        # Read in place (the result stays valid until the next call,
        # which waits for this lock): each part is copied once.
        res = _decode_result(memoryview((ctypes.c_char * ln).from_address(base + ptr)).cast("B"), base)
        exc, self.host.pending = self.host.pending, None
        return res, exc


def _decode_result(out: memoryview, base: int) -> tuple[bytes, list[bytes]] | AgentStateError:
    """A result's JSON text and byte arrays, or its error. The byte arrays
    are read where they are in the module's memory (base is its address):
    the result gives each one's length and address."""
    unpack = _U32.unpack_from
    status = unpack(out, 0)[0]
    o = 4
    if status != 0:
        n = unpack(out, o)[0]
        code = bytes(out[o + 4 : o + 4 + n]).decode()
        o += 4 + n
        n = unpack(out, o)[0]
        msg = bytes(out[o + 4 : o + 4 + n]).decode("utf-8", "replace")
        return error_for(code, msg)
    n = unpack(out, o)[0]
    text = bytes(out[o + 4 : o + 4 + n])
    o += 4 + n
    count = unpack(out, o)[0]
    o += 4
    bufs = []
    at = _U32x2.unpack_from
    string_at = ctypes_string_at
    for _ in range(count):
        n, p = at(out, o)
        bufs.append(string_at(base + p, n) if n else b"")
        o += 8
    return text, bufs


def ctypes_addr(p) -> int:
    return ctypes.cast(p, ctypes.c_void_p).value or 0


ctypes_memmove = ctypes.memmove
ctypes_string_at = ctypes.string_at

_engine: Engine | None = None
_engine_lock = threading.Lock()


# ---- fork
#
# A child forked while another thread of the parent is inside a call
# inherits that thread's locks held, and nothing will release them: the
# engine's lock, SQLite's mutexes, wasmtime's. So the fork waits (a few
# seconds at most) for the running call to end, holding the engine's lock
# across it; in the child every handle of the parent is closed without a
# call (its SQLite connections are the parent's: closing them would act on
# the parent's files), the parent's engine is never freed (freeing runs
# wasmtime and SQLite code that may need those locks), and the locks a
# child may meet are new ones. A handle opened in the child starts a new
# engine, compiled without wasmtime's compile threads (they did not survive
# the fork).
_FORK_WAIT = 5.0
_forks = 0  # forks since the process started: a handle opened before one is the parent's
_held_for_fork: list[Any] = []
_orphans: list[Any] = []


def _before_fork() -> None:
    e = _engine
    if e is not None and e.lock.acquire(timeout=_FORK_WAIT):
        _held_for_fork.append(e.lock)


def _after_fork_in_parent() -> None:
    while _held_for_fork:
        _held_for_fork.pop().release()


def _after_fork_in_child() -> None:
    global _engine, _engine_lock, _forks
    _forks += 1
    _held_for_fork.clear()
    _engine_lock = threading.Lock()
    e = _engine
    _engine = None
    if e is not None:
        e.dead = "the process forked after this handle was opened: open the file again in the child"
        e.lock = threading.RLock()
        e._deferral = None
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(e))  # never freed here (see above)
        _orphans.append(e)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)


def engine() -> Engine:
    """The process's engine, started on first use."""
    global _engine
    e = _engine
    if e is not None and e.dead is None:
        return e
    with _engine_lock:
        if _engine is None or _engine.dead is not None:
            _engine = Engine()
        return _engine
