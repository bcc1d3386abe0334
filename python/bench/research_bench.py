"""A research-agent-shaped LangGraph graph on AgentStateSaver and on
LangGraph's SqliteSaver (langgraph-checkpoint-sqlite 3.1.2), both kinds of
messages channel, paired in one script (issue 39, item 4):

    python bench/research_bench.py [--turns 30] [--rounds 1] [--channels default,delta]
                                   [--every 10] [--warmup 3] [--limit 50] [--json FILE]
    python bench/research_bench.py --turns 200 --rounds 3      # the issue's size
    python bench/research_bench.py --profile --turns 60      # CPU per turn by saver method, by layer, by engine call
    python bench/research_bench.py --profile --graph chat --turns 300 --channels delta   # the same on the chat graph

The graph (our own; the shape of a research agent's turn such as DeerFlow's
lead agent, not its code):

- a turn is one invoke: a human message (200-600 bytes) in; the agent answers
  with a tool call; the tool's output (2-40 KB of text) comes back as a tool
  message; the agent answers (300-1,500 bytes) and the turn ends. Every 10th
  turn (turns 7, 17, 27, ...) the tool's output also carries a 200 KB base64
  image (an image_url content block); every 5th turn the agent fans out instead to 3 subagents
  with Send, each returning a tool message of 4-12 KB.
- title, todos, thread_data and artifacts are written by every node at every
  step (a reducer that keeps the last write, so parallel subagents may all
  write them); seed (47 KB, the sandbox's skills and uploaded files' digest)
  is set once, by the first step.
- messages is LangGraph's default channel (add_messages: the whole list is
  a channel value at every step) or a DeltaChannel (_messages_delta_reducer,
  a snapshot every --every updates).

All content is deterministic (seeded by the turn number), so both savers see
the same bytes and must end in the same state (the run fails otherwise).

Each measurement runs in a fresh child process (this script with --child),
so that peak RSS belongs to one saver and one phase:

- turns: --warmup turns on a thread of their own in another file, then
  --turns turns on the measured thread: CPU per turn (time.process_time, every
  thread of the process), wall per turn, RSS after the turns (VmRSS after a
  gc.collect, the saver still open), the file's bytes after close, and the
  serialised size of the final message list (JsonPlusSerializer, for the
  "file / messages" ratio of item 2).
- history: a new process opens the file and runs
  list(graph.get_state_history(config, limit=--limit)): its CPU, the peak
  RSS of the process (VmHWM) and the RSS before the call and after it (the
  list dropped, gc.collect).

--rounds R alternates the savers (A B A B ...) and prints the medians and the
range of the per-pair ratios, agentstate / sqlite (below 1 is agentstate
smaller or faster; "fewer bytes" prints sqlite / agentstate).
"""


import argparse
import base64
import gc
import json
import operator
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

WORDS = ("the agent model tool call result answer question search file plan step memory context thread "
         "checkpoint state message summary source paper dataset figure table method claim evidence").split()


def text(seed: int, n: int) -> str:
    """n bytes of pseudo-English words, the same for the same seed."""
    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    while size < n:
        w = WORDS[rng.randrange(len(WORDS))]
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:n]


def size_of(seed: int, lo: int, hi: int) -> int:
    return random.Random(seed * 7919 + 17).randrange(lo, hi + 1)


def image_b64(seed: int) -> str:
    """A 200 KB base64 "image": 150,000 random (incompressible) bytes."""
    return base64.b64encode(random.Random(seed).randbytes(150_000)).decode()


def _last(a, b):
    return b


def graph(checkpointer, channel: str, every: int):
    from typing import Annotated

    from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.types import Send
    from typing_extensions import TypedDict

    if channel == "delta":
        from langgraph.channels.delta import DeltaChannel
        from langgraph.graph.message import _messages_delta_reducer

        Messages = Annotated[list[AnyMessage], DeltaChannel(_messages_delta_reducer, snapshot_frequency=every)]
    else:
        Messages = Annotated[list[AnyMessage], add_messages]

    class S(TypedDict, total=False):
        messages: Messages
        title: Annotated[str, _last]
        todos: Annotated[list, _last]
        thread_data: Annotated[dict, _last]
        artifacts: Annotated[list, _last]
        seed: str

    def turn_of(s) -> int:
        return sum(1 for m in s["messages"] if isinstance(m, HumanMessage))

    def small(k: int, step: str, n: int) -> dict:
        # the per-step channels: a few hundred bytes each, changed at every step
        return {
            "title": f"Research {k}: " + text(k, 40),
            "todos": [{"id": i, "content": text(k * 100 + i, 80), "status": "done" if i < k // 2 else "pending"}
                      for i in range(min(20, 3 + k // 3))],
            "thread_data": {"workspace_path": f"/mnt/user-data/workspace/{k}", "uploads_path": "/mnt/user-data/uploads",
                            "outputs_path": "/mnt/user-data/outputs", "step": step, "messages": n},
            "artifacts": [f"/mnt/user-data/outputs/report-{i}.md" for i in range(k // 5 + 1)],
        }

    def agent(s):
        k = turn_of(s)
        n = len(s["messages"])
        last = s["messages"][-1]
        out = small(k, "agent", n)
        if not s.get("seed"):
            out["seed"] = text(7, 47 * 1024)
        if isinstance(last, HumanMessage):
            if k % 5 == 0:
                calls = [{"name": "task", "args": {"description": text(k * 10 + j, 120), "subagent": f"sub-{j}"},
                          "id": f"call-{k}-{j}", "type": "tool_call"} for j in range(3)]
            else:
                calls = [{"name": "web_search", "args": {"query": text(k, 60)}, "id": f"call-{k}", "type": "tool_call"}]
            out["messages"] = [AIMessage(id=f"ai-{k}-a", content=text(k * 3, 300), tool_calls=calls)]
        else:
            out["messages"] = [AIMessage(id=f"ai-{k}-b", content=text(k * 3 + 1, size_of(k, 300, 1500)))]
        return out

    def route(s):
        last = s["messages"][-1]
        calls = getattr(last, "tool_calls", None)
        if not calls:
            return END
        if len(calls) > 1:
            return [Send("subagent", {"call": c, "k": turn_of(s), "n": len(s["messages"])}) for c in calls]
        return "tools"

    def tools(s):
        k = turn_of(s)
        call = s["messages"][-1].tool_calls[0]
        body = text(k * 5 + 2, size_of(k + 1, 2 * 1024, 40 * 1024))
        content = body
        if k % 10 == 7:
            content = [{"type": "text", "text": body},
                       {"type": "image_url", "image_url": {"url": "data:image/png;base64," + image_b64(k)}}]
        out = small(k, "tools", len(s["messages"]))
        out["messages"] = [ToolMessage(id=f"tool-{k}", content=content, tool_call_id=call["id"], name=call["name"])]
        return out

    def subagent(arg):
        c, k = arg["call"], arg["k"]
        j = int(c["id"].rsplit("-", 1)[1])
        out = small(k, f"subagent-{j}", arg["n"])
        out["messages"] = [ToolMessage(id=f"tool-{k}-{j}", content=text(k * 50 + j, size_of(k * 3 + j, 4 * 1024, 12 * 1024)),
                                       tool_call_id=c["id"], name="task")]
        return out

    b = StateGraph(S)
    b.add_node("agent", agent).add_node("tools", tools).add_node("subagent", subagent)
    b.add_edge(START, "agent").add_conditional_edges("agent", route, ["tools", "subagent", END])
    b.add_edge("tools", "agent").add_edge("subagent", "agent")
    return b.compile(checkpointer=checkpointer)


def open_saver(kind: str, path: str):
    if kind == "agentstate":
        from langgraph.checkpoint.agentstate import AgentStateSaver

        s = AgentStateSaver(path)
        return s, s.close
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False)
    s = SqliteSaver(conn)
    s.setup()
    return s, conn.close


def human(k: int):
    from langchain_core.messages import HumanMessage

    return HumanMessage(id=f"human-{k}", content=text(100_000 + k, size_of(k + 99, 200, 600)))


def drive(g, thread: str, first: int, n: int) -> None:
    cfg = {"configurable": {"thread_id": thread}}
    for k in range(first, first + n):
        g.invoke({"messages": [human(k)]}, cfg)


def status(field: str) -> float:
    """VmRSS / VmHWM of this process, MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def file_bytes(path: str) -> int:
    return sum(os.path.getsize(path + s) for s in ("", "-wal", "-shm", "-journal") if os.path.isfile(path + s))


def child_turns(kind: str, channel: str, path: str, args) -> dict:
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    warm = path + ".warm"
    s, close = open_saver(kind, warm)
    drive(graph(s, channel, args.every), "warm-up", 1, args.warmup)
    close()
    for sfx in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(warm + sfx):
            os.remove(warm + sfx)
    s, close = open_saver(kind, path)
    g = graph(s, channel, args.every)
    gc.collect()
    c0, w0 = time.process_time(), time.perf_counter()
    drive(g, "research", 1, args.turns)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    gc.collect()
    rss_after = status("VmRSS")
    st = g.get_state({"configurable": {"thread_id": "research"}}).values
    close()
    msgs = st["messages"]
    final = json.dumps({"messages": [(m.type, m.id, m.content) for m in msgs],
                        **{k: st.get(k) for k in ("title", "todos", "thread_data", "artifacts", "seed")}}, sort_keys=True)
    return {
        "cpu_ms_per_turn": cpu / args.turns * 1000,
        "wall_ms_per_turn": wall / args.turns * 1000,
        "rss_after_turns_mb": rss_after,
        "bytes": file_bytes(path),
        "message_bytes": len(JsonPlusSerializer().dumps_typed(msgs)[1]),
        "messages": len(msgs),
        "final_hash": hash_of(final),
    }


def child_history(kind: str, channel: str, path: str, args) -> dict:
    s, close = open_saver(kind, path)
    g = graph(s, channel, args.every)
    cfg = {"configurable": {"thread_id": "research"}}
    gc.collect()
    before = status("VmRSS")
    c0 = time.process_time()
    hist = list(g.get_state_history(cfg, limit=args.limit))
    cpu = time.process_time() - c0
    n = len(hist)
    peak = status("VmHWM")
    del hist
    gc.collect()
    after = status("VmRSS")
    close()
    return {"history_cpu_ms": cpu * 1000, "history_states": n, "history_peak_rss_mb": peak,
            "rss_before_history_mb": before, "rss_after_history_mb": after}


def hash_of(s: str) -> str:
    import hashlib

    return hashlib.sha256(s.encode()).hexdigest()[:16]


def run_child(phase: str, kind: str, channel: str, path: str, args) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", phase, kind, channel, path,
           "--turns", str(args.turns), "--every", str(args.every), "--warmup", str(args.warmup), "--limit", str(args.limit)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{phase} {kind} {channel} failed:\n{r.stderr[-4000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


ROWS = (  # key, label, how the ratio reads
    ("bytes", "file bytes", "fewer"),
    ("cpu_ms_per_turn", "CPU ms/turn", "ratio"),
    ("wall_ms_per_turn", "wall ms/turn", "ratio"),
    ("history_cpu_ms", "history CPU ms", "ratio"),
    ("history_peak_rss_mb", "history peak RSS MB", "ratio"),
    ("rss_after_history_mb", "RSS after history MB", "ratio"),
    ("rss_after_turns_mb", "RSS after turns MB", "ratio"),
)


def compare(args) -> None:
    kinds = args.savers.split(",")
    tmp = tempfile.mkdtemp(prefix="agentstate-research-")
    results: dict[tuple[str, str], list[dict]] = {}
    try:
        for channel in args.channels.split(","):
            for r in range(args.rounds):
                for kind in kinds:
                    path = os.path.join(tmp, f"{kind}-{channel}-{r}.db")
                    res = run_child("turns", kind, channel, path, args)
                    res.update(run_child("history", kind, channel, path, args))
                    results.setdefault((kind, channel), []).append(res)
                    for sfx in ("", "-wal", "-shm", "-journal"):
                        if os.path.exists(path + sfx):
                            os.remove(path + sfx)
                    print(f"  [{channel} round {r + 1} {kind}] " + ", ".join(
                        f"{k} {res[k]:,.1f}" for k, _, _ in ROWS), file=sys.stderr, flush=True)
                hashes = {results[(k, channel)][-1]["final_hash"] for k in kinds}
                if len(hashes) != 1:
                    raise SystemExit(f"{channel}: the savers' final states differ")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"LangGraph {version('langgraph')} research graph, {args.turns} turns, {args.rounds} round(s), "
          f"history limit {args.limit}, savers {', '.join(kinds)} (SqliteSaver {version('langgraph-checkpoint-sqlite')}); "
          f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    out = []
    for channel in args.channels.split(","):
        label = "default (add_messages)" if channel == "default" else f"DeltaChannel, K={args.every}"
        print(f"\n{label}:")
        row: dict = {"channel": channel}
        A = results[(kinds[0], channel)]
        row["message_bytes"] = A[0]["message_bytes"]
        for key, what, how in ROWS:
            row[key] = {k: statistics.median(x[key] for x in results[(k, channel)]) for k in kinds}
            line = f"  {what:<22}" + "".join(f" {k} {row[key][k]:>14,.1f}" for k in kinds)
            if len(kinds) == 2:
                B = results[(kinds[1], channel)]
                ratios = [(b[key] / a[key] if how == "fewer" else a[key] / b[key]) if a[key] and b[key] else float("nan")
                          for a, b in zip(A, B)]
                m = statistics.median(ratios)
                row[key]["ratio"], row[key]["min"], row[key]["max"] = m, min(ratios), max(ratios)
                line += f"  {m:.2f}x {'fewer' if how == 'fewer' else ''} ({min(ratios):.2f}-{max(ratios):.2f})"
            print(line)
        for k in kinds:
            b = row["bytes"][k]
            print(f"  {k}: file {b / row['message_bytes']:.2f}x the {row['message_bytes']:,} bytes of serialised messages")
        out.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


def profile(args) -> None:
    """--profile: each saver in this process, CPU per turn by saver method
    (bench/method_cost.py's timers) and, for agentstate, by layer
    (bench/turn_profile.py's timers: serde, request, crossing, engine, host,
    the rest LangGraph's)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import method_cost as mc
    import turn_profile as tp
    from collections import Counter

    tp.instrument_classes(False)
    ops = _time_ops()
    if args.graph == "chat":
        import langgraph_bench as lb

        make = lambda s, channel: lb.graph(s, channel, args.every)  # noqa: E731
        run = lambda g, thread, n: lb.drive(g, thread, n)  # noqa: E731
    else:
        make = lambda s, channel: graph(s, channel, args.every)  # noqa: E731
        run = lambda g, thread, n: drive(g, thread, 1, n)  # noqa: E731
    tmp = tempfile.mkdtemp(prefix="agentstate-research-prof-")
    try:
        for channel in args.channels.split(","):
            print(f"{channel}: CPU ms per turn; methods inclusive, ms per turn (calls per turn)")
            for kind in args.savers.split(","):
                s, close = open_saver(kind, os.path.join(tmp, f"warm-{kind}-{channel}.db"))
                run(make(s, channel), "warm-up", args.warmup)
                close()
                s, close = open_saver(kind, os.path.join(tmp, f"{kind}-{channel}.db"))
                spent: Counter = Counter()
                calls: Counter = Counter()
                mc.timed(s, spent, calls)
                if kind == "agentstate":
                    tp.instrument(s)
                tp.ACC.clear()
                tp.CALLS.clear()
                ops.clear()
                c0 = time.process_time()
                run(make(s, channel), "research", args.turns)
                total = time.process_time() - c0
                close()
                n = args.turns
                parts = "  ".join(f"{m} {spent[m] / n * 1000:.2f} ({calls[m] / n:.1f})" for m in mc.METHODS if calls[m])
                print(f"  {kind:<10} {total / n * 1000:7.2f} ms/turn; methods {sum(spent.values()) / n * 1000:6.2f}: {parts}")
                if kind == "agentstate":
                    rest = total - sum(tp.ACC.values())
                    print("             layers: " + "  ".join(
                        f"{layer} {(rest if layer == 'langgraph' else tp.ACC[layer]) / n * 1000:.2f}"
                        + ("" if layer == "langgraph" else f" ({tp.CALLS[layer] / n:.1f})")
                        for layer in ("langgraph", "serde", "request", "crossing", "engine", "host")))
                    for op, (cpu, calls_, host, stmts, hcalls) in sorted(ops.items(), key=lambda kv: -kv[1][0]):
                        print(f"             engine call {op:<13} {calls_ / n:5.2f} a turn, {cpu / max(calls_, 1) * 1e6:6.0f} us a call "
                              f"(host {host / max(calls_, 1) * 1e6:5.0f} us, {stmts / max(calls_, 1):4.1f} statements "
                              f"in {hcalls / max(calls_, 1):4.1f} host calls)")
                    st = sum(v[3] for v in ops.values()) / n
                    hc = sum(v[4] for v in ops.values()) / n
                    print(f"             host: {st:.1f} statements a turn in {hc:.1f} calls")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _time_ops() -> dict:
    """CPU of each engine call by op (thread time of the crossing, the Go and
    the host statements it runs) and of its host statements."""
    import threading
    from collections import defaultdict

    from langgraph.checkpoint.agentstate import _engine, _sqlite_host

    ops: dict = defaultdict(lambda: [0.0, 0, 0.0, 0, 0])  # op -> CPU, calls, host CPU, statements, host calls
    tls = threading.local()
    H = _sqlite_host.SQLiteHost
    stmts = [0]  # statements run by the current host call
    real_run = H._run

    def counted(self, *a, **k):
        stmts[0] += 1
        return real_run(self, *a, **k)

    H._run = counted
    for name in ("run", "run_batch", "next", "prepare", "reset", "finalize", "autocommit"):
        def hw(*a, _fn=getattr(H, name), **k):
            t0 = time.thread_time()
            stmts[0] = 0
            try:
                return _fn(*a, **k)
            finally:
                op = getattr(tls, "op", None)
                if op is not None:
                    ops[op][2] += time.thread_time() - t0
                    ops[op][3] += stmts[0]
                    ops[op][4] += 1
        setattr(H, name, hw)
    call_raw = _engine.Engine.call_raw

    def cw(self, h, op, text, bufs=()):
        tls.op = op
        t0 = time.thread_time()
        try:
            return call_raw(self, h, op, text, bufs)
        finally:
            ops[op][0] += time.thread_time() - t0
            ops[op][1] += 1
            tls.op = None

    _engine.Engine.call_raw = cw
    return ops


def version(dist: str) -> str:
    from importlib.metadata import version as v

    return v(dist)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--turns", type=int, default=30)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--channels", default="default,delta")
    p.add_argument("--savers", default="agentstate,sqlite")
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--json", default="")
    p.add_argument("--profile", action="store_true", help="CPU per turn by saver method and (agentstate) by layer, in this process")
    p.add_argument("--graph", choices=("research", "chat"), default="research", help="--profile: this graph or langgraph_bench.py's chat graph")
    p.add_argument("--child", nargs=4, metavar=("PHASE", "SAVER", "CHANNEL", "PATH"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        phase, kind, channel, path = args.child
        fn = child_turns if phase == "turns" else child_history
        print(json.dumps(fn(kind, channel, path, args)))
        return
    for c in args.channels.split(","):
        if c not in ("default", "delta"):
            raise SystemExit(f"--channels: unknown kind {c}")
    for k in args.savers.split(","):
        if k not in ("agentstate", "sqlite"):
            raise SystemExit(f"--savers: unknown saver {k}")
    if args.profile:
        profile(args)
    else:
        compare(args)


if __name__ == "__main__":
    sys.exit(main())
