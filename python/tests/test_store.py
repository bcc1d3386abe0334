"""AgentStateStore against LangGraph's InMemoryStore: the same operations
give the same answers; TTL as LangGraph defines it."""

import asyncio
import time

import pytest
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from langgraph.checkpoint.agentstate import AgentStateSaver, AgentStateStore, InvalidArgumentError


def fill(store):
    store.put(("users", "alice", "memories"), "m1", {"text": "likes tea", "score": 7, "tags": ["a"]})
    store.put(("users", "alice", "memories"), "m2", {"text": "runs", "score": 3})
    store.put(("users", "bob", "memories"), "m1", {"text": "likes coffee", "score": 9})
    store.put(("users", "bob", "prefs"), "lang", {"v": "pt"})
    store.put(("docs",), "d1", {"n": 1})


def shape(items):
    return sorted((tuple(i.namespace), i.key, repr(sorted(i.value.items()))) for i in items)


def test_same_answers_as_in_memory_store(db_path):
    ref = InMemoryStore()
    with AgentStateStore(db_path) as st:
        for s in (st, ref):
            fill(s)
        assert st.get(("users", "alice", "memories"), "m1").value == ref.get(("users", "alice", "memories"), "m1").value
        assert st.get(("users", "alice", "memories"), "nope") is None
        for prefix, flt in [(("users",), None), (("users", "alice"), {"score": {"$gte": 5}}), (("users",), {"text": "likes coffee"}), (("users", "alice"), {"text": "runs"}), ((), None)]:
            assert shape(st.search(prefix, filter=flt, limit=50)) == shape(ref.search(prefix, filter=flt, limit=50)), (prefix, flt)
        assert sorted(st.list_namespaces()) == sorted(ref.list_namespaces())
        assert sorted(st.list_namespaces(prefix=("users",), max_depth=2)) == sorted(ref.list_namespaces(prefix=("users",), max_depth=2))
        assert sorted(st.list_namespaces(suffix=("memories",))) == sorted(ref.list_namespaces(suffix=("memories",)))
        st.delete(("users", "alice", "memories"), "m2")
        ref.delete(("users", "alice", "memories"), "m2")
        assert shape(st.search(("users", "alice"))) == shape(ref.search(("users", "alice")))
        # one batch: a put then a get of the same key sees the put
        ns = ("b",)
        res = st.batch([PutOp(ns, "k", {"x": 1}), GetOp(ns, "k"), SearchOp(ns), ListNamespacesOp(match_conditions=(MatchCondition("prefix", ns),))])
        assert res[0] is None and res[1].value == {"x": 1} and [i.key for i in res[2]] == ["k"] and res[3] == [ns]


def test_ttl_expires_refreshes_and_sweeps(db_path):
    st = AgentStateStore(db_path, ttl={"default_ttl": 1 / 60 / 4, "refresh_on_read": True})  # 0.25 s
    try:
        st.put(("t",), "short", {"v": 1})
        st.put(("t",), "forever", {"v": 2}, ttl=None)
        st.put(("t",), "refreshed", {"v": 3})
        for _ in range(4):
            time.sleep(0.1)
            assert st.get(("t",), "refreshed") is not None  # each read pushes expiry back
        assert st.get(("t",), "short", refresh_ttl=False) is None
        assert st.sweep_ttl() >= 1
        assert st.get(("t",), "forever").value == {"v": 2}
        with pytest.raises(InvalidArgumentError):
            st.put(("t",), "neg", {"v": 1}, ttl=-1)
    finally:
        st.close()


def test_sweeper_thread_stops(db_path):
    st = AgentStateStore(db_path, ttl={"default_ttl": 1, "sweep_interval_minutes": 1})
    assert st._sweeper is not None and st._sweeper.is_alive()
    st.close()
    assert st._sweeper is None


def test_semantic_search_is_refused_not_ignored():
    with AgentStateStore() as st:
        with pytest.raises(InvalidArgumentError, match="needs an index"):
            st.search(("x",), query="tea")
    # An index without an embedder is refused by name, not ignored.
    with pytest.raises(InvalidArgumentError, match="index"):
        AgentStateStore(index={"dims": 4})


def test_store_and_saver_share_a_file_and_handle_in_a_graph(db_path):
    saver = AgentStateSaver(db_path)
    store = AgentStateStore(db=saver.db)

    def node(state, *, store):
        n = len(store.search(("seen",)))
        store.put(("seen",), f"k{n}", {"n": n})
        return {"messages": [("ai", f"seen {n}")]}

    g = StateGraph(MessagesState).add_node("n", node).add_edge(START, "n").compile(checkpointer=saver, store=store)
    cfg = {"configurable": {"thread_id": "s"}}
    for _ in range(3):
        g.invoke({"messages": [("human", "x")]}, cfg)
    assert [m.content for m in g.get_state(cfg).values["messages"] if m.type == "ai"] == ["seen 0", "seen 1", "seen 2"]
    store.close()  # does not close the shared handle
    assert not saver.db.closed
    saver.close()
    assert saver.db.closed


def test_async_store():
    async def main():
        async with AgentStateStore.from_conn_string(":memory:") as st:
            await st.aput(("a",), "k", {"v": 1})
            return (await st.aget(("a",), "k")).value, [i.key for i in await st.asearch(("a",))]

    assert asyncio.run(main()) == ({"v": 1}, ["k"])
