"""DeerFlow's default configuration in one process: its SQLAlchemy tables
(through Python's sqlite3 module) and agentstate's in one ``deerflow.db``,
both written from the same process (docs/contract.md 5.1).

Two copies of SQLite in one process do not see each other's POSIX locks:
a connection of one copy that closes drops the locks the other holds on the
file, and one that believes it is the file's last connection checkpoints
and deletes the write-ahead log the other is still writing. A shared file
is therefore opened through the sqlite3 module's own SQLite (the stdlib
host, ``Database.sqlite == "stdlib"``); with the package's apsw copy
(``sqlite="apsw"``) the same rounds lose acknowledged checkpoints or fail
(``rounds`` is the whole scenario, so it can be run against either).
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import closing

import pytest

from langgraph.checkpoint.agentstate import AgentStateSaver, Database
from langgraph.checkpoint.base import empty_checkpoint

from test_shared_file import make_app_file


def _put(saver, thread, k, parent, version):
    cfg = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    if parent:
        cfg["configurable"]["checkpoint_id"] = parent
    cp = empty_checkpoint()
    cp["channel_values"] = {"log": f"{thread} {k}"}
    cp["channel_versions"] = {"log": version}
    saver.put(cfg, cp, {"source": "loop", "step": k, "parents": {}}, {"log": version})
    return cp["id"]


def _app_writer(path, stop, acked, errors):
    """Writes as SQLAlchemy does over pysqlite: a pooled connection kept
    open, and connections opened for one transaction and closed (NullPool,
    aiosqlite's connection per request), each commit acknowledged only
    once COMMIT returned."""
    try:
        pooled = None
        i = len(acked)
        while not stop.is_set():
            i += 1
            if i % 7 == 1 and pooled is not None:
                pooled.close()  # the pool recycles its connection
                pooled = None
            if i % 2:
                con = sqlite3.connect(path, timeout=30, isolation_level=None)
                own = True
            else:
                if pooled is None:
                    pooled = sqlite3.connect(path, timeout=30, isolation_level=None)
                con, own = pooled, False
            con.execute("BEGIN IMMEDIATE")
            con.execute(
                "INSERT INTO run_events(thread_id, run_id, event_type, category, content, seq) VALUES (?, ?, ?, ?, ?, ?)",
                ("t1", "r1", "ai_message", "message", f"app {i}", 1000 + i),
            )
            con.execute("UPDATE runs SET total_tokens = total_tokens + 1 WHERE run_id = 'r1'")
            con.execute("COMMIT")
            acked.append(i)  # one writer thread at a time: i is unique
            if own:
                con.close()
        if pooled is not None:
            pooled.close()
    except BaseException as e:  # noqa: BLE001 - reported by the test
        errors.append(e)


def rounds(path, *, sqlite=None, n_rounds=6, puts=12, threads=3):
    """Saver puts on a few threads (each checkpoint the next one's parent)
    while the app writes its tables from another thread of this process;
    the app's connections are closed and reopened between rounds. Returns
    (acknowledged checkpoints by thread, acknowledged app commits, errors
    of either side); the file is closed when it returns."""
    make_app_file(path)
    acks: dict[str, list[str]] = {f"t{j}": [] for j in range(threads)}
    app_acked: list[int] = []
    errors: list[BaseException] = []
    db = Database(path, shared=True, sqlite=sqlite)
    try:
        saver = AgentStateSaver(db=db)
        version = None
        for r in range(n_rounds):
            stop = threading.Event()
            app = threading.Thread(target=_app_writer, args=(path, stop, app_acked, errors))
            app.start()
            try:
                for k in range(puts):
                    version = saver.get_next_version(version)
                    for thread, ids in acks.items():
                        ids.append(_put(saver, thread, len(ids), ids[-1] if ids else None, version))
            except Exception as e:  # noqa: BLE001
                errors.append(e)
            finally:
                stop.set()
                app.join(60)
            if errors:
                break
    finally:
        db.close()
    return acks, app_acked, errors


def lost(path, acks, app_acked):
    """What was acknowledged and is not in the file, read back through
    another connection after every handle closed: (thread, checkpoint id)
    pairs, and the number of app commits missing."""
    con = sqlite3.connect(path)
    try:
        missing = []
        for thread, ids in acks.items():
            have = {r[0] for r in con.execute("SELECT checkpoint_id FROM agentstate_checkpoints WHERE thread_id = ?", (thread,))}
            missing += [(thread, c) for c in ids if c not in have]
        n_app = con.execute("SELECT count(*) FROM run_events WHERE seq > 1000").fetchone()[0]
        return missing, len(app_acked) - n_app
    finally:
        con.close()


def test_deerflow_one_file_in_one_process_loses_nothing(tmp_path, agentstate_cli):
    path = str(tmp_path / "deerflow.db")
    acks, app_acked, errors = rounds(path)
    assert errors == []
    assert sum(map(len, acks.values())) == 6 * 12 * 3 and len(app_acked) > 0
    assert lost(path, acks, app_acked) == ([], 0)
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    con.close()
    # Every thread's history reads back whole, as a chain, in a new handle.
    with AgentStateSaver(path) as saver:
        assert saver.db.sqlite == "stdlib"  # a shared file, without shared=True
        for thread, ids in acks.items():
            got = [t.config["configurable"]["checkpoint_id"] for t in saver.list({"configurable": {"thread_id": thread}})]
            assert got == ids[::-1]
    v = agentstate_cli("verify", path)
    assert v.returncode == 0, v.stdout + v.stderr


@pytest.mark.filterwarnings("ignore:agentstate.*shared file:RuntimeWarning")
def test_a_shared_file_uses_the_sqlite_of_python_and_keeps_it(tmp_path):
    """The library is chosen per file and process: a shared file is opened
    through Python's sqlite3; a second handle of an open file follows the
    first; a different explicit choice is refused, the file untouched."""
    from langgraph.checkpoint.agentstate.errors import InvalidArgumentError, InvalidOptionError

    path = str(tmp_path / "deerflow.db")
    make_app_file(path)
    own = str(tmp_path / "own.db")
    with closing(Database(path, shared=True)) as db:
        assert (db.sqlite, db.shared) == ("stdlib", True)
        with closing(Database(path)) as db2:
            assert (db2.sqlite, db2.shared) == ("stdlib", True)
        with pytest.raises(InvalidArgumentError, match="stdlib SQLite library"):
            Database(path, sqlite="apsw")
    with closing(Database(path, sqlite="apsw")) as db:  # once closed, another choice may be made
        assert (db.sqlite, db.shared) == ("apsw", True)
    with closing(Database(own)) as db:
        assert (db.sqlite, db.shared) == ("apsw", False)
    with closing(Database(own, sqlite="stdlib")) as db:
        assert db.sqlite == "stdlib"
    with pytest.raises(InvalidOptionError, match="sqlite must be"):
        Database(own, sqlite="system")
    assert Database().sqlite is None  # in memory: nothing to share


def test_a_deleted_log_is_found_through_python_sqlite_too(tmp_path):
    """The stdlib host keeps the file checks of the apsw host (docs/contract.md
    7): a write after the write-ahead log was deleted is refused with
    FileReplacedError, the commits before it kept."""
    import os

    from langgraph.checkpoint.agentstate import FileReplacedError

    path = str(tmp_path / "deerflow.db")
    make_app_file(path)
    app = sqlite3.connect(path)  # the app's pooled connection keeps the log in use
    app.execute("SELECT count(*) FROM users").fetchall()
    db = Database(path, shared=True)
    try:
        assert db.sqlite == "stdlib"
        saver = AgentStateSaver(db=db)
        v = saver.get_next_version(None)
        first = _put(saver, "t", 0, None, v)
        os.remove(path + "-wal")
        with pytest.raises(FileReplacedError, match="write-ahead log"):
            _put(saver, "t", 1, first, saver.get_next_version(v))
        with pytest.raises(FileReplacedError, match="write-ahead log"):
            db.close()  # close reports it too, as natively
    finally:
        db.close()
        app.close()
    assert lost(path, {"t": [first]}, []) == ([], 0)


def test_a_python_sqlite_too_old_for_the_engine_is_named(tmp_path, monkeypatch):
    """Below the SQLite the engine's SQL needs, sqlite="stdlib" is refused
    naming both versions, and a shared open falls back to apsw's copy with
    the warning saying why (the file is untouched by the refusal)."""
    from langgraph.checkpoint.agentstate import _stdlib_host
    from langgraph.checkpoint.agentstate.errors import InvalidOptionError

    path = str(tmp_path / "deerflow.db")
    make_app_file(path)
    before = open(path, "rb").read()
    monkeypatch.setattr(_stdlib_host, "MIN_VERSION", (99, 0, 0))
    with pytest.raises(InvalidOptionError, match=rf"links SQLite {sqlite3.sqlite_version}; the engine needs 99\.0\.0"):
        Database(path, shared=True, sqlite="stdlib")
    assert open(path, "rb").read() == before
    with pytest.warns(RuntimeWarning, match="not here: Python's sqlite3 module links SQLite"):
        db = Database(path, shared=True)
    assert db.sqlite == "apsw"
    db.close()


def test_another_tools_file_is_never_touched_through_a_second_sqlite(tmp_path, monkeypatch):
    """In a process that has imported sqlite3, even a refused open of the
    app's file (shared=True forgotten) and the look at whether it is a
    LangGraph SqliteSaver file go through sqlite3's SQLite: opening and
    closing it through apsw's would drop the locks the app's connections
    hold. A file of agentstate's own stays on apsw."""
    from langgraph.checkpoint.agentstate import NotAgentStateError, _sqlite_host

    path = str(tmp_path / "deerflow.db")
    make_app_file(path)
    own = str(tmp_path / "own.db")
    Database(own).close()
    real = _sqlite_host.apsw.Connection
    opened = []

    def spy(name, *a, **kw):
        opened.append(name)
        return real(name, *a, **kw)

    monkeypatch.setattr(_sqlite_host.apsw, "Connection", spy)
    app = sqlite3.connect(path)  # the app's pooled connection, open throughout
    try:
        with pytest.raises(NotAgentStateError, match="LangGraph SqliteSaver file"):
            Database(path)
        assert opened == []
    finally:
        app.close()
        monkeypatch.setattr(_sqlite_host.apsw, "Connection", real)
    with closing(Database(own)) as db:
        assert db.sqlite == "apsw"
