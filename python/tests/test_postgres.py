"""PostgreSQL URLs from Python: the engine's PostgreSQL backend, in the
WebAssembly module, over psycopg 3 (_pg_host; docs/postgresql.md).

The tests that need a server run on AGENTSTATE_TEST_PG (.ci/with-postgres
starts a throwaway one on 127.0.0.1); without it they are skipped on a
developer's machine and fail in CI (AGENTSTATE_CI or CI set), which must
give them one. Each test works in a schema of its own."""

from __future__ import annotations

import asyncio
import os
import select
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.agentstate import (
    AgentStateError,
    AgentStateSaver,
    ConnectionLostError,
    Database,
    InvalidArgumentError,
    InvalidOptionError,
    MissingDependencyError,
    OutcomeUnknownError,
)
from langgraph.checkpoint.agentstate import _pg_host
from langgraph.checkpoint.agentstate.errors import TimeoutError_
from langgraph.store.agentstate import AgentStateStore

PG = os.environ.get("AGENTSTATE_TEST_PG", "")


@pytest.fixture
def pg_url():
    if not PG:
        if os.environ.get("AGENTSTATE_CI") or os.environ.get("CI"):
            pytest.fail("AGENTSTATE_TEST_PG is not set: CI runs this file under .ci/with-postgres")
        pytest.skip("no PostgreSQL server (run under .ci/with-postgres)")
    return PG


def _admin(url: str, sql: str) -> list:
    import psycopg

    with psycopg.connect(url, autocommit=True) as c:
        cur = c.execute(sql)
        return cur.fetchall() if cur.description else []


@pytest.fixture
def schema(pg_url):
    """A fresh schema, dropped after the test."""
    name = "t_" + uuid.uuid4().hex[:12]
    _admin(pg_url, f"CREATE SCHEMA {name}")
    yield name
    _admin(pg_url, f"DROP SCHEMA {name} CASCADE")


def _cfg(thread: str, cp_id: str | None = None) -> dict:
    c = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    if cp_id:
        c["configurable"]["checkpoint_id"] = cp_id
    return c


def _put(saver, thread: str, step: int, parent: dict | None = None) -> dict:
    cp = empty_checkpoint()
    cp["channel_values"] = {"messages": [f"m{step}"]}
    cp["channel_versions"] = {"messages": step + 1}
    return saver.put(parent or _cfg(thread), cp, {"source": "loop", "step": step}, {"messages": step + 1})


# ---- without a server


def test_a_url_never_shows_its_password():
    for url, want in [
        ("postgresql://agent:secret@db.example/agents", "postgresql://agent:xxxxx@db.example/agents"),
        ("postgres://h/db?password=secret&sslmode=disable", "postgres://h/db?password=xxxxx&sslmode=disable"),
        ("postgres://agent@h/db", "postgres://agent@h/db"),
        ("agent.db", "agent.db"),
    ]:
        assert _pg_host.redact(url) == want


def test_a_url_is_no_file_path_and_its_password_stays_hidden():
    # Nothing listens on port 1: the open fails as a lost connection,
    # with the URL shown without its password (it used to be taken for a
    # file path in a missing directory, printed twice).
    with pytest.raises(ConnectionLostError) as e:
        AgentStateSaver("postgresql://agent:secret@127.0.0.1:1/agents", timeout_ms=5000)
    assert "secret" not in str(e.value) and "postgresql://agent:xxxxx@127.0.0.1:1/agents" in str(e.value)


def test_without_psycopg_a_url_says_what_to_install(monkeypatch):
    def missing():
        raise ImportError(f"agentstate: PostgreSQL URLs need psycopg 3: {_pg_host.INSTALL}")

    monkeypatch.setattr(_pg_host, "pq", missing)
    with pytest.raises(MissingDependencyError) as e:
        AgentStateSaver.from_conn_string("postgresql://agent:secret@db.example/agents").__enter__()
    msg = str(e.value)
    assert "langgraph-checkpoint-agentstate[postgres]" in msg and "secret" not in msg
    assert isinstance(e.value, ImportError)


def test_server_options_are_refused_for_a_file_or_out_of_range(tmp_path):
    with pytest.raises(InvalidArgumentError):
        Database(str(tmp_path / "a.db"), schema="s")
    assert os.listdir(tmp_path) == []
    for bad in ({"pool_size": 0}, {"pool_size": 65}, {"pool_size": "4"}, {"timeout_ms": -1}, {"timeout_ms": 1.5}):
        with pytest.raises(InvalidOptionError):
            Database("postgresql://agent:secret@127.0.0.1:1/agents", **bad)


# ---- on a server


def test_saver_store_and_records_share_one_database(pg_url, schema):
    db = Database(pg_url, schema=schema, pool_size=2)
    try:
        saver = AgentStateSaver(db=db)
        c1 = _put(saver, "t1", 0)
        c2 = _put(saver, "t1", 1, c1)
        saver.put_writes(c2, [("messages", "w")], "task-1")
        t = saver.get_tuple(_cfg("t1"))
        assert t.config == c2 and t.parent_config == c1 and t.checkpoint["channel_values"] == {"messages": ["m1"]}
        assert t.pending_writes == [("task-1", "messages", "w")]
        assert [x.config for x in saver.list(_cfg("t1"))] == [c2, c1]

        store = AgentStateStore(db=db)
        store.put(("users", "u1"), "prefs", {"lang": "fr"})
        assert store.get(("users", "u1"), "prefs").value == {"lang": "fr"}

        run = db.runs.create({"thread_id": "t1", "run_id": "r1"})
        assert run["new"] is True and db.runs.get("r1")["status"] == "pending"
        assert db.info()["info"]["schema_version"] >= 1
    finally:
        db.close()

    # The tables are in the schema asked for, and nowhere else.
    import psycopg

    with psycopg.connect(pg_url) as c:
        tables = {r[0] for r in c.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))}
    assert {"checkpoints", "writes", "store_items", "runs"} <= tables

    # A second handle, from_conn_string, reads what the first wrote.
    with AgentStateSaver.from_conn_string(pg_url, schema=schema) as s2:
        assert s2.get_tuple(_cfg("t1")).config == c2


def test_async_calls(pg_url, schema):
    async def main():
        async with AgentStateSaver.from_conn_string(pg_url, schema=schema) as saver:
            cp = empty_checkpoint()
            c = await saver.aput(_cfg("a1"), cp, {"source": "input", "step": -1}, {})
            await saver.aput_writes(c, [("ch", 1)], "t")
            got = await saver.aget_tuple(_cfg("a1"))
            assert got.config == c and got.pending_writes == [("t", "ch", 1)]
            assert [x.config async for x in saver.alist(None)] == [c]

    asyncio.run(main())


def test_conformance_on_postgres(pg_url):
    """LangGraph's conformance suite through AgentStateSaver on a
    postgresql:// URL: every capability, every test (81)."""
    from langgraph.checkpoint.conformance import checkpointer_test, validate
    from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

    schemas: list[str] = []

    @checkpointer_test(name="AgentStateSaver (PostgreSQL)")
    async def factory():
        name = "c_" + uuid.uuid4().hex[:12]
        _admin(pg_url, f"CREATE SCHEMA {name}")
        schemas.append(name)
        s = AgentStateSaver(pg_url, schema=name)
        yield s
        s.close()

    try:
        report = asyncio.run(validate(factory))
    finally:
        for name in schemas:
            _admin(pg_url, f"DROP SCHEMA {name} CASCADE")
    total = 0
    for cap in ALL_CAPABILITIES:
        r = report.results[cap]
        assert r.detected and r.passed is True, f"{cap.value}: {r.tests_failed} failed, {r.tests_skipped} skipped"
        assert r.tests_failed == 0 and r.tests_skipped == 0, cap.value
        total += r.tests_passed
    print(f"conformance on PostgreSQL: {total} passed, 0 failed, 0 skipped")
    assert total == 81


_WRITER = textwrap.dedent(
    """
    import sys, time
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.agentstate import AgentStateSaver
    url, schema, me, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    s = AgentStateSaver(url, schema=schema)
    end = time.monotonic() + seconds
    step = 0
    while time.monotonic() < end:
        for thread in (me, "shared"):
            cp = empty_checkpoint()
            cp["channel_values"] = {"v": f"{me}-{step}"}
            cp["channel_versions"] = {"v": step + 1}
            c = s.put({"configurable": {"thread_id": thread, "checkpoint_ns": ""}}, cp,
                      {"source": "loop", "step": step, "writer": me}, {"v": step + 1})
            s.put_writes(c, [("v", f"w-{me}-{step}")], f"task-{me}")
            print(thread, c["configurable"]["checkpoint_id"], flush=True)
        step += 1
    s.close()
    """
)


def test_several_processes_lose_nothing_acknowledged(pg_url, schema):
    """Three Python processes write at once, each to a thread of its own
    and all to one shared thread: every checkpoint a put acknowledged is
    stored, once, with its writes."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, pg_url, schema, f"p{i}", "4"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for i in range(3)
    ]
    acked: dict[str, list[str]] = {}
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
        for line in out.splitlines():
            thread, cp_id = line.split()
            acked.setdefault(thread, []).append(cp_id)
    with AgentStateSaver.from_conn_string(pg_url, schema=schema) as s:
        total = 0
        for thread, ids in acked.items():
            stored = [t.checkpoint["id"] for t in s.list(_cfg(thread))]
            assert len(stored) == len(set(stored)), f"{thread}: duplicates"
            assert set(ids) <= set(stored), f"{thread}: {len(set(ids) - set(stored))} acknowledged checkpoints lost"
            for t in s.list(_cfg(thread)):
                assert len(t.pending_writes) == 1, t.config
            total += len(ids)
    assert len(acked["shared"]) == total // 2 and total >= 6
    # The native engine finds the schema the three processes wrote sound
    # (CI gives the tests the CLI; the test above needs it).
    native = os.environ.get("AGENTSTATE_CLI") or shutil.which("agentstate")
    if native:
        sep = "&" if "?" in pg_url else "?"
        r = subprocess.run([native, "verify", f"{pg_url}{sep}search_path={schema}"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
    print(f"several processes: {total} acknowledged checkpoints (3 processes, 4 s), all stored once with their writes")


def test_a_terminated_session_is_dialled_again(pg_url, schema):
    """The server ends the handle's sessions (pg_terminate_backend, as a
    restart or failover does) between calls: the next call's transaction
    had sent nothing, so it runs again on a new session and succeeds."""
    app = "t_" + uuid.uuid4().hex[:10]
    sep = "&" if "?" in pg_url else "?"
    saver = AgentStateSaver(f"{pg_url}{sep}application_name={app}", schema=schema)
    try:
        c = _put(saver, "t", 0)
        for _ in range(2):
            ended = _admin(pg_url, f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '{app}'")
            assert ended and all(ok for (ok,) in ended)
            time.sleep(0.2)  # the server ends them
            c = _put(saver, "t", 1, c)
            assert saver.get_tuple(_cfg("t")).config == c
    finally:
        saver.close()


def test_the_native_cli_verifies_what_python_wrote(pg_url, schema, agentstate_cli):
    """The engine in the module writes the same tables, derived columns and
    catalogue as the native one: `agentstate verify` (native Go, pgx) finds
    nothing wrong in a schema the Python package wrote, and reads its
    thread."""
    db = Database(pg_url, schema=schema)
    try:
        saver = AgentStateSaver(db=db)
        c = _put(saver, "t1", 0)
        c = _put(saver, "t1", 1, c)
        saver.put_writes(c, [("messages", "w")], "task")
        AgentStateStore(db=db).put(("ns",), "k", {"v": [1, "two", None]})
        db.runs.create({"thread_id": "t1", "run_id": "r1"})
    finally:
        db.close()
    sep = "&" if "?" in pg_url else "?"
    url = f"{pg_url}{sep}search_path={schema}"
    r = agentstate_cli("verify", url)
    assert r.returncode == 0, r.stdout + r.stderr
    r = agentstate_cli("history", url, "t1")
    assert r.returncode == 0 and c["configurable"]["checkpoint_id"] in r.stdout, r.stdout + r.stderr


class _Proxy:
    """A TCP proxy to the server that can stop answering (as a hung or
    partitioned server does) or refuse (as a stopped one does)."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.mode = "forward"
        self.pairs: list[tuple[socket.socket, socket.socket]] = []
        self.lock = threading.Lock()
        self.ls = socket.create_server(("127.0.0.1", 0))
        self.port = self.ls.getsockname()[1]
        self.stop = False
        threading.Thread(target=self._accept, daemon=True).start()
        threading.Thread(target=self._pump, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            if self.mode == "refuse":
                c.close()
                continue
            s = socket.create_connection(self.target)
            with self.lock:
                self.pairs.append((c, s))

    def _pump(self) -> None:
        while not self.stop:
            with self.lock:
                pairs = list(self.pairs)
            if self.mode != "forward" or not pairs:
                time.sleep(0.01)
                continue
            socks = [x for p in pairs for x in p]
            r, _, _ = select.select(socks, [], [], 0.05)
            for a in r:
                for c, s in pairs:
                    if a is c or a is s:
                        b = s if a is c else c
                        try:
                            data = a.recv(65536)
                            if data:
                                b.sendall(data)
                                continue
                        except OSError:
                            pass
                        self._drop(c, s)

    def _drop(self, c, s) -> None:
        with self.lock:
            if (c, s) in self.pairs:
                self.pairs.remove((c, s))
        c.close()
        s.close()

    def cut(self) -> None:
        """Every connection closed and new ones refused."""
        self.mode = "refuse"
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for c, s in pairs:
            c.close()
            s.close()

    def close(self) -> None:
        self.stop = True
        self.cut()
        self.ls.close()


def test_a_server_that_stops_answering_never_hangs_a_call(pg_url, schema):
    from urllib.parse import urlsplit

    u = urlsplit(pg_url)
    proxy = _Proxy(u.hostname, u.port)
    try:
        url = u._replace(netloc=f"{u.username}@127.0.0.1:{proxy.port}").geturl()
        saver = AgentStateSaver(url, schema=schema, timeout_ms=1500)
        c = _put(saver, "t", 0)

        # Hung: bytes go nowhere. Each call ends at its deadline, typed.
        proxy.mode = "hang"
        for call in (lambda: _put(saver, "t", 1, c), lambda: saver.get_tuple(_cfg("t"))):
            t0 = time.monotonic()
            with pytest.raises((TimeoutError_, OutcomeUnknownError, ConnectionLostError)) as e:
                call()
            took = time.monotonic() - t0
            assert took < 1.5 + 0.5, f"{took:.2f} s for a call with a 1.5 s deadline"
            assert isinstance(e.value, AgentStateError)

        # Stopped: connections closed, new ones refused. A call fails at once.
        proxy.cut()
        t0 = time.monotonic()
        with pytest.raises((ConnectionLostError, TimeoutError_)):
            saver.get_tuple(_cfg("t"))
        assert time.monotonic() - t0 < 1.5 + 0.5

        # Back: the next call dials a new session; what was acknowledged is there.
        proxy.mode = "forward"
        assert saver.get_tuple(_cfg("t", c["configurable"]["checkpoint_id"])).config == c
        _put(saver, "t", 2, c)
        t0 = time.monotonic()
        saver.close()
        assert time.monotonic() - t0 < 5
    finally:
        proxy.close()
