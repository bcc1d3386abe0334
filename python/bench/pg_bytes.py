"""Where the bytes go: the chat graph of bench/langgraph_bench.py on
AgentStateSaver over a postgresql:// URL and on LangGraph's PostgresSaver,
each in a fresh schema of the same server, then (after VACUUM FULL) each
table's heap, TOAST and index bytes, each index's bytes, rows per turn, and
the average stored size of each column (pg_column_size, after any
compression):

    AGENTSTATE_TEST_PG=postgres://... python bench/pg_bytes.py [--turns 400] [--channel default|delta]
                                                  [--savers agentstate,postgres] [--keep]

--keep leaves the schemas in place (their names are printed) for queries of
your own.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid

sys.path.insert(0, os.path.dirname(__file__))
from langgraph_bench import drive, graph  # noqa: E402
from langgraph_pg_bench import admin, open_saver  # noqa: E402

SIZES = """
SELECT c.relname, c.oid::regclass::text,
       pg_relation_size(c.oid) AS heap,
       coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0) AS toast,
       pg_indexes_size(c.oid) AS idx,
       pg_total_relation_size(c.oid) AS total
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relkind = 'r' ORDER BY total DESC, c.relname"""

INDEXES = """
SELECT t.relname, i.relname, pg_relation_size(i.oid)
FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname = %s ORDER BY 3 DESC, 1, 2"""


def profile(url: str, schema: str, turns: int) -> int:
    total = 0
    print(f"  {'table':<22}{'rows/turn':>10}{'heap':>11}{'toast':>11}{'indexes':>11}{'total':>11}{'B/turn':>9}")
    for name, qual, heap, toast, idx, tot in admin(url, SIZES, schema):
        (rows,) = admin(url, f"SELECT count(*) FROM {qual}")[0]
        total += tot
        if not tot and not rows:
            continue
        print(f"  {name:<22}{rows / turns:>10.2f}{heap:>11,}{toast:>11,}{idx:>11,}{tot:>11,}{tot / turns:>9,.0f}")
    print(f"  {'all tables':<22}{'':>10}{'':>11}{'':>11}{'':>11}{total:>11,}{total / turns:>9,.0f}")
    print("  indexes:")
    for t, i, size in admin(url, INDEXES, schema):
        if size > 8192:
            print(f"    {t + '.' + i:<48}{size:>11,}")
    print("  columns (average bytes stored per row, pg_column_size):")
    for (t,) in admin(url, "SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY 1", schema):
        (rows,) = admin(url, f'SELECT count(*) FROM "{schema}"."{t}"')[0]
        if rows < turns / 10:
            continue
        cols = [c for (c,) in admin(url, "SELECT column_name FROM information_schema.columns WHERE table_schema = %s "
                                    "AND table_name = %s ORDER BY ordinal_position", schema, t)]
        sel = ", ".join(f'avg(pg_column_size("{c}"))' for c in cols)
        avgs = admin(url, f'SELECT {sel} FROM "{schema}"."{t}"')[0]
        print(f"    {t}: " + ", ".join(f"{c} {float(a or 0):.0f}" for c, a in zip(cols, avgs)))
    return total


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--turns", type=int, default=400)
    p.add_argument("--channel", default="default")
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--savers", default="agentstate,postgres")
    p.add_argument("--keep", action="store_true")
    args = p.parse_args()
    url = os.environ.get("AGENTSTATE_TEST_PG") or sys.exit("set AGENTSTATE_TEST_PG (.ci/with-postgres starts a server)")
    totals = {}
    for kind in args.savers.split(","):
        schema = "p_" + uuid.uuid4().hex[:10]
        admin(url, f"CREATE SCHEMA {schema}")
        try:
            s, close = open_saver(kind, url, schema)
            drive(graph(s, args.channel, args.every), "t", args.turns)
            close()
            for (t,) in admin(url, "SELECT tablename FROM pg_tables WHERE schemaname = %s", schema):
                admin(url, f'VACUUM FULL "{schema}"."{t}"')
            print(f"\n{kind} ({args.channel} channel, {args.turns} turns, schema {schema}):")
            totals[kind] = profile(url, schema, args.turns)
        finally:
            if not args.keep:
                admin(url, f"DROP SCHEMA {schema} CASCADE")
    if len(totals) == 2:
        a, b = totals.get("agentstate"), totals.get("postgres")
        print(f"\nPostgresSaver / agentstate: {b / a:.1f}x")


if __name__ == "__main__":
    main()
