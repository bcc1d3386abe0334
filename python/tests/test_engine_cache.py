"""The compiled-module cache: written once, used by the next process,
a damaged entry compiled again, old entries pruned."""

import os
import subprocess
import sys
import time

START = "from langgraph.checkpoint.agentstate import AgentStateSaver; s = AgentStateSaver(); s.close(); print('ok')"


def start(cache):
    env = dict(os.environ, AGENTSTATE_CACHE_DIR=str(cache))
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", START], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
    return time.perf_counter() - t


def entries(cache):
    return sorted(p for p in os.listdir(cache) if p.endswith(".cwasm"))


def test_the_cache_is_written_once_and_used(tmp_path):
    cache = tmp_path / "cache"
    start(cache)
    first = entries(cache)
    assert len(first) == 1
    stamp = os.path.getmtime(cache / first[0])
    start(cache)
    assert entries(cache) == first and os.path.getmtime(cache / first[0]) == stamp  # read, not rewritten
    # A damaged entry is compiled again and replaced, not fatal.
    (cache / first[0]).write_bytes(b"not a compiled module")
    start(cache)
    assert entries(cache) == first and (cache / first[0]).stat().st_size > 1000


def test_old_entries_are_pruned(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    for i in range(6):
        p = cache / f"engine-{i:024d}-wasmtime0-x-y.cwasm"
        p.write_bytes(b"old")
        os.utime(p, (1_000_000 + i, 1_000_000 + i))
    start(cache)
    left = entries(cache)
    assert len(left) == 4  # the new one and the three newest old ones
    assert [p for p in left if p.startswith("engine-00000")] == [f"engine-{i:024d}-wasmtime0-x-y.cwasm" for i in (3, 4, 5)]


def test_the_cache_can_be_turned_off(tmp_path):
    env = dict(os.environ, AGENTSTATE_CACHE_DIR="off", HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "xdg"))
    r = subprocess.run([sys.executable, "-c", START], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert not (tmp_path / "xdg").exists() and not (tmp_path / ".cache").exists()
