"""Async chains under load: N `ainvoke` turns of a chain of K `async def`
nodes on one thread, with the loop's default executor or one of a given
size, counting failures and the slowest turn (issue: an async graph must
never stall on a saver call queued behind another).

    python bench/async_chain.py --nodes 40 --turns 1000 --executor default
    python bench/async_chain.py --nodes 40 --turns 1000 --executor 1
    python bench/async_chain.py --saver sqlite ...   # AsyncSqliteSaver, same graph

Prints one line per run: turns, failures, the slowest turn and the median, in
seconds, and exits 1 when a turn failed or took longer than --max-turn.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import os
import statistics
import sys
import tempfile
import time
import traceback
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict


class S(TypedDict):
    last: str
    n: int


def chain(k: int, checkpointer):
    g = StateGraph(S)

    def node(i):
        async def f(s):
            await asyncio.sleep(0)
            return {"last": f"node {i}", "n": s.get("n", 0) + 1}

        return f

    prev = START
    for i in range(k):
        g.add_node(f"n{i}", node(i))
        g.add_edge(prev, f"n{i}")
        prev = f"n{i}"
    return g.compile(checkpointer=checkpointer)


async def run(args) -> int:
    if args.executor != "default":
        asyncio.get_running_loop().set_default_executor(concurrent.futures.ThreadPoolExecutor(int(args.executor)))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "chain.db")
        if args.saver == "sqlite":
            from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

            cm = AsyncSqliteSaver.from_conn_string(path)
        else:
            from langgraph.checkpoint.agentstate import AgentStateSaver

            cm = AgentStateSaver.from_conn_string(path)
        async with cm as saver:
            graph = chain(args.nodes, saver)
            times, failures = [], 0
            for t in range(args.turns):
                cfg = {"configurable": {"thread_id": f"t{t % args.threads}"}}
                start = time.perf_counter()
                try:
                    await graph.ainvoke({"last": "", "n": 0}, cfg, durability=args.durability)
                except Exception:  # noqa: BLE001 - counted and shown once
                    failures += 1
                    if failures == 1:
                        traceback.print_exc()
                times.append(time.perf_counter() - start)
            state = await graph.aget_state({"configurable": {"thread_id": "t0"}})
            if state.values.get("n") != args.nodes:
                print(f"wrong final state: n={state.values.get('n')}, want {args.nodes}", file=sys.stderr)
                failures += 1
    slowest = max(times)
    print(
        f"saver={args.saver} nodes={args.nodes} executor={args.executor} durability={args.durability} "
        f"turns={args.turns} failures={failures} slowest={slowest:.3f}s median={statistics.median(times):.4f}s"
    )
    return 1 if failures or slowest > args.max_turn else 0


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, default=40)
    p.add_argument("--turns", type=int, default=1000)
    p.add_argument("--threads", type=int, default=1, help="graph threads the turns cycle through")
    p.add_argument("--executor", default="default", help="'default' or a thread count")
    p.add_argument("--durability", default="async", choices=["sync", "async", "exit"])
    p.add_argument("--saver", default="agentstate", choices=["agentstate", "sqlite"])
    p.add_argument("--max-turn", type=float, default=1.0)
    sys.exit(asyncio.run(run(p.parse_args())))


if __name__ == "__main__":
    main()
