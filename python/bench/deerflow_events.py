"""The event goals of issue 37, measured from outside (docs/deerflow.md §5).

    python bench/deerflow_events.py writers [--procs 4] [--seconds 30] [--file F]
        PROCS processes append to one thread of one file for SECONDS (put and
        put_batch of 1-20 events, mixed); then the file's seqs must be exactly
        1..N, and every event a writer was acknowledged must be there with its
        content. Prints the counts; exits 1 on any loss, gap or duplicate.

    python bench/deerflow_events.py speed [--rounds 200]
        put_batch of 20 events and list_messages(limit=50), on
        AgentStateRunEventStore (a file) and, where DeerFlow is importable,
        DeerFlow's DbRunEventStore on SQLite (its own engine, a file), one
        after the other on this machine. Prints the median and p90 of each.
        Needs DeerFlow's harness on the path for the comparison (the
        deerflow_check.sh environment).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import random
import statistics
import sys
import tempfile
import time


def _writer(path: str, idx: int, seconds: float, out: mp.Queue) -> None:
    from langgraph.checkpoint.agentstate import Database
    from langgraph.checkpoint.agentstate.deerflow import AgentStateRunEventStore

    db = Database(path)
    s = AgentStateRunEventStore(db=db)
    acked: list[tuple[int, str]] = []
    rnd = random.Random(idx)

    async def go() -> None:
        end = time.monotonic() + seconds
        n = 0
        while time.monotonic() < end:
            k = rnd.choice((1, 1, 5, 20))
            evs = []
            for _ in range(k):
                n += 1
                evs.append({"thread_id": "t", "run_id": f"w{idx}", "event_type": "e", "category": "message", "content": f"{idx}:{n}"})
            if k == 1:
                got = [await s.put(**evs[0])]
            else:
                got = await s.put_batch(evs)
            acked.extend((e["seq"], e["content"]) for e in got)

    asyncio.run(go())
    db.close()
    out.put(acked)


def writers(args: argparse.Namespace) -> int:
    from langgraph.checkpoint.agentstate import Database

    path = args.file or os.path.join(tempfile.mkdtemp(), "events.db")
    Database(path).close()  # created once, before the writers race to open it
    ctx = mp.get_context("spawn")
    q: mp.Queue = ctx.Queue()
    ps = [ctx.Process(target=_writer, args=(path, i, args.seconds, q)) for i in range(args.procs)]
    for p in ps:
        p.start()
    acked = [x for _ in ps for x in q.get()]
    for p in ps:
        p.join()
    db = Database(path)
    stored: dict[int, str] = {}
    after = 0
    while True:
        page = db.events.list_messages("t", after_seq=after, limit=1000)
        if not page:
            break
        for e in page:
            stored[e["seq"]] = e["content"]
        after = page[-1]["seq"]
    db.close()
    seqs = sorted(stored)
    gap_free = seqs == list(range(1, len(seqs) + 1))
    lost = [a for a in acked if stored.get(a[0]) != a[1]]
    dup = len(acked) - len({a[0] for a in acked})
    print(f"{args.procs} processes x {args.seconds} s: {len(acked)} events acknowledged, {len(stored)} stored, "
          f"seq 1..{seqs[-1] if seqs else 0} gap-free={gap_free}, duplicate seqs={dup}, acknowledged but lost or changed={len(lost)}")
    return 0 if gap_free and not lost and not dup and len(acked) == len(stored) else 1


def _stats(xs: list[float]) -> str:
    xs = sorted(xs)
    return f"median {statistics.median(xs) * 1e3:.2f} ms, p90 {xs[int(len(xs) * 0.9)] * 1e3:.2f} ms"


async def _time(store, rounds: int) -> tuple[list[float], list[float]]:
    put, lst = [], []
    for r in range(rounds):
        evs = [
            {"thread_id": "t", "run_id": f"r{r}", "event_type": "llm.ai.response" if i % 2 else "tool",
             "category": "message" if i % 2 else "trace", "content": "x" * 200, "metadata": {"i": i}}
            for i in range(20)
        ]
        t0 = time.perf_counter()
        await store.put_batch(evs)
        put.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        got = await store.list_messages("t", limit=50, user_id=None)
        lst.append(time.perf_counter() - t0)
        assert len(got) == min(50, (r + 1) * 10)
    return put, lst


def speed(args: argparse.Namespace) -> int:
    from langgraph.checkpoint.agentstate import Database
    from langgraph.checkpoint.agentstate.deerflow import AgentStateRunEventStore

    d = tempfile.mkdtemp()
    db = Database(os.path.join(d, "agentstate.db"))
    put, lst = asyncio.run(_time(AgentStateRunEventStore(db=db), args.rounds))
    db.close()
    print(f"agentstate  put_batch(20): {_stats(put)};  list_messages(50): {_stats(lst)}")
    try:
        from deerflow.persistence.engine import close_engine, get_session_factory, init_engine
        from deerflow.runtime.events.store.db import DbRunEventStore
    except Exception as e:  # noqa: BLE001
        print(f"DeerFlow's DbRunEventStore: not importable here ({type(e).__name__}: {e})")
        return 0

    async def theirs():
        await init_engine("sqlite", url=f"sqlite+aiosqlite:///{os.path.join(d, 'deerflow.db')}", sqlite_dir=d)
        try:
            return await _time(DbRunEventStore(get_session_factory()), args.rounds)
        finally:
            await close_engine()

    put, lst = asyncio.run(theirs())
    print(f"DeerFlow DB put_batch(20): {_stats(put)};  list_messages(50): {_stats(lst)}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("writers")
    w.add_argument("--procs", type=int, default=4)
    w.add_argument("--seconds", type=float, default=30)
    w.add_argument("--file")
    sp = sub.add_parser("speed")
    sp.add_argument("--rounds", type=int, default=200)
    args = ap.parse_args()
    return writers(args) if args.cmd == "writers" else speed(args)


if __name__ == "__main__":
    sys.exit(main())
