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
    for bad in ("FULL", "off", 1, True):
        with pytest.raises(InvalidOptionError):
            Database(str(tmp_path / "a.db"), synchronous=bad)
    assert os.listdir(tmp_path) == []


# ---- on a server


@pytest.mark.parametrize("synchronous, expected", [(None, "off"), ("normal", "off"), ("full", "on")])
def test_synchronous_sets_every_session_s_synchronous_commit(pg_url, schema, monkeypatch, synchronous, expected):
    # What the engine asks each session for, as the host dials it: "full"
    # is the durability of a commit that survives the server's crash.
    asked = []
    real = _pg_host.conninfo

    def spy(url, params):
        asked.append(dict(params).get("synchronous_commit"))
        return real(url, params)

    monkeypatch.setattr(_pg_host, "conninfo", spy)
    opts = {} if synchronous is None else {"synchronous": synchronous}
    with AgentStateSaver(pg_url, schema=schema, **opts) as saver:
        _put(saver, "t-sync", 0)
        assert saver.get_tuple(_cfg("t-sync")) is not None
    assert asked and set(asked) == {expected}, asked


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


# ---- faults in the middle of a call (issue 40: every call within its
# deadline + 100 ms when a session is terminated or the server stops; a
# COMMIT whose answer never comes is an unknown outcome)

# What a call may take past its deadline: the goal is 100 ms. A call that
# fails at once (a refused connection) is held to the same bound.
_SLACK = 0.1


def _with(url: str, **params: str) -> str:
    sep = "&" if "?" in url else "?"
    return url + sep + "&".join(f"{k}={v}" for k, v in params.items())


def _wait_for(pred, what: str, seconds: float = 10.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        got = pred()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def _in_thread(fn):
    """fn() run on a thread; returns a function that waits for it and gives
    (the exception or None, seconds it took)."""
    out: dict = {}

    def run():
        t0 = time.monotonic()
        try:
            fn()
            out["e"] = None
        except BaseException as e:  # noqa: BLE001 - handed to the test
            out["e"] = e
        out["took"] = time.monotonic() - t0

    th = threading.Thread(target=run, daemon=True)
    th.start()

    def result(timeout: float = 60):
        th.join(timeout)
        assert not th.is_alive(), "the call never returned"
        return out["e"], out["took"]

    return result


def _sessions(url: str, app: str, where: str = "true") -> list:
    return _admin(url, f"SELECT pid, state, wait_event_type, query FROM pg_stat_activity WHERE application_name = '{app}' AND {where}")


def test_a_session_terminated_mid_call_fails_typed_within_its_deadline(pg_url, schema):
    """The server ends the handle's session while a call waits on it (the
    call's statement waits for a table another session has locked; then
    pg_terminate_backend, as a failover or an administrator does): the
    call returns within its deadline + 100 ms with a typed error, never
    hangs, and the handle's next call works. A read dials again and waits
    again (its first statement had done nothing), so it ends at its
    deadline; both end typed."""
    import psycopg

    app = "mid_" + uuid.uuid4().hex[:10]
    timeout = 2.0
    saver = AgentStateSaver(_with(pg_url, application_name=app), schema=schema, timeout_ms=int(timeout * 1000))
    try:
        c = _put(saver, "t", 0)
        for name, call in [("put", lambda: _put(saver, "t", 1, c)), ("get_tuple", lambda: saver.get_tuple(_cfg("t")))]:
            with psycopg.connect(pg_url) as locker:
                locker.execute(f"LOCK TABLE {schema}.checkpoints IN ACCESS EXCLUSIVE MODE")
                done = _in_thread(call)
                waiting = _wait_for(lambda: _sessions(pg_url, app, "wait_event_type = 'Lock'"), f"{name} to wait on the lock")
                for pid, *_ in waiting:
                    _admin(pg_url, f"SELECT pg_terminate_backend({pid})")
                e, took = done()
                locker.rollback()
            print(f"{name}: session terminated mid-call: {type(e).__name__} after {took * 1000:.0f} ms (deadline {timeout * 1000:.0f} ms)")
            assert isinstance(e, (ConnectionLostError, TimeoutError_)), repr(e)
            assert took < timeout + _SLACK, f"{name}: {took:.3f} s for a call with a {timeout} s deadline"
        # The handle goes on: the acknowledged checkpoint is there.
        assert saver.get_tuple(_cfg("t", c["configurable"]["checkpoint_id"])).config == c
        c2 = _put(saver, "t", 2, c)
        assert saver.get_tuple(_cfg("t")).config == c2
    finally:
        saver.close()


def test_a_commit_whose_answer_never_comes_is_an_unknown_outcome(pg_url, schema):
    """The session is lost while the server runs COMMIT (here a deferred
    constraint trigger makes COMMIT take 30 s; then the call's deadline
    passes, or the session is terminated): the put raises
    OutcomeUnknownError, never a plain timeout or lost connection, which
    a caller could take as "not written" and retry, writing twice. Both
    within the deadline + 100 ms. The handle goes on afterwards."""
    app = "uc_" + uuid.uuid4().hex[:10]
    timeout = 1.5
    saver = AgentStateSaver(_with(pg_url, application_name=app), schema=schema, timeout_ms=int(timeout * 1000))
    try:
        c = _put(saver, "t", 0)
        _admin(
            pg_url,
            f"CREATE FUNCTION {schema}.slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(30); RETURN NULL; END $$;"
            f"CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON {schema}.checkpoints DEFERRABLE INITIALLY DEFERRED "
            f"FOR EACH ROW EXECUTE FUNCTION {schema}.slow_commit()",
        )
        # The deadline passes during COMMIT.
        t0 = time.monotonic()
        with pytest.raises(OutcomeUnknownError) as e:
            _put(saver, "t", 1, c)
        took = time.monotonic() - t0
        print(f"deadline during COMMIT: OutcomeUnknownError after {took * 1000:.0f} ms (deadline {timeout * 1000:.0f} ms): {e.value}")
        assert took < timeout + _SLACK, f"{took:.3f} s"

        # The session is terminated during COMMIT, long before the deadline
        # of a handle that waits longer.
        patient = AgentStateSaver(_with(pg_url, application_name=app + "_long"), schema=schema, timeout_ms=20_000)
        try:
            done = _in_thread(lambda: _put(patient, "t", 2, c))
            waiting = _wait_for(lambda: _sessions(pg_url, app + "_long", "query ILIKE 'COMMIT%' AND state = 'active'"), "COMMIT to run")
            for pid, *_ in waiting:
                _admin(pg_url, f"SELECT pg_terminate_backend({pid})")
            err, took = done()
        finally:
            patient.close()
        print(f"session terminated during COMMIT: {type(err).__name__} after {took * 1000:.0f} ms")
        assert isinstance(err, OutcomeUnknownError), repr(err)
        assert took < 10, f"{took:.3f} s"

        _admin(pg_url, f"DROP TRIGGER slow_commit ON {schema}.checkpoints")
        # Here the server rolled both back (COMMIT never finished): only
        # the acknowledged checkpoint is stored, and the handle writes on.
        assert [t.config for t in saver.list(_cfg("t"))] == [c]
        c3 = _put(saver, "t", 3, c)
        assert saver.get_tuple(_cfg("t")).config == c3
    finally:
        saver.close()


class _OwnServer:
    """A throwaway PostgreSQL server of the test's own, started as
    .ci/with-postgres starts one (initdb into a temporary directory, as
    user postgres when run as root; 127.0.0.1 only, a free port), since the
    test stops it."""

    def __init__(self) -> None:
        import glob
        import tempfile

        cands = [os.environ.get("PG_BINDIR", "")]
        try:
            cands.append(subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True).stdout.strip())
        except OSError:
            pass
        cands += sorted(glob.glob("/usr/lib/postgresql/*/bin"))
        self.bindir = next((d for d in cands if d and os.access(os.path.join(d, "pg_ctl"), os.X_OK)), None)
        if self.bindir is None:
            pytest.fail("no initdb/pg_ctl found (install postgresql, or set PG_BINDIR)")
        root = os.getuid() == 0
        self.dir = tempfile.mkdtemp(prefix="agentstate-pg-own.", dir="/tmp" if root else None)
        self.run_as = ["runuser", "-u", "postgres", "--"] if root else []
        if root:
            shutil.chown(self.dir, "postgres")
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.data = os.path.join(self.dir, "data")
        self._run("initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
        self.start()
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/postgres?sslmode=disable"

    def _run(self, prog: str, *args: str) -> None:
        r = subprocess.run([*self.run_as, os.path.join(self.bindir, prog), *args], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, f"{prog}: {r.stdout}{r.stderr}"

    def start(self) -> None:
        self._run("pg_ctl", "-D", self.data, "-l", os.path.join(self.dir, "server.log"), "-w", "-t", "60", "-o",
                  f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.dir}", "start")

    def stop(self) -> None:
        """Stops the server as a crash does: every session ends at once."""
        self._run("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")

    def close(self) -> None:
        subprocess.run([*self.run_as, os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-m", "immediate", "-w", "stop"], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def own_server(pg_url):
    srv = _OwnServer()
    yield srv
    srv.close()


def test_a_server_stopped_mid_call_fails_every_call_typed_within_its_deadline(own_server):
    """The server stops (pg_ctl stop -m immediate, as a crash or a killed
    container does) while a call waits on it, then stays down: the call
    in flight and every call after it return within the deadline + 100 ms
    with a typed error; once the server is back, the handle works again and
    every acknowledged checkpoint older than the WAL writer's last flush is
    there (an immediate stop is a crash: see the sleep below)."""
    import psycopg

    url = own_server.url
    timeout = 2.0
    saver = AgentStateSaver(url, timeout_ms=int(timeout * 1000))
    try:
        c = _put(saver, "t", 0)
        c = _put(saver, "t", 1, c)
        # The hosts commit with synchronous_commit=off (Synchronous normal,
        # docs/postgresql.md): a crash of the server may lose the commits of
        # its last fraction of a second, which the WAL writer flushes within
        # 3 x wal_writer_delay (600 ms). Those above are older than that.
        time.sleep(1.0)
        locker = psycopg.connect(url)
        try:
            locker.execute("LOCK TABLE checkpoints IN ACCESS EXCLUSIVE MODE")
            done = _in_thread(lambda: _put(saver, "t", 2, c))
            _wait_for(lambda: _admin(url, "SELECT 1 FROM pg_stat_activity WHERE application_name = 'agentstate' AND wait_event_type = 'Lock'"), "the put to wait")
            t_stop = time.monotonic()
            own_server.stop()
            stopped = time.monotonic() - t_stop
            e, took = done()
        finally:
            locker.close()
        print(f"server stopped mid-call: {type(e).__name__} after {took * 1000:.0f} ms (pg_ctl stop took {stopped * 1000:.0f} ms)")
        assert isinstance(e, (ConnectionLostError, OutcomeUnknownError, TimeoutError_)), repr(e)
        assert took < timeout + _SLACK, f"{took:.3f} s"
        calls = [
            ("get_tuple", lambda: saver.get_tuple(_cfg("t"))),
            ("put", lambda: _put(saver, "t", 3, c)),
            ("put_writes", lambda: saver.put_writes(c, [("messages", "w")], "task")),
            ("list", lambda: list(saver.list(_cfg("t")))),
        ]
        for name, call in calls:
            t0 = time.monotonic()
            with pytest.raises(AgentStateError) as e:
                call()
            took = time.monotonic() - t0
            print(f"server down: {name}: {type(e.value).__name__} after {took * 1000:.0f} ms")
            assert isinstance(e.value, (ConnectionLostError, TimeoutError_)), repr(e.value)
            assert took < timeout + _SLACK, f"{name}: {took:.3f} s"
        own_server.start()
        assert saver.get_tuple(_cfg("t", c["configurable"]["checkpoint_id"])).config == c
        c4 = _put(saver, "t", 4, c)
        assert saver.get_tuple(_cfg("t")).config == c4
    finally:
        saver.close()


_STOPPED_ENGINE_CHILD = textwrap.dedent(
    """
    import json, sys, time
    from psycopg import pq
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.agentstate import AgentStateSaver, ClosedError
    from langgraph.checkpoint.agentstate._pg_host import PGHost

    url, schema, app, other_app = sys.argv[1:5]
    fail = []  # armed: the next exec that leaves a transaction open raises
    real = PGHost.exec

    class HostBug(Exception):
        pass

    def failing(self, sid, *a):
        n = real(self, sid, *a)
        s = self.sessions.get(sid)
        if fail and s is not None and s.conn.transaction_status == pq.TransactionStatus.INTRANS:
            fail.clear()
            raise HostBug("a bug in a host function, in the middle of a write transaction")
        return n

    PGHost.exec = failing  # before the engine starts: its imports are bound then

    def put(saver, i):
        cp = empty_checkpoint()
        cp["channel_values"] = {"n": i}
        cp["channel_versions"] = {"n": i + 1}
        return saver.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, cp, {"step": i}, {"n": i + 1})

    sep = "&" if "?" in url else "?"
    first = AgentStateSaver(f"{url}{sep}application_name={app}", schema=schema)
    put(first, 0)
    out = {}
    fail.append(1)
    try:
        put(first, 1)
        out["stopped"] = "no error"
    except BaseException as e:
        out["stopped"] = type(e).__name__
    out["armed"] = bool(fail)
    print(json.dumps(out), flush=True)
    sys.stdin.readline()  # the test looks at the server's sessions now
    # Another handle writes the same thread: no lock was left held.
    t0 = time.monotonic()
    try:
        put(AgentStateSaver(f"{url}{sep}application_name={other_app}", schema=schema, timeout_ms=3000), 2)
        out["other"] = "ok"
    except BaseException as e:
        out["other"] = type(e).__name__ + ": " + str(e)[:200]
    out["other_s"] = time.monotonic() - t0
    try:
        put(first, 3)
        out["first"] = "ok"
    except ClosedError:
        out["first"] = "closed"  # the engine stopped: this handle is gone, by design
    except BaseException as e:
        out["first"] = type(e).__name__
    print(json.dumps(out), flush=True)
    """
)


def test_a_stopped_engine_closes_its_sessions(pg_url, schema):
    """A Python exception that escapes a host function stops the engine
    instance (its state is unknown): its PostgreSQL sessions are closed at
    once, so the server rolls back the write transaction it was in and
    releases its locks. Before, they stayed open, idle in transaction,
    until the process ended: every writer of that thread, in any process,
    waited on the advisory lock until its deadline."""
    import json

    app, other = "stop_" + uuid.uuid4().hex[:10], "other_" + uuid.uuid4().hex[:10]
    p = subprocess.Popen([sys.executable, "-c", _STOPPED_ENGINE_CHILD, pg_url, schema, app, other],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        assert line, p.stderr.read()[-3000:]
        out = json.loads(line)
        assert out == {"stopped": "HostBug", "armed": False}, out
        time.sleep(0.3)  # the server ends sessions closed by their client
        left = _sessions(pg_url, app)
        p.stdin.write("\n")
        p.stdin.flush()
        stdout, stderr = p.communicate(timeout=60)
        assert p.returncode == 0, stderr[-3000:]
        out = json.loads(stdout.strip().splitlines()[-1])
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert left == [], f"the stopped engine's sessions are still open: {left}"
    assert out["other"] == "ok" and out["other_s"] < 2, out
    assert out["first"] == "closed", out
