"""Writes the LangGraph Python fixtures of `agentstate import-langgraph`.

Runs the same real graphs through LangGraph Python's SqliteSaver and, when a
PostgreSQL URL is given, its PostgresSaver, then dumps every checkpoint of
every thread and namespace as LangGraph itself reads it back (the saver's own
serde), as JSON with the type mapping described in FORMATS.md.

    bash generate.sh               # the normal way: venv, pins, PostgreSQL, dump
    python generate.py --sqlite OUT.sqlite --expected-sqlite OUT.json \
        [--postgres URL --expected-postgres OUT.json]
    python generate.py --bench 10000   # a large SqliteSaver file, path printed

The chat model is a deterministic fake (no network): conversations are fixed,
checkpoint ids, timestamps, run ids and version suffixes are not. CI never runs
this: the committed files are the fixtures.
"""

from __future__ import annotations

import argparse
import base64
import collections
import dataclasses
import datetime as dt
import decimal
import enum
import ipaddress
import json
import logging
import math
import operator
import os
import pathlib
import re
import sqlite3
import sys
import tempfile
import uuid
import zoneinfo
from importlib.metadata import version
from typing import Annotated, Any, Iterator, TypedDict

import numpy as np
import pydantic
import pydantic.v1
from langchain_core.documents import Document
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, MessagesState, StateGraph, add_messages
from langgraph.graph.message import REMOVE_ALL_MESSAGES, _messages_delta_reducer
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, Interrupt, Overwrite, Send, interrupt
from pydantic import PrivateAttr, SecretStr

sys.dont_write_bytecode = True  # no __pycache__ beside the committed fixtures
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture_types import (  # noqa: E402
    Box,
    Citation,
    Color,
    LegacyNote,
    Level,
    Pair,
    Point,
    Report,
)

HERE = pathlib.Path(__file__).resolve().parent
PACKAGES = [
    "langgraph",
    "langgraph-checkpoint",
    "langgraph-checkpoint-sqlite",
    "langgraph-checkpoint-postgres",
    "langchain-core",
    "ormsgpack",
    "pydantic",
    "psycopg",
    "numpy",
]
# Fixed instants, so that both fixtures hold the same values.
T0 = dt.datetime(2026, 11, 30, 9, 15, 30, 123456, tzinfo=dt.timezone.utc)


# --------------------------------------------------------------------------
# A scripted chat model: deterministic answers, tool calls, token usage.


class ScriptedChatModel(BaseChatModel):
    _calls: int = PrivateAttr(default=0)

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedChatModel":
        return self

    def _usage(self, messages: list[BaseMessage]) -> dict[str, Any]:
        n = 10 * len(messages)
        return {
            "input_tokens": n,
            "output_tokens": 7,
            "total_tokens": n + 7,
            "input_token_details": {"cache_read": 2},
        }

    def _answer(self, messages: list[BaseMessage]) -> AIMessage:
        self._calls += 1
        n = self._calls
        last = messages[-1]
        text = last.text
        usage = self._usage(messages)
        if last.type == "human" and "weather" in text.lower():
            return AIMessage(
                id=f"ai-{n}",
                content="",
                tool_calls=[
                    {"id": f"call-{n}-a", "name": "get_weather", "args": {"city": "Paris", "unit": "C"}},
                    {"id": f"call-{n}-b", "name": "lookup", "args": {"query": "Paris"}},
                ],
                usage_metadata=usage,
                response_metadata={"model_name": "fake-1", "finish_reason": "tool_calls"},
            )
        if last.type == "human" and "broken" in text.lower():
            return AIMessage(
                id=f"ai-{n}",
                content="Let me try the broken tool.",
                tool_calls=[{"id": f"call-{n}", "name": "broken_tool", "args": {"x": "y"}}],
                usage_metadata=usage,
            )
        if last.type == "tool":
            results = [m.text for m in messages if m.type == "tool"][-2:]
            return AIMessage(id=f"ai-{n}", content=f"Tools said: {' / '.join(results)}", usage_metadata=usage)
        # Every third answer has no id: LangChain gives it an "lc_run--" one.
        return AIMessage(
            id=None if n % 3 == 0 else f"ai-{n}",
            content=[{"type": "text", "text": f"You said: {text}"}],
            usage_metadata=usage,
            additional_kwargs={"seq": n},
            response_metadata={"model_name": "fake-1", "finish_reason": "stop"},
        )

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._answer(messages))])

    def _stream(self, messages, stop=None, run_manager=None, **kwargs) -> Iterator[ChatGenerationChunk]:
        self._calls += 1
        n = self._calls
        pieces = ["Streamed", " answer", " to: ", messages[-1].text]
        for i, p in enumerate(pieces):
            last = i == len(pieces) - 1
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    id=f"ai-{n}",
                    content=p,
                    usage_metadata=self._usage(messages) if last else None,
                    response_metadata={"finish_reason": "stop"} if last else {},
                )
            )


@tool
def get_weather(city: str, unit: str = "C") -> str:
    """The weather in a city."""
    return f"21 degrees {unit} in {city}"


@tool(response_format="content_and_artifact")
def lookup(query: str) -> tuple[str, dict]:
    """Looks a query up."""
    return f"2 results for {query}", {"hits": [{"rank": 1, "url": "https://example.org/paris"}], "query": query}


@tool
def broken_tool(x: str) -> str:
    """Always fails."""
    raise ValueError(f"the tool is broken ({x})")


TOOLS = [get_weather, lookup, broken_tool]


# --------------------------------------------------------------------------
# The graphs. build_graphs(saver) compiles them all against one saver; run()
# drives them. Both savers get the same calls, so the same conversations.


class ChatState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    turns: Annotated[int, operator.add]
    topic: str


class FanState(TypedDict, total=False):
    topic: str
    results: Annotated[list, operator.add]
    done: Annotated[int, operator.add]
    summary: str


def notes_reducer(state: list, writes: list) -> list:
    # DeltaChannel reducers get a batch of writes; list writes are flattened.
    out = list(state)
    for w in writes:
        out.extend(w if isinstance(w, list) else [w])
    return out


class DeltaState(TypedDict, total=False):
    messages: Annotated[list, DeltaChannel(_messages_delta_reducer, snapshot_frequency=3)]
    notes: Annotated[list, DeltaChannel(notes_reducer, snapshot_frequency=2)]
    turns: Annotated[int, operator.add]


class TypesState(TypedDict, total=False):
    payload: dict
    when: dt.datetime
    tags: Annotated[set, operator.or_]
    report: Report
    point: Point
    legacy: LegacyNote
    raw: bytes
    buf: bytearray
    count: int
    note: str | None
    flag: bool
    ratio: float
    plain: dict
    array: Any


def payload_value() -> dict:
    """One value of every kind LangGraph's serde has a msgpack extension for."""
    paris = zoneinfo.ZoneInfo("Europe/Paris")
    return {
        "datetime_naive": dt.datetime(2026, 1, 2, 3, 4, 5, 6),
        "datetime_utc": T0,
        "datetime_offset": dt.datetime(2026, 7, 1, 12, 0, tzinfo=dt.timezone(dt.timedelta(hours=-5, minutes=-30))),
        "datetime_zoneinfo": dt.datetime(2026, 7, 1, 12, 0, tzinfo=paris),
        "date": dt.date(2026, 2, 28),
        "time_naive": dt.time(23, 59, 58, 999),
        "time_tz": dt.time(8, 30, tzinfo=dt.timezone(dt.timedelta(hours=2), "CEST")),
        "timedelta": dt.timedelta(days=1, seconds=2, microseconds=3),
        "timedelta_negative": dt.timedelta(minutes=-90),
        "timezone": dt.timezone(dt.timedelta(hours=5, minutes=45)),
        "timezone_utc": dt.timezone.utc,
        "zoneinfo": paris,
        "uuid": uuid.UUID("0b9f3a4e-6d1c-4c5e-9a8b-7f6e5d4c3b2a"),
        "decimal": decimal.Decimal("3.14159265358979323846"),
        "decimal_exp": decimal.Decimal("-1E+3"),
        "set": {"alpha", "beta", "gamma"},
        "frozenset": frozenset({3, 1, 2}),
        "empty_set": set(),
        "deque": collections.deque([1, "two", 3.0]),
        "enum": Color.RED,
        "enum_int_value": Color.GREEN,
        "int_enum": Level.HIGH,
        "bytes": b"\x00\x01\xfe\xffbinary",
        "bytearray": bytearray(b"mutable"),
        "tuple": (1, "a", None),
        "namedtuple": Pair(7, "seven"),
        "dataclass": Point(1, 2.5, "p"),
        "nested_dataclass": Box(Point(0, 0.0), {"x"}, T0),
        "pydantic_v2": Report(
            id=uuid.UUID("11111111-2222-4333-8444-555555555555"),
            title="Octopus report",
            citations=[Citation(url="https://example.org/o", title="O", retrieved=T0, score=decimal.Decimal("0.9"))],
        ),
        "pydantic_v1": LegacyNote(text="old style", n=3),
        "secret": SecretStr("hunter2"),
        "document": Document(page_content="A page.", metadata={"source": "s.txt", "page": 2}, id="doc-1"),
        "regex": re.compile(r"^a+b?$", re.IGNORECASE | re.MULTILINE),
        "path": pathlib.Path("/var/data/file.txt"),
        "ipv4": ipaddress.IPv4Address("192.0.2.1"),
        "ipv6_network": ipaddress.IPv6Network("2001:db8::/32"),
        "ipv4_interface": ipaddress.IPv4Interface("192.0.2.5/24"),
        "numpy_f32": np.arange(6, dtype=np.float32).reshape(2, 3),
        "numpy_fortran_i64": np.asfortranarray(np.arange(6, dtype=np.int64).reshape(2, 3)),
        "int_keys": {1: "one", 2: "two"},
        "big_ints": [2**63 - 1, -(2**63), 2**64 - 1],
        "floats": [0.1, -2.5e-300, 1e300, float("inf"), float("-inf"), float("nan")],
        "unicode": "ça va? 👋 — 日本語",
        "dollar_key": {"$type": "not a tag", "x": 1},
        "interrupt": Interrupt(value={"q": "why?"}, id="int-1"),
        "send": Send("worker", {"item": "z"}),
    }


def build_graphs(saver) -> dict[str, Any]:
    model = ScriptedChatModel()
    tool_node = ToolNode(TOOLS, handle_tool_errors=True)

    # --- chat: a tool-calling loop over several turns.
    def agent(state: ChatState):
        last = state["messages"][-1]
        out: dict[str, Any] = {"turns": 1}
        if last.type == "human" and "stream" in last.text:
            chunks = list(model.stream(state["messages"]))
            msg = chunks[0]
            for c in chunks[1:]:
                msg = msg + c
            out["messages"] = [msg]  # an AIMessageChunk: add_messages makes it an AIMessage
        else:
            out["messages"] = [model.invoke(state["messages"])]
        if last.type == "tool":
            out["topic"] = "weather"
        return out

    chat = (
        StateGraph(ChatState)
        .add_node("agent", agent)
        .add_node("tools", tool_node)
        .add_edge(START, "agent")
        .add_conditional_edges("agent", tools_condition)
        .add_edge("tools", "agent")
        .compile(checkpointer=saver)
    )

    # --- fork: time travel, update_state forks, removals.
    def fork_agent(state: MessagesState):
        msgs = state["messages"]
        last = msgs[-1]
        if isinstance(last.content, str) and last.content.startswith("forget"):
            return {
                "messages": [
                    RemoveMessage(id=msgs[0].id),
                    RemoveMessage(id=msgs[1].id),
                    AIMessage(id=f"ai-forgot-{len(msgs)}", content="Forgotten."),
                ]
            }
        return {"messages": [model.invoke(msgs)]}

    fork = (
        StateGraph(MessagesState)
        .add_node("agent", fork_agent)
        .add_edge(START, "agent")
        .add_edge("agent", END)
        .compile(checkpointer=saver)
    )

    # --- sub: two levels of subgraphs (namespaces "child:<id>" and
    # "child:<id>|review:<id>") and an interrupt in the inner one.
    def approve(state: MessagesState):
        answer = interrupt({"question": "Publish the notes?", "deadline": T0 + dt.timedelta(days=1)})
        return {"messages": [HumanMessage(id="h-approve", content=f"approved: {answer['approved']} by {answer['by']}")]}

    review = StateGraph(MessagesState).add_node("approve", approve).add_edge(START, "approve").add_edge("approve", END).compile()

    def research(state: MessagesState):
        return {"messages": [AIMessage(id="ai-research", content=f"Notes on {state['messages'][-1].text}")]}

    inner = (
        StateGraph(MessagesState)
        .add_node("research", research)
        .add_node("review", review)
        .add_edge(START, "research")
        .add_edge("research", "review")
        .add_edge("review", END)
        .compile()
    )

    def final(state: MessagesState):
        return {"messages": [AIMessage(id="ai-final", content=f"Done after {len(state['messages'])} messages.")]}

    sub = (
        StateGraph(MessagesState)
        .add_node("child", inner)
        .add_node("final", final)
        .add_edge(START, "child")
        .add_edge("child", "final")
        .add_edge("final", END)
        .compile(checkpointer=saver)
    )

    # --- fanout: Send fan-out; a worker that fails once, one that interrupts.
    fail_once = {"c": True}

    def plan(state: FanState):
        return {"summary": f"planning {state['topic']}"}

    def route(state: FanState):
        return [Send("worker", {"item": x, "asked": T0, "topic": state["topic"]}) for x in state["topic"]]

    def worker(arg: dict):
        item = arg["item"]
        if item == "c" and fail_once["c"]:
            fail_once["c"] = False
            raise RuntimeError("worker c failed")
        if item == "d":
            answer = interrupt({"item": "d", "question": "value for d?"})
            return {"results": [{"item": "d", "value": answer}], "done": 1}
        return {"results": [{"item": item, "value": ord(item), "at": arg["asked"]}], "done": 1}

    def summarize(state: FanState):
        items = sorted(r["item"] for r in state["results"])
        return {"summary": f"{len(items)} results: {','.join(items)}"}

    fanout = (
        StateGraph(FanState)
        .add_node("plan", plan)
        .add_node("worker", worker)
        .add_node("summarize", summarize)
        .add_edge(START, "plan")
        .add_conditional_edges("plan", route, ["worker"])
        .add_edge("worker", "summarize")
        .add_edge("summarize", END)
        .compile(checkpointer=saver)
    )

    # --- delta: DeltaChannel message and notes channels (LangGraph 1.2 beta).
    def delta_agent(state: DeltaState):
        msgs = state["messages"]
        last = msgs[-1]
        note = {"turn": len(msgs), "at": T0 + dt.timedelta(minutes=len(msgs))}
        if last.type == "human" and last.text.startswith("reset"):
            return {
                "messages": Overwrite([SystemMessage(id="d-sys2", content="Reset."), AIMessage(id="ai-reset", content="Starting over.")]),
                "notes": [note],
                "turns": 1,
            }
        return {"messages": [model.invoke(msgs)], "notes": [note], "turns": 1}

    def delta_tools(state: DeltaState):
        return tool_node.invoke({"messages": state["messages"]})

    delta = (
        StateGraph(DeltaState)
        .add_node("agent", delta_agent)
        .add_node("tools", delta_tools)
        .add_edge(START, "agent")
        .add_conditional_edges("agent", tools_condition)
        .add_edge("tools", "agent")
        .compile(checkpointer=saver)
    )

    # --- types: non-message channels holding every extension type.
    def stamp(state: TypesState):
        return {
            "payload": payload_value(),
            "when": T0,
            "tags": {"a", "b"},
            "count": 1,
            "note": None,
            "flag": True,
            "ratio": 0.25,
            "plain": {"list": [1, 2.5, "x", None, True, {"nested": []}], "text": "plain JSON", "empty": {}},
            "raw": b"\x00\xffraw bytes",
        }

    def enrich(state: TypesState):
        return {
            "report": state["payload"]["pydantic_v2"],
            "point": Point(3, -1.5, None),
            "legacy": LegacyNote(text="channel", n=1),
            "tags": {"c"},
            "count": state["count"] + 1,
            "buf": bytearray(b"\x01\x02"),
            "array": np.array([[1.5, 2.5]], dtype=np.float64),
        }

    types_graph = (
        StateGraph(TypesState)
        .add_node("stamp", stamp)
        .add_node("enrich", enrich)
        .add_edge(START, "stamp")
        .add_edge("stamp", "enrich")
        .add_edge("enrich", END)
        .compile(checkpointer=saver)
    )

    return {
        "chat": chat,
        "fork": fork,
        "sub": sub,
        "fanout": fanout,
        "fanout-pending": fanout,
        "delta": delta,
        "delta-exit": delta,
        "types": types_graph,
    }


def cfg(thread: str) -> dict:
    return {"configurable": {"thread_id": thread}}


def run(graphs: dict[str, Any]) -> None:
    chat = graphs["chat"]
    c = cfg("chat")
    chat.invoke({"messages": [SystemMessage(id="sys", content="You are terse."), HumanMessage(id="h1", content="hello, ça va? 👋")]}, c)
    chat.invoke({"messages": [HumanMessage(id="h2", content="what is the weather in Paris?")]}, c)
    # A message as a plain dict without id: add_messages assigns a uuid.
    chat.invoke({"messages": [{"role": "user", "content": "thanks"}]}, c)
    chat.invoke(
        {
            "messages": [
                HumanMessage(
                    id="h4",
                    name="ana",
                    content=[
                        {"type": "text", "text": "try the broken tool"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                    ],
                    additional_kwargs={"hide_from_ui": True},
                )
            ]
        },
        c,
    )
    # A (role, content) pair; the config's extra keys and metadata land in
    # the checkpoint metadata.
    chat.invoke(
        {"messages": [("human", "please stream the answer")]},
        {"configurable": {"thread_id": "chat", "user_id": "u-1"}, "metadata": {"tenant": "acme", "priority": 2}},
    )

    fork = graphs["fork"]
    f = cfg("fork")
    for i, text in enumerate(["one", "two", "three"], 1):
        fork.invoke({"messages": [HumanMessage(id=f"f{i}", content=text)]}, f)
    history = list(fork.get_state_history(f))
    after_one = next(s for s in history if len(s.values.get("messages", [])) == 2 and not s.next)
    before_two = next(s for s in history if len(s.values.get("messages", [])) == 3 and s.next == ("agent",))
    # Time travel: re-run turn two's model call. LangGraph saves a "fork"
    # checkpoint (a sibling of the next one) and goes on from there.
    fork.invoke(None, before_two.config)
    # A copy of a past checkpoint: source "fork", same parent as the original.
    fork.update_state(after_one.config, None, as_node="__copy__")
    # Edit the past: a fork of the state after turn one that drops its first
    # message; as the input (START), so that the model answers it.
    edited = fork.update_state(
        after_one.config,
        {"messages": [RemoveMessage(id="f1"), HumanMessage(id="f2b", content="two, edited")]},
        as_node=START,
    )
    fork.invoke(None, edited)
    # Replay the old checkpoint with new input: a second fork of it.
    fork.invoke({"messages": [HumanMessage(id="f2c", content="forget the start")]}, after_one.config)
    # Remove one message by id through update_state on the head, as a node.
    head = fork.get_state(f)
    fork.update_state(f, {"messages": [RemoveMessage(id=head.values["messages"][-1].id)]}, as_node="agent")
    # Replace everything.
    fork.update_state(f, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), HumanMessage(id="f9", content="fresh start")]}, as_node=START)
    fork.invoke(None, f)

    sub = graphs["sub"]
    s = cfg("sub")
    sub.invoke({"messages": [HumanMessage(id="s1", content="octopuses")]}, s)
    sub.invoke(Command(resume={"approved": True, "by": "ana"}), s)

    fan = graphs["fanout"]
    fc = cfg("fanout")
    try:
        fan.invoke({"topic": "abc"}, fc)
        raise SystemExit("worker c should have failed")
    except RuntimeError:
        pass
    fan.invoke(None, fc)  # retries c only; a and b's writes are reused
    fan.invoke({"topic": "bd"}, fc)  # d interrupts
    fan.invoke(Command(resume=42), fc)
    # Left interrupted: the head's pending writes stay as they are.
    graphs["fanout-pending"].invoke({"topic": "xyd"}, cfg("fanout-pending"))

    delta = graphs["delta"]
    d = cfg("delta")
    delta.invoke({"messages": [SystemMessage(id="d-sys", content="Delta."), HumanMessage(id="d1", content="first")]}, d)
    delta.invoke({"messages": [HumanMessage(id="d2", content="what is the weather?")]}, d)
    for i, text in enumerate(["third", "fourth", "fifth"], 3):
        delta.invoke({"messages": [HumanMessage(id=f"d{i}", content=text)]}, d)
    hist = list(delta.get_state_history(d))
    after_first = next(s for s in hist if len(s.values.get("messages", [])) == 3 and not s.next)
    before_fourth = next(s for s in hist if s.next == ("agent",) and s.values["messages"][-1].id == "d4")
    # Time travel: a replay from the middle; the "fork" checkpoint snapshots
    # the delta channels that the old checkpoint's pending writes touch.
    delta.invoke(None, before_fourth.config)
    # Edit the past with a removal (a fork), then let the model answer.
    forked = delta.update_state(
        after_first.config,
        {"messages": [RemoveMessage(id="d1"), HumanMessage(id="d1b", content="first, edited")]},
        as_node=START,
    )
    delta.invoke(None, forked)
    delta.update_state(d, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), HumanMessage(id="d9", content="fresh start")]}, as_node=START)
    delta.invoke(None, d)
    delta.invoke({"messages": [HumanMessage(id="d10", content="reset please")]}, d)
    delta.invoke({"messages": [HumanMessage(id="d11", content="after the reset")]}, d)

    # durability="exit" saves only each run's last checkpoint; a DeltaChannel
    # then stores the intermediate supersteps' writes under synthetic task ids.
    de = cfg("delta-exit")
    delta.invoke({"messages": [HumanMessage(id="e1", content="exit mode")]}, de, durability="exit")
    delta.invoke({"messages": [HumanMessage(id="e2", content="weather in exit mode?")]}, de, durability="exit")
    delta.invoke({"messages": [HumanMessage(id="e3", content="and again")]}, de, durability="exit")

    types_graph = graphs["types"]
    t = cfg("types")
    types_graph.invoke({"count": 0}, t)
    types_graph.update_state(t, {"note": "edited", "tags": frozenset({"z"}), "ratio": -0.5}, as_node="enrich")


# --------------------------------------------------------------------------
# The JSON mapping of what LangGraph reads back (documented in FORMATS.md).


def cls_path(o: Any) -> str:
    return f"{type(o).__module__}.{type(o).__qualname__}"


def enc(v: Any) -> Any:
    if v is None or isinstance(v, (bool, str)) and not isinstance(v, enum.Enum):
        return v
    if isinstance(v, enum.Enum):
        return {"$type": "enum", "class": cls_path(v), "value": enc(v.value)}
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        if math.isfinite(v):
            return v
        return {"$type": "float", "value": repr(v)}
    if isinstance(v, _DeltaSnapshot):
        return {"$type": "delta_snapshot", "value": enc(v.value)}
    if isinstance(v, BaseMessage):
        return {"$type": "message", "class": cls_path(v), "fields": enc(v.model_dump())}
    if isinstance(v, pydantic.BaseModel):
        return {"$type": "pydantic", "class": cls_path(v), "fields": enc(v.model_dump())}
    if isinstance(v, pydantic.v1.BaseModel):
        return {"$type": "pydantic_v1", "class": cls_path(v), "fields": enc(v.dict())}
    if isinstance(v, SecretStr):
        return {"$type": "secret", "class": cls_path(v), "value": v.get_secret_value()}
    if isinstance(v, tuple) and hasattr(v, "_asdict"):
        # Stored like a dataclass (extension 2, keyword arguments): the file
        # cannot tell the two apart, so neither does the JSON.
        return {"$type": "object", "class": cls_path(v), "fields": enc(dict(v._asdict()))}
    if isinstance(v, Send):
        out = {"$type": "send", "node": v.node, "arg": enc(v.arg)}
        if getattr(v, "timeout", None) is not None:
            out["timeout"] = enc(v.timeout)
        return out
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {"$type": "object", "class": cls_path(v), "fields": {f.name: enc(getattr(v, f.name)) for f in dataclasses.fields(v)}}
    if isinstance(v, list):
        return [enc(x) for x in v]
    if isinstance(v, tuple):
        return {"$type": "tuple", "items": [enc(x) for x in v]}
    if isinstance(v, dict):
        if all(isinstance(k, str) for k in v) and "$type" not in v:
            return {k: enc(x) for k, x in v.items()}
        return {"$type": "dict", "items": [[enc(k), enc(x)] for k, x in v.items()]}
    if isinstance(v, (set, frozenset)):
        items = sorted((enc(x) for x in v), key=lambda x: json.dumps(x, sort_keys=True))
        return {"$type": "frozenset" if isinstance(v, frozenset) else "set", "items": items}
    if isinstance(v, collections.deque):
        return {"$type": "deque", "items": [enc(x) for x in v]}
    if isinstance(v, bytes):
        return {"$type": "bytes", "b64": base64.b64encode(v).decode()}
    if isinstance(v, bytearray):
        return {"$type": "bytearray", "b64": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, dt.datetime):
        return {"$type": "datetime", "iso": v.isoformat()}
    if isinstance(v, dt.date):
        return {"$type": "date", "iso": v.isoformat()}
    if isinstance(v, dt.time):
        return {"$type": "time", "iso": v.isoformat()}
    if isinstance(v, dt.timedelta):
        return {"$type": "timedelta", "days": v.days, "seconds": v.seconds, "microseconds": v.microseconds}
    if isinstance(v, dt.timezone):
        args = v.__getinitargs__()
        return {"$type": "timezone", "offset": enc(args[0]), "name": args[1] if len(args) > 1 else None}
    if isinstance(v, zoneinfo.ZoneInfo):
        return {"$type": "zoneinfo", "key": v.key}
    if isinstance(v, uuid.UUID):
        return {"$type": "uuid", "value": str(v)}
    if isinstance(v, decimal.Decimal):
        return {"$type": "decimal", "value": str(v)}
    if isinstance(v, re.Pattern):
        return {"$type": "regex", "pattern": v.pattern, "flags": v.flags}
    if isinstance(v, pathlib.PurePath):
        return {"$type": "path", "class": cls_path(v), "parts": list(v.parts)}
    if isinstance(v, (ipaddress.IPv4Address, ipaddress.IPv6Address, ipaddress.IPv4Network, ipaddress.IPv6Network, ipaddress.IPv4Interface, ipaddress.IPv6Interface)):
        return {"$type": "ip", "class": cls_path(v), "value": str(v)}
    if isinstance(v, np.ndarray):
        return {
            "$type": "ndarray",
            "dtype": v.dtype.str,
            "shape": list(v.shape),
            "c_order_b64": base64.b64encode(np.ascontiguousarray(v).tobytes()).decode(),
        }
    raise TypeError(f"no JSON mapping for {cls_path(v)}: {v!r}")


def enc_task(task: Any) -> dict:
    state = task.state
    if state is not None and not isinstance(state, dict):
        state = {"config": enc(state.config)}
    return {
        "id": task.id,
        "name": task.name,
        "path": enc(list(task.path)),
        "error": repr(task.error) if task.error is not None else None,
        "interrupts": [enc(i) for i in task.interrupts],
        "state": enc(state) if state is not None else None,
        "result": enc(task.result),
    }


def dump_expected(saver, graphs: dict[str, Any], saver_name: str) -> dict:
    """Every checkpoint of every thread and namespace, as LangGraph reads it."""
    threads: dict[str, dict[str, list]] = {}
    rows = sorted(
        saver.list(None),
        key=lambda t: (t.config["configurable"]["thread_id"], t.config["configurable"]["checkpoint_ns"], t.config["configurable"]["checkpoint_id"]),
    )
    for t in rows:
        conf = t.config["configurable"]
        thread, ns, cid = conf["thread_id"], conf["checkpoint_ns"], conf["checkpoint_id"]
        # get_tuple must agree with list; it is the call an importer mirrors.
        again = saver.get_tuple(t.config)
        assert enc(again.checkpoint) == enc(t.checkpoint), (thread, ns, cid)
        assert enc(again.pending_writes) == enc(t.pending_writes), (thread, ns, cid)
        snap = graphs[thread].get_state(t.config)
        ck = t.checkpoint
        entry = {
            "checkpoint_id": cid,
            "parent_checkpoint_id": t.parent_config["configurable"]["checkpoint_id"] if t.parent_config else None,
            "checkpoint": {
                "v": ck["v"],
                "id": ck["id"],
                "ts": ck["ts"],
                "channel_values": enc(ck["channel_values"]),
                "channel_versions": enc(ck["channel_versions"]),
                "versions_seen": enc(ck["versions_seen"]),
                "updated_channels": enc(ck.get("updated_channels")),
            },
            "metadata": enc(t.metadata),
            "pending_writes": [[tid, ch, enc(val)] for tid, ch, val in t.pending_writes or []],
            "state": {
                "values": enc(snap.values),
                # Reducer channels never written on this branch: LangGraph
                # shows their empty value (0, [], ...), the file has nothing.
                "values_not_in_file": sorted(k for k in snap.values if k not in ck["channel_versions"]),
                "next": list(snap.next),
                "tasks": [enc_task(x) for x in snap.tasks],
                "interrupts": [enc(i) for i in snap.interrupts],
            },
        }
        threads.setdefault(thread, {}).setdefault(ns, []).append(entry)
    return {
        "saver": saver_name,
        "versions": {p: version(p) for p in PACKAGES},
        "mapping": "FORMATS.md, section 'Expected-state JSON'",
        "checkpoints": len(rows),
        "threads": threads,
    }


def write_json(path: pathlib.Path, doc: dict) -> None:
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n")


# --------------------------------------------------------------------------


def write_sqlite(out: pathlib.Path, expected: pathlib.Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        p = pathlib.Path(str(out) + suffix)
        if p.exists():
            p.unlink()
    conn = sqlite3.connect(out, check_same_thread=False)
    saver = SqliteSaver(conn)
    graphs = build_graphs(saver)
    run(graphs)
    write_json(expected, dump_expected(saver, graphs, "sqlite"))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    # The WAL pragma leaves the file in WAL mode; VACUUM keeps it compact.
    conn = sqlite3.connect(out)
    conn.execute("VACUUM")
    conn.close()
    print(f"wrote {out} ({out.stat().st_size} bytes) and {expected}")


def write_postgres(url: str, expected: pathlib.Path) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        graphs = build_graphs(saver)
        run(graphs)
        write_json(expected, dump_expected(saver, graphs, "postgres"))
    print(f"wrote the PostgresSaver tables at {url.split('@')[-1]} and {expected}")


def write_bench(n: int) -> None:
    """A SqliteSaver file of exactly n checkpoints (n a multiple of 40), for
    the import-speed benchmark: threads of 5 chat turns (3 checkpoints each)
    and 5 tool-loop turns (5 each)."""
    if n % 40:
        raise SystemExit("--bench takes a multiple of 40")
    out = pathlib.Path(tempfile.mkdtemp(prefix="langgraph-py-bench-")) / "bench.sqlite"
    conn = sqlite3.connect(out, check_same_thread=False)
    saver = SqliteSaver(conn)
    chat = build_graphs(saver)["chat"]
    for i in range(n // 40):
        c = cfg(f"bench-{i:05d}")
        for turn in range(5):
            chat.invoke({"messages": [HumanMessage(id=f"b{i}-{turn}-q", content=f"question {turn} of thread {i}")]}, c)
            chat.invoke({"messages": [HumanMessage(id=f"b{i}-{turn}-w", content="and the weather?")]}, c)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    (count,) = conn.execute("SELECT count(*) FROM checkpoints").fetchone()
    conn.close()
    if count != n:
        raise SystemExit(f"wrote {count} checkpoints, wanted {n}")
    print(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sqlite", type=pathlib.Path, default=HERE / "langgraph-py.sqlite")
    ap.add_argument("--expected-sqlite", type=pathlib.Path, default=HERE / "expected-py-sqlite.json")
    ap.add_argument("--postgres", help="postgresql:// URL of an empty database")
    ap.add_argument("--expected-postgres", type=pathlib.Path, default=HERE / "expected-py-postgres.json")
    ap.add_argument("--bench", type=int, metavar="N", help="only write a large SqliteSaver file of N checkpoints and print its path")
    args = ap.parse_args()
    # Classes of fixture_types are not in LangGraph's msgpack allowlist; the
    # default (permissive) serde loads them with one warning each.
    logging.getLogger("langgraph.checkpoint.serde.jsonplus").setLevel(logging.ERROR)
    if args.bench:
        write_bench(args.bench)
        return
    write_sqlite(args.sqlite, args.expected_sqlite)
    if args.postgres:
        write_postgres(args.postgres, args.expected_postgres)


if __name__ == "__main__":
    main()
