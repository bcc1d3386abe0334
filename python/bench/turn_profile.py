"""Where a turn of the LangGraph chat graph goes on AgentStateSaver: the
graph of bench/langgraph_bench.py, the agentstate side only, with CPU
timers (time.thread_time, every thread) around each layer:

    python bench/turn_profile.py [--turns 400] [--channels default,delta] [--cprofile FILE]

Layers (exclusive, ms of CPU per turn):
  serde      the saver's serde.dumps_typed / loads_typed (LangGraph's msgpack)
  request    the saver's request building and the JSON of requests and results
             (saver methods minus what they call below)
  crossing   framing, copying into and out of the module's memory, the call
  engine     Go inside the module (the export's time minus the host's)
  host       the host SQLite imports (apsw and the value encoding in Python)
  langgraph  the rest of the process's CPU (the graph, channels, LangGraph's
             own bookkeeping, the checkpoint copies it makes)

--cprofile FILE also writes a cProfile of the main thread (LangGraph runs
puts and writes in its background threads: py-spy sees those,
`py-spy record -r 1000 -f raw -o FILE -- python bench/turn_profile.py`).

--statements also prints the host's CPU per SQL statement (the engine's
statements by their text, the most costly first: CPU per turn, runs per turn,
CPU per run), each including the SQL functions it calls back into Go
(agentstate_version).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from collections import defaultdict

sys.path.insert(0, os.path.dirname(__file__))

from langgraph_bench import graph  # noqa: E402

from langchain_core.messages import HumanMessage  # noqa: E402

ACC: dict[str, float] = defaultdict(float)
CALLS: dict[str, int] = defaultdict(int)
STMT: dict[str, list] = defaultdict(lambda: [0.0, 0])  # SQL text -> [CPU, runs]
_tls = threading.local()


def timed(layer: str, fn):
    """fn timed as layer, exclusive of timed calls inside it."""

    def wrapper(*a, **k):
        stack = getattr(_tls, "stack", None)
        if stack is None:
            stack = _tls.stack = []
        t0 = time.thread_time()
        stack.append(0.0)
        try:
            return fn(*a, **k)
        finally:
            inner = stack.pop()
            dt = time.thread_time() - t0
            ACC[layer] += dt - inner
            CALLS[layer] += 1
            if stack:
                stack[-1] += dt

    return wrapper


def by_statement(fn, counts: bool):
    """fn (SQLiteHost.run or next) timed by the text of its statement."""

    def wrapper(self, stmt, *a):
        s = self.stmts.get(stmt)
        t0 = time.thread_time()
        try:
            return fn(self, stmt, *a)
        finally:
            acc = STMT[s.sql if s is not None else "?"]
            acc[0] += time.thread_time() - t0
            acc[1] += counts

    return wrapper


def instrument_classes(statements: bool) -> None:
    """Before the engine starts: its imports are bound at instantiation."""
    from langgraph.checkpoint.agentstate import _engine, _sqlite_host

    H = _sqlite_host.SQLiteHost
    if statements:
        H.run = by_statement(H.run, True)
        H.next = by_statement(H.next, False)
    for name in ("run", "run_batch", "next", "prepare", "reset", "finalize", "autocommit"):
        setattr(H, name, timed("host", getattr(H, name)))
    E = _engine.Engine
    E.call_raw = timed("crossing", E.call_raw)
    E.call = timed("request", E.call)
    _engine._decode_result = timed("request", _engine._decode_result)


def instrument(saver) -> None:
    eng = saver.db._engine
    # The export: its time is the engine's plus the host functions it calls
    # (which are timed, and so subtracted, as "host").
    if not getattr(eng, "_timed", False):
        eng._call = timed("engine", eng._call)
        eng._timed = True
    s = saver.serde
    s.dumps_typed = timed("serde", s.dumps_typed)
    s.loads_typed = timed("serde", s.loads_typed)
    for name in ("put", "put_writes", "get_tuple", "get_delta_channel_history", "list"):
        setattr(saver, name, timed("request", getattr(saver, name)))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--turns", type=int, default=400)
    p.add_argument("--channels", default="default,delta")
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--cprofile", default="")
    p.add_argument("--no-timers", action="store_true", help="no wrappers (for py-spy)")
    p.add_argument("--statements", action="store_true", help="the host's CPU per SQL statement")
    args = p.parse_args()
    from langgraph.checkpoint.agentstate import AgentStateSaver

    if not args.no_timers:
        instrument_classes(args.statements)
    tmp = tempfile.mkdtemp(prefix="agentstate-py-prof-")
    try:
        for channel in args.channels.split(","):
            ACC.clear()
            CALLS.clear()
            STMT.clear()
            s = AgentStateSaver(os.path.join(tmp, f"{channel}.db"))
            if not args.no_timers:
                instrument(s)
            g = graph(s, channel, args.every)
            cfg = {"configurable": {"thread_id": "t"}}
            prof = None
            if args.cprofile:
                import cProfile

                prof = cProfile.Profile()
                prof.enable()
            c0 = time.process_time()
            for k in range(args.turns):
                from langgraph_bench import text

                g.invoke({"messages": [HumanMessage(id=f"human-{k}", content=text(1000 + k, 200))]}, cfg)
            total = time.process_time() - c0
            if prof is not None:
                prof.disable()
                prof.dump_stats(f"{args.cprofile}.{channel}")
            s.close()
            n = args.turns
            print(f"{channel}: {total / n * 1000:.2f} ms CPU per turn over {n} turns")
            if args.no_timers:
                continue
            rest = total - sum(ACC.values())
            for layer in ("langgraph", "serde", "request", "crossing", "engine", "host"):
                v = rest if layer == "langgraph" else ACC[layer]
                calls = "" if layer == "langgraph" else f"  ({CALLS[layer] / n:.1f} calls a turn)"
                print(f"  {layer:<10} {v / n * 1000:7.2f} ms  {v / total * 100:5.1f}%{calls}")
            if args.statements:
                print("  host statements (CPU ms a turn, runs a turn, us a run, SQL):")
                for sql, (cpu, runs) in sorted(STMT.items(), key=lambda kv: -kv[1][0])[:12]:
                    text_ = " ".join(sql.split())
                    if len(text_) > 100:
                        text_ = text_[:50] + " ... " + text_[-45:]
                    print(f"    {cpu / n * 1000:6.3f} {runs / n:6.2f} {cpu / max(runs, 1) * 1e6:7.1f}  {text_}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
