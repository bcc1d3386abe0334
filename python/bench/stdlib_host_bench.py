"""The engine's SQLite from Python's sqlite3 module (the stdlib host, what a
shared file uses) against apsw's (the package's own copy): a saver's put
and get_tuple on a shared file, one file per host, in one process,
alternating rounds. Prints wall and CPU microseconds per call and the
ratio stdlib/apsw (docs/contract.md 5.1).

    python bench/stdlib_host_bench.py [--n 2000] [--rounds 5]
"""

import argparse
import os
import sqlite3
import statistics
import tempfile
import time
import warnings

from langgraph.checkpoint.agentstate import AgentStateSaver, Database
from langgraph.checkpoint.base import empty_checkpoint

warnings.filterwarnings("ignore", message="agentstate.*shared file")


def app_file(path):
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE users (id TEXT PRIMARY KEY, email TEXT)")
    con.commit()
    con.close()


def turn(saver, thread, k, version, parent):
    cfg = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    if parent:
        cfg["configurable"]["checkpoint_id"] = parent
    cp = empty_checkpoint()
    cp["channel_values"] = {"messages": f"message {k} " + "x" * 600, "step": k}
    cp["channel_versions"] = {"messages": version, "step": version}
    return saver.put(cfg, cp, {"source": "loop", "step": k, "parents": {}}, {"messages": version, "step": version})


def run(saver, thread, n):
    """(put, get_tuple): wall and CPU microseconds per call."""
    version, parent = None, None
    pw = pc = gw = gc = 0.0
    for k in range(n):
        version = saver.get_next_version(version)
        w, c = time.perf_counter(), time.process_time()
        cfg = turn(saver, thread, k, version, parent)
        w2, c2 = time.perf_counter(), time.process_time()
        t = saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
        w3, c3 = time.perf_counter(), time.process_time()
        assert t is not None and t.config["configurable"]["checkpoint_id"] == cfg["configurable"]["checkpoint_id"]
        parent = cfg["configurable"]["checkpoint_id"]
        pw += w2 - w
        pc += c2 - c
        gw += w3 - w2
        gc += c3 - c2
    return {"put wall": pw / n * 1e6, "put cpu": pc / n * 1e6, "get wall": gw / n * 1e6, "get cpu": gc / n * 1e6}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    d = tempfile.mkdtemp()
    savers = {}
    for lib in ("stdlib", "apsw"):
        path = os.path.join(d, f"{lib}.db")
        app_file(path)
        db = Database(path, shared=True, sqlite=lib)
        assert db.sqlite == lib
        savers[lib] = AgentStateSaver(db=db)
    res = {lib: [] for lib in savers}
    for r in range(a.rounds):
        order = list(savers) if r % 2 == 0 else list(savers)[::-1]
        for lib in order:
            res[lib].append(run(savers[lib], f"t{r}", a.n))
    print(f"SQLite: stdlib {sqlite3.sqlite_version}, apsw {__import__('apsw').sqlite_lib_version()}; {a.rounds} rounds of {a.n} puts and gets")
    for key in ("put wall", "put cpu", "get wall", "get cpu"):
        s = statistics.median(x[key] for x in res["stdlib"])
        ap = statistics.median(x[key] for x in res["apsw"])
        ratios = [x[key] / y[key] for x, y in zip(res["stdlib"], res["apsw"])]
        print(f"{key:9} stdlib {s:7.1f} µs  apsw {ap:7.1f} µs  ratio {statistics.median(ratios):.2f} (rounds {min(ratios):.2f}-{max(ratios):.2f})")
    for s in savers.values():
        s.db.close()


if __name__ == "__main__":
    main()
