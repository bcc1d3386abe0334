"""Semantic search: AgentStateStore against SqliteStore (sqlite-vec) and
InMemoryStore on the same items, vectors and queries (issue 41).

    python bench/store_search.py                    # 50,000 items x 384 dims
    python bench/store_search.py --items 5000 --queries 5
    python bench/store_search.py --put-only --put-items 4000

N items of 384 random dimensions (a fixed seed; the "embedder" looks each
text's vector up, so embedding costs nothing and the stores are compared on
storing and ranking), half of them {"kind": "a"}; each query is a filtered
top-10 (filter {"kind": "a"}, cosine). Prints the median search time of each
store and the ratios to AgentStateStore; whether the stores agree on the top
10; the peak memory a search adds to its process (a child process per store
opens the file and searches it: the growth of its peak RSS, beside the
vectors' size); and the cost of a put with an index against a put without
one (same items, fresh files; --put-only for that alone).

Needs: pip install langgraph-checkpoint-sqlite sqlite-vec numpy (and
pysqlite3-binary where Python's sqlite3 cannot load extensions).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

# SqliteStore loads sqlite-vec as an extension; a Python built without
# extension loading (pyenv's default) gets pysqlite3-binary's sqlite3 instead.
import sqlite3

if not hasattr(sqlite3.Connection, "enable_load_extension"):
    import pysqlite3

    sys.modules["sqlite3"] = pysqlite3

from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

from langgraph.checkpoint.agentstate import AgentStateStore

DIMS = 384
NS = ("memories", "user1")


class Table:
    """The embedder: text "item-i" or "query-j" to its precomputed vector."""

    def __init__(self, items: int, queries: int, seed: int = 41):
        rng = np.random.default_rng(seed)
        self.items = rng.standard_normal((items, DIMS), dtype=np.float32)
        self.queries = rng.standard_normal((queries, DIMS), dtype=np.float32)

    def one(self, text: str) -> list[float]:
        kind, i = text.split("-")
        return (self.items if kind == "item" else self.queries)[int(i)].tolist()

    def __call__(self, texts: list[str]) -> list[list[float]]:
        return [self.one(t) for t in texts]


def index(table: Table) -> dict:
    return {"dims": DIMS, "embed": table, "fields": ["text"]}


def value(i: int) -> dict:
    return {"text": f"item-{i}", "kind": "a" if i % 2 == 0 else "b", "n": i}


def load(store, n: int, chunk: int = 1000, indexed: bool = True) -> float:
    t0 = time.perf_counter()
    for s in range(0, n, chunk):
        store.batch([PutOp(NS, f"k{i:06d}", value(i), None if indexed else False) for i in range(s, min(n, s + chunk))])
    return time.perf_counter() - t0


def open_store(kind: str, path: str, table: Table):
    if kind == "agentstate":
        return AgentStateStore(path, index=index(table))
    if kind == "sqlite":
        cm = SqliteStore.from_conn_string(path, index={**index(table), "text_fields": ["text"]})
        store = cm.__enter__()
        store._bench_cm = cm  # the context manager closes the connection when collected
        store.setup()
        return store
    return InMemoryStore(index=index(table))


def search(store, q: int) -> list:
    return store.search(NS, query=f"query-{q}", filter={"kind": "a"}, limit=10)


def times(store, queries: int, rounds: int) -> tuple[float, list[list[str]]]:
    search(store, 0)  # warm: the first search reads the file into the page cache
    ts, tops = [], []
    for _ in range(rounds):
        for q in range(queries):
            t0 = time.perf_counter()
            res = search(store, q)
            ts.append(time.perf_counter() - t0)
            if len(tops) < queries:
                tops.append([r.key for r in res])
    return statistics.median(ts), tops


def child(kind: str, path: str, items: int, queries: int, rounds: int) -> None:
    """Opens path, measures its searches and the peak RSS they add."""
    table = Table(items, queries)
    store = open_store(kind, path, table)
    store.get(NS, "k000000")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    search(store, 0)  # the first search after opening the file
    first = time.perf_counter() - t0
    median, tops = times(store, queries, rounds)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"median": median, "first": first, "tops": tops, "rss_kb": after - before}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=50_000)
    ap.add_argument("--queries", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--put-items", type=int, default=2000)
    ap.add_argument("--child", nargs=2, metavar=("STORE", "PATH"))
    ap.add_argument("--put-only", action="store_true", help="only the put with an index against one without")
    a = ap.parse_args()
    if a.child:
        child(a.child[0], a.child[1], a.items, a.queries, a.rounds)
        return
    if a.put_only:
        put_ratio(Table(a.put_items, 1), a.put_items, tempfile.mkdtemp(prefix="store-put-"))
        return

    table = Table(a.items, a.queries)
    d = tempfile.mkdtemp(prefix="store-search-")
    paths = {"agentstate": os.path.join(d, "agentstate.db"), "sqlite": os.path.join(d, "sqlite.db")}
    print(f"{a.items} items x {DIMS} dims ({a.items * DIMS * 4 / 2**20:.1f} MiB of float32), filter kind=a, top 10, {a.queries} queries x {a.rounds}")
    for kind, path in paths.items():
        st = open_store(kind, path, table)
        print(f"  load {kind}: {load(st, a.items):.1f} s")
        if kind == "agentstate":
            st.close()
        else:
            st.conn.close()

    results = {}
    for kind, path in paths.items():
        out = subprocess.run([sys.executable, __file__, "--items", str(a.items), "--queries", str(a.queries), "--rounds", str(a.rounds), "--child", kind, path],
                             check=True, capture_output=True, text=True).stdout
        results[kind] = json.loads(out.strip().splitlines()[-1])
    mem = InMemoryStore(index=index(table))
    load(mem, a.items)
    m, tops = times(mem, a.queries, a.rounds)
    results["inmemory"] = {"median": m, "first": None, "tops": tops, "rss_kb": None}

    ours = results["agentstate"]
    for kind, r in results.items():
        same = sum(t == o for t, o in zip(r["tops"], ours["tops"]))
        rss = "n/a (loaded in this process)" if r["rss_kb"] is None else f"{r['rss_kb'] / 1024:.1f} MiB"
        first = "" if r["first"] is None else f" (first search after open {r['first'] * 1e3:.0f} ms)"
        print(f"  {kind:10s} median {r['median'] * 1e3:8.1f} ms{first}  agentstate/{kind} {ours['median'] / r['median']:.2f}x"
              f"  same top 10 as agentstate: {same}/{len(ours['tops'])}  search peak RSS growth {rss}")
    print("  (agentstate's RSS growth is mostly its handle's copy of the vectors, read by the first search)")

    put_ratio(table, a.put_items, d)


def put_ratio(table: Table, n: int, d: str) -> None:
    """A put with an index against one without (the embedder is a lookup:
    what is measured is storing the vectors). Paired: each batch goes to
    both files in turn, and the time is the process's CPU time (the engine
    and SQLite run in this thread), so a busy machine weighs on both alike.
    A first round inserts the items, a second replaces them."""
    n = min(n, len(table.items))
    t_emb = time.process_time()
    table([f"item-{i}" for i in range(n)])
    t_emb = (time.process_time() - t_emb) / n
    for chunk in (1, 100):
        with_ix = AgentStateStore(os.path.join(d, f"put-ix-{chunk}.db"), index=index(table))
        without = AgentStateStore(os.path.join(d, f"put-plain-{chunk}.db"), index=index(table))
        for rnd in ("insert", "replace"):
            t = {True: 0.0, False: 0.0}
            for s in range(0, n, chunk):
                for store, indexed in ((without, False), (with_ix, True)):
                    ops = [PutOp(NS, f"k{i:06d}", value(i), None if indexed else False) for i in range(s, min(n, s + chunk))]
                    t0 = time.process_time()
                    store.batch(ops)
                    t[indexed] += time.process_time() - t0
            w, wo = t[True] / n, t[False] / n
            print(f"  put x{n} in batches of {chunk} ({rnd}), CPU a put: with index {w * 1e6:.0f} us, without {wo * 1e6:.0f} us,"
                  f" embedding alone {t_emb * 1e6:.1f} us: with / (without + embedding) = {w / (wo + t_emb):.2f}")
        with_ix.close()
        without.close()

if __name__ == "__main__":
    main()
