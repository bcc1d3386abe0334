"""apsw against the standard library's sqlite3 as the engine's host SQLite:
the statements of a LangGraph turn's shape (a write transaction with an
insert and a lookup by key, a read of the row back), through each binding,
in one process, alternating. Prints CPU microseconds per transaction and
the ratio.

    python bench/host_sqlite_bench.py [--n 20000] [--rounds 3]
"""

import argparse
import os
import sqlite3
import statistics
import tempfile
import time

import apsw

SCHEMA = "CREATE TABLE blobs(thread TEXT, ch TEXT, version TEXT, data BLOB, PRIMARY KEY(thread, ch, version)) WITHOUT ROWID"
INSERT = "INSERT OR IGNORE INTO blobs(thread, ch, version, data) VALUES (?, ?, ?, ?)"
SELECT = "SELECT data, length(data) FROM blobs WHERE thread = ? AND ch = ? AND version = ?"


def open_apsw(path):
    return apsw.Connection(path)


def open_stdlib(path):
    return sqlite3.connect(path, isolation_level=None, check_same_thread=False)


def run(connect, path, n, payload):
    """CPU microseconds per transaction through the binding connect opens."""
    c = connect(path)
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("PRAGMA synchronous=NORMAL")
    cur = c.cursor()
    t0 = time.process_time()
    for i in range(n):
        cur.execute("BEGIN IMMEDIATE")
        cur.execute(INSERT, ("t", "messages", str(i), payload))
        for _ in cur.execute(SELECT, ("t", "messages", str(i))):
            pass
        cur.execute("COMMIT")
        for _ in cur.execute(SELECT, ("t", "messages", str(i // 2))):
            pass
    dt = time.process_time() - t0
    c.close()
    return dt / n * 1e6


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    payload = os.urandom(600)
    d = tempfile.mkdtemp()
    res = {"apsw": [], "sqlite3": []}
    for r in range(a.rounds):
        for name, connect in (("apsw", open_apsw), ("sqlite3", open_stdlib)):
            path = os.path.join(d, f"{name}-{r}.db")
            conn = sqlite3.connect(path)
            conn.execute(SCHEMA)
            conn.close()
            res[name].append(run(connect, path, a.n, payload))
    ratios = [x / y for x, y in zip(res["apsw"], res["sqlite3"])]
    print(f"SQLite: apsw {apsw.sqlite_lib_version()}, sqlite3 {sqlite3.sqlite_version}")
    for k, v in res.items():
        print(f"  {k:8} {statistics.median(v):7.1f} us CPU per transaction (5 statements), range {min(v):.1f}-{max(v):.1f}")
    print(f"  apsw / sqlite3: {statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
