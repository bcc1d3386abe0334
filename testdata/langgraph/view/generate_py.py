"""Writes view-py-<langgraph version>.db and .json: threads that real
LangGraph Python graphs wrote through agentstate's Python saver, and what
LangGraph's own get_state returns for each of their checkpoints.

    AGENTSTATE_WASM=/path/agentstate-reactor.wasm VENV/bin/python generate_py.py OUTDIR

(generate.sh runs it under each LangGraph version). The Go test
cmd/agentstate TestStateAsLangGraph compares `agentstate state` with the
JSON: the head with no checkpoint id (LangGraph applies the pending writes
of the tasks that finished before the superstep failed), every other
checkpoint by its id (it applies none).

Messages are written in the neutral form of docs/cli.md ("LangGraph
threads") by this file's own code (neutral()), from the message objects
get_state returns: not by the Go code under test.
"""

import json
import operator
import os
import sys
from typing import Annotated, TypedDict

import langgraph
from importlib.metadata import version
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.agentstate import AgentStateSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES, _messages_delta_reducer, add_messages
from langgraph.types import Command, Overwrite, Send, interrupt

CHUNK_FIELDS = {"tool_call_chunks", "chunk_position"}


def neutral_message(m: BaseMessage) -> dict:
    d = m.model_dump()
    typ = {"AIMessageChunk": "ai", "HumanMessageChunk": "human", "SystemMessageChunk": "system",
           "ToolMessageChunk": "tool"}.get(d["type"], d["type"])
    out = {"type": typ, "id": d.get("id") or None, "content": d.get("content", "")}
    for k, v in d.items():
        if k in ("type", "id", "content") or k in CHUNK_FIELDS:
            continue
        if k == "status" and v == "success":
            continue
        if k in ("tool_calls", "invalid_tool_calls"):
            v = [{a: b for a, b in tc.items() if not (a == "type" and b in ("tool_call", "invalid_tool_call"))} for tc in v]
        if v is None or v == "" or v == [] or v == {}:
            continue
        out[k] = neutral(v)
    return out


def neutral(v):
    if isinstance(v, BaseMessage):
        return neutral_message(v)
    if isinstance(v, dict):
        return {str(k): neutral(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [neutral(x) for x in v]
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    raise TypeError(f"no JSON for {type(v)}")


def notes_reducer(state, writes):
    out = list(state or [])
    for w in writes:
        out.extend(w if isinstance(w, list) else [w])
    return out


class Chat(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    turns: Annotated[int, operator.add]
    topic: str


class Fan(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    results: Annotated[list, operator.add]


class Delta(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], DeltaChannel(_messages_delta_reducer, snapshot_frequency=3)]
    notes: Annotated[list, DeltaChannel(notes_reducer, snapshot_frequency=2)]


calls = 0


def model(state):
    global calls
    calls += 1
    last = state["messages"][-1]
    if isinstance(last, HumanMessage) and "weather" in str(last.content):
        return {"messages": [AIMessage(id=f"ai-{calls}", content="", tool_calls=[
            {"id": f"call-{calls}", "name": "weather", "args": {"city": "Paris"}}],
            usage_metadata={"input_tokens": 5, "output_tokens": 2, "total_tokens": 7})], "turns": 1}
    if isinstance(last, ToolMessage):
        return {"messages": [AIMessage(id=f"ai-{calls}", content=f"It is {last.content}.")], "turns": 1}
    return {"messages": [AIMessage(id=f"ai-{calls}", content=[{"type": "text", "text": f"You said: {last.content}"}],
                                   response_metadata={"model_name": "fake"})], "turns": 1, "topic": "talk"}


def tools(state):
    call = state["messages"][-1].tool_calls[0]
    return {"messages": [ToolMessage(id=f"tool-{call['id']}", content="21 C", tool_call_id=call["id"], artifact={"src": "fake"})]}


def route(state):
    last = state["messages"][-1]
    return "tools" if getattr(last, "tool_calls", None) else END


def chat_graph(saver):
    g = StateGraph(Chat)
    g.add_node("agent", model)
    g.add_node("tools", tools)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", route, ["tools", END])
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=saver)


def fan_graph(saver, fail: set, stop: set):
    def plan(state):
        return {}

    def spread(state):
        return [Send("worker", {"n": i}) for i in range(4)]

    def worker(arg):
        n = arg["n"]
        if n in fail:
            raise RuntimeError(f"worker {n} failed")
        if n in stop:
            interrupt({"worker": n})
        return {"messages": [AIMessage(id=f"w-{n}", content=f"worker {n} done")], "results": [n]}

    g = StateGraph(Fan)
    g.add_node("plan", plan)
    g.add_node("worker", worker)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", spread, ["worker"])
    g.add_edge("worker", END)
    return g.compile(checkpointer=saver)


def delta_graph(saver, fail=False):
    def agent(state):
        last = state["messages"][-1]
        n = len(state["messages"])
        return {"messages": [AIMessage(id=f"d-{n}", content=f"echo {last.content}")], "notes": [{"n": n}]}

    def side(state):
        if fail:
            raise RuntimeError("side failed")
        return {"notes": [{"side": True}]}

    g = StateGraph(Delta)
    g.add_node("agent", agent)
    g.add_node("side", side)
    g.add_edge(START, "agent")
    g.add_edge(START, "side")
    g.add_edge("agent", END)
    g.add_edge("side", END)
    return g.compile(checkpointer=saver)


def remove_all_honoured() -> bool:
    """Whether this LangGraph's DeltaChannel message reducer honours
    REMOVE_ALL_MESSAGES (1.2.24's does, 1.2.9's ignores it). agentstate
    shows the newer behaviour (docs/cli.md), so on an older version the
    thread does not write one."""
    kept = _messages_delta_reducer([HumanMessage(id="a", content="x")], [[RemoveMessage(id=REMOVE_ALL_MESSAGES)]])
    return kept == []


def cfg(t):
    return {"configurable": {"thread_id": t}}


def run(graph, t, inp):
    try:
        graph.invoke(inp, cfg(t))
    except RuntimeError:
        pass


def main(outdir: str) -> None:
    ver = version("langgraph")
    path = os.path.join(outdir, f"view-py-{ver}.db")
    for p in (path, path + "-wal", path + "-shm"):
        if os.path.exists(p):
            os.remove(p)
    threads = {}
    with AgentStateSaver.from_conn_string(path) as saver:
        chat = chat_graph(saver)
        run(chat, "chat", {"messages": [("system", "Be terse."), HumanMessage(id="h1", content="hello")]})
        run(chat, "chat", {"messages": [HumanMessage(id="h2", content="what is the weather?")]})
        run(chat, "chat", {"messages": [{"role": "user", "content": "thanks", "id": "h3"}]})
        threads["chat"] = chat

        # A fan-out whose superstep failed: two of four workers finished.
        fan = fan_graph(saver, fail={1}, stop=set())
        run(fan, "fanout-failed", {"messages": [HumanMessage(id="f1", content="go")]})
        threads["fanout-failed"] = fan
        # One left interrupted: three finished, one waits.
        fan2 = fan_graph(saver, fail=set(), stop={2})
        run(fan2, "fanout-interrupted", {"messages": [HumanMessage(id="f1", content="go")]})
        threads["fanout-interrupted"] = fan2

        d = delta_graph(saver)
        for i in range(5):
            run(d, "delta", {"messages": [HumanMessage(id=f"u{i}", content=f"turn {i}")]})
        d.update_state(cfg("delta"), {"messages": [RemoveMessage(id="u1")]}, as_node="agent")
        run(d, "delta", {"messages": [HumanMessage(id="u5", content="after remove")]})
        if remove_all_honoured():
            run(d, "delta", {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), HumanMessage(id="u6", content="fresh")]})
        run(d, "delta", {"messages": [HumanMessage(id="u7", content="more")], "notes": Overwrite([{"reset": True}])})
        threads["delta"] = d
        df = delta_graph(saver, fail=True)
        run(df, "delta-failed", {"messages": [HumanMessage(id="u0", content="first")]})
        threads["delta-failed"] = df

        out = {"generator": "testdata/langgraph/view/generate_py.py", "language": "python",
               "langgraph": ver, "reducers": {"results": "concat", "notes": "concat"},
               "delta_remove_all": remove_all_honoured(), "threads": {}}
        for t, graph in threads.items():
            head = graph.get_state(cfg(t))
            states = [{"checkpoint_id": None, "values": neutral(head.values)}]
            for s in graph.get_state_history(cfg(t)):
                states.append({"checkpoint_id": s.config["configurable"]["checkpoint_id"], "values": neutral(s.values)})
            out["threads"][t] = states
    with open(os.path.join(outdir, f"view-py-{ver}.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True, ensure_ascii=False)
        f.write("\n")
    print(path, sum(len(v) for v in out["threads"].values()), "states")


if __name__ == "__main__":
    main(sys.argv[1])
