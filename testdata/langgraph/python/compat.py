"""Writes the compatibility fixtures of `agentstate import-langgraph`: small
LangGraph Python SqliteSaver files of other releases and shapes the main
fixture (generate.py) lacks, each with the checkpoints as that LangGraph
reads them back (get_tuple: values, metadata, parent, pending writes), in the
JSON mapping of FORMATS.md ("Expected-state JSON").

    python compat.py --out F.sqlite --expected F.json [--encrypt]

Runs on langgraph 0.2.20, 0.3.34 and 1.2.24 (generate.sh --compat installs
each in its own virtual environment). The graph: messages (add_messages)
holding a HumanMessage, a ChatMessage, a FunctionMessage, an AIMessage whose
content list holds a bare string block and a datetime in additional_kwargs;
a Send fan-out to three workers (checkpoints before format 4 keep the sends
in pending_sends); an update_state fork of a checkpoint that already has a
child, run on. --encrypt writes every value with EncryptedSerializer
(AES-EAX, the key in LANGGRAPH_AES_KEY).
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import datetime as dt
import json
import operator
import os
import pathlib
import sqlite3
import sys
from importlib.metadata import version
from typing import Annotated, Any, TypedDict

sys.dont_write_bytecode = True

from langchain_core.messages import AIMessage, BaseMessage, ChatMessage, FunctionMessage, HumanMessage  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.graph.message import add_messages  # noqa: E402

try:
    from langgraph.types import Send  # noqa: E402
except ImportError:  # 0.2
    from langgraph.constants import Send  # noqa: E402

PACKAGES = ["langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite", "langchain-core"]
STAMP = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)


class State(TypedDict, total=False):
    messages: Annotated[list, add_messages]
    items: Annotated[list, operator.add]


def agent(state: State):
    n = len(state["messages"])
    return {
        "messages": [
            AIMessage(
                id=f"ai-{n}",
                content=["plain string block", {"type": "text", "text": f"answer {n}"}],
                additional_kwargs={"at": STAMP},
            )
        ]
    }


def fan(state: State):
    if len(state["messages"]) <= 4 and not state.get("items"):
        return [Send("worker", {"n": i}) for i in range(3)]
    return END


def worker(arg: dict):
    return {"items": [arg["n"]]}


def build(saver):
    g = StateGraph(State)
    g.add_node("agent", agent)
    g.add_node("worker", worker)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", fan, ["worker", END])
    g.add_edge("worker", END)
    return g.compile(checkpointer=saver)


def run(graph) -> None:
    cfg = {"configurable": {"thread_id": "compat"}}
    graph.invoke(
        {
            "messages": [
                HumanMessage(id="h1", content="hello"),
                ChatMessage(id="c1", role="critic", content="be brief"),
                FunctionMessage(id="f1", name="lookup", content='{"hits": 2}'),
            ]
        },
        cfg,
    )
    graph.invoke({"messages": [HumanMessage(id="h2", content="again")]}, cfg)
    # An update_state fork of a checkpoint that has a child already, run on.
    history = list(graph.get_state_history(cfg))
    past = next(s for s in reversed(history) if s.metadata.get("step") == 1)
    forked = graph.update_state(past.config, {"messages": [HumanMessage(id="h3", content="edited past")]})
    graph.invoke(None, forked)
    graph.invoke({"messages": [HumanMessage(id="h4", content="last")]}, cfg)


def cls_path(o: Any) -> str:
    return f"{type(o).__module__}.{type(o).__qualname__}"


def enc(v: Any) -> Any:
    """FORMATS.md's mapping, for the types these fixtures hold."""
    if v is None or isinstance(v, (bool, str, int)):
        return v
    if isinstance(v, float):
        return v
    if isinstance(v, BaseMessage):
        dump = v.model_dump() if hasattr(v, "model_dump") else v.dict()
        return {"$type": "message", "class": cls_path(v), "fields": enc(dump)}
    if isinstance(v, Send):
        return {"$type": "send", "node": v.node, "arg": enc(v.arg)}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {"$type": "object", "class": cls_path(v), "fields": {f.name: enc(getattr(v, f.name)) for f in dataclasses.fields(v)}}
    if isinstance(v, list):
        return [enc(x) for x in v]
    if isinstance(v, tuple):
        return [enc(x) for x in v]
    if isinstance(v, dict):
        if all(isinstance(k, str) for k in v) and "$type" not in v:
            return {k: enc(x) for k, x in v.items()}
        return {"$type": "dict", "items": [[enc(k), enc(x)] for k, x in v.items()]}
    if isinstance(v, (bytes, bytearray)):
        return {"$type": type(v).__name__, "b64": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, dt.datetime):
        return {"$type": "datetime", "iso": v.isoformat()}
    raise TypeError(f"no JSON mapping for {cls_path(v)}: {v!r}")


def dump_expected(saver) -> dict:
    threads: dict[str, dict[str, list]] = {}
    rows = sorted(saver.list(None), key=lambda t: (t.config["configurable"]["thread_id"], t.config["configurable"]["checkpoint_ns"], t.config["configurable"]["checkpoint_id"]))
    for t in rows:
        conf = t.config["configurable"]
        t = saver.get_tuple(t.config)  # the call an importer mirrors
        ck = t.checkpoint
        threads.setdefault(conf["thread_id"], {}).setdefault(conf["checkpoint_ns"], []).append(
            {
                "checkpoint_id": conf["checkpoint_id"],
                "parent_checkpoint_id": t.parent_config["configurable"]["checkpoint_id"] if t.parent_config else None,
                "checkpoint": {
                    "v": ck["v"],
                    "channel_values": enc(ck["channel_values"]),
                    "pending_sends": enc(ck.get("pending_sends") or []),
                },
                "metadata": json.loads(json.dumps(enc(t.metadata), default=str)),
                "pending_writes": [[w[0], w[1], enc(w[2])] for w in t.pending_writes or []],
            }
        )
    return {"saver": "sqlite", "versions": {p: version(p) for p in PACKAGES}, "checkpoints": len(rows), "threads": threads}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--expected", required=True)
    ap.add_argument("--encrypt", action="store_true")
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    for suffix in ("", "-wal", "-shm"):
        p = pathlib.Path(str(out) + suffix)
        if p.exists():
            p.unlink()
    conn = sqlite3.connect(out, check_same_thread=False)
    if a.encrypt:
        from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

        saver = SqliteSaver(conn, serde=EncryptedSerializer.from_pycryptodome_aes())
    else:
        saver = SqliteSaver(conn)
    graph = build(saver)
    run(graph)
    doc = dump_expected(saver)
    pathlib.Path(a.expected).write_text(json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    conn = sqlite3.connect(out)
    conn.execute("VACUUM")
    conn.close()
    print(f"wrote {out} ({out.stat().st_size} bytes, {doc['checkpoints']} checkpoints) and {a.expected}")


if __name__ == "__main__":
    main()
