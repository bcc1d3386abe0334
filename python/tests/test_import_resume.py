"""LangGraph Python files imported with `agentstate import-langgraph` read,
in AgentStateSaver, as LangGraph itself read their sources (every
checkpoint of the committed fixtures: values, metadata, pending writes,
parents), and a graph resumed on the imported file gives the state it
gives on the source with SqliteSaver."""

import json
import os
import shutil
import sqlite3
import sys

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph.checkpoint.agentstate import AgentStateSaver

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testdata", "langgraph", "python")
AES_KEY = "0123456789abcdef0123456789abcdef"  # the encrypted fixture's (generate.sh --compat)
TASKS = "__pregel_tasks"

sys.path.insert(0, FIXTURES)
import compat  # noqa: E402  (the compatibility fixtures' graph and their JSON mapping)


def _revive_old_json(v):
    import datetime as dt

    from langchain_core.load import load

    def dates_out(x):
        if isinstance(x, dict):
            if x.get("lc") == 2 and x.get("id") == ["datetime", "datetime"] and x.get("method") == "fromisoformat":
                return "\x00datetime:" + x["args"][0]
            return {k: dates_out(y) for k, y in x.items()}
        if isinstance(x, list):
            return [dates_out(y) for y in x]
        return x

    def dates_in(x):
        if isinstance(x, str) and x.startswith("\x00datetime:"):
            return dt.datetime.fromisoformat(x[len("\x00datetime:"):])
        if isinstance(x, dict):
            return {k: dates_in(y) for k, y in x.items()}
        if isinstance(x, list):
            return [dates_in(y) for y in x]
        if hasattr(x, "additional_kwargs"):
            x.additional_kwargs = dates_in(x.additional_kwargs)
        return x

    return dates_in(load(dates_out(v)))


def _no_default_example(v):
    # langchain-core 0.3's messages had `example` (False by default), which
    # LangChain's JSON form leaves out when it is the default and 1.x reads
    # as None: the same message.
    if isinstance(v, dict):
        return {k: _no_default_example(x) for k, x in v.items() if not (k == "example" and not x)}
    if isinstance(v, list):
        return [_no_default_example(x) for x in v]
    return v


def imported(tmp_path, agentstate_cli, name):
    dst = str(tmp_path / (name + ".db"))
    env = dict(os.environ, LANGGRAPH_AES_KEY=AES_KEY) if "encrypted" in name else None
    import subprocess

    r = subprocess.run([os.environ.get("AGENTSTATE_CLI") or "agentstate", "import-langgraph", os.path.join(FIXTURES, name), dst],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return dst


def imported_checkpoints(saver, expected):
    """Each checkpoint the expected file lists, as the saver reads it (with
    its parent checked), and what LangGraph read from the source."""
    n = 0
    for thread, by_ns in expected["threads"].items():
        for ns, cps in by_ns.items():
            for want in cps:
                t = saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": want["checkpoint_id"]}})
                assert t is not None, (thread, ns, want["checkpoint_id"])
                parent = t.parent_config["configurable"]["checkpoint_id"] if t.parent_config else None
                assert parent == want["parent_checkpoint_id"]
                n += 1
                yield t, want
    assert n == expected["checkpoints"] > 5


def resumed_states(src_fixture, dst, build, cfg, enc):
    """One more turn on the source (SqliteSaver, a copy) and on the imported
    file (AgentStateSaver): each side's state, next nodes and new checkpoints."""
    src = os.path.join(os.path.dirname(dst), "source.sqlite")
    shutil.copy(os.path.join(FIXTURES, src_fixture), src)
    states = []
    conn = sqlite3.connect(src, check_same_thread=False)
    with AgentStateSaver(dst) as ours:
        for saver in (SqliteSaver(conn), ours):
            g = build(saver)
            before = len(list(g.get_state_history(cfg)))
            g.invoke({"messages": [HumanMessage(id="resumed", content="one more, please")]}, cfg)
            snap = g.get_state(cfg)
            states.append((enc(snap.values), list(snap.next), len(list(g.get_state_history(cfg))) - before))
    conn.close()
    assert states[1][2] >= 1  # the resumed turn wrote checkpoints
    return states


@pytest.mark.parametrize("name", ["compat", "encrypted", "0.3", "0.2"])
def test_every_checkpoint_reads_as_langgraph_read_the_source(tmp_path, agentstate_cli, name):
    expected = json.load(open(os.path.join(FIXTURES, f"expected-py-{name}.json")))
    dst = imported(tmp_path, agentstate_cli, f"langgraph-py-{name}.sqlite")
    with AgentStateSaver(dst) as saver:
        for t, want in imported_checkpoints(saver, expected):
            values = dict(t.checkpoint["channel_values"])
            sends = want["checkpoint"]["pending_sends"]
            if sends:  # formats 1-3: LangGraph reads them into the tasks channel
                assert compat.enc(values.pop(TASKS)) == sends
            assert compat.enc(values) == want["checkpoint"]["channel_values"]
            md = t.metadata
            if "writes" in md:
                # Formats before 4 kept the step's writes in the metadata as
                # serde values; the engine's metadata is JSON, where the
                # import keeps them in the JSON form LangGraph's json serde
                # wrote: messages as LangChain's constructors (lc 1), a
                # datetime as LangGraph's (lc 2, fromisoformat), which
                # LangGraph 1.2 no longer revives itself.
                md = {**md, "writes": _revive_old_json(md["writes"])}
            got = json.loads(json.dumps(compat.enc(md), default=str))
            assert _no_default_example(got) == _no_default_example(want["metadata"])
            assert [[w[0], w[1], compat.enc(w[2])] for w in t.pending_writes] == want["pending_writes"]


@pytest.mark.parametrize("name", ["compat", "0.3", "0.2"])
def test_an_imported_thread_resumes_as_the_source_does(tmp_path, agentstate_cli, name):
    fixture = f"langgraph-py-{name}.sqlite"
    dst = imported(tmp_path, agentstate_cli, fixture)
    states = resumed_states(fixture, dst, compat.build, {"configurable": {"thread_id": "compat"}}, compat.enc)
    assert states[0] == states[1]


def test_the_main_fixture_reads_as_langgraph_read_it_and_resumes(tmp_path, agentstate_cli):
    """langgraph-py.sqlite: tool loops, time travel, forks, subgraphs,
    interrupts, Send fan-out, DeltaChannels, every extension type."""
    import generate  # the fixture's graphs and FORMATS.md's full mapping (needs numpy)

    expected = json.load(open(os.path.join(FIXTURES, "expected-py-sqlite.json")))
    dst = imported(tmp_path, agentstate_cli, "langgraph-py.sqlite")
    with AgentStateSaver(dst) as saver:
        for t, want in imported_checkpoints(saver, expected):
            assert generate.enc(t.checkpoint["channel_values"]) == want["checkpoint"]["channel_values"]
            assert [[w[0], w[1], generate.enc(w[2])] for w in t.pending_writes] == want["pending_writes"]
    cfg = {"configurable": {"thread_id": "chat", "user_id": "u-1", "tenant": "acme", "priority": 2}}
    states = resumed_states("langgraph-py.sqlite", dst, lambda s: generate.build_graphs(s)["chat"], cfg, generate.enc)
    assert states[0] == states[1]
