"""The compiled engine's cache: compiling the 9 MB module takes about 8 s
of CPU (17-37 s of waiting measured on a busy 2-core machine), mapping a compiled
copy about 0.1 s.

The compiled form is kept in a cache directory (``AGENTSTATE_CACHE_DIR``,
else ``$XDG_CACHE_HOME`` or ``~/.cache``, under
``langgraph-checkpoint-agentstate``; ``off`` disables it), keyed by the
module's hash, wasmtime's version and the machine. ``pip install`` writes
the entry (setup.py calls ``precompile`` once the module is built), so the
first run finds it; a run that finds none (another wasmtime, the cache
removed, the package installed from a wheel built elsewhere) compiles,
says so in one line on the package's logger, and writes it.

This module imports only the standard library and wasmtime: setup.py
loads it by its path, in pip's build environment, where the package's own
imports (apsw) are not installed.
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import stat
import tempfile
import time
from typing import Callable

import wasmtime

_log = logging.getLogger("langgraph.checkpoint.agentstate")
_DIGEST_CHARS = 32  # of the entry's SHA-256, in its name
_CACHE_ENTRIES = 4
_STALE_TMP_SECONDS = 3600


def engine_config(parallel: bool = True) -> wasmtime.Config:
    """The configuration the engine runs with. The build step compiles
    with it too: wasmtime refuses a compiled module whose memory settings
    differ from the engine's."""
    cfg = wasmtime.Config()
    # The module's memory never moves (a 32-bit memory fits the 4 GiB
    # reservation), so its base address is read once.
    cfg.memory_reservation = 4 << 30
    cfg.memory_may_move = False
    # Functions are compiled on every core (wasmtime's default; a forked
    # child has no compile threads, see _engine._before_fork).
    cfg.parallel_compilation = parallel
    return cfg


def cache_dir() -> str | None:
    d = os.environ.get("AGENTSTATE_CACHE_DIR")
    if d == "off":
        return None
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "langgraph-checkpoint-agentstate")
    return d


def wasmtime_version() -> str:
    try:
        from importlib.metadata import version

        return version("wasmtime")
    except Exception:  # noqa: BLE001 - no metadata: the module's own check refuses a foreign build
        return "unknown"


def _key(wasm: bytes) -> str:
    return hashlib.sha256(wasm).hexdigest()[:24]


def _prefix(wasm: bytes) -> str:
    return f"engine-{_key(wasm)}-wasmtime{wasmtime_version()}-{platform.machine()}-{platform.system()}-"


def _lookup(engine: wasmtime.Engine, d: str, wasm: bytes) -> tuple[wasmtime.Module, str] | None:
    """The sound entry for wasm in d, mapped, and its path; damaged ones
    are removed."""
    prefix = _prefix(wasm)
    try:
        names = sorted(n for n in os.listdir(d) if n.startswith(prefix) and n.endswith(".cwasm"))
    except OSError:
        names = []
    for name in names:
        path = os.path.join(d, name)
        module = _load_checked(engine, path, name[len(prefix) : -len(".cwasm")])
        if module is not None:
            return module, path
        _log.warning("agentstate: the engine cache entry %s is damaged: removed, compiling again", path)
        try:
            os.remove(path)
        except OSError:
            pass
    return None


def _other_wasmtimes(d: str, wasm: bytes) -> list[str]:
    """The wasmtime versions of d's entries for this module other than the
    one running (an upgrade makes them useless: wasmtime maps only what it
    compiled itself)."""
    head = f"engine-{_key(wasm)}-wasmtime"
    tail = f"-{platform.machine()}-{platform.system()}-"
    mine = wasmtime_version()
    found = set()
    try:
        for n in os.listdir(d):
            if n.startswith(head) and n.endswith(".cwasm") and tail in n:
                v = n[len(head) : n.index(tail, len(head))]
                if v != mine:
                    found.add(v)
    except OSError:
        pass
    return sorted(found)


def _store(d: str, wasm: bytes, module: wasmtime.Module) -> str | None:
    """Writes module's entry into d; its path, or None if the disk refused."""
    try:
        data = module.serialize()
        path = os.path.join(d, _prefix(wasm) + hashlib.sha256(data).hexdigest()[:_DIGEST_CHARS] + ".cwasm")
        _write_synced(d, path, data)
        _prune(d, keep=path)
        return path
    except OSError:
        return None  # a full or read-only disk: run without the cache


def compile_cached(engine: wasmtime.Engine, wasm: bytes) -> wasmtime.Module:
    """The compiled module: from the cache when a sound entry is there,
    else compiled (saying so in one line: it is seconds of silence
    otherwise) and written to the cache.

    The cache runs native code from its directory in every agentstate
    process, so it trusts that directory only when this user owns it and
    no one else can write it (a directory that fails this is not used:
    the engine is compiled in memory, every process). An entry is named
    after the SHA-256 of its bytes, checked before the entry is mapped: a
    damaged entry (a page of zeros, one flipped byte, a truncated file) is
    removed and compiled again, never run. Entries are written to a
    temporary file, synced, renamed into place and the directory synced."""
    d = cache_dir()
    if d is None:
        _log.warning("agentstate: compiling the engine for this machine (AGENTSTATE_CACHE_DIR=off: in every process, %s)", _HOW_LONG)
        return wasmtime.Module(engine, wasm)
    why = _untrusted(d)
    if why is not None:
        _log.warning(
            "agentstate: not using the engine cache %s: %s; compiling the engine in memory (in every process, %s)", d, why, _HOW_LONG
        )
        return wasmtime.Module(engine, wasm)
    found = _lookup(engine, d, wasm)
    if found is not None:
        return found[0]
    others = _other_wasmtimes(d, wasm)
    because = f"; the cache holds it for wasmtime {', '.join(others)}, this is {wasmtime_version()}" if others else ""
    _log.warning("agentstate: compiling the engine for this machine, once (%s)%s; cached in %s", _HOW_LONG, because, d)
    t = time.perf_counter()
    module = wasmtime.Module(engine, wasm)
    path = _store(d, wasm, module)
    _log.info("agentstate: engine compiled in %.1f s; %s", time.perf_counter() - t, f"cached as {path}" if path else "not cached (the disk refused it)")
    return module


# What the first-compile line says it costs: measured with the 9.4 MB
# module of 2026-12-07 (docs/python.md, "Start-up").
_HOW_LONG = "about 8 s of CPU; up to 40 s on a busy 2-core machine"


def precompile(wasm: bytes, say: Callable[[str], None] = print) -> str | None:
    """Compiles wasm with this wasmtime and writes the entry the runtime
    looks for into the user's cache: what ``pip install`` does once the
    module is built, so the first run maps it instead of compiling.
    Returns the entry's path, or None (after saying why) if it could not
    be written; never raises, since the runtime compiles when it finds
    no entry."""
    try:
        d = cache_dir()
        if d is None:
            say("langgraph-checkpoint-agentstate: AGENTSTATE_CACHE_DIR=off: the engine is not compiled ahead; each run compiles it")
            return None
        why = _untrusted(d)
        if why is not None:
            say(f"langgraph-checkpoint-agentstate: not compiling the engine ahead into {d}: {why}")
            return None
        engine = wasmtime.Engine(engine_config())
        found = _lookup(engine, d, wasm)
        if found is not None:
            say(f"langgraph-checkpoint-agentstate: the engine is already compiled for wasmtime {wasmtime_version()}: {found[1]}")
            return found[1]
        say(
            f"langgraph-checkpoint-agentstate: compiling the engine for this machine with wasmtime {wasmtime_version()} "
            f"({_HOW_LONG}), so that the first run does not"
        )
        t = time.perf_counter()
        module = wasmtime.Module(engine, wasm)
        path = _store(d, wasm, module)
        if path is None:
            say(f"langgraph-checkpoint-agentstate: could not write the compiled engine into {d}; the first run compiles it")
            return None
        say(f"langgraph-checkpoint-agentstate: compiled in {time.perf_counter() - t:.1f} s: {path}")
        return path
    except Exception as e:  # noqa: BLE001 - the build goes on: the runtime compiles what is missing
        say(f"langgraph-checkpoint-agentstate: the engine was not compiled ahead ({type(e).__name__}: {e}); the first run compiles it")
        return None


def _untrusted(d: str) -> str | None:
    """Why the cache directory d (created if missing, for this user only)
    is not to be trusted, or None."""
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        st = os.stat(d)
    except OSError as e:
        return f"cannot create or read it ({e.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"it is owned by uid {st.st_uid}, not by this user (uid {os.getuid()})"
    if st.st_mode & 0o022:
        return f"others can write it (mode {stat.S_IMODE(st.st_mode):o}; chmod go-w to use it)"
    return None


def _load_checked(engine: wasmtime.Engine, path: str, digest: str) -> wasmtime.Module | None:
    """The entry at path if its bytes have the digest its name gives, else
    None. It is mapped from the descriptor that was checked, not opened
    again by name (a file renamed over it meanwhile is not run)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o022 or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read()
        if len(data) != st.st_size or hashlib.sha256(data).hexdigest()[:_DIGEST_CHARS] != digest:
            return None
        try:
            if os.path.isdir("/proc/self/fd"):
                del data
                return wasmtime.Module.deserialize_file(engine, f"/proc/self/fd/{fd}")
            return wasmtime.Module.deserialize(engine, data)
        except Exception:  # noqa: BLE001 - sound bytes of a foreign build (another wasmtime): compile again
            return None
    except OSError:
        return None
    finally:
        os.close(fd)


def _write_synced(d: str, path: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".engine-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)  # atomic: a concurrent process sees all or nothing
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
    try:
        dfd = os.open(d, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def _prune(d: str, keep: str) -> None:
    """Keeps the newest few compiled modules (other builds, other wasmtime
    versions, other environments sharing the directory), removes the rest
    and the temporary files of writers that died an hour ago or more."""
    entries = []
    now = time.time()
    for name in os.listdir(d):
        p = os.path.join(d, name)
        if name.startswith("engine-") and name.endswith(".cwasm") and p != keep:
            try:
                entries.append((os.path.getmtime(p), p))
            except OSError:
                pass
        elif name.startswith(".engine-") and name.endswith(".tmp"):
            try:
                if now - os.path.getmtime(p) > _STALE_TMP_SECONDS:
                    os.remove(p)
            except OSError:
                pass
    entries.sort(reverse=True)
    for _, p in entries[_CACHE_ENTRIES - 1 :]:
        try:
            os.remove(p)
        except OSError:
            pass


if __name__ == "__main__":  # setup.py, in the environment being installed into: python -I _cache.py MODULE
    import sys

    with open(sys.argv[1], "rb") as f:
        precompile(f.read(), say=lambda line: print(line, flush=True))
