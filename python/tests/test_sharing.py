"""One file, several kinds of process, and files that go away under an open
saver (issue 38, classes 1 and 2).

A Node process (the npm package) cannot take SQLite's POSIX locks: it and
the processes that do (the native engine, this package) take turns on a
file by records beside it (docs/format.md, "Sharing with the npm package").
The later kind is refused with an error naming the holder, never a
corrupted file or a lost write. And a file deleted, moved away or replaced,
or its write-ahead log deleted, under an open saver refuses the next write
before writing (FileReplacedError, the engine's ErrFileReplaced) instead of
sending acknowledged writes nowhere (docs/reliability.md).

AGENTSTATE_SHARE_ROUNDS sets the rounds of the mixed stress (2 by default;
20 for the issue's goal).
"""

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.agentstate import AgentStateSaver, BusyError, FileReplacedError, HeldError

HERE = os.path.dirname(os.path.abspath(__file__))


def npm_dir() -> str:
    pkg = os.environ.get("AGENTSTATE_NPM_DIR")
    if not pkg:
        if os.environ.get("CI"):
            pytest.fail("AGENTSTATE_NPM_DIR is not set: CI gives the tests the built npm package")
        pytest.skip("no built npm package (set AGENTSTATE_NPM_DIR to wasm/npm after npm run build)")
    return pkg


# A Node writer: opens the file (or prints "refused CODE MESSAGE" and exits
# 3), prints "open", then puts checkpoints on thread TAG, printing "ack TAG
# ID" after each put returned, until N puts (0: until killed) or, in hold
# mode, until its stdin closes.
NODE_WRITER = r"""
const [entry, file, tag, mode, n] = process.argv.slice(2);
const { AgentStateSaver } = await import(entry);
const { emptyCheckpoint, uuid6 } = await import(new URL("../node_modules/@langchain/langgraph-checkpoint/dist/index.js", entry));
let saver;
try {
  saver = await AgentStateSaver.open({ path: file });
} catch (e) {
  console.log(`refused ${e.code} ${e.message}`);
  process.exit(3);
}
console.log("open");
if (mode === "hold") {
  process.stdin.resume();
  process.stdin.on("end", async () => { await saver.close(); process.exit(0); });
} else {
  let cfg = { configurable: { thread_id: tag, checkpoint_ns: "" } };
  let version;
  for (let k = 0; n === "0" || k < Number(n); k++) {
    version = saver.getNextVersion(version);
    const cp = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { log: `${tag} ${k} ` + "x".repeat(500 + (k % 7) * 300) }, channel_versions: { log: version } };
    try {
      cfg = await saver.put(cfg, cp, { source: "loop", step: k, parents: {} }, { log: version });
    } catch (e) {
      console.log(`failed ${e.code} ${e.message}`);
      process.exit(4);
    }
    console.log(`ack ${tag} ${cp.id}`);
  }
  await saver.close();
}
"""

# The same in Python.
PY_WRITER = r"""
import sys
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.agentstate import AgentStateSaver, AgentStateError
file, tag, mode, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
import time
t0 = time.monotonic()
try:
    saver = AgentStateSaver(file, busy_timeout_ms=30000)
except AgentStateError as e:
    print(f"refused {e.code} {type(e).__name__} {e} (after {time.monotonic() - t0:.1f} s)", flush=True)
    sys.exit(3)
print("open", flush=True)
if mode == "hold":
    sys.stdin.read()
    saver.close()
    sys.exit(0)
cfg = {"configurable": {"thread_id": tag, "checkpoint_ns": ""}}
version = None
k = 0
while n == 0 or k < n:
    version = saver.get_next_version(version)
    cp = empty_checkpoint()
    cp["channel_values"] = {"log": f"{tag} {k} " + "x" * (500 + (k % 7) * 300)}
    cp["channel_versions"] = {"log": version}
    try:
        cfg = saver.put(cfg, cp, {"source": "loop", "step": k, "parents": {}}, {"log": version})
    except AgentStateError as e:
        print(f"failed {e.code} {type(e).__name__} {e}", flush=True)
        if mode == "wait":
            sys.stdin.readline()
        sys.exit(4)
    print(f"ack {tag} {cp['id']}", flush=True)
    k += 1
    if mode == "wait" and k == n:
        print("waiting", flush=True)
        sys.stdin.readline()
        n += 1
saver.close()
"""


class Child:
    """A writer process whose output lines are read as they come."""

    def __init__(self, args, cwd):
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
        os.set_blocking(self.p.stdout.fileno(), False)
        self.buf = ""
        self.lines: list[str] = []

    def poll_lines(self) -> list[str]:
        try:
            chunk = self.p.stdout.read()
        except (TypeError, ValueError):
            chunk = None
        if chunk:
            self.buf += chunk
            *done, self.buf = self.buf.split("\n")
            self.lines += done
        return self.lines

    def wait_for(self, prefix: str, timeout: float = 60) -> str:
        t0 = time.time()
        while time.time() - t0 < timeout:
            for line in self.poll_lines():
                if line.startswith(prefix):
                    return line
            if self.p.poll() is not None:
                self.poll_lines()
                for line in self.lines:
                    if line.startswith(prefix):
                        return line
                raise AssertionError(f"exited {self.p.returncode} before {prefix!r}: {self.lines} {self.p.stderr.read()[-2000:]}")
            time.sleep(0.01)
        raise AssertionError(f"timeout waiting for {prefix!r}: {self.lines}")

    def send(self, text: str) -> None:
        self.p.stdin.write(text)
        self.p.stdin.flush()

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGKILL)
        self.p.wait(30)
        self.poll_lines()
        rest = self.p.stdout.read() if not self.p.stdout.closed else ""
        if rest:
            self.buf += rest
        if self.buf:
            # a last line without its newline was not acknowledged whole
            self.buf = ""

    def finish(self, timeout: float = 60) -> int:
        """Waits for the process to exit and reads the rest of its output."""
        rc = self.p.wait(timeout)
        self.poll_lines()
        return rc

    def acks(self) -> list[tuple[str, str]]:
        self.poll_lines()
        return [tuple(line.split()[1:3]) for line in self.lines if line.startswith("ack ")]


def node_writer(tmp, db, tag, mode="loop", n=0):
    script = os.path.join(tmp, "node-writer.mjs")
    if not os.path.exists(script):
        with open(script, "w") as f:
            f.write(NODE_WRITER)
    entry = "file://" + os.path.join(os.path.abspath(npm_dir()), "src", "index.js")
    return Child(["node", script, entry, db, tag, mode, str(n)], tmp)


def py_writer(tmp, db, tag, mode="loop", n=0):
    return Child([sys.executable, "-c", PY_WRITER, db, tag, mode, str(n)], tmp)


def put(saver, thread, k, version=None):
    cfg = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    version = saver.get_next_version(version)
    cp = empty_checkpoint()
    cp["channel_values"] = {"log": f"{thread} {k}"}
    cp["channel_versions"] = {"log": version}
    saver.put(cfg, cp, {"source": "loop", "step": k, "parents": {}}, {"log": version})
    return cp["id"], version


def present(db, acks) -> list:
    """The acknowledged (thread, checkpoint id) pairs missing from db."""
    have: dict[str, set] = {}
    with AgentStateSaver(db) as saver:
        for thread in {t for t, _ in acks}:
            cfg = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
            have[thread] = {t.config["configurable"]["checkpoint_id"] for t in saver.list(cfg)}
    return [(t, cid) for t, cid in acks if cid not in have[t]]


# ---- Python and Node on one file


def test_node_is_refused_while_python_has_the_file(tmp_path):
    db = str(tmp_path / "x.db")
    with AgentStateSaver(db) as saver:
        put(saver, "py", 0)
        node = node_writer(str(tmp_path), db, "node", n=3)
        line = node.wait_for("refused")
        node.p.wait(30)
        # BUSY, as the npm package refuses a native holder, naming this process.
        assert line.startswith("refused BUSY "), line
        assert f"is open in python" in line and f"pid {os.getpid()}" in line, line
        assert node.acks() == []
        put(saver, "py", 1)  # Python goes on
    # Closed: the records are gone and Node takes the file.
    assert not os.path.exists(db + ".natives")
    node = node_writer(str(tmp_path), db, "node", n=3)
    assert node.finish() == 0, node.lines + [node.p.stderr.read()]
    assert len(node.acks()) == 3
    assert present(db, node.acks()) == []


def test_python_is_refused_while_node_has_the_file(tmp_path):
    db = str(tmp_path / "x.db")
    AgentStateSaver(db).close()
    node = node_writer(str(tmp_path), db, "node", mode="hold")
    try:
        node.wait_for("open")
        t0 = time.time()
        with pytest.raises(HeldError) as ei:
            AgentStateSaver(db)
        waited = time.time() - t0
        e = ei.value
        assert isinstance(e, BusyError) and e.code == "BUSY"
        assert e.holder["runtime"] == "node" and e.holder["pid"] == node.p.pid, e.holder
        assert e.record == db + ".owner" and not e.stale
        assert f"node (node-writer.mjs) pid {node.p.pid}" in str(e), str(e)
        assert 0.9 <= waited < 10, waited  # it retried for a second, as natives do
        # It withdrew its record: Node's file is still Node's alone.
        assert not os.path.exists(db + ".natives") or os.listdir(db + ".natives") == []
    finally:
        node.p.stdin.close()
        node.p.wait(30)
    with AgentStateSaver(db) as saver:
        put(saver, "py", 0)


def test_a_killed_holder_leaves_a_stale_record_the_other_kind_removes(tmp_path):
    db = str(tmp_path / "x.db")
    AgentStateSaver(db).close()
    # A Python writer killed: its record stays, Node finds its pid gone.
    py = py_writer(str(tmp_path), db, "py", mode="hold")
    py.wait_for("open")
    py.kill()
    assert len(os.listdir(db + ".natives")) == 1
    node = node_writer(str(tmp_path), db, "node", n=2)
    assert node.finish() == 0, node.lines
    # A Node writer killed: its owner file stays, Python finds its pid gone.
    node = node_writer(str(tmp_path), db, "node", mode="hold")
    node.wait_for("open")
    node.kill()
    assert os.path.exists(db + ".owner")
    with AgentStateSaver(db) as saver:
        put(saver, "py", 0)
    assert not os.path.exists(db + ".owner")


def test_a_live_owner_on_another_host_is_named_with_advice(tmp_path):
    db = str(tmp_path / "x.db")
    AgentStateSaver(db).close()
    with open(db + ".owner", "w") as f:
        json.dump({"runtime": "node", "pid": 4242, "host": "elsewhere", "since": "2026-12-07T00:00:00Z"}, f)
    with pytest.raises(HeldError) as ei:
        AgentStateSaver(db)
    assert ei.value.stale and f"if that process is gone, remove {db}.owner" in str(ei.value)
    assert "node pid 4242 on host elsewhere" in str(ei.value)
    assert os.path.exists(db + ".owner")  # not ours to remove


def test_mixed_writers_with_kill9(tmp_path, agentstate_cli):
    """Two Python writers, a Node writer and native CLI reads on one file,
    writers killed with SIGKILL: each round, the kind that comes second is
    refused naming the holder; after the round every acknowledged put is in
    the file and it verifies."""
    npm_dir()
    rounds = int(os.environ.get("AGENTSTATE_SHARE_ROUNDS", "2"))
    rng = random.Random(int(os.environ.get("AGENTSTATE_SEED", "0")) or None)
    stats = {"rounds": 0, "acks": 0, "refused_py": 0, "refused_node": 0, "reads": 0, "reads_refused": 0, "kills": 0}
    for r in range(rounds):
        tmp = str(tmp_path / f"r{r}")
        os.mkdir(tmp)
        db = os.path.join(tmp, "x.db")
        AgentStateSaver(db).close()
        acks: list = []
        for phase in range(2):
            kinds = ["py", "py", "node"]
            rng.shuffle(kinds)
            writers = []
            for i, kind in enumerate(kinds):
                tag = f"{kind}{i}-p{phase}"
                writers.append((kind, (py_writer if kind == "py" else node_writer)(tmp, db, tag)))
                time.sleep(rng.uniform(0, 0.3))
            # Reads until every writer has opened or been refused and one
            # has acknowledged a put, then a while longer; then the kills.
            def decided():
                return all(w.p.poll() is not None or any(l == "open" or l.startswith("refused") for l in w.poll_lines()) for _, w in writers) and any(w.acks() for _, w in writers)

            t_end = time.time() + 120
            settled = False
            while time.time() < t_end:
                if not settled and decided():
                    settled = True
                    t_end = time.time() + rng.uniform(0.3, 1.5)
                c = agentstate_cli("threads", db)
                stats["reads"] += 1
                if c.returncode != 0:
                    # Refused while Node holds the file, by name; never damage.
                    assert "is open in node" in c.stderr, c.stderr
                    stats["reads_refused"] += 1
            for kind, w in writers:
                if w.p.poll() is None:
                    w.kill()
                    stats["kills"] += 1
                else:
                    w.poll_lines()
                    w.buf = ""
            assert settled, f"round {r}: no writer opened the file: {[(k, w.lines[:3]) for k, w in writers]}"
            opened = {kind for kind, w in writers if "open" in w.lines}
            assert len(opened) == 1, f"round {r}: both kinds opened the file: {[(k, w.lines[:3]) for k, w in writers]}"
            for kind, w in writers:
                refused = [line for line in w.lines if line.startswith("refused")]
                failed = [line for line in w.lines if line.startswith("failed")]
                assert not failed, f"round {r}: {kind}: {failed}"
                if refused:
                    # Node may also meet a CLI reader's record ("native").
                    other = ("node",) if kind == "py" else ("python", "native")
                    if kind == "py":
                        assert refused[0].startswith("refused BUSY HeldError "), (refused, [(k, w.lines[:2]) for k, w in writers])
                        stats["refused_py"] += 1
                    else:
                        assert refused[0].startswith("refused BUSY "), refused
                        stats["refused_node"] += 1
                    assert any(f"is open in {o}" in refused[0] for o in other), refused
                acks += w.acks()
        c = agentstate_cli("verify", db)
        assert c.returncode == 0, f"round {r}: {c.stdout}{c.stderr}"
        missing = present(db, acks)
        assert missing == [], f"round {r}: {len(missing)} of {len(acks)} acknowledged puts lost"
        stats["rounds"] += 1
        stats["acks"] += len(acks)
        shutil.rmtree(tmp, ignore_errors=True)
    print("mixed writers:", json.dumps(stats))


# ---- a file that goes away under an open saver


def _export(cli, db):
    r = cli("export", db)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_file_moved_over_an_open_saver(tmp_path, agentstate_cli):
    db, other = str(tmp_path / "x.db"), str(tmp_path / "other.db")
    with AgentStateSaver(other) as s:
        put(s, "other", 0)
    before = _export(agentstate_cli, other)
    saver = AgentStateSaver(db)
    _, v = put(saver, "t", 0)
    put(saver, "t", 1, v)
    os.rename(other, db)
    with pytest.raises(FileReplacedError) as ei:
        put(saver, "t", 2)
    assert ei.value.code == "FILE_REPLACED" and "moved over it" in str(ei.value)
    with pytest.raises(FileReplacedError):
        saver.put_writes({"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "x"}}, [("log", 1)], "task")
    with pytest.raises(FileReplacedError):
        saver.close()
    # The file moved over it took none of this handle's commits.
    assert _export(agentstate_cli, db) == before
    assert agentstate_cli("verify", db).returncode == 0


def test_file_moved_away_from_an_open_saver_keeps_its_commits(tmp_path, agentstate_cli):
    db, away = str(tmp_path / "x.db"), str(tmp_path / "away.db")
    saver = AgentStateSaver(db)
    acks = []
    v = None
    for k in range(4):
        cid, v = put(saver, "t", k, v)
        acks.append(("t", cid))
    os.rename(db, away)
    with pytest.raises(FileReplacedError):
        put(saver, "t", 9)
    with pytest.raises(FileReplacedError):
        saver.close()
    for suffix in ("-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.rename(db + suffix, away + suffix)
    assert present(away, acks) == []
    assert agentstate_cli("verify", away).returncode == 0


def test_file_deleted_under_an_open_saver(tmp_path):
    db = str(tmp_path / "x.db")
    saver = AgentStateSaver(db)
    put(saver, "t", 0)
    os.remove(db)
    with pytest.raises(FileReplacedError) as ei:
        put(saver, "t", 1)
    assert "was deleted" in str(ei.value)
    with pytest.raises(FileReplacedError):
        saver.close()
    # A new file at the path starts empty: the old handle's log was not
    # taken for its own.
    with AgentStateSaver(db) as s:
        assert list(s.list(None)) == []


@pytest.mark.parametrize("how", ["deleted", "moved away"])
def test_close_reports_the_file_gone_from_under_it(tmp_path, how):
    # Nothing written after the file went: close is the first call to
    # find it gone, and says so (the engine's Close does natively), after
    # closing the handle and copying its log's commits into its file.
    db, away = str(tmp_path / "x.db"), str(tmp_path / "away.db")
    saver = AgentStateSaver(db)
    acks = [("t", put(saver, "t", 0)[0])]
    if how == "deleted":
        os.remove(db)
    else:
        os.rename(db, away)
    with pytest.raises(FileReplacedError) as ei:
        saver.close()
    assert ei.value.code == "FILE_REPLACED" and db in str(ei.value), str(ei.value)
    assert "copied" in str(ei.value)
    assert saver.db.closed
    saver.close()  # closing twice is no error
    if how == "moved away":
        for suffix in ("-wal", "-shm"):
            if os.path.exists(db + suffix):
                os.rename(db + suffix, away + suffix)
        assert present(away, acks) == []
    # A file at the path again opens and closes without a word.
    with AgentStateSaver(db) as s:
        assert list(s.list(None)) == []


def test_wal_deleted_under_an_open_saver_then_kill9(tmp_path, agentstate_cli):
    db = str(tmp_path / "x.db")
    AgentStateSaver(db).close()
    w = py_writer(str(tmp_path), db, "t", mode="wait", n=4)
    w.wait_for("waiting")
    acks = w.acks()
    assert len(acks) == 4
    os.remove(db + "-wal")
    w.send("go\n")
    line = w.wait_for("failed")
    assert line.startswith("failed FILE_REPLACED FileReplacedError ") and "write-ahead log" in line, line
    # Another handle opens and writes meanwhile, then the first is killed.
    with AgentStateSaver(db) as s:
        put(s, "other", 0)
    w.kill()
    assert present(db, acks) == []
    assert agentstate_cli("verify", db).returncode == 0


def test_the_check_costs_microseconds(tmp_path):
    from langgraph.checkpoint.agentstate._sqlite_host import SQLiteHost  # noqa: F401

    import apsw

    from langgraph.checkpoint.agentstate._sqlite_host import _Conn

    db = str(tmp_path / "x.db")
    AgentStateSaver(db).close()
    c = _Conn(apsw.Connection(db))
    c.db.execute("PRAGMA journal_mode=WAL").fetchall()
    c.db.execute("BEGIN IMMEDIATE; COMMIT")
    c.watch(db)
    assert c.ident is not None and c.fds
    c.db.execute("BEGIN IMMEDIATE")
    n = 20000
    t0 = time.perf_counter()
    for _ in range(n):
        assert c.replaced() == ""
    per = (time.perf_counter() - t0) / n * 1e6
    c.db.execute("ROLLBACK")
    c.db.close()
    print(f"replaced() check: {per:.2f} µs")
    assert per < 50, per  # a few µs; generous for a loaded CI machine


def test_a_lock_held_past_the_busy_timeout_is_a_busy_error(tmp_path):
    # The engine's ErrBusy has its code (BUSY, as in the npm package) and
    # class now, not INTERNAL.
    import apsw

    db = str(tmp_path / "x.db")
    AgentStateSaver(db).close()
    other = apsw.Connection(db)
    other.execute("BEGIN IMMEDIATE")
    try:
        with AgentStateSaver(db, busy_timeout_ms=200) as saver:
            with pytest.raises(BusyError) as ei:
                put(saver, "t", 0)
            assert ei.value.code == "BUSY" and not isinstance(ei.value, HeldError)
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_an_open_waits_for_a_lock_held_while_it_reads_the_schema(tmp_path):
    # Another process holds the file (here an exclusive lock; in the mixed
    # stress a native reader's checkpoint on its last close) while a saver
    # opens: preparing its first statement reads the schema and was BUSY at
    # once, the busy timeout not honoured, so a writer failed to open in 0 s.
    db = str(tmp_path / "x.db")
    AgentStateSaver(db).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import apsw, sys, time\n"
         "o = apsw.Connection(sys.argv[1]); o.execute('PRAGMA locking_mode=EXCLUSIVE')\n"
         "o.execute('BEGIN EXCLUSIVE; CREATE TABLE IF NOT EXISTS other(x); COMMIT')\n"
         "print('held', flush=True); time.sleep(0.7)", db],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        t0 = time.monotonic()
        with AgentStateSaver(db, busy_timeout_ms=10000) as saver:
            put(saver, "t", 0)
        assert time.monotonic() - t0 >= 0.3  # it waited for the holder
    finally:
        holder.wait(30)
