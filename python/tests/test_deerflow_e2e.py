"""One DeerFlow run's whole path on one agentstate file, as DeerFlow's
Gateway drives its five persistence surfaces (issue 37, item 5): the run
store admits a pending run, the thread record is upserted, the run starts,
the pre-run checkpoint is captured, the graph steps through
AgentStateSaver, the journal writes events with tokens by model, the run
completes with its summary, the title is synced into the thread's display
name and the thread goes back to idle. Then a worker killed with SIGKILL
in the middle of a run: the restarted Gateway reconciles the orphan as an
error through the run store's lease takeover, and nothing the dead worker
was told was stored is lost. Then a cancel with rollback: the first cancel
action reaches the owner through its lease renewal, its completion is
refused, and the pre-run state comes back as a new head.

Everything here is this package's (DeerFlow itself is not needed); the
sequence of calls is the one DeerFlow's RunManager and run worker make
(docs/deerflow.md)."""

from __future__ import annotations

import asyncio
from contextlib import closing
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timedelta, timezone

import pytest

from langgraph.checkpoint.agentstate import AgentStateSaver, Database
from langgraph.checkpoint.agentstate import deerflow as df

# The graph every process builds: an agent node that appends one reply per
# step until the goal, names the thread after the first human message, and
# can be told to hang at a step (the worker that will be killed).
GRAPH = textwrap.dedent(
    """
    import operator
    import time
    from typing import Annotated, TypedDict

    from langgraph.graph import END, START, StateGraph


    class State(TypedDict, total=False):
        messages: Annotated[list, operator.add]
        title: str
        steps: int
        goal: int


    def build(saver, hang_at=None):
        def agent(s):
            n = s.get("steps", 0) + 1
            if hang_at is not None and n == hang_at:
                time.sleep(3600)
            out = {"messages": [f"ai {n}"], "steps": n}
            if not s.get("title"):
                out["title"] = "About " + s["messages"][0]
            return out

        g = StateGraph(State)
        g.add_node("agent", agent)
        g.add_edge(START, "agent")
        g.add_conditional_edges("agent", lambda s: "agent" if s["steps"] < s["goal"] else END)
        return g.compile(checkpointer=saver)
    """
)

# A Gateway worker that is killed in the middle of its run: it admits and
# starts the run with a short worker lease, steps the graph (each step
# stored before the next begins) and journals one event per step, printing
# what the file acknowledged; at the thread's 7th step (the 4th of this
# run: the first run took 3) the graph hangs.
CHILD = textwrap.dedent(
    """
    import asyncio, json, sys
    from datetime import datetime, timedelta, timezone
    from langgraph.checkpoint.agentstate import AgentStateSaver, Database
    from langgraph.checkpoint.agentstate import deerflow as df

    path, thread = sys.argv[1], sys.argv[2]
    ns = {}
    exec(sys.argv[3], ns)

    async def main():
        df.current_user_id.set("alice")  # the worker runs alice's request: its events are hers
        db = Database(path)
        saver = AgentStateSaver(db=db)
        runs = df.AgentStateRunStore(db=db)
        events = df.AgentStateRunEventStore(db=db)
        threads = df.AgentStateThreadMetaStore(db=db)
        lease = (datetime.now(timezone.utc) + timedelta(seconds=1)).isoformat()
        await runs.create_thread_operation_atomic("r-killed", thread_id=thread, owner_worker_id="w-child",
                                                  lease_expires_at=lease, user_id="alice")
        await threads.update_status(thread, "busy", user_id="alice")
        assert await runs.start_run("r-killed")
        print("started", flush=True)
        graph = ns["build"](saver, hang_at=7)
        config = {"configurable": {"thread_id": thread}}
        async for _ in graph.astream({"messages": ["more"], "goal": 10}, config, durability="sync"):
            head = await saver.aget_tuple(config)
            ev = await events.put(thread_id=thread, run_id="r-killed", event_type="ai_message", category="message",
                                  content=head.checkpoint["channel_values"]["messages"][-1])
            print("ack", json.dumps({"checkpoint": head.config["configurable"]["checkpoint_id"], "seq": ev["seq"]}), flush=True)

    asyncio.run(main())
    """
)


@pytest.fixture(autouse=True)
def _alice():
    """Every call here is made for alice's request (the Gateway's user
    context): writes are stamped with her, reads see her events (asyncio.run
    and worker threads copy the context)."""
    token = df.current_user_id.set("alice")
    yield
    df.current_user_id.reset(token)


def _stores(db):
    return (
        df.AgentStateRunStore(db=db),
        df.AgentStateRunEventStore(db=db),
        df.AgentStateThreadMetaStore(db=db),
    )


def _graph(saver, **kw):
    ns: dict = {}
    exec(compile(GRAPH, "<graph>", "exec", dont_inherit=True), ns)  # eager annotations, whatever this module's
    return ns["build"](saver, **kw)


def _at(seconds: float) -> str:
    return (datetime.now(timezone.utc) + timedelta(seconds=seconds)).isoformat()


async def _one_run(db, thread: str) -> None:
    """The Gateway's happy path for one run, checked at every step."""
    saver = AgentStateSaver(db=db)
    runs, events, threads = _stores(db)
    config = {"configurable": {"thread_id": thread}}

    row, claimed = await runs.create_thread_operation_atomic(
        "r1", thread_id=thread, owner_worker_id="w1", lease_expires_at=_at(30), user_id="alice", model_name="gpt-main"
    )
    assert (row["status"], claimed) == ("pending", [])
    if await threads.get(thread, user_id="alice") is None:
        await threads.create(thread, user_id="alice", assistant_id="lead_agent")
    await threads.update_status(thread, "busy", user_id="alice")
    assert await runs.start_run("r1") is True
    assert (await runs.get("r1", user_id="alice"))["status"] == "running"

    pre_run = await saver.aget_tuple(config)
    assert pre_run is None  # a new thread: the rollback point is "empty"

    await events.put(thread_id=thread, run_id="r1", event_type="human_message", category="message", content="hello")
    graph = _graph(saver)
    state = await graph.ainvoke({"messages": ["hello"], "goal": 3}, config)
    assert state["messages"] == ["hello", "ai 1", "ai 2", "ai 3"] and state["title"] == "About hello"
    # Journal: one reply per step, each LLM call's usage under its model.
    usage = {"gpt-main": [(10, 5), (12, 6)], "gpt-mini": [(3, 1)]}
    journal = [
        {"thread_id": thread, "run_id": "r1", "event_type": "llm_end", "category": "trace", "content": "",
         "metadata": {"model_name": m, "usage": {"input_tokens": i, "output_tokens": o, "total_tokens": i + o}}}
        for m, calls in usage.items() for i, o in calls
    ]
    journal += [
        {"thread_id": thread, "run_id": "r1", "event_type": "ai_message", "category": "message", "content": m}
        for m in state["messages"][1:]
    ]
    stored = await events.put_batch(journal)
    assert [e["seq"] for e in stored] == list(range(2, 2 + len(journal)))
    by_model: dict[str, dict[str, int]] = {}
    for e in await events.list_events(thread, "r1", event_types=["llm_end"]):
        u, m = e["metadata"]["usage"], e["metadata"]["model_name"]
        b = by_model.setdefault(m, {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0})
        for k in b:
            b[k] += u[k]
    assert by_model == {"gpt-main": {"input_tokens": 22, "output_tokens": 11, "total_tokens": 33},
                        "gpt-mini": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}}

    msgs = await events.list_messages(thread)
    assert await runs.update_run_completion(
        "r1", status="success", token_usage_by_model=by_model, llm_call_count=3, lead_agent_tokens=37,
        message_count=len(msgs), first_human_message=msgs[0]["content"], last_ai_message=msgs[-1]["content"],
    ) is True
    # A late writer cannot replace the outcome.
    assert await runs.update_run_completion("r1", status="error", error="late") is False
    await threads.update_display_name(thread, state["title"], user_id="alice")
    await threads.update_status(thread, "idle", user_id="alice")


def _check_one_run(db, thread: str) -> None:
    runs, events, threads = _stores(db)
    saver = AgentStateSaver(db=db)

    async def go():
        r = await runs.get("r1", user_id="alice")
        assert (r["status"], r["total_input_tokens"], r["total_output_tokens"], r["total_tokens"]) == ("success", 25, 12, 37)
        assert (r["message_count"], r["first_human_message"], r["last_ai_message"]) == (4, "hello", "ai 3")
        assert r["token_usage_by_model"]["gpt-mini"] == {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}
        agg = await runs.aggregate_tokens_by_thread(thread)
        assert agg["by_model"] == {"gpt-main": {"tokens": 33, "runs": 1}, "gpt-mini": {"tokens": 4, "runs": 1}}
        assert agg["by_caller"]["lead_agent"] == 37
        t = await threads.get(thread, user_id="alice")
        assert (t["display_name"], t["status"]) == ("About hello", "idle")
        assert [m["content"] for m in await events.list_messages(thread)] == ["hello", "ai 1", "ai 2", "ai 3"]
        head = await saver.aget_tuple({"configurable": {"thread_id": thread}})
        assert head.checkpoint["channel_values"]["messages"] == ["hello", "ai 1", "ai 2", "ai 3"]

    asyncio.run(go())


def test_one_run_whole_path_on_one_file_survives_a_restart(tmp_path):
    path = str(tmp_path / "deerflow.db")
    with closing(Database(path)) as db:
        asyncio.run(_one_run(db, "t1"))
        _check_one_run(db, "t1")
    with closing(Database(path)) as db:  # a restart reads the same
        _check_one_run(db, "t1")


def test_kill9_mid_run_then_restart_reconciles_and_rollback_restores(tmp_path):
    path = str(tmp_path / "deerflow.db")
    thread = "t1"
    config = {"configurable": {"thread_id": thread}}
    with closing(Database(path)) as db:
        asyncio.run(_one_run(db, thread))

    # A worker killed with SIGKILL in the middle of its run.
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, path, thread, GRAPH],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy(),
    )
    acked = []
    try:
        deadline = time.time() + 120
        while len(acked) < 3:
            line = child.stdout.readline()
            if not line:
                raise AssertionError(f"the worker exited ({child.wait()}) early: {child.stderr.read()[-3000:]}")
            if line.startswith("ack "):
                acked.append(json.loads(line[4:]))
            assert time.time() < deadline, "the worker did not step"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL

    time.sleep(1.2)  # the dead worker's lease expires

    async def restart():
        with closing(Database(path)) as db:
            saver = AgentStateSaver(db=db)
            runs, events, threads = _stores(db)
            # The Gateway's startup recovery: orphans are the in-flight runs
            # whose worker lease expired; each is claimed by compare-and-set.
            orphans = await runs.list_inflight_with_expired_lease(grace_seconds=0)
            assert [r["run_id"] for r in orphans] == ["r-killed"]
            assert await runs.claim_for_takeover("r-killed", grace_seconds=0, error="orphaned: the worker stopped") is True
            assert await runs.claim_for_takeover("r-killed", grace_seconds=0, error="again") is False
            r = await runs.get("r-killed", user_id="alice")
            assert (r["status"], r["error"]) == ("error", "orphaned: the worker stopped")
            await threads.update_status(thread, "idle", user_id="alice")
            # Nothing acknowledged is lost: every checkpoint and event the
            # worker was told was stored is there.
            ids = {c.config["configurable"]["checkpoint_id"] async for c in saver.alist(config)}
            assert {a["checkpoint"] for a in acked} <= ids
            seqs = {e["seq"] for e in await events.list_events(thread, "r-killed")}
            assert {a["seq"] for a in acked} <= seqs
            head = await saver.aget_tuple(config)
            assert head.checkpoint["channel_values"]["messages"][-4:] == ["more", "ai 4", "ai 5", "ai 6"]  # the killed run's 3 steps

            # A cancel with rollback: a new run, its pre-run checkpoint
            # captured, two graph steps, then another worker asks for a
            # rollback. The owner learns it at its lease renewal; its
            # completion is refused; it restores the pre-run state as a new
            # head and ends the run interrupted.
            row, claimed = await runs.create_thread_operation_atomic(
                "r3", thread_id=thread, owner_worker_id="w3", lease_expires_at=_at(30), user_id="alice", multitask_strategy="rollback"
            )
            assert claimed == []  # the orphan was already ended
            assert await runs.start_run("r3")
            pre_run = await saver.aget_tuple(config)
            pre_messages = pre_run.checkpoint["channel_values"]["messages"]
            graph = _graph(saver)
            after = await graph.ainvoke({"messages": ["undo me"], "goal": head.checkpoint["channel_values"]["steps"] + 2}, config)
            assert after["messages"][-3:] == ["undo me", "ai 7", "ai 8"]
            assert await runs.request_cancel("r3", action="rollback") == "rollback"
            assert await runs.request_cancel("r3", action="interrupt") == "rollback"  # the first action wins
            renewal = await runs.renew_lease("r3", owner_worker_id="w3", lease_expires_at=_at(30))
            assert (renewal.renewed, renewal.cancel_action) == (True, "rollback")
            fin = await runs.finalize_if_not_cancelled("r3", status="success")
            assert (fin.finalized, fin.cancel_action) == (False, "rollback")
            from langgraph.types import Overwrite

            restored = await graph.aupdate_state(pre_run.config, {"messages": Overwrite(list(pre_messages))}, as_node="agent")
            assert await runs.update_status("r3", "interrupted", error="rolled back") is True
            new_head = await saver.aget_tuple(config)
            assert new_head.config["configurable"]["checkpoint_id"] == restored["configurable"]["checkpoint_id"]
            assert new_head.config["configurable"]["checkpoint_id"] != pre_run.config["configurable"]["checkpoint_id"]
            assert new_head.parent_config["configurable"]["checkpoint_id"] == pre_run.config["configurable"]["checkpoint_id"]
            assert new_head.checkpoint["channel_values"]["messages"] == pre_messages
            assert (await runs.get("r3", user_id="alice"))["status"] == "interrupted"
            return new_head.config["configurable"]["checkpoint_id"], pre_messages

    head_id, pre_messages = asyncio.run(restart())
    with closing(Database(path)) as db:  # and once more after a restart
        saver = AgentStateSaver(db=db)
        head = saver.get_tuple(config)
        assert head.config["configurable"]["checkpoint_id"] == head_id
        assert head.checkpoint["channel_values"]["messages"] == pre_messages
