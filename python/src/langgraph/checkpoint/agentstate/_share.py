"""Taking turns on one file with the npm package (docs/format.md, "Sharing
with the npm package").

A Node process cannot take the POSIX locks SQLite relies on, so Node and
the processes that use SQLite's own locks (the native engine, this package
over apsw) take turns on a file by records beside it:

- Node owns the file by ``FILE.owner`` (created with O_EXCL, a JSON object
  naming its process);
- each connection this package opens by path registers, as the native
  engine's handles do, by a file of its own in ``FILE.natives/``
  (``HOST.PID.RANDOM``, ``{"runtime":"python",...}``), removed on close and
  at exit;
- it writes its record before it looks for an owner, gives way to a live
  one (removes its record), retries for up to a second and then fails with
  a HeldError naming the holder; a record of a dead process on this host is
  removed by whoever finds it.

Python processes do not exclude each other, nor native ones: SQLite's locks
do that. The module is the native engine's share.go in Python (the Go code
runs under WASI here, where it cannot see this process's id).
"""

from __future__ import annotations

import atexit
import errno
import json
import os
import random
import secrets
import socket
import sys
import threading
import time
from datetime import datetime, timezone
from typing import Callable

from .errors import HeldError

GRACE = 1.0  # seconds an open retries while a live owner holds the file

# Records this process made, removed at exit (by this process only: a
# forked child inherits the set, not the records).
_mine: dict[str, int] = {}
_mine_lock = threading.Lock()


def _at_exit() -> None:
    pid = os.getpid()
    with _mine_lock:
        entries = [e for e, p in _mine.items() if p == pid]
        _mine.clear()
    for e in entries:
        _remove(e)
        _rmdir(os.path.dirname(e))


atexit.register(_at_exit)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def _rmdir(path: str) -> None:
    try:
        os.rmdir(path)  # only while empty: other natives keep it
    except OSError:
        pass


def me() -> dict:
    h = {
        "runtime": "python",
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "since": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if prog:
        h["program"] = prog
    return h


def describe(h: dict) -> str:
    """A holder as the engine's and the npm package's messages name one."""
    s = str(h.get("runtime") or "another process")
    if h.get("program"):
        s += f" ({h['program']})"
    pid = h.get("pid")
    if isinstance(pid, int) and pid > 0:
        s += f" pid {pid}"
    if h.get("host"):
        s += f" on host {h['host']}"
    if h.get("since"):
        s += f" since {h['since']}"
    return s


def _held(path: str, record: str, h: dict, stale: bool) -> HeldError:
    msg = f"agentstate: {path} is open in {describe(h)}; a JavaScript process and SQLite's own locking cannot share one file at once: close it there first"
    if stale:
        msg += f"; if that process is gone, remove {record}"
    return HeldError(msg, holder=h, record=record, stale=stale)


def _alive(h: dict, host: str) -> str:
    """"yes", "no" or "unknown": whether the process h names is alive."""
    pid = h.get("pid")
    if not h.get("host") or h.get("host") != host or not isinstance(pid, int) or pid <= 0:
        return "unknown"
    if os.name != "posix":
        return "unknown"  # as natively: elsewhere liveness is not checked (os.kill would end it)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "no"
    except PermissionError:
        return "yes"
    except OSError:
        return "unknown"
    return "yes"


class _Retry(Exception):
    pass


def _write_entry(path: str, rec: dict) -> str:
    d = path + ".natives"
    body = json.dumps(rec, separators=(",", ":")).encode()
    host = "".join("_" if c in "/\\\0" else c for c in rec["host"])
    for _ in range(5):
        try:
            os.mkdir(d, 0o755)
        except FileExistsError:
            pass
        name = os.path.join(d, f"{host}.{rec['pid']}.{secrets.token_hex(4)}")
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
        except FileNotFoundError:
            continue  # the last native removed the directory meanwhile
        try:
            os.write(fd, body)
        except BaseException:
            os.close(fd)
            _remove(name)
            raise
        os.close(fd)
        return name
    raise OSError(errno.ENOENT, f"{d} keeps disappearing")


def _check_owner(path: str, host: str, writable: bool) -> None:
    owner = path + ".owner"
    try:
        with open(owner, "rb") as f:
            body = f.read()
    except FileNotFoundError:
        body = None
    if body is not None:
        try:
            h = json.loads(body)
        except ValueError:
            h = None
        if not isinstance(h, dict) or not h.get("runtime"):
            # Being written right now (it is created, then filled).
            raise _held(path, owner, {"runtime": "a JavaScript process"}, False)
        live = _alive(h, host)
        if live != "no":
            raise _held(path, owner, h, live == "unknown")
        if not writable:
            return
        # Stale: moved aside under a name of our own first, and put back if
        # another process replaced it in between.
        aside = f"{owner}.stale.{os.getpid()}.{secrets.token_hex(4)}"
        try:
            os.rename(owner, aside)
        except FileNotFoundError:
            raise _Retry() from None
        try:
            with open(aside, "rb") as f:
                moved = f.read()
        except OSError:
            moved = None
        if moved != body:
            try:
                os.link(aside, owner)  # fails if yet another owner came: fine
            except OSError:
                pass
            _remove(aside)
            raise _Retry()
        _remove(aside)
    if writable:
        # The switch against native opens earlier npm builds left.
        try:
            if os.path.isdir(path + "-shm") and not os.path.islink(path + "-shm"):
                os.rmdir(path + "-shm")
        except OSError:
            pass


def _try_register(path: str) -> Callable[[], None]:
    rec = me()
    entry = ""
    writable = True
    try:
        entry = _write_entry(path, rec)
    except OSError as e:
        if e.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise
        # Where this process cannot write, no Node process of its user
        # could take the file either; it still looks for an owner.
        writable = False
    if entry:
        with _mine_lock:
            _mine[entry] = rec["pid"]

    def release() -> None:
        if not entry:
            return
        with _mine_lock:
            _mine.pop(entry, None)
        _remove(entry)
        _rmdir(path + ".natives")

    try:
        for _ in range(5):
            try:
                _check_owner(path, rec["host"], writable)
                break
            except _Retry:
                continue
    except BaseException:
        release()
        raise
    return release


def register(path: str, wait: float = GRACE) -> Callable[[], None]:
    """Records this process as a user of the database file at path and
    checks that no Node process owns it; returns the function that removes
    the record. Retries for up to wait (at most a second) while a live Node
    process owns the file, then raises HeldError."""
    deadline = time.monotonic() + min(wait, GRACE)
    delay = 0.005
    while True:
        try:
            return _try_register(path)
        except HeldError:
            left = deadline - time.monotonic()
            if left <= 0:
                raise
            # Jittered, so that two processes that keep meeting stop meeting.
            time.sleep(min(delay / 2 + random.random() * delay, left))
            delay = min(2 * delay, 0.1)


def by_path(name: str) -> bool:
    """Whether an open of name is of a file by its path (what registers):
    not a "file:" URI, not an in-memory or temporary database."""
    return bool(name) and name != ":memory:" and not name.startswith("file:")
