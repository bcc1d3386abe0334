"""A saver's puts and put_writes replayed in one thread, for a profile of
what one put costs:

    python bench/put_replay.py [--saver agentstate|sqlite] [--channel delta|default]
                               [--turns 150] [--every 10] [--top 25]

Runs the graph of langgraph_bench.py for --turns turns, recording each put
and put_writes (deep copies of their arguments, in the order they finished),
then replays them on a new file of the same saver in this thread: the first
third unmeasured, the rest under cProfile. Prints the CPU per put (with its
share of the writes) and cProfile's functions by own time: for
AgentStateSaver, wasmtime_func_call_unchecked's own time is the engine's Go,
apsw's execute is SQLite, and _fastcall's cb is the host's Python around
each statement. For a profile of the Go side, run it under
`perf record -g` with AGENTSTATE_PERFMAP=1 and a module built with symbols
(docs/python.md).
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import os
import pstats
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import langgraph_bench as lb  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--saver", default="agentstate")
    p.add_argument("--channel", default="delta")
    p.add_argument("--turns", type=int, default=150)
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--top", type=int, default=25)
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="agentstate-replay-")
    try:
        s, close = lb.open_saver(args.saver, os.path.join(tmp, "recorded.db"))
        log: list = []
        lock = threading.Lock()
        for name in ("put", "put_writes"):
            fn = getattr(s, name)

            def recorder(*a, _fn=fn, _name=name, **k):
                a2, k2 = copy.deepcopy(a), copy.deepcopy(k)
                r = _fn(*a, **k)
                with lock:  # in the order they finished: a put before its writes' retry
                    log.append((_name, a2, k2))
                return r

            setattr(s, name, recorder)
        lb.drive(lb.graph(s, args.channel, args.every), "t", args.turns)
        close()
        s, close = lb.open_saver(args.saver, os.path.join(tmp, "replayed.db"))
        first = len(log) // 3
        for name, a, k in log[:first]:
            getattr(s, name)(*a, **k)
        rest = log[first:]
        prof = cProfile.Profile()
        c0 = time.process_time()
        prof.enable()
        for name, a, k in rest:
            getattr(s, name)(*a, **k)
        prof.disable()
        cpu = time.process_time() - c0
        puts = sum(1 for name, _, _ in rest if name == "put")
        close()
        print(f"{args.saver}, {args.channel} channel: {cpu / puts * 1000:.3f} ms of CPU per put with its share of put_writes ({puts} puts, {len(rest) - puts} put_writes; under cProfile)")
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
