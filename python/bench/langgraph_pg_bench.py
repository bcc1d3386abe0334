"""The same LangGraph chat graph on AgentStateSaver over a postgresql://
URL and on LangGraph's PostgresSaver (langgraph-checkpoint-postgres), on the
same server, in one process, each in a fresh schema of its own:

    AGENTSTATE_TEST_PG=postgres://... python bench/langgraph_pg_bench.py [--turns 400] [--rounds 1]
                                                        [--channels default,delta] [--every 10]

The graph and its messages are bench/langgraph_bench.py's (a 200-byte human
message in, an 800-byte AI message out per turn); the final states must be
equal. Measured per run: the bytes of the schema's tables, indexes and
TOAST (pg_total_relation_size, after VACUUM FULL so that dead rows count
for neither); this process's CPU per turn (time.process_time; the server's
CPU is not in it) and the server processes' CPU serving the saver's
sessions (from /proc: the server must run on this machine, as
.ci/with-postgres starts it), and their sum; wall time per turn; the statements the server ran per
turn (pg_stat_statements is not assumed: the sum of xact_commit and
xact_rollback of pg_stat_database is a floor on round trips, printed as
transactions per turn). --rounds R alternates the savers and prints
medians and the ratio of each pair.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(__file__))
from langgraph_bench import drive, graph, version  # noqa: E402


def admin(url: str, sql: str, *args):
    import psycopg

    with psycopg.connect(url, autocommit=True) as c:
        cur = c.execute(sql, args or None)
        return cur.fetchall() if cur.description else None


def schema_bytes(url: str, schema: str) -> int:
    for (t,) in admin(url, "SELECT tablename FROM pg_tables WHERE schemaname = %s", schema):
        admin(url, f'VACUUM FULL "{schema}"."{t}"')
    rows = admin(url, "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                 "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'", schema)
    return int(rows[0][0])


def xacts(url: str) -> int:
    admin(url, "SELECT pg_stat_clear_snapshot()")
    r = admin(url, "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()")
    return int(r[0][0])


def sessions(url: str, kind: str, conn) -> list[int]:
    """The server processes serving the saver's sessions."""
    if kind == "postgres":
        return [conn.info.backend_pid]
    return [r[0] for r in admin(url, "SELECT pid FROM pg_stat_activity WHERE application_name = 'agentstate'")]


def cpu_of(pids: list[int]) -> dict[int, float]:
    """Each process's CPU seconds (user + system), from /proc (the server
    runs on this machine: .ci/with-postgres)."""
    out = {}
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out[pid] = (int(fields[11]) + int(fields[12])) / tick
        except OSError:
            pass
    return out


def open_saver(kind: str, url: str, schema: str):
    if kind == "agentstate":
        from langgraph.checkpoint.agentstate import AgentStateSaver

        s = AgentStateSaver(url, schema=schema)
        return s, s.close
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    conn = psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row,
                           options=f"-c search_path={schema}")
    s = PostgresSaver(conn)
    s.setup()
    return s, conn.close


def one_run(kind: str, channel: str, url: str, args) -> dict:
    warm = "w_" + uuid.uuid4().hex[:10]
    admin(url, f"CREATE SCHEMA {warm}")
    s, close = open_saver(kind, url, warm)
    drive(graph(s, channel, args.every), "warm", args.warmup)
    close()
    admin(url, f"DROP SCHEMA {warm} CASCADE")
    schema = "b_" + uuid.uuid4().hex[:10]
    admin(url, f"CREATE SCHEMA {schema}")
    try:
        s, close = open_saver(kind, url, schema)
        g = graph(s, channel, args.every)
        x0 = xacts(url)
        before = cpu_of(sessions(url, kind, getattr(s, "conn", None)))
        cpu, wall = drive(g, "t", args.turns)
        after = cpu_of(sessions(url, kind, getattr(s, "conn", None)))
        server = sum(v - before.get(pid, 0.0) for pid, v in after.items()) / args.turns * 1000
        x1 = xacts(url)
        msgs = g.get_state({"configurable": {"thread_id": "t"}}).values["messages"]
        close()
        return {"bytes": schema_bytes(url, schema), "cpu_ms_per_turn": cpu, "server_cpu_ms_per_turn": server,
                "total_cpu_ms_per_turn": cpu + server, "wall_ms_per_turn": wall,
                "xacts_per_turn": (x1 - x0 - 2) / args.turns, "final": [(m.type, m.id, m.content) for m in msgs]}
    finally:
        admin(url, f"DROP SCHEMA {schema} CASCADE")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--turns", type=int, default=400)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--channels", default="default,delta")
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--warmup", type=int, default=30)
    args = p.parse_args()
    url = os.environ.get("AGENTSTATE_TEST_PG") or sys.exit("set AGENTSTATE_TEST_PG (.ci/with-postgres starts a server)")
    print(f"LangGraph {version('langgraph')} chat graph, {args.turns} turns, {args.rounds} round(s), "
          f"AgentStateSaver (postgresql:// URL) vs PostgresSaver {version('langgraph-checkpoint-postgres')}, psycopg {version('psycopg')}")
    for channel in args.channels.split(","):
        res: dict[str, list[dict]] = {"agentstate": [], "postgres": []}
        for _ in range(args.rounds):
            for kind in res:
                res[kind].append(one_run(kind, channel, url, args))
            if res["agentstate"][-1]["final"] != res["postgres"][-1]["final"]:
                sys.exit(f"{channel}: the savers' final states differ")
        label = "default (add_messages)" if channel == "default" else f"DeltaChannel, K={args.every}"
        print(f"\n{label}:")
        for key, what in (("bytes", "bytes in the schema"), ("cpu_ms_per_turn", "client CPU ms/turn"),
                          ("server_cpu_ms_per_turn", "server CPU ms/turn"), ("total_cpu_ms_per_turn", "total CPU ms/turn"),
                          ("wall_ms_per_turn", "wall ms/turn"), ("xacts_per_turn", "transactions/turn")):
            a = [r[key] for r in res["agentstate"]]
            b = [r[key] for r in res["postgres"]]
            ratios = [x / y if y else float("inf") for x, y in zip(a, b)]
            print(f"  {what:<20} agentstate {statistics.median(a):>12,.3f}  PostgresSaver {statistics.median(b):>12,.3f}  "
                  f"ratio {statistics.median(ratios):.3f}x ({min(ratios):.3f}-{max(ratios):.3f})")


if __name__ == "__main__":
    main()
