"""LangGraph's own server (`langgraph dev`, langgraph-cli[inmem]) with the
package's factories in langgraph.json: runs, state, history and the store
go to the agentstate file, which the CLI reads while the server has it open."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from langgraph.checkpoint.agentstate import AgentStateSaver

AGENT = """
from langgraph.graph import START, MessagesState, StateGraph

def agent(state):
    return {"messages": [("ai", "you said: " + state["messages"][-1].content)]}

graph = StateGraph(MessagesState).add_node("agent", agent).add_edge(START, "agent").compile()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def langgraph_dev():
    exe = os.path.join(os.path.dirname(sys.executable), "langgraph")
    if not os.path.exists(exe):
        if os.environ.get("CI"):
            pytest.fail("langgraph-cli[inmem] is not installed: CI installs python/requirements-test.txt")
        pytest.skip("langgraph-cli[inmem] is not installed")
    return exe


def test_langgraph_dev_runs_on_agentstate(tmp_path, langgraph_dev, agentstate_cli):
    from langgraph_sdk import get_sync_client

    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "persistence.py").write_text("from langgraph.checkpoint.agentstate.server import make_checkpointer, make_store\n")
    (tmp_path / "langgraph.json").write_text(json.dumps({
        "dependencies": ["."],
        "graphs": {"agent": "./agent.py:graph"},
        "checkpointer": {"path": "./persistence.py:make_checkpointer"},
        "store": {"path": "./persistence.py:make_store"},
    }))
    db = str(tmp_path / "server.db")
    port = _free_port()
    env = dict(os.environ, AGENTSTATE_PATH=db, LANGGRAPH_NO_VERSION_CHECK="true", LANGSMITH_TRACING="false")
    proc = subprocess.Popen([langgraph_dev, "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port)],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(url + "/ok", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("langgraph dev did not start:\n" + proc.stdout.read()[-4000:])
            time.sleep(0.5)
        c = get_sync_client(url=url)
        t = c.threads.create()
        tid = t["thread_id"]
        for k in range(3):
            c.runs.wait(tid, "agent", input={"messages": [{"role": "human", "content": f"hello {k}"}]})
        st = c.threads.get_state(tid)
        assert [m["content"] for m in st["values"]["messages"]] == [x for k in range(3) for x in (f"hello {k}", f"you said: hello {k}")]
        hist = c.threads.get_history(tid, limit=100)
        c.store.put_item(["users", "u1"], "k", {"v": 1})
        assert c.store.get_item(["users", "u1"], "k")["value"] == {"v": 1}
        r = agentstate_cli("threads", "--json", db)  # the native CLI reads the file the server holds open
        assert r.returncode == 0 and tid in r.stdout, r.stdout + r.stderr
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    with AgentStateSaver(db) as saver:  # after the server: every checkpoint is in the file
        tuples = list(saver.list({"configurable": {"thread_id": tid}}))
        assert len(tuples) == len(hist) and len(tuples) > 3
        msgs = saver.get_tuple({"configurable": {"thread_id": tid, "checkpoint_ns": ""}}).checkpoint["channel_values"]["messages"]
        assert [m.content for m in msgs][-1] == "you said: hello 2"
