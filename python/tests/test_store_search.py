"""Semantic search in AgentStateStore: the host embeds, the engine keeps the
vectors with their item and ranks them (issue 41)."""

from __future__ import annotations

import asyncio
import math

import pytest

from langgraph.checkpoint.agentstate import AgentStateStore
from langgraph.checkpoint.agentstate.errors import InvalidArgumentError

LETTERS = "abcdefgh"


def letters(texts):
    """A tiny embedder: how often each of eight letters occurs."""
    return [[float(t.count(c)) for c in LETTERS] for t in texts]


def index(**extra):
    return {"dims": len(LETTERS), "embed": letters, **extra}


def keys(items):
    return [i.key for i in items]


def test_search_ranks_by_cosine_with_filter_then_page(db_path):
    with AgentStateStore(db_path, index=index(fields=["text"])) as st:
        st.put(("mem", "u1"), "apples", {"text": "aaaa", "kind": "fruit"})
        st.put(("mem", "u1"), "bananas", {"text": "bbbb", "kind": "fruit"})
        st.put(("mem", "u1"), "mixed", {"text": "aabb", "kind": "fruit"})
        st.put(("mem", "u1"), "carrot", {"text": "aaac", "kind": "vegetable"})
        st.put(("mem", "u2"), "elsewhere", {"text": "aaaa", "kind": "fruit"})

        got = st.search(("mem", "u1"), query="aaaa")
        assert keys(got) == ["apples", "carrot", "mixed", "bananas"]
        assert [round(i.score, 4) for i in got] == [1.0, round(3 / math.sqrt(10), 4), round(1 / math.sqrt(2), 4), 0.0]

        # The filter selects first; offset and limit page the ranking.
        assert keys(st.search(("mem", "u1"), query="aaaa", filter={"kind": "fruit"})) == ["apples", "mixed", "bananas"]
        assert keys(st.search(("mem", "u1"), query="aaaa", filter={"kind": "fruit"}, offset=1, limit=1)) == ["mixed"]
        # The prefix covers children; the query "" is a plain search.
        assert "elsewhere" in keys(st.search(("mem",), query="aaaa", limit=2))
        assert all(i.score is None for i in st.search(("mem", "u1"), query=""))


@pytest.mark.parametrize(
    "distance,want",
    [
        ("cosine", ["a1", "a4", "mix"]),  # direction: a1 and a4 tie (1.0), in put order; mix 0.55
        ("inner_product", ["a4", "mix", "a1"]),  # along the query: 8, 4, 2
        ("l2", ["a1", "a4", "mix"]),  # nearest: a1 is 1 away, a4 2, mix 3
    ],
)
def test_distance_types_rank_in_their_own_order(distance, want):
    with AgentStateStore(index=index(distance_type=distance)) as st:
        st.put(("d",), "a1", {"t": "a"}, index=["t"])
        st.put(("d",), "a4", {"t": "aaaa"}, index=["t"])
        st.put(("d",), "mix", {"t": "aabbb"}, index=["t"])
        got = st.search(("d",), query="aa")
        assert keys(got) == want
        assert [i.score for i in got] == sorted((i.score for i in got), reverse=True)
        if distance == "l2":
            assert [i.score for i in got] == pytest.approx([-1.0, -2.0, -3.0])  # minus the distance


def test_fields_paths_and_per_put_index(db_path):
    with AgentStateStore(db_path, index=index(fields=["title", "notes[*].body"])) as st:
        st.put(("k",), "by-note", {"title": "hhh", "notes": [{"body": "ggg"}, {"body": "ddd"}]})
        st.put(("k",), "by-title", {"title": "ddd", "notes": []})
        st.put(("k",), "override", {"title": "ddd", "other": "fff"}, index=["other"])
        st.put(("k",), "unindexed", {"title": "ddd"}, index=False)
        # An item scores as its best field; "dd" matches one note of by-note.
        got = st.search(("k",), query="dd")
        assert set(keys(got[:2])) == {"by-note", "by-title"} and got[0].score == pytest.approx(1.0)
        # The override embedded "other" only; unindexed items are not ranked.
        assert keys(st.search(("k",), query="ff", limit=1)) == ["override"]
        assert "unindexed" not in keys(st.search(("k",), query="dd", limit=10))
        assert "unindexed" in keys(st.search(("k",)))


def test_vectors_follow_the_item(db_path, tmp_path):
    with AgentStateStore(db_path, index=index()) as st:
        st.put(("v",), "x", {"t": "aaaa"})
        st.put(("v",), "y", {"t": "bbbb"})
        assert keys(st.search(("v",), query="a", limit=1)) == ["x"]
        # A new value brings new vectors.
        st.put(("v",), "x", {"t": "cccc"})
        assert {i.key: i.score for i in st.search(("v",), query="a")}["x"] == 0.0
        st.delete(("v",), "y")
        assert keys(st.search(("v",), query="b")) == ["x"]
    # The vectors are in the file: another store on it ranks the same.
    with AgentStateStore(db_path, index=index()) as st:
        got = st.search(("v",), query="c")
        assert keys(got) == ["x"] and got[0].score == pytest.approx(1.0)


def test_query_without_index_and_bad_embeddings_are_refused(db_path):
    with AgentStateStore(db_path) as st:
        with pytest.raises(InvalidArgumentError, match="index"):
            st.search(("x",), query="tea")
    with pytest.raises(InvalidArgumentError, match="distance_type"):
        AgentStateStore(index=index(distance_type="hamming"))
    with pytest.raises(InvalidArgumentError, match="dims"):
        AgentStateStore(index={"dims": 0, "embed": letters})
    with AgentStateStore(db_path, index={"dims": 3, "embed": letters}) as st:
        # The embedder gives 8 dimensions to an index of 3: nothing is written.
        with pytest.raises(InvalidArgumentError, match="dims=3"):
            st.put(("x",), "k", {"t": "abc"})
        assert st.get(("x",), "k") is None


def test_async_methods_use_the_async_embedder():
    calls = []

    async def aembed(texts):
        calls.append(list(texts))
        return letters(texts)

    async def main():
        st = AgentStateStore(index={"dims": len(LETTERS), "embed": aembed})
        try:
            await st.aput(("a",), "k1", {"t": "aaa"})
            await st.aput(("a",), "k2", {"t": "bbb"})
            got = await st.asearch(("a",), query="bb")
            return keys(got)
        finally:
            st.close()

    assert asyncio.run(main()) == ["k2", "k1"]
    assert len(calls) == 3  # two puts and the query


def test_server_factories_take_an_index_in_code_or_from_the_environment(tmp_path, monkeypatch):
    from langgraph.checkpoint.agentstate import server

    monkeypatch.setenv("AGENTSTATE_PATH", str(tmp_path / "server.db"))

    async def ranked():
        async with server.store_factory(index=index(fields=["text"]))() as st:
            await st.aput(("mem",), "a", {"text": "aaaa"})
            await st.aput(("mem",), "b", {"text": "bbbb"})
            return keys(await st.asearch(("mem",), query="bbb"))

    assert asyncio.run(ranked())[0] == "b"

    async def open_default():
        async with server.make_store() as st:
            return st

    # make_store reads AGENTSTATE_STORE_INDEX: no index, a refused query;
    # a bad value, a typed error naming what is wrong (and the file released).
    async def query_without_index():
        async with server.make_store() as st:
            await st.asearch(("mem",), query="bbb")

    monkeypatch.delenv("AGENTSTATE_STORE_INDEX", raising=False)
    with pytest.raises(InvalidArgumentError, match="index"):
        asyncio.run(query_without_index())
    monkeypatch.setenv("AGENTSTATE_STORE_INDEX", "{not json")
    with pytest.raises(InvalidArgumentError, match="AGENTSTATE_STORE_INDEX"):
        asyncio.run(open_default())
    monkeypatch.setenv("AGENTSTATE_STORE_INDEX", '{"dims": 8}')
    with pytest.raises(InvalidArgumentError, match="embed"):
        asyncio.run(open_default())
    assert server._shared == {}
