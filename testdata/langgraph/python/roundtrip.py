"""Checks the way back with real LangGraph: a SqliteSaver file imported with
`agentstate import-langgraph` and written back with `agentstate
export-langgraph` reads, in LangGraph's own SqliteSaver, as the source does,
checkpoint by checkpoint (parent, channel values, versions, versions seen,
metadata, pending writes), and a graph resumed on it gives the state it
gives on the source.

    python roundtrip.py --source SRC.sqlite --exported OUT.sqlite [--resume chat|compat] [--source-encrypted]

roundtrip.sh runs it on the committed fixtures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from langchain_core.messages import HumanMessage  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402

try:
    from generate import build_graphs, enc  # the pinned release's full mapping
except Exception:  # an older release: the compatibility fixtures' mapping
    build_graphs = None
    from compat import enc  # noqa: F401


def same_version(src, out) -> bool:
    # A version a fork reused for another value is renamed on import
    # ("<version>.1"); LangGraph compares them in the same order.
    return out == src or (isinstance(out, str) and out.startswith(f"{src}."))


def saver_of(path: str, encrypted: bool) -> SqliteSaver:
    # A copy: SQLite leaves -wal and -shm files beside a WAL file it reads,
    # and the committed fixtures stay alone.
    copy = os.path.join(tempfile.mkdtemp(), "copy.sqlite")
    shutil.copy(path, copy)
    conn = sqlite3.connect(copy, check_same_thread=False)
    if encrypted:
        from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

        return SqliteSaver(conn, serde=EncryptedSerializer.from_pycryptodome_aes())
    return SqliteSaver(conn)


def rows(saver) -> dict:
    out = {}
    for t in list(saver.list(None)):
        c = t.config["configurable"]
        out[(c["thread_id"], c["checkpoint_ns"], c["checkpoint_id"])] = saver.get_tuple(t.config)
    return out


def compare(src: SqliteSaver, out: SqliteSaver) -> int:
    a, b = rows(src), rows(out)
    problems = []
    if set(a) != set(b):
        problems.append(f"checkpoints: {len(a)} in the source, {len(b)} exported, {len(set(a) ^ set(b))} differ")
    for k in sorted(set(a) & set(b)):
        x, y = a[k], b[k]
        px = x.parent_config["configurable"]["checkpoint_id"] if x.parent_config else None
        py = y.parent_config["configurable"]["checkpoint_id"] if y.parent_config else None
        cx, cy = x.checkpoint, y.checkpoint
        checks = {
            "parent": px == py,
            "v": cx["v"] == cy["v"],
            "id": cx["id"] == cy["id"] and cx["ts"] == cy["ts"],
            "channel_values": enc(cx["channel_values"]) == enc(cy["channel_values"]),
            "channel_versions": set(cx["channel_versions"]) == set(cy["channel_versions"])
            and all(same_version(v, cy["channel_versions"][ch]) for ch, v in cx["channel_versions"].items()),
            "versions_seen": set(cx["versions_seen"]) == set(cy["versions_seen"])
            and all(
                set(m) == set(cy["versions_seen"][n]) and all(same_version(v, cy["versions_seen"][n][ch]) for ch, v in m.items())
                for n, m in cx["versions_seen"].items()
            ),
            "updated_channels": sorted(cx.get("updated_channels") or []) == sorted(cy.get("updated_channels") or []),
            "metadata": enc(x.metadata) == enc(y.metadata),
            "pending_writes": enc(x.pending_writes) == enc(y.pending_writes),
        }
        for what, ok in checks.items():
            if not ok:
                problems.append(f"{k}: {what} differs")
    for p in problems[:20]:
        print("DIFF", p)
    print(f"compared {len(a)} checkpoints: {len(problems)} differences")
    return len(problems)


def resume(kind: str, src_path: str, out_path: str, encrypted: bool) -> int:
    """One more turn on a copy of each file: the same state."""
    states = []
    for path, enc_ in ((src_path, encrypted), (out_path, False)):
        d = tempfile.mkdtemp()
        p = os.path.join(d, "f.sqlite")
        shutil.copy(path, p)
        conn = sqlite3.connect(p, check_same_thread=False)
        if enc_:
            from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

            saver = SqliteSaver(conn, serde=EncryptedSerializer.from_pycryptodome_aes())
        else:
            saver = SqliteSaver(conn)
        if kind == "compat":
            from compat import build

            graph, cfg = build(saver), {"configurable": {"thread_id": "compat"}}
        else:
            graph, cfg = build_graphs(saver)["chat"], {"configurable": {"thread_id": "chat", "user_id": "u-1", "tenant": "acme", "priority": 2}}
        before = len(list(graph.get_state_history(cfg)))
        graph.invoke({"messages": [HumanMessage(id="resumed", content="one more, please")]}, cfg)
        snap = graph.get_state(cfg)
        after = len(list(graph.get_state_history(cfg)))
        states.append((enc(snap.values), list(snap.next), after - before))
        conn.close()
        shutil.rmtree(d)
    if states[0] != states[1]:
        print("DIFF resumed state:", states[0], "vs", states[1])
        return 1
    if states[0][2] < 1:
        print("DIFF the resumed turn wrote no checkpoint")
        return 1
    print(f"resumed {kind}: the same state on both, {states[0][2]} new checkpoints each")
    return 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--exported", required=True)
    ap.add_argument("--resume", choices=["chat", "compat"])
    ap.add_argument("--source-encrypted", action="store_true")
    a = ap.parse_args()
    n = compare(saver_of(a.source, a.source_encrypted), saver_of(a.exported, False))
    if a.resume:
        n += resume(a.resume, a.source, a.exported, a.source_encrypted)
    sys.exit(1 if n else 0)


if __name__ == "__main__":
    main()
