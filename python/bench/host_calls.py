"""Host calls and SQL statements per turn of langgraph_bench.py's chat graph
on AgentStateSaver, async (ainvoke, the a* methods) or sync:

    python bench/host_calls.py [--turns 100] [--channel delta|default] [--sync]

Counts the SQLite host's calls (``run``: one statement alone;
``run_batch``: statements the driver queued, with the one after them) and
every statement run, by its SQL: how many a turn ran and how many of those
went alone. A warm-up thread of 20 turns comes first, uncounted.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))

from langgraph.checkpoint.agentstate import _sqlite_host  # noqa: E402

H = _sqlite_host.SQLiteHost
STMTS: collections.Counter = collections.Counter()
ALONE: collections.Counter = collections.Counter()
CALLS: collections.Counter = collections.Counter()
_run, _batch, _one = H.run, H.run_batch, H._run


def run(self, stmt, *a):
    s = self.stmts.get(stmt)
    ALONE[s.sql if s else "?"] += 1
    CALLS["run"] += 1
    return _run(self, stmt, *a)


def run_batch(self, *a):
    CALLS["run_batch"] += 1
    return _batch(self, *a)


def one(self, s, *a):
    STMTS[s.sql] += 1
    return _one(self, s, *a)


# Before the engine starts: its imports are bound at instantiation.
H.run, H.run_batch, H._run = run, run_batch, one

from langgraph_bench import adrive, aopen_saver, drive, graph, open_saver  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--turns", type=int, default=100)
    p.add_argument("--channel", default="delta")
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--sync", action="store_true")
    args = p.parse_args()
    d = tempfile.mkdtemp()

    async def arun() -> None:
        saver, _ = await aopen_saver("agentstate", os.path.join(d, "x.db"))
        g = graph(saver, args.channel, args.every, aio=True)
        await adrive(g, "warm-up", 20)
        for c in (STMTS, ALONE, CALLS):
            c.clear()
        await adrive(g, "t", args.turns)

    if args.sync:
        saver, _ = open_saver("agentstate", os.path.join(d, "x.db"))
        g = graph(saver, args.channel, args.every)
        drive(g, "warm-up", 20)
        for c in (STMTS, ALONE, CALLS):
            c.clear()
        drive(g, "t", args.turns)
    else:
        asyncio.run(arun())
    n = args.turns
    calls = sum(CALLS.values())
    print(f"{'sync' if args.sync else 'async'}, {args.channel}: {calls / n:.2f} host calls a turn "
          f"({CALLS['run'] / n:.2f} run, {CALLS['run_batch'] / n:.2f} run_batch), "
          f"{sum(STMTS.values()) / n:.2f} statements")
    print("  runs a turn, of them alone, SQL")
    for q, k in STMTS.most_common():
        print(f"  {k / n:6.2f} {ALONE[q] / n:6.2f}  {' '.join(q.split())[:100]}")


if __name__ == "__main__":
    main()
