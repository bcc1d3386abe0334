"""Real LangGraph graphs on AgentStateSaver, against InMemorySaver running
the same graph with the same inputs."""

import asyncio
import threading
from typing import Annotated

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import _messages_delta_reducer
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from langgraph.checkpoint.agentstate import AgentStateSaver, ClosedError, MissingThreadIdError


def chat(checkpointer, delta=False):
    if delta:

        class S(TypedDict):
            messages: Annotated[list[AnyMessage], DeltaChannel(_messages_delta_reducer, snapshot_frequency=3)]

        state = S
    else:
        state = MessagesState

    def agent(s):
        n = len(s["messages"])
        return {"messages": [AIMessage(content=f"reply {n}", id=f"ai-{n}")]}

    return StateGraph(state).add_node("agent", agent).add_edge(START, "agent").add_edge("agent", END).compile(checkpointer=checkpointer)


def values(state):
    return [(type(m).__name__, m.content, m.id) for m in state.values["messages"]]


def drive(graph, thread, n, start=0):
    cfg = {"configurable": {"thread_id": thread}}
    for k in range(start, start + n):
        graph.invoke({"messages": [HumanMessage(content=f"hi {k}", id=f"h-{k}")]}, cfg)
    return cfg


@pytest.mark.parametrize("delta", [False, True], ids=["add_messages", "DeltaChannel"])
def test_chat_matches_in_memory_saver(db_path, delta):
    ref = chat(InMemorySaver(), delta)
    with AgentStateSaver.from_conn_string(db_path) as saver:
        g = chat(saver, delta)
        cfg = drive(g, "t1", 12)
        drive(ref, "t1", 12)
        assert values(g.get_state(cfg)) == values(ref.get_state(cfg))
        assert len(values(g.get_state(cfg))) == 24
        hist = list(g.get_state_history(cfg))
        ref_hist = list(ref.get_state_history(cfg))
        assert [values(h) for h in hist] == [values(h) for h in ref_hist]
        assert [h.metadata["step"] for h in hist] == [h.metadata["step"] for h in ref_hist]
        # time travel: a past checkpoint reads as it was
        past = hist[6]
        assert values(g.get_state(past.config)) == values(ref_hist[6])
    # the file persists: a new saver (a new process would do the same) resumes
    with AgentStateSaver.from_conn_string(db_path) as saver:
        g = chat(saver, delta)
        drive(g, "t1", 1, start=12)
        drive(ref, "t1", 1, start=12)
        assert values(g.get_state(cfg)) == values(ref.get_state(cfg))


def test_interrupt_and_resume(db_path):
    def ask(state):
        answer = interrupt("approve?")
        return {"messages": [AIMessage(content=f"approved: {answer}", id="ai-approve")]}

    def build(cp):
        return StateGraph(MessagesState).add_node("ask", ask).add_edge(START, "ask").add_edge("ask", END).compile(checkpointer=cp)

    cfg = {"configurable": {"thread_id": "hitl"}}
    with AgentStateSaver(db_path) as saver:
        g = build(saver)
        out = g.invoke({"messages": [HumanMessage(content="go", id="h")]}, cfg)
        assert "__interrupt__" in out
        st = g.get_state(cfg)
        assert st.next == ("ask",) and st.tasks[0].interrupts[0].value == "approve?"
    with AgentStateSaver(db_path) as saver:  # resumed by another saver on the same file
        g = build(saver)
        out = g.invoke(Command(resume="yes"), cfg)
        assert out["messages"][-1].content == "approved: yes"
        assert g.get_state(cfg).next == ()


def test_messages_keep_every_field(db_path):
    tm = ToolMessage(content="boom", tool_call_id="c1", status="error", artifact={"trace": [1, 2]}, id="t1")
    ai = AIMessage(
        content=[{"type": "text", "text": "calling"}],
        tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1", "type": "tool_call"}],
        invalid_tool_calls=[{"name": "g", "args": "{bad", "id": "c2", "error": "json", "type": "invalid_tool_call"}],
        usage_metadata={"input_tokens": 3, "output_tokens": 4, "total_tokens": 7, "input_token_details": {"cache_read": 1}},
        id="a1",
    )

    def node(s):
        return {"messages": [ai, tm]}

    with AgentStateSaver(db_path) as saver:
        g = StateGraph(MessagesState).add_node("n", node).add_edge(START, "n").compile(checkpointer=saver)
        cfg = {"configurable": {"thread_id": "fields"}}
        g.invoke({"messages": [HumanMessage(content="x", id="h")]}, cfg)
    with AgentStateSaver(db_path) as saver:
        msgs = StateGraph(MessagesState).add_node("n", node).add_edge(START, "n").compile(checkpointer=saver).get_state(cfg).values["messages"]
    assert msgs[1] == ai and msgs[2] == tm
    assert msgs[2].status == "error" and msgs[2].artifact == {"trace": [1, 2]}
    assert msgs[1].invalid_tool_calls == ai.invalid_tool_calls and msgs[1].usage_metadata == ai.usage_metadata


def test_async_graph(db_path):
    async def run(saver):
        g = chat(saver)
        cfg = {"configurable": {"thread_id": "a"}}
        for k in range(5):
            await g.ainvoke({"messages": [HumanMessage(content=f"hi {k}", id=f"h-{k}")]}, cfg)
        st = await g.aget_state(cfg)
        hist = [values(h) for h in [h async for h in g.aget_state_history(cfg)]]
        return values(st), hist

    async def main():
        async with AgentStateSaver.from_conn_string(db_path) as saver:
            got = await run(saver)
        return got, await run(InMemorySaver())

    (st, hist), (ref_st, ref_hist) = asyncio.run(main())
    assert len(st) == 10 and st == ref_st
    assert hist == ref_hist and len(hist) > 10


def test_threads_share_one_saver(db_path):
    with AgentStateSaver(db_path) as saver:
        g = chat(saver)
        errors = []

        def worker(i):
            try:
                drive(g, f"thread-{i}", 8)
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        ts = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert errors == []
        for i in range(6):
            st = g.get_state({"configurable": {"thread_id": f"thread-{i}"}})
            assert [m.content for m in st.values["messages"]] == [x for k in range(8) for x in (f"hi {k}", f"reply {2 * k + 1}")]


def test_bad_input_gets_langgraph_exceptions(db_path):
    saver = AgentStateSaver(db_path)
    g = chat(saver)
    with pytest.raises(ValueError):  # LangGraph itself: a checkpointer needs a thread_id
        g.invoke({"messages": [HumanMessage(content="x")]}, {"configurable": {}})
    with pytest.raises(KeyError):
        saver.put({"configurable": {}}, {"v": 4, "id": "1", "ts": "", "channel_values": {}, "channel_versions": {}, "versions_seen": {}}, {}, {})
    with pytest.raises(MissingThreadIdError):
        saver.get_tuple({"configurable": {"checkpoint_ns": ""}})
    # a value the serializer refuses: its own exception, and nothing stored
    cfg = {"configurable": {"thread_id": "bad", "checkpoint_ns": ""}}
    cp = {"v": 4, "id": "1f0", "ts": "2026-01-01T00:00:00+00:00", "channel_values": {"x": object()}, "channel_versions": {"x": "1"}, "versions_seen": {}}
    with pytest.raises(TypeError):
        saver.put(cfg, cp, {}, {"x": "1"})
    assert saver.get_tuple(cfg) is None
    saver.close()
    saver.close()  # twice is fine
    with pytest.raises(ClosedError):
        saver.get_tuple({"configurable": {"thread_id": "t1"}})


def test_paths_that_cannot_be_a_database(tmp_path):
    from langgraph.checkpoint.agentstate import InvalidArgumentError, NotAgentStateError, NotFoundError

    with pytest.raises(InvalidArgumentError, match="is a directory"):
        AgentStateSaver(str(tmp_path))
    missing = tmp_path / "nope" / "x.db"
    with pytest.raises(NotFoundError, match="does not exist"):
        AgentStateSaver(str(missing))
    assert not (tmp_path / "nope").exists()
    text = tmp_path / "notes.txt"
    text.write_text("hello, this is a text file")
    with pytest.raises(NotAgentStateError, match="not an SQLite database"):
        AgentStateSaver(str(text))
    assert text.read_text() == "hello, this is a text file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]  # nothing created beside it


def test_a_lone_surrogate_is_refused_not_replaced():
    from langgraph.checkpoint.agentstate import InvalidArgumentError

    with AgentStateSaver() as saver:
        cp = {"v": 4, "id": "1f0", "ts": "2026-01-01T00:00:00+00:00", "channel_values": {}, "channel_versions": {}, "versions_seen": {}}
        with pytest.raises(InvalidArgumentError, match="not valid Unicode"):
            saver.put({"configurable": {"thread_id": "a\ud800", "checkpoint_ns": ""}}, cp, {}, {})
        assert saver.get_tuple({"configurable": {"thread_id": "a\ufffd", "checkpoint_ns": ""}}) is None
        with pytest.raises(InvalidArgumentError):
            saver.get_tuple({"configurable": {"thread_id": "a\ud800"}})


def test_auto_retain_is_on_unless_turned_off():
    # Delta mode keeps storage linear by default: the engine's AutoRetain
    # is on unless the caller turns it off.
    with AgentStateSaver() as saver:
        assert saver.db.auto_retain is True
    with AgentStateSaver(auto_retain=False) as saver:
        assert saver.db.auto_retain is False
