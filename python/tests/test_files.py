"""One file for every front end, several processes on one file, and no
acknowledged checkpoint lost to a kill."""

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from langgraph.checkpoint.agentstate import AgentStateSaver

from test_graph import chat, drive, values

HERE = os.path.dirname(os.path.abspath(__file__))


def test_the_cli_reads_a_python_file_and_python_reads_it_back(db_path, agentstate_cli):
    with AgentStateSaver(db_path) as saver:
        g = chat(saver)
        cfg = drive(g, "py-thread", 5)
        want = values(g.get_state(cfg))
        ids = [t.config["configurable"]["checkpoint_id"] for t in saver.list(cfg)]
    r = agentstate_cli("verify", db_path)
    assert r.returncode == 0, r.stdout + r.stderr
    r = agentstate_cli("history", "--json", db_path, "py-thread")
    assert r.returncode == 0, r.stderr
    hist = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    assert [h["checkpoint_id"] for h in hist] == ids  # newest first, as the saver lists them
    r = agentstate_cli("state", "--json", db_path, "py-thread")
    assert r.returncode == 0, r.stderr
    state = json.loads(r.stdout)
    assert state["config"]["checkpoint_id"] == ids[0] and "messages" in state["stored"]
    # The CLI maintains the file (convert to delta mode); Python reads the same states.
    r = agentstate_cli("convert", "--mode", "delta", "--every", "5", db_path)
    assert r.returncode == 0, r.stdout + r.stderr
    with AgentStateSaver(db_path) as saver:
        g = chat(saver)
        assert saver.db.mode == "delta"
        assert values(g.get_state(cfg)) == want
        drive(g, "py-thread", 1, start=5)
        assert len(values(g.get_state(cfg))) == 12


WRITER = r"""
import sys
from langchain_core.messages import HumanMessage
sys.path.insert(0, sys.argv[3])
from langgraph.checkpoint.agentstate import AgentStateSaver
from test_graph import chat
path, tag = sys.argv[1], sys.argv[2]
saver = AgentStateSaver(path, busy_timeout_ms=30000)
g = chat(saver)
n = int(sys.argv[4])
for k in range(n):
    cfg = {"configurable": {"thread_id": f"{tag}-{k % 3}"}}
    g.invoke({"messages": [HumanMessage(content=f"{tag} {k}", id=f"{tag}-h-{k}")]}, cfg)
    # acknowledged: the invoke returned, so its checkpoints were put
    print(f"ack {tag} {k}", flush=True)
saver.close()
"""


def _spawn(db_path, tag, n):
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, db_path, tag, HERE, str(n)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_four_processes_write_one_file(db_path, agentstate_cli):
    AgentStateSaver(db_path).close()  # create the file first
    procs = [_spawn(db_path, f"p{i}", 24) for i in range(4)]
    reads = 0
    while any(p.poll() is None for p in procs):
        r = agentstate_cli("info", "--json", db_path)  # the native CLI reads meanwhile
        assert r.returncode == 0, r.stderr
        reads += 1
        time.sleep(0.2)
    for p in procs:
        out, err = p.communicate()
        assert p.returncode == 0, err[-2000:]
        assert out.count("ack ") == 24
    assert reads > 0
    with AgentStateSaver(db_path) as saver:
        g = chat(saver)
        for i in range(4):
            for t in range(3):
                msgs = g.get_state({"configurable": {"thread_id": f"p{i}-{t}"}}).values["messages"]
                humans = [m.content for m in msgs if m.type == "human"]
                assert humans == [f"p{i} {k}" for k in range(t, 24, 3)]  # nothing lost, nothing twice
    r = agentstate_cli("verify", db_path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_sigkill_loses_no_acknowledged_checkpoint(db_path):
    rng = random.Random(int(os.environ.get("AGENTSTATE_SEED", "7")))
    acked: dict[str, int] = {}
    rounds = int(os.environ.get("AGENTSTATE_KILL_ROUNDS", "6"))
    for r in range(rounds):
        p = _spawn(db_path, f"k{r}", 10_000)
        deadline = time.monotonic() + 30
        got = 0
        want = rng.randint(3, 25)
        while got < want and time.monotonic() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            if line.startswith("ack "):
                got += 1
                acked[f"k{r}"] = int(line.split()[2])
        time.sleep(rng.random() * 0.05)  # somewhere inside the next turn
        p.send_signal(signal.SIGKILL)
        p.wait()
        assert got > 0, p.stderr.read()[-2000:]
        # everything the writer acknowledged is there, and the file opens
        with AgentStateSaver(db_path) as saver:
            g = chat(saver)
            last = acked[f"k{r}"]
            seen = set()
            for t in range(3):
                st = g.get_state({"configurable": {"thread_id": f"k{r}-{t}"}})
                seen.update(m.content for m in st.values.get("messages", []) if m.type == "human")
            missing = [k for k in range(last + 1) if f"k{r} {k}" not in seen]
            assert missing == [], f"round {r}: acknowledged turns lost: {missing}"


NODE_SCRIPT = r"""
const [pkg, file, thread] = process.argv.slice(2);
const { Database } = await import(pkg);
const db = await Database.open({ path: file, readOnly: true });
const { cursor } = await db.call("list.open", { threadId: thread, limit: 0 });
let ids = [];
for (let done = false; !done; ) {
  const r = await db.call("list.next", { cursor, n: 64 });
  done = r.done;
  ids.push(...r.tuples.map((t) => t.checkpoint.id));
}
const head = await db.call("getTuple", { config: { thread_id: thread, checkpoint_ns: "" } });
console.log(JSON.stringify({ ids, types: Object.values(head.tuple.checkpoint.values).map((b) => b.t) }));
await db.close();
"""


def test_the_npm_package_reads_a_python_file(db_path):
    pkg = os.environ.get("AGENTSTATE_NPM_DIR")
    if not pkg:
        if os.environ.get("CI"):
            pytest.fail("AGENTSTATE_NPM_DIR is not set: CI gives the tests the built npm package")
        pytest.skip("no built npm package (set AGENTSTATE_NPM_DIR to wasm/npm after npm run build)")
    with AgentStateSaver(db_path) as saver:
        cfg = drive(chat(saver), "shared", 3)
        ids = [t.config["configurable"]["checkpoint_id"] for t in saver.list(cfg)]
    entry = "file://" + os.path.join(os.path.abspath(pkg), "src", "index.js")
    script = os.path.join(os.path.dirname(db_path), "read.mjs")
    with open(script, "w") as f:
        f.write(NODE_SCRIPT)
    r = subprocess.run(["node", script, entry, db_path, "shared"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["ids"] == ids  # every checkpoint, newest first, as Python lists them
    assert "msgpack" in got["types"]  # LangGraph Python's serde bytes, stored unread


def test_a_forked_child_opens_its_own_handle(db_path):
    import multiprocessing as mp

    saver = AgentStateSaver(db_path)
    g = chat(saver)
    cfg = drive(g, "fork", 2)

    def child(q):
        from langgraph.checkpoint.agentstate import ClosedError

        try:
            saver.get_tuple(cfg)
            q.put("parent's handle worked in the child")
            return
        except ClosedError as e:
            first = "closed: " + str(e)
        with AgentStateSaver(db_path) as own:
            drive(chat(own), "fork", 1, start=2)
            q.put(first + " | " + str(len(own.get_tuple(cfg).checkpoint["channel_values"]["messages"])))

    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(q,))
    p.start()
    p.join(60)
    out = q.get(timeout=5)
    assert out.startswith("closed: ") and "forked" in out and out.endswith("| 6"), out
    assert len(saver.get_tuple(cfg).checkpoint["channel_values"]["messages"]) == 6  # the parent goes on
    saver.close()


def test_keyboard_interrupt_inside_a_call_leaves_the_engine_usable(db_path, monkeypatch):
    from langgraph.checkpoint.agentstate import _sqlite_host

    saver = AgentStateSaver(db_path)
    g = chat(saver)
    cfg = drive(g, "ki", 1)
    real = _sqlite_host.SQLiteHost._decode_values
    calls = [0]

    def decode(b, count=-1):
        calls[0] += 1
        if calls[0] == 3:  # inside a statement of the next put (a Ctrl-C arriving there)
            raise KeyboardInterrupt
        return real(b, count)

    monkeypatch.setattr(_sqlite_host.SQLiteHost, "_decode_values", staticmethod(decode))
    with pytest.raises(KeyboardInterrupt):
        drive(g, "ki", 1, start=1)
    monkeypatch.setattr(_sqlite_host.SQLiteHost, "_decode_values", staticmethod(real))
    drive(g, "ki", 1, start=1)  # the same handle goes on
    assert [m.content for m in g.get_state(cfg).values["messages"] if m.type == "human"][-1] == "hi 1"
    saver.close()


def test_an_in_memory_database_is_the_schema_a_file_gets(tmp_path, agentstate_cli):
    # ":memory:" opens from the build's empty image (no schema statements run);
    # its bytes must be what a file opened fresh holds: the CLI's verify compares
    # the schema text and the history with the build's.
    saver = AgentStateSaver()
    try:
        drive(chat(saver), "mem-thread", 3)
        info = saver.db.info()["info"]
        assert info["schema_version"] >= 6 and info["rows"]["schema_history"] == info["schema_version"]
        res, bufs = saver.db.call("image")
        image = bufs[res["image"]]
    finally:
        saver.db.close()
    path = tmp_path / "from-memory.db"
    path.write_bytes(image)
    r = agentstate_cli("verify", str(path))
    assert r.returncode == 0, r.stdout + r.stderr
    r = agentstate_cli("history", "--json", str(path), "mem-thread")
    assert r.returncode == 0 and len([l for l in r.stdout.splitlines() if l.strip()]) > 0, r.stdout + r.stderr
