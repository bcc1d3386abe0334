"""DeerFlow's default configuration in one process, with DeerFlow's own
code: its SQLAlchemy engine (``init_engine("sqlite")``: aiosqlite, WAL,
busy_timeout 30 s) and ``ThreadMetaRepository`` write ``deerflow.db`` while
an AgentStateSaver on the same file (``shared=True``) puts chained
checkpoints, concurrently on one event loop; the engine is disposed (its
pooled connections closed) between rounds. Prints what was acknowledged
and what is missing afterwards, per host (docs/contract.md 5.1).

    PYTHONPATH=python/src:DEERFLOW/backend/packages/harness \\
        python3.12 python/bench/deerflow_one_file.py [stdlib|apsw] [--runs 3]

Needs DeerFlow's dependencies (SQLAlchemy, aiosqlite, alembic, langgraph;
see deerflow_check.sh); the script fetches nothing.
"""

import argparse
import asyncio
import os
import sqlite3
import tempfile
import warnings

from deerflow.persistence import engine as df_engine
from deerflow.persistence.thread_meta.sql import ThreadMetaRepository
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.agentstate import AgentStateSaver, Database

warnings.filterwarnings("ignore", message="agentstate.*shared file")


async def app_rounds(repo, tag, n, acked):
    for i in range(n):
        tid = f"{tag}-{i}"
        await repo.create(tid, user_id=None, display_name=f"chat {i}")
        await repo.update_status(tid, "busy", user_id=None)
        await repo.update_status(tid, "idle", user_id=None)
        acked.append(tid)


async def saver_rounds(saver, thread, n, acks):
    cfg = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    version = None
    for k in range(n):
        version = saver.get_next_version(version)
        cp = empty_checkpoint()
        cp["channel_values"] = {"log": f"{thread} {k}"}
        cp["channel_versions"] = {"log": version}
        cfg = await saver.aput(cfg, cp, {"source": "loop", "step": k, "parents": {}}, {"log": version})
        acks.append(cp["id"])


async def one_run(lib, rounds, n):
    d = tempfile.mkdtemp()
    path = os.path.join(d, "deerflow.db")
    acks, app_acked, errors = [], [], []
    await df_engine.init_engine("sqlite", url=f"sqlite+aiosqlite:///{path}", sqlite_dir=d)
    db = Database(path, shared=True, sqlite=lib)
    saver = AgentStateSaver(db=db)
    try:
        for r in range(rounds):
            if df_engine.get_engine() is None:
                await df_engine.init_engine("sqlite", url=f"sqlite+aiosqlite:///{path}", sqlite_dir=d)
            repo = ThreadMetaRepository(df_engine.get_session_factory())
            res = await asyncio.gather(
                app_rounds(repo, f"r{r}", n, app_acked), saver_rounds(saver, f"t{r}", n, acks), return_exceptions=True
            )
            errors += [e for e in res if isinstance(e, BaseException)]
            await df_engine.close_engine()  # the pool's connections closed
            if errors:
                break
    finally:
        db.close()
        if df_engine.get_engine() is not None:
            await df_engine.close_engine()
    try:
        con = sqlite3.connect(path)
        have = {r[0] for r in con.execute("SELECT checkpoint_id FROM agentstate_checkpoints")}
        threads = {r[0] for r in con.execute("SELECT thread_id FROM threads_meta")}
        integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
        con.close()
        lost = (sum(c not in have for c in acks), sum(t not in threads for t in app_acked))
    except sqlite3.Error as e:
        lost, integrity = ("?", "?"), f"{type(e).__name__}: {e}"
    return len(acks), len(app_acked), errors, lost, integrity


def main():
    p = argparse.ArgumentParser()
    p.add_argument("lib", nargs="?", default="stdlib", choices=("stdlib", "apsw"))
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--n", type=int, default=30)
    a = p.parse_args()
    for run in range(a.runs):
        puts, app, errors, lost, integrity = asyncio.run(one_run(a.lib, a.rounds, a.n))
        errs = [f"{type(e).__name__}: {str(e)[:100]}" for e in errors]
        print(f"{a.lib} run {run + 1}: acked puts {puts}, app threads {app}, errors {errs}, "
              f"lost puts {lost[0]}, lost app threads {lost[1]}, integrity {integrity}", flush=True)


if __name__ == "__main__":
    main()
