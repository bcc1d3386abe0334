"""Async graphs as LangGraph users run them: async nodes, chains of many
steps, parallel branches, subgraphs, Send fan-out, interrupts, every
durability, small and large executors, many threads and coroutines sharing
one saver. Each graph runs on AgentStateSaver and on InMemorySaver with the
same inputs, and the two must agree: state, history and pending writes.

The saver must never wait for a call queued behind it (LangGraph queues a
checkpoint's put behind the one before, and sends a task's writes as soon as
the task ends); every turn here runs under a deadline far below the 10 s
wait that used to turn such a queue into a NotFoundError.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import operator
import threading
from typing import Annotated

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Interrupt, Send, interrupt
from typing_extensions import TypedDict

from langgraph.checkpoint.agentstate import AgentStateSaver

TURN_DEADLINE = 8.0  # seconds: a stalled turn fails instead of hanging


class S(TypedDict):
    log: Annotated[list, operator.add]
    n: Annotated[int, operator.add]


def _step(name: str):
    async def f(s: S):
        await asyncio.sleep(0)
        return {"log": [name], "n": 1}

    return f


def chain(k: int):
    g = StateGraph(S)
    prev = START
    for i in range(k):
        g.add_node(f"n{i}", _step(f"n{i}"))
        g.add_edge(prev, f"n{i}")
        prev = f"n{i}"
    return g


def branches(width: int = 4):
    g = StateGraph(S)
    g.add_node("fork", _step("fork"))
    g.add_node("join", _step("join"))
    g.add_edge(START, "fork")
    for i in range(width):
        g.add_node(f"b{i}", _step(f"b{i}"))
        g.add_edge("fork", f"b{i}")
        g.add_edge(f"b{i}", "join")
    g.add_edge("join", END)
    return g


def with_subgraph():
    inner = chain(3).compile()
    g = StateGraph(S)
    g.add_node("before", _step("before"))
    g.add_node("inner", inner)
    g.add_node("after", _step("after"))
    g.add_edge(START, "before")
    g.add_edge("before", "inner")
    g.add_edge("inner", "after")
    return g


class W(TypedDict):
    item: int


def fan_out(width: int = 6):
    g = StateGraph(S)

    async def plan(s: S):
        return {"log": ["plan"]}

    async def worker(w: W):
        await asyncio.sleep(0)
        return {"log": [f"w{w['item']}"]}

    g.add_node("plan", plan)
    g.add_node("worker", worker)
    g.add_node("done", _step("done"))
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", lambda s: [Send("worker", {"item": i}) for i in range(width)], ["worker"])
    g.add_edge("worker", "done")
    return g


def asks():
    g = StateGraph(S)

    async def ask(s: S):
        answer = interrupt("which?")
        return {"log": [f"answer {answer}"]}

    g.add_node("first", _step("first"))
    g.add_node("ask", ask)
    g.add_node("last", _step("last"))
    g.add_edge(START, "first")
    g.add_edge("first", "ask")
    g.add_edge("ask", "last")
    return g


def _plain(v):
    # An interrupt's id is a hash of its checkpoint's id, which differs
    # from saver to saver: compare what it carries.
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, Interrupt):
        return ("Interrupt", v.value)
    return v


def _writes(t):
    return sorted((w[1], repr(_plain(w[2]))) for w in t.pending_writes or ())


async def _snapshot(graph, cfg):
    state = await graph.aget_state(cfg)
    history = [(h.values, h.next, h.metadata.get("step")) async for h in graph.aget_state_history(cfg)]
    tup = await graph.checkpointer.aget_tuple(cfg)
    return state.values, state.next, history, _writes(tup) if tup else None


async def _drive(graph, cfg, inputs, durability):
    for x in inputs:
        await asyncio.wait_for(graph.ainvoke(x, cfg, durability=durability), TURN_DEADLINE)
    return await _snapshot(graph, cfg)


async def _compare(builder, inputs, durability="async", thread="t"):
    cfg = {"configurable": {"thread_id": thread}}
    with AgentStateSaver() as saver:
        got = await _drive(builder.compile(checkpointer=saver), cfg, inputs, durability)
    want = await _drive(builder.compile(checkpointer=InMemorySaver()), cfg, inputs, durability)
    assert got == want
    return got


def _run(coro, executor: int | None = None):
    async def main():
        if executor is not None:
            asyncio.get_running_loop().set_default_executor(concurrent.futures.ThreadPoolExecutor(executor))
        return await coro

    return asyncio.run(main())


FRESH = {"log": [], "n": 0}


@pytest.mark.parametrize("k", [1, 2, 8, 33, 64])
@pytest.mark.parametrize("executor", [1, 2, 32])
def test_async_chains_match_in_memory_saver(k, executor):
    values, _, history, _ = _run(_compare(chain(k), [FRESH, FRESH]), executor)
    assert values["n"] == 2 * k and len(values["log"]) == 2 * k
    assert len(history) == 2 * (k + 2)


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
@pytest.mark.parametrize(
    "graph",
    [lambda: chain(12), branches, with_subgraph, fan_out],
    ids=["chain", "branches", "subgraph", "send"],
)
def test_graph_shapes_and_durabilities(graph, durability):
    values, *_ = _run(_compare(graph(), [FRESH, FRESH, FRESH], durability), 2)
    assert values["log"]


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_interrupt_and_resume(durability):
    async def go():
        cfg = {"configurable": {"thread_id": "q"}}
        out = []
        for saver in (AgentStateSaver(), InMemorySaver()):
            g = asks().compile(checkpointer=saver)
            await asyncio.wait_for(g.ainvoke(FRESH, cfg, durability=durability), TURN_DEADLINE)
            paused = await _snapshot(g, cfg)
            await asyncio.wait_for(g.ainvoke(Command(resume="blue"), cfg, durability=durability), TURN_DEADLINE)
            out.append((paused, await _snapshot(g, cfg)))
            if isinstance(saver, AgentStateSaver):
                saver.close()
        assert out[0] == out[1]
        (paused_values, paused_next, _, _), (values, _, _, _) = out[0]
        assert paused_next == ("ask",)
        assert values["log"] == ["first", "answer blue", "last"]

    _run(go(), 2)


def _extend(cur, writes):
    out = list(cur or [])
    for w in writes:
        out.extend(w)
    return out


try:
    from langgraph.channels.delta import DeltaChannel

    class D(TypedDict):
        items: Annotated[list, DeltaChannel(_extend, snapshot_frequency=3)]

except ImportError:  # LangGraph before DeltaChannel: the package's range excludes it
    D = None


def test_delta_channel_graph_first_turn_and_history():
    g = StateGraph(D)

    async def add(s: D):
        return {"items": [len(s.get("items") or [])]}

    g.add_node("add", add)
    g.add_edge(START, "add")
    values, *_ = _run(_compare(g, [{"items": ["x"]} for _ in range(7)]), 2)
    assert len(values["items"]) == 14


def test_many_threads_and_coroutines_share_one_saver():
    """8 OS threads, each with its own event loop running 4 graphs at once,
    on one saver: every thread of the graph ends as InMemorySaver's."""
    saver = AgentStateSaver()
    graph = chain(10).compile(checkpointer=saver)
    ref = chain(10).compile(checkpointer=InMemorySaver())
    errors: list[BaseException] = []

    def worker(w: int) -> None:
        async def one(c: int):
            cfg = {"configurable": {"thread_id": f"w{w}-c{c}"}}
            for _ in range(3):
                await asyncio.wait_for(graph.ainvoke(FRESH, cfg), TURN_DEADLINE)

        async def main():
            await asyncio.gather(*(one(c) for c in range(4)))

        try:
            asyncio.run(main())
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[0]
    assert not any(t.is_alive() for t in threads)

    async def check():
        cfg = {"configurable": {"thread_id": "ref"}}
        for _ in range(3):
            await ref.ainvoke(FRESH, cfg)
        want = await _snapshot(ref, cfg)
        for w in range(8):
            for c in range(4):
                got = await _snapshot(graph, {"configurable": {"thread_id": f"w{w}-c{c}"}})
                assert got[:2] == want[:2]
                assert [h[1:] for h in got[2]] == [h[1:] for h in want[2]]

    asyncio.run(check())
    saver.close()


def test_writes_before_their_put_are_stored_with_it():
    """Writes that come before their checkpoint's put (as LangGraph sends
    them) return at once and are stored by that put."""
    saver = AgentStateSaver()
    root = saver.put({"configurable": {"thread_id": "h", "checkpoint_ns": ""}}, _cp("1"), {}, {})
    # a put of the thread is in progress: writes for the next checkpoint wait for it
    with saver._cond:
        saver._inflight["h\0\0None"] = 1
    cfg2 = {"configurable": {"thread_id": "h", "checkpoint_ns": "", "checkpoint_id": "2"}}
    saver.put_writes(cfg2, [("a", 1), ("b", 2)], "task-1")
    with saver._cond:
        del saver._inflight["h\0\0None"]
    saver.put(root, _cp("2"), {}, {})
    t = saver.get_tuple(cfg2)
    assert sorted((w[1], w[2]) for w in t.pending_writes) == [("a", 1), ("b", 2)]
    saver.close()


def test_writes_whose_checkpoint_never_comes_are_reported_at_close(caplog):
    saver = AgentStateSaver()
    saver.put_writes({"configurable": {"thread_id": "x", "checkpoint_ns": "", "checkpoint_id": "nope"}}, [("a", 1)], "t")
    with caplog.at_level("WARNING", logger="langgraph.checkpoint.agentstate"):
        saver.close()
    assert any("'nope'" in r.getMessage() and "never put" in r.getMessage() for r in caplog.records)


def test_delta_history_of_a_missing_thread_is_empty():
    saver = AgentStateSaver()
    for cfg in (
        {"configurable": {"thread_id": "none"}},
        {"configurable": {"thread_id": "none", "checkpoint_ns": "", "checkpoint_id": "1f0"}},
    ):
        assert saver.get_delta_channel_history(config=cfg, channels=["messages", "x"]) == {
            "messages": {"writes": []},
            "x": {"writes": []},
        }
        got = asyncio.run(saver.aget_delta_channel_history(config=cfg, channels=["messages"]))
        assert got == {"messages": {"writes": []}}
    saver.close()


def test_setup_as_langgraph_documents_it(tmp_path):
    from langgraph.store.agentstate import AgentStateStore

    async def go():
        async with AgentStateSaver.from_conn_string(str(tmp_path / "a.db")) as saver:
            await saver.asetup()
            await saver.setup()  # AsyncSqliteSaver's form
            saver.setup()  # SqliteSaver's
        async with AgentStateStore.from_conn_string(str(tmp_path / "a.db")) as store:
            await store.asetup()
            await store.setup()
            store.setup()
        return saver

    saver = asyncio.run(go())
    from langgraph.checkpoint.agentstate import ClosedError

    with pytest.raises(ClosedError):
        saver.setup()


def _cp(cid: str) -> dict:
    return {"v": 4, "id": cid, "ts": "2026-12-07T00:00:00+00:00", "channel_values": {}, "channel_versions": {}, "versions_seen": {}}


def test_values_beside_new_versions_are_kept_where_none_is_stored():
    """A checkpoint written by hand (as DeerFlow writes some) may carry values
    for channels its new_versions does not name: each is kept where no value
    of its version is stored yet, and never replaces one that is."""
    saver = AgentStateSaver()
    cfg = {"configurable": {"thread_id": "hand", "checkpoint_ns": ""}}
    first = {**_cp("1"), "channel_values": {"title": "draft", "todos": [1, 2]}, "channel_versions": {"title": "1", "todos": "1"}}
    c1 = saver.put(cfg, first, {}, {})
    assert saver.get_tuple(c1).checkpoint["channel_values"] == {"title": "draft", "todos": [1, 2]}
    # the same versions with other values: the stored ones stay
    second = {**_cp("2"), "channel_values": {"title": "other", "todos": [9]}, "channel_versions": {"title": "1", "todos": "1"}}
    c2 = AgentStateSaver(db=saver.db).put(c1, second, {}, {})
    assert saver.get_tuple(c2).checkpoint["channel_values"] == {"title": "draft", "todos": [1, 2]}
    # one version stored already, one not: the first stays, the second is kept
    mixed = {**_cp("2a"), "channel_values": {"title": "x", "todos": [5]}, "channel_versions": {"title": "1", "todos": "1b"}}
    c2a = AgentStateSaver(db=saver.db).put(c2, mixed, {}, {})
    assert saver.get_tuple(c2a).checkpoint["channel_values"] == {"title": "draft", "todos": [5]}
    # a new version named by new_versions, another carried beside it
    third = {**_cp("3"), "channel_values": {"title": "final", "todos": [3]}, "channel_versions": {"title": "2", "todos": "2"}}
    c3 = saver.put(c2a, third, {}, {"title": "2"})
    assert saver.get_tuple(c3).checkpoint["channel_values"] == {"title": "final", "todos": [3]}
    saver.close()
