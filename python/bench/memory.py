"""What the Python process holds (RSS) around large calls, AgentStateSaver
against LangGraph's SqliteSaver where both can do the same thing (issue 38
class 7, issue 39 item 1):

    python bench/memory.py [--case puts,refused,history] [--value-mb 50] [--turns 80]
    python bench/memory.py --child CASE ...   # one case in this process (JSON out)

Each case runs in a fresh child process, which prints its RSS (VmRSS of
/proc/self/status) before, after and at its peak (VmHWM, reset through
/proc/self/clear_refs before the measured calls), and for agentstate the
size of the engine module's linear memory (it never shrinks: what the Go
heap once needed stays mapped).

  puts     three puts of a checkpoint whose one channel holds a value of
           --value-mb MB (a 50 MB string: what a whole message list with
           images is on the default channel), each the child of the one
           before, on a file; then a get_tuple that reads it back
  refused  a store value of 2 x --value-mb MB (past MaxValueBytes, refused
           with TooLargeError), then a pending write of the same size
           (refused too); RSS after each
  history  a heavy thread (--turns turns of a research agent's shape: a
           human message, a tool output of 2-40 KB, an AI answer, a 200 KB
           base64 image every 10th turn; the default messages channel, so
           every checkpoint holds the whole list) built by each saver in its
           own file, then get_state_history(limit=100) read to its end in a
           fresh process (each snapshot dropped as it comes), both savers
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import os
import subprocess
import sys
import tempfile
import time

MB = 1_000_000


def rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def hwm() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def linear_memory() -> int:
    from langgraph.checkpoint.agentstate import _engine

    e = _engine._engine
    return e._memory.data_len(e._store) if e is not None else 0


def trimmed() -> int:
    """RSS after glibc's malloc_trim(0): what the process would hold if the
    C allocator gave back the free pages it keeps (0 where there is none)."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        return 0
    return rss()


def mb(n: int) -> str:
    return f"{n / MB:,.0f} MB"


def case_puts(args) -> dict:
    from langgraph.checkpoint.agentstate import AgentStateSaver
    from langgraph.checkpoint.base import empty_checkpoint

    d = tempfile.mkdtemp(prefix="agentstate-mem-")
    s = AgentStateSaver(os.path.join(d, "puts.db"))
    cfg = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    cfg = s.put(cfg, empty_checkpoint(), {}, {})  # the engine started, the file made
    gc.collect()
    out = {"before": rss(), "linear_before": linear_memory(), "after": []}
    reset_peak()
    for i in range(3):
        value = "x" * (args.value_mb * MB)
        cp = empty_checkpoint()
        cp["channel_values"] = {"blob": value}
        cp["channel_versions"] = {"blob": i + 1}
        cfg = s.put(cfg, cp, {"step": i}, {"blob": i + 1})
        del value, cp
        gc.collect()
        out["after"].append(rss())
    out["peak"] = hwm()
    out["linear_after"] = linear_memory()
    reset_peak()
    got = s.get_tuple(cfg).checkpoint["channel_values"]["blob"]
    assert len(got) == args.value_mb * MB
    del got
    gc.collect()
    out.update(get_peak=hwm(), get_after=rss(), linear_get=linear_memory())
    s.close()
    return out


def case_refused(args) -> dict:
    from langgraph.checkpoint.agentstate import AgentStateSaver, AgentStateStore
    from langgraph.checkpoint.agentstate.errors import InvalidArgumentError
    from langgraph.checkpoint.base import empty_checkpoint

    d = tempfile.mkdtemp(prefix="agentstate-mem-")
    path = os.path.join(d, "refused.db")
    s = AgentStateSaver(path)
    st = AgentStateStore(db=s.db)
    st.put(("ns",), "small", {"v": 1})
    cfg = s.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, empty_checkpoint(), {}, {})
    gc.collect()
    out = {"before": rss(), "linear_before": linear_memory(), "value": 2 * args.value_mb * MB}
    reset_peak()
    value = {"v": "x" * (2 * args.value_mb * MB)}
    try:
        st.put(("ns",), "big", value)
        out["store"] = "stored"
    except InvalidArgumentError:
        out["store"] = "refused"
    del value
    gc.collect()
    out["after_store"] = rss()
    out["peak_store"] = hwm()
    out["linear_store"] = linear_memory()
    reset_peak()
    w = "x" * (2 * args.value_mb * MB)
    try:
        s.put_writes(cfg, [("messages", w)], "task-1")
        out["write"] = "stored"
    except InvalidArgumentError:
        out["write"] = "refused"
    del w
    gc.collect()
    out["after_write"] = rss()
    out["peak_write"] = hwm()
    out["linear_write"] = linear_memory()
    s.close()
    return out


def open_saver(kind: str, path: str):
    if kind == "agentstate":
        from langgraph.checkpoint.agentstate import AgentStateSaver

        cache = os.environ.get("MEMORY_BENCH_CACHE_BYTES")  # the engine's history cache, if not its default
        s = AgentStateSaver(path, cache_bytes=int(cache)) if cache else AgentStateSaver(path)
        return s, s.close
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False)
    s = SqliteSaver(conn)
    s.setup()
    return s, conn.close


def words(seed: int, n: int) -> str:
    w = "the agent model tool call result answer question search file plan step".split()
    out, x, size = [], (seed * 2654435761) & 0xFFFFFFFF, 0
    while size < n:
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
        out.append(w[x % len(w)])
        size += len(out[-1]) + 1
    return " ".join(out)[:n]


def heavy_graph(checkpointer):
    from langchain_core.messages import AIMessage, ToolMessage
    from langgraph.graph import END, START, MessagesState, StateGraph

    def agent(s):
        n = len(s["messages"])
        turn = n // 4
        tool = words(n, 2000 + (n * 7919) % 38000)
        msgs = [
            AIMessage(id=f"call-{n}", content="", tool_calls=[{"id": f"c{n}", "name": "search", "args": {"q": words(n, 40)}}]),
            ToolMessage(id=f"tool-{n}", tool_call_id=f"c{n}", content=tool),
        ]
        if turn % 10 == 9:
            img = base64.b64encode(bytes((i * 31 + n) & 0xFF for i in range(150_000))).decode()
            msgs.append(AIMessage(id=f"img-{n}", content=[{"type": "image_url", "image_url": {"url": "data:image/png;base64," + img}}]))
        else:
            msgs.append(AIMessage(id=f"ai-{n}", content=words(n + 1, 800)))
        return {"messages": msgs}

    return StateGraph(MessagesState).add_node("agent", agent).add_edge(START, "agent").add_edge("agent", END).compile(checkpointer=checkpointer)


def case_build(args) -> dict:
    from langchain_core.messages import HumanMessage

    s, close = open_saver(args.saver, args.path)
    g = heavy_graph(s)
    cfg = {"configurable": {"thread_id": "heavy"}}
    for i in range(args.turns):
        g.invoke({"messages": [HumanMessage(id=f"h-{i}", content=words(i, 200))]}, cfg)
    n = len(g.get_state(cfg).values["messages"])
    close()
    return {"messages": n, "file": os.path.getsize(args.path)}


def case_history(args) -> dict:
    s, close = open_saver(args.saver, args.path)
    g = heavy_graph(s)
    cfg = {"configurable": {"thread_id": "heavy"}}
    g.get_state(cfg)  # opened, warmed: what is measured is the history
    gc.collect()
    out = {"before": rss(), "linear_before": linear_memory() if args.saver == "agentstate" else 0}
    reset_peak()
    t = time.process_time()
    count = biggest = 0
    for snap in g.get_state_history(cfg, limit=100):
        count += 1
        biggest = max(biggest, len(snap.values.get("messages", ())))
        del snap
    out["cpu"] = time.process_time() - t
    gc.collect()
    out.update(snapshots=count, longest=biggest, peak=hwm(), after=rss())
    out["after_trim"] = trimmed()
    if args.saver == "agentstate":
        out["linear_after"] = linear_memory()
    close()
    return out


CASES = {"puts": case_puts, "refused": case_refused, "build": case_build, "history": case_history}


def child(case: str, args, *extra: str) -> dict:
    cmd = [sys.executable, __file__, "--child", case, "--value-mb", str(args.value_mb), "--turns", str(args.turns), *extra]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{case} failed:\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--case", default="puts,refused,history")
    p.add_argument("--value-mb", type=int, default=50)
    p.add_argument("--turns", type=int, default=80)
    p.add_argument("--child")
    p.add_argument("--saver", default="agentstate")
    p.add_argument("--path")
    args = p.parse_args()
    if args.child:
        print(json.dumps(CASES[args.child](args)))
        return
    for case in args.case.split(","):
        if case == "puts":
            r = child("puts", args)
            print(
                f"puts of {args.value_mb} MB: RSS before {mb(r['before'])}, after each "
                + ", ".join(mb(a) for a in r["after"])
                + f", peak {mb(r['peak'])}; linear memory {mb(r['linear_before'])} -> {mb(r['linear_after'])}"
            )
            print(f"then get_tuple of it: peak {mb(r['get_peak'])}, after {mb(r['get_after'])}; linear memory -> {mb(r['linear_get'])}")
        elif case == "refused":
            r = child("refused", args)
            print(
                f"refused {mb(r['value'])} store value ({r['store']}): RSS before {mb(r['before'])}, peak {mb(r['peak_store'])}, "
                f"after {mb(r['after_store'])}; linear memory {mb(r['linear_before'])} -> {mb(r['linear_store'])}"
            )
            print(
                f"refused {mb(r['value'])} pending write ({r['write']}): peak {mb(r['peak_write'])}, after {mb(r['after_write'])}; "
                f"linear memory -> {mb(r['linear_write'])}"
            )
        elif case == "history":
            d = tempfile.mkdtemp(prefix="agentstate-mem-")
            rows = {}
            for saver in ("agentstate", "sqlite"):
                path = os.path.join(d, saver + ".db")
                b = child("build", args, "--saver", saver, "--path", path)
                rows[saver] = child("history", args, "--saver", saver, "--path", path)
                rows[saver]["file"] = b["file"]
            for saver, r in rows.items():
                extra = f"; linear memory {mb(r['linear_before'])} -> {mb(r['linear_after'])}" if saver == "agentstate" else ""
                print(
                    f"history(limit=100), {args.turns} heavy turns, {saver}: {r['snapshots']} snapshots (longest {r['longest']} messages), "
                    f"file {mb(r['file'])}; RSS before {mb(r['before'])}, peak {mb(r['peak'])}, after {mb(r['after'])} "
                    f"({mb(r['after_trim'])} after malloc_trim); CPU {r['cpu']:.2f} s{extra}"
                )
            a, q = rows["agentstate"], rows["sqlite"]
            print(f"peak ratio agentstate/sqlite {a['peak'] / q['peak']:.2f}; agentstate after - before {mb(a['after'] - a['before'])}")
        else:
            raise SystemExit(f"unknown case {case}")


if __name__ == "__main__":
    main()
