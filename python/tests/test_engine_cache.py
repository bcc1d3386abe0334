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


# ---- issue 42: the first run after `pip install` does not compile

SETUP = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "setup.py")
COMPILING = "agentstate: compiling the engine for this machine"


def module_file(tmp_path):
    """The module this package runs, as a file for AGENTSTATE_WASM (the
    build step copies it, the run time reads it: the same bytes)."""
    from langgraph.checkpoint.agentstate import _engine

    p = tmp_path / "agentstate.wasm"
    p.write_bytes(_engine._module_bytes())
    return p


def run_start(cache, wasm):
    env = dict(os.environ, AGENTSTATE_CACHE_DIR=str(cache), AGENTSTATE_WASM=str(wasm))
    r = subprocess.run([sys.executable, "-c", START], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
    return r.stderr


def test_the_build_step_compiles_the_engine_and_the_first_run_maps_it(tmp_path):
    """pip install runs setup.py's build_py: after the module is in the
    package it is compiled into the user's cache, so the first run says
    nothing and compiles nothing. A wasmtime the entry was not compiled by
    (an upgrade) compiles once, saying why in one line; the next run is
    silent again."""
    import wasmtime  # noqa: F401 - the build step compiles with the wasmtime of this environment
    from importlib.metadata import version

    cache, wasm = tmp_path / "cache", module_file(tmp_path)
    env = dict(os.environ, AGENTSTATE_CACHE_DIR=str(cache), AGENTSTATE_WASM=str(wasm))
    r = subprocess.run(
        [sys.executable, SETUP, "-q", "build_py", "-d", str(tmp_path / "build")],
        cwd=os.path.dirname(SETUP), env=env, capture_output=True, text=True, timeout=600,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert f"langgraph-checkpoint-agentstate: compiling the engine for this machine with wasmtime {version('wasmtime')}" in r.stdout
    [entry] = entries(cache)
    assert f"-wasmtime{version('wasmtime')}-" in entry
    stamp = os.path.getmtime(cache / entry)

    assert COMPILING not in run_start(cache, wasm)  # the first run maps the build's entry
    assert entries(cache) == [entry] and os.path.getmtime(cache / entry) == stamp

    # An entry of another wasmtime is not this one's: compiled again, once.
    old = entry.replace(f"-wasmtime{version('wasmtime')}-", "-wasmtime0.0.1-")
    os.rename(cache / entry, cache / old)
    err = run_start(cache, wasm)
    assert err.count(COMPILING) == 1, err
    assert f"the cache holds it for wasmtime 0.0.1, this is {version('wasmtime')}; cached in {cache}" in err
    assert len(entries(cache)) == 2  # the old one stays for environments still on 0.0.1
    assert COMPILING not in run_start(cache, wasm)


def test_precompile_writes_what_the_run_time_maps_and_never_raises(tmp_path, monkeypatch, caplog):
    import wasmtime
    from langgraph.checkpoint.agentstate import _cache, _engine

    wasm = wasmtime.wat2wasm('(module (func (export "answer") (result i32) i32.const 42))')
    d = tmp_path / "cache"
    monkeypatch.setenv("AGENTSTATE_CACHE_DIR", str(d))
    said = []
    path = _cache.precompile(wasm, say=said.append)
    assert path is not None and os.path.dirname(path) == str(d) and "compiled in" in said[-1]
    engine = wasmtime.Engine(_cache.engine_config())
    with caplog.at_level("INFO", logger="langgraph.checkpoint.agentstate"):
        module = _engine._compile(engine, wasm)
    assert caplog.text == ""  # mapped, not compiled
    store = wasmtime.Store(engine)
    assert wasmtime.Instance(store, module, []).exports(store)["answer"](store) == 42
    said.clear()
    assert _cache.precompile(wasm, say=said.append) == path and "already compiled" in said[0]

    # What the build cannot do, it says, and the build goes on.
    said.clear()
    assert _cache.precompile(b"not a module", say=said.append) is None
    assert "the engine was not compiled ahead" in said[-1] and "the first run compiles it" in said[-1]
    os.chmod(d, 0o777)
    said.clear()
    assert _cache.precompile(wasm, say=said.append) is None and "others can write it" in said[0]
    monkeypatch.setenv("AGENTSTATE_CACHE_DIR", "off")
    said.clear()
    assert _cache.precompile(wasm, say=said.append) is None and "AGENTSTATE_CACHE_DIR=off" in said[0]
