"""Several processes, several front ends, one PostgreSQL database (issue
40): three Python processes, one Node process and one native Go process
write at once for AGENTSTATE_PG_MIXED_SECONDS (12 s in CI; the issue's
goal is 60), each on a thread of its own and all on one shared thread.
Afterwards every checkpoint a writer saw acknowledged is read back once,
with its one write, and the native CLI's verify finds the schema sound.

Run under .ci/with-postgres (AGENTSTATE_TEST_PG), with the native CLI
(AGENTSTATE_CLI), the Go writer (AGENTSTATE_PG_GO_WRITER, a build of
internal/testpg/writer; built here when `go` is on PATH) and the built npm
package (AGENTSTATE_NPM_DIR, default wasm/npm of this checkout). In CI
(AGENTSTATE_CI) a missing piece fails the test; elsewhere it is skipped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from langgraph.checkpoint.agentstate import AgentStateSaver

PG = os.environ.get("AGENTSTATE_TEST_PG", "")
ROOT = Path(__file__).resolve().parents[2]
SECONDS = float(os.environ.get("AGENTSTATE_PG_MIXED_SECONDS", "12"))


def _missing(what: str):
    if os.environ.get("AGENTSTATE_CI") or os.environ.get("CI"):
        pytest.fail(f"{what}: CI runs this file with every front end")
    pytest.skip(what)


def _admin(url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as c:
        c.execute(sql)


def _go_writer(tmp: Path) -> str:
    w = os.environ.get("AGENTSTATE_PG_GO_WRITER")
    if w:
        return w
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    if go is None:
        _missing("no Go writer (set AGENTSTATE_PG_GO_WRITER to a build of internal/testpg/writer)")
    out = tmp / "writer"
    r = subprocess.run([go, "build", "-o", str(out), "./internal/testpg/writer"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return str(out)


def _node_writer() -> list[str]:
    npm = Path(os.environ.get("AGENTSTATE_NPM_DIR") or ROOT / "wasm" / "npm")
    node = shutil.which("node")
    if node is None or not (npm / "dist" / "agentstate-pg.wasm").exists() or not (npm / "node_modules" / "pg").exists():
        _missing(f"no built npm package with pg at {npm} (npm ci && npm run build), or no node")
    return [node, str(npm / "test-pg" / "writer.js")]


# One Python writer: two OS threads on one saver (one engine instance), one
# on the process's own thread, one on the shared thread, each putting a
# child of its previous checkpoint and one write; each acknowledged
# checkpoint printed as "thread id", an unknown outcome as "? thread id".
_PY_WRITER = textwrap.dedent(
    """
    import sys, threading, time
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.agentstate import AgentStateSaver, BusyError, ConflictError, OutcomeUnknownError
    url, schema, me, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    s = AgentStateSaver(url, schema=schema)
    end = time.monotonic() + seconds
    out = threading.Lock()
    failed = []
    refused = []

    def loop(thread):
        parent = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        step = 0
        try:
            while time.monotonic() < end:
                cp = empty_checkpoint()
                cp["channel_values"] = {"v": f"{me}-{step}"}
                cp["channel_versions"] = {"v": step + 1}
                try:
                    c = s.put(parent, cp, {"source": "loop", "step": step, "writer": me}, {"v": step + 1})
                    s.put_writes(c, [("v", f"w-{me}-{step}")], f"task-{me}")
                except OutcomeUnknownError:
                    with out:
                        print("?", thread, cp["id"], flush=True)
                except (ConflictError, BusyError):
                    refused.append(1)
                else:
                    parent = c
                    with out:
                        print(thread, cp["id"], flush=True)
                step += 1
        except BaseException as e:
            failed.append(repr(e))

    ts = [threading.Thread(target=loop, args=(t,)) for t in (f"own-{me}", "shared")]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    s.close()
    print(f"writer {me}: {len(refused)} refused", file=sys.stderr)
    if failed:
        sys.exit("; ".join(failed))
    """
)


def test_three_python_one_node_one_go_writer_lose_nothing_acknowledged(tmp_path):
    if not PG:
        _missing("no PostgreSQL server (run under .ci/with-postgres)")
    go = _go_writer(tmp_path)
    node = _node_writer()
    schema = "mixed_" + uuid.uuid4().hex[:10]
    _admin(PG, f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in PG else "?"
    url = f"{PG}{sep}search_path={schema}"  # as the native engine and the Node package take a schema
    try:
        AgentStateSaver(PG, schema=schema).close()  # the tables exist before the writers start
        secs = str(SECONDS)
        cmds = {f"py{i}": [sys.executable, "-c", _PY_WRITER, PG, schema, f"py{i}", secs] for i in range(3)}
        cmds["node"] = [*node, PG, schema, "node", secs]
        cmds["go"] = [go, url, "go", secs]
        t0 = time.monotonic()
        procs = {k: subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k, c in cmds.items()}
        acked: dict[str, set[str]] = {}
        unsure: set[str] = set()
        per_writer: dict[str, list[int]] = {}
        notes: list[str] = []
        for name, p in procs.items():
            out, err = p.communicate(timeout=SECONDS + 300)
            assert p.returncode == 0, f"{name}: {err[-3000:]}"
            n = [0, 0]  # own thread, shared thread
            for line in out.splitlines():
                if name == "node":  # {"thread", "id", "i"}
                    j = json.loads(line)
                    fields = [j["thread"], j["id"]]
                else:
                    fields = line.split()
                if fields[0] == "?":
                    unsure.add(fields[2])
                    continue
                thread, cp_id = fields
                assert cp_id not in acked.get(thread, set()), f"{name}: {cp_id} acknowledged twice"
                acked.setdefault(thread, set()).add(cp_id)
                n[thread == "shared"] += 1
            per_writer[name] = n
            notes.append(" ".join(l for l in err.splitlines() if "refused" in l))
        elapsed = time.monotonic() - t0
        assert set(acked) == {"shared", "own-node", "own-go", "own-py0", "own-py1", "own-py2"}, sorted(acked)
        for name, n in per_writer.items():
            assert min(n) >= 2, f"{name} had only {n} checkpoints (own thread, shared) acknowledged: {per_writer}"

        # Read back through Python: every acknowledged checkpoint once, with
        # its one write, whoever wrote it; nothing else but an unknown outcome.
        total = 0
        with AgentStateSaver.from_conn_string(PG, schema=schema) as s:
            for thread, ids in acked.items():
                tuples = list(s.list({"configurable": {"thread_id": thread, "checkpoint_ns": ""}}))
                stored = [t.checkpoint["id"] for t in tuples]
                assert len(stored) == len(set(stored)), f"{thread}: a checkpoint listed twice"
                lost = ids - set(stored)
                assert not lost, f"{thread}: {len(lost)} of {len(ids)} acknowledged checkpoints lost"
                extra = set(stored) - ids - unsure
                assert not extra, f"{thread}: {len(extra)} checkpoints stored that no writer acknowledged"
                for t in tuples:
                    if t.checkpoint["id"] in ids:
                        assert len(t.pending_writes) == 1, (t.config, t.pending_writes)
                        assert t.checkpoint["channel_values"], t.config  # its value decodes
                total += len(ids)
        native = os.environ.get("AGENTSTATE_CLI") or shutil.which("agentstate")
        if native is None:
            _missing("no native CLI (AGENTSTATE_CLI) for verify")
        r = subprocess.run([native, "verify", url], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        print(
            f"mixed writers, {SECONDS:.0f} s: {total} acknowledged checkpoints ({len(acked['shared'])} on the shared thread), "
            f"per writer (own, shared) {per_writer} ({'; '.join(notes)}), {len(unsure)} of unknown outcome; all read back once with their writes; verify: {r.stdout.strip()[:200]} "
            f"({elapsed:.1f} s)"
        )
    finally:
        _admin(PG, f"DROP SCHEMA {schema} CASCADE")
