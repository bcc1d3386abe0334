"""CPU per turn by saver method, AgentStateSaver beside SqliteSaver, on the
graph of langgraph_bench.py:

    python bench/method_cost.py [--turns 300] [--warmup 50] [--channels default,delta]
                                [--every 10] [--rounds 2]

Each saver runs a warm-up thread in its own file, then --turns turns in a
new file, with its put, put_writes, get_tuple, get_delta_channel_history and
get_next_version wrapped in timers of the calling thread's CPU
(time.thread_time: LangGraph calls puts from its background threads, each
call runs in one thread). Prints the process's CPU per turn and each
method's, inclusive (serde, the engine, SQLite): where the two savers
differ is where a turn's difference is. The savers alternate, --rounds
times.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import langgraph_bench as lb  # noqa: E402

METHODS = ("put", "put_writes", "get_tuple", "get_delta_channel_history", "get_next_version")


def timed(saver, spent: Counter, calls: Counter) -> None:
    for name in METHODS:
        fn = getattr(saver, name)

        def wrapper(*a, _fn=fn, _name=name, **k):
            t0 = time.thread_time()
            try:
                return _fn(*a, **k)
            finally:
                spent[_name] += time.thread_time() - t0
                calls[_name] += 1

        setattr(saver, name, wrapper)


def one(kind: str, channel: str, args, tmp: str) -> None:
    s, close = lb.open_saver(kind, os.path.join(tmp, f"warm-{kind}-{channel}.db"))
    lb.drive(lb.graph(s, channel, args.every), "warm", args.warmup)
    close()
    s, close = lb.open_saver(kind, os.path.join(tmp, f"{kind}-{channel}.db"))
    spent: Counter = Counter()
    calls: Counter = Counter()
    timed(s, spent, calls)
    cpu, _ = lb.drive(lb.graph(s, channel, args.every), "t", args.turns)
    close()
    n = args.turns
    parts = "  ".join(f"{m} {spent[m] / n * 1000:.2f} ({calls[m] / n:.1f})" for m in METHODS if calls[m])
    print(f"  {kind:<10} {cpu:6.2f} ms/turn; methods {sum(spent.values()) / n * 1000:5.2f}: {parts}")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--turns", type=int, default=300)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--channels", default="default,delta")
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    print("CPU ms per turn, and per saver method: ms per turn (calls per turn), inclusive")
    for channel in args.channels.split(","):
        print(f"{channel}:")
        for _ in range(args.rounds):
            tmp = tempfile.mkdtemp(prefix="agentstate-methods-")
            try:
                for kind in ("agentstate", "sqlite"):
                    one(kind, channel, args, tmp)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
