"""The same LangGraph chat graph on AgentStateSaver and on LangGraph's
SqliteSaver (langgraph-checkpoint-sqlite 3.1.2), for both kinds of messages
channel, in one process:

    python bench/langgraph_bench.py [--turns 400] [--rounds 1] [--channels default,delta]
                                    [--every 10] [--warmup 50] [--json FILE]
    python bench/langgraph_bench.py --async ...   # async node, ainvoke; the peer is AsyncSqliteSaver
    python bench/langgraph_bench.py --cold agentstate|sqlite   # one fresh-process start
    python bench/langgraph_bench.py --rss agentstate|sqlite [--channels default]

A turn is one invoke: a 200-byte human message in, an 800-byte AI message
out (pseudo-English words, as wasm/bench/langgraph.bench.mjs). The messages
channel is LangGraph's default (add_messages: the whole list is a channel
value at every step) or a DeltaChannel (_messages_delta_reducer, a snapshot
every --every updates). Both savers run the same graph with the same
messages; the final states must be equal or the run fails.

Measured per run: the bytes of the database files after close; CPU time of
this process per turn (time.process_time, the measured turns only: a
warm-up thread of --warmup turns in its own file comes first); get_state of
the head after reopening the file, cold (the first call) and warm (the
median of the next five), in CPU time. --rounds R alternates the savers
(A B A B ...) and prints medians, ranges and the ratio of each pair.

--cold runs one start in this process (import, open a new file, put one
checkpoint, get_tuple it, close) and prints its timings; time the whole
process from outside (/usr/bin/time, alternating the savers) to compare. --rss runs --turns turns and
prints the process's peak RSS.
"""



import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time

T0 = time.perf_counter()

WORDS = "the agent model tool call result answer question search file plan step memory context thread checkpoint state message summary".split()


def text(seed: int, n: int) -> str:
    out = []
    x = (seed * 2654435761) & 0xFFFFFFFF
    size = 0
    while size < n:
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
        w = WORDS[x % len(WORDS)]
        out.append(w)
        size += len(w) + (1 if size else 0)
    return " ".join(out)[:n]


def open_saver(kind: str, path: str):
    if kind == "agentstate":
        from langgraph.checkpoint.agentstate import AgentStateSaver

        s = AgentStateSaver(path)
        return s, s.close
    if kind == "sqlite":
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(path, check_same_thread=False)
        s = SqliteSaver(conn)
        s.setup()
        return s, conn.close
    raise SystemExit(f"unknown saver {kind}")


async def aopen_saver(kind: str, path: str):
    """The async savers: AgentStateSaver's a* methods, AsyncSqliteSaver on
    aiosqlite (--async)."""
    if kind == "agentstate":
        return open_saver(kind, path)
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    conn = await aiosqlite.connect(path)
    s = AsyncSqliteSaver(conn)
    await s.setup()
    return s, conn.close


def graph(checkpointer, channel: str, every: int, aio: bool = False):
    from typing import Annotated

    from langchain_core.messages import AIMessage, AnyMessage
    from langgraph.graph import END, START, MessagesState, StateGraph
    from typing_extensions import TypedDict

    if channel == "delta":
        from langgraph.channels.delta import DeltaChannel
        from langgraph.graph.message import _messages_delta_reducer

        class S(TypedDict):
            messages: Annotated[list[AnyMessage], DeltaChannel(_messages_delta_reducer, snapshot_frequency=every)]

        state = S
    else:
        state = MessagesState

    def agent(s):
        n = len(s["messages"])
        return {"messages": [AIMessage(id=f"ai-{n}", content=text(n, 800))]}

    if aio:
        sync_agent = agent

        async def agent(s):  # noqa: F811 - the async graph's node
            return sync_agent(s)

    return StateGraph(state).add_node("agent", agent).add_edge(START, "agent").add_edge("agent", END).compile(checkpointer=checkpointer)


def drive(g, thread: str, n: int) -> tuple[float, float]:
    from langchain_core.messages import HumanMessage

    cfg = {"configurable": {"thread_id": thread}}
    c0, w0 = time.process_time(), time.perf_counter()
    for k in range(n):
        g.invoke({"messages": [HumanMessage(id=f"human-{k}", content=text(1000 + k, 200))]}, cfg)
    return (time.process_time() - c0) / n * 1000, (time.perf_counter() - w0) / n * 1000


async def adrive(g, thread: str, n: int) -> tuple[float, float]:
    from langchain_core.messages import HumanMessage

    cfg = {"configurable": {"thread_id": thread}}
    c0, w0 = time.process_time(), time.perf_counter()
    for k in range(n):
        await g.ainvoke({"messages": [HumanMessage(id=f"human-{k}", content=text(1000 + k, 200))]}, cfg)
    return (time.process_time() - c0) / n * 1000, (time.perf_counter() - w0) / n * 1000


async def aone_run(kind: str, channel: str, args, tmp: str, r: int) -> dict:
    """one_run with ainvoke and aget_state on the async savers."""
    warm = os.path.join(tmp, f"warm-{kind}-{channel}-{r}.db")
    s, close = await aopen_saver(kind, warm)
    await adrive(graph(s, channel, args.every, True), "warm", args.warmup)
    await _close(close)
    path = os.path.join(tmp, f"{kind}-{channel}-{r}.db")
    s, close = await aopen_saver(kind, path)
    cpu, wall = await adrive(graph(s, channel, args.every, True), "t", args.turns)
    await _close(close)
    s, close = await aopen_saver(kind, path)
    g = graph(s, channel, args.every, True)
    cfg = {"configurable": {"thread_id": "t"}}
    c0 = time.process_time()
    st = await g.aget_state(cfg)
    cold = (time.process_time() - c0) * 1000
    warms = []
    for _ in range(5):
        c0 = time.process_time()
        await g.aget_state(cfg)
        warms.append((time.process_time() - c0) * 1000)
    await _close(close)
    return _result(kind, channel, path, cpu, wall, cold, warms, st.values["messages"])


async def _close(close) -> None:
    r = close()
    if hasattr(r, "__await__"):
        await r


def size(path: str) -> int:
    return sum(os.path.getsize(path + s) for s in ("", "-wal", "-shm", "-journal") if os.path.isfile(path + s))


def one_run(kind: str, channel: str, args, tmp: str, r: int) -> dict:
    warm = os.path.join(tmp, f"warm-{kind}-{channel}-{r}.db")
    s, close = open_saver(kind, warm)
    drive(graph(s, channel, args.every), "warm", args.warmup)
    close()
    path = os.path.join(tmp, f"{kind}-{channel}-{r}.db")
    s, close = open_saver(kind, path)
    g = graph(s, channel, args.every)
    cpu, wall = drive(g, "t", args.turns)
    close()
    s, close = open_saver(kind, path)
    g = graph(s, channel, args.every)
    cfg = {"configurable": {"thread_id": "t"}}
    c0 = time.process_time()
    st = g.get_state(cfg)
    cold = (time.process_time() - c0) * 1000
    warms = []
    for _ in range(5):
        c0 = time.process_time()
        g.get_state(cfg)
        warms.append((time.process_time() - c0) * 1000)
    close()
    return _result(kind, channel, path, cpu, wall, cold, warms, st.values["messages"])


def _result(kind, channel, path, cpu, wall, cold, warms, msgs) -> dict:
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    raw = len(JsonPlusSerializer().dumps_typed(msgs)[1])
    return {
        "saver": kind,
        "channel": channel,
        "bytes": size(path),
        "cpu_ms_per_turn": cpu,
        "wall_ms_per_turn": wall,
        "get_state_cold_ms": cold,
        "get_state_warm_ms": statistics.median(warms),
        "raw_bytes": raw,
        "final": [(m.type, m.id, m.content) for m in msgs],
    }


def compare(args) -> None:
    tmp = tempfile.mkdtemp(prefix="agentstate-py-bench-")
    results = {}
    try:
        for channel in args.channels.split(","):
            for r in range(args.rounds):
                for kind in ("agentstate", "sqlite"):
                    if args.aio:
                        import asyncio

                        res = asyncio.run(aone_run(kind, channel, args, tmp, r))
                    else:
                        res = one_run(kind, channel, args, tmp, r)
                    results.setdefault((kind, channel), []).append(res)
                a, b = results[("agentstate", channel)][-1], results[("sqlite", channel)][-1]
                if a["final"] != b["final"]:
                    raise SystemExit(f"{channel}: the savers' final states differ")
                if len(a["final"]) != 2 * args.turns:
                    raise SystemExit(f"{channel}: {len(a['final'])} messages, want {2 * args.turns}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    med = lambda xs: statistics.median(xs)  # noqa: E731
    out = []
    mode = "async (ainvoke), AgentStateSaver vs AsyncSqliteSaver" if args.aio else "AgentStateSaver vs SqliteSaver"
    print(f"LangGraph {version('langgraph')} chat graph, {args.turns} turns (200-byte human + 800-byte AI message), "
          f"{args.rounds} round(s), {mode} {version('langgraph-checkpoint-sqlite')}")
    for channel in args.channels.split(","):
        A, B = results[("agentstate", channel)], results[("sqlite", channel)]
        row = {"channel": channel}
        for key in ("bytes", "cpu_ms_per_turn", "wall_ms_per_turn", "get_state_cold_ms", "get_state_warm_ms"):
            ratios = [a[key] / b[key] if b[key] else float("inf") for a, b in zip(A, B)]
            row[key] = {"agentstate": med([a[key] for a in A]), "sqlite": med([b[key] for b in B]), "ratio": med(ratios),
                        "ratio_min": min(ratios), "ratio_max": max(ratios)}
        row["raw_bytes"] = A[0]["raw_bytes"]
        out.append(row)
        label = "default (add_messages)" if channel == "default" else f"DeltaChannel, K={args.every}"
        by = row["bytes"]
        print(f"\n{label}:")
        print(f"  file bytes      agentstate {by['agentstate']:>12,.0f}  sqlite {by['sqlite']:>12,.0f}  "
              f"{by['sqlite'] / by['agentstate']:.1f}x fewer ({by['agentstate'] / row['raw_bytes']:.1f}x the {row['raw_bytes']:,} bytes of messages)")
        for key, what in (("cpu_ms_per_turn", "CPU ms/turn"), ("wall_ms_per_turn", "wall ms/turn"),
                          ("get_state_cold_ms", "get_state cold CPU ms"), ("get_state_warm_ms", "get_state warm CPU ms")):
            x = row[key]
            print(f"  {what:<22} agentstate {x['agentstate']:8.3f}  sqlite {x['sqlite']:8.3f}  ratio {x['ratio']:.2f}x "
                  f"({x['ratio_min']:.2f}-{x['ratio_max']:.2f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


def version(dist: str) -> str:
    from importlib.metadata import version as v

    return v(dist)


def cold(kind: str) -> None:
    tmp = tempfile.mkdtemp(prefix="agentstate-py-cold-")
    try:
        path = os.path.join(tmp, "c.db")
        s, close = open_saver(kind, path)
        t_open = time.perf_counter()
        from langgraph.checkpoint.base import empty_checkpoint

        cp = empty_checkpoint()
        cfg = s.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, cp, {"source": "input", "step": -1}, {})
        assert s.get_tuple(cfg) is not None
        t_done = time.perf_counter()
        close()
        print(json.dumps({"saver": kind, "import_and_open_ms": (t_open - T0) * 1000, "first_result_ms": (t_done - T0) * 1000,
                          "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def rss(kind: str, args) -> None:
    tmp = tempfile.mkdtemp(prefix="agentstate-py-rss-")
    try:
        for channel in args.channels.split(","):
            s, close = open_saver(kind, os.path.join(tmp, f"{channel}.db"))
            drive(graph(s, channel, args.every), "t", args.turns)
            close()
        print(json.dumps({"saver": kind, "turns": args.turns, "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--turns", type=int, default=400)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--channels", default="default,delta")
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--json", default="")
    p.add_argument("--async", dest="aio", action="store_true", help="an async node, ainvoke, AsyncSqliteSaver as the peer")
    p.add_argument("--cold", choices=("agentstate", "sqlite"))
    p.add_argument("--rss", choices=("agentstate", "sqlite"))
    args = p.parse_args()
    if args.cold:
        cold(args.cold)
    elif args.rss:
        rss(args.rss, args)
    else:
        for c in args.channels.split(","):
            if c not in ("default", "delta"):
                raise SystemExit(f"--channels: unknown kind {c}")
        compare(args)


if __name__ == "__main__":
    sys.exit(main())
