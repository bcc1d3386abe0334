"""Where a process's first open goes (issue 42): importing the package,
the engine's configuration, compiling the module or mapping it from the
cache, instantiating it, the first call. Wall and CPU seconds (CPU counts
wasmtime's compile threads), one line per phase.

    AGENTSTATE_CACHE_DIR=$(mktemp -d) python bench/first_run.py   # nothing cached: compiles
    python bench/first_run.py                                      # the cache pip install filled

The compile's wall time is its CPU time over the cores it gets: on a busy
machine compare the CPU column.
"""

from __future__ import annotations

import time

_w, _c = time.perf_counter(), time.process_time()


def lap(name: str) -> None:
    global _w, _c
    w, c = time.perf_counter(), time.process_time()
    print(f"{name:34} {w - _w:6.2f} s wall {c - _c:6.2f} s CPU", flush=True)
    _w, _c = w, c


from langgraph.checkpoint.agentstate import AgentStateSaver, _engine  # noqa: E402

lap("import the package")
_compile = _engine._compile


def timed_compile(engine, wasm):
    lap("engine configuration")
    module = _compile(engine, wasm)
    lap("compile, or map from the cache")
    return module


_engine._compile = timed_compile
_engine.engine()
lap("instantiate and _initialize")
AgentStateSaver(":memory:").close()
lap("first call (open :memory:)")
