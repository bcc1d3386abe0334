"""agentstate in a file that another application's tables share: DeerFlow's
``database.backend: sqlite`` keeps its SQLAlchemy and alembic tables, the
checkpointer and the store in one ``deerflow.db``."""

import sqlite3
import subprocess
import sys

import pytest

from langgraph.checkpoint.agentstate import AgentStateSaver, AgentStateStore, Database, NotAgentStateError
from langgraph.checkpoint.agentstate.errors import InvalidOptionError

from test_graph import chat, drive, values

# This module imports sqlite3, so a shared open through apsw here warns that
# this process could reach the file through a second copy of SQLite
# (test_a_shared_open_warns_when_sqlite3_is_loaded holds the warning).
pytestmark = pytest.mark.filterwarnings("ignore:agentstate.*shared file:RuntimeWarning")

# Tables shaped like those DeerFlow's models and alembic migrations create
# (our own text: names, columns and indexes of the kinds they have), among
# them one named like a table of agentstate's (runs) and the tables of
# LangGraph's SqliteSaver (checkpoints, writes), which a deerflow.db that
# used it before holds.
APP_SCHEMA = """
CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num));
INSERT INTO alembic_version VALUES ('0003');
CREATE TABLE users (id VARCHAR(64) NOT NULL PRIMARY KEY, email VARCHAR(320) NOT NULL, created_at DATETIME NOT NULL);
CREATE UNIQUE INDEX ix_users_email ON users (email);
CREATE TABLE threads_meta (thread_id VARCHAR(64) NOT NULL PRIMARY KEY, user_id VARCHAR(64), display_name VARCHAR(256),
    status VARCHAR(20) NOT NULL DEFAULT 'idle', metadata_json JSON, created_at DATETIME, updated_at DATETIME);
CREATE INDEX ix_threads_meta_user_id ON threads_meta (user_id);
CREATE TABLE runs (run_id VARCHAR(64) NOT NULL PRIMARY KEY, thread_id VARCHAR(64) NOT NULL, status VARCHAR(20) NOT NULL,
    total_tokens INTEGER NOT NULL DEFAULT 0, metadata_json JSON);
CREATE INDEX ix_runs_thread_id ON runs (thread_id);
CREATE TABLE run_events (id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, thread_id VARCHAR(64) NOT NULL, run_id VARCHAR(64) NOT NULL,
    event_type VARCHAR(64) NOT NULL, category VARCHAR(32) NOT NULL, content TEXT, seq INTEGER NOT NULL,
    CONSTRAINT uq_events_thread_seq UNIQUE (thread_id, seq));
CREATE INDEX ix_events_run ON run_events (thread_id, run_id, seq);
CREATE TABLE checkpoints (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '', checkpoint_id TEXT NOT NULL,
    parent_checkpoint_id TEXT, type TEXT, checkpoint BLOB, metadata BLOB, PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id));
CREATE TABLE writes (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '', checkpoint_id TEXT NOT NULL,
    task_id TEXT NOT NULL, idx INTEGER NOT NULL, channel TEXT NOT NULL, type TEXT, value BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx));
CREATE VIEW busy_threads AS SELECT thread_id, count(*) AS n FROM runs WHERE status = 'running' GROUP BY thread_id;
INSERT INTO users VALUES ('u1', 'a@example.com', '2026-12-01 10:00:00');
INSERT INTO threads_meta VALUES ('t1', 'u1', 'First chat', 'idle', '{"pinned": true}', '2026-12-01', '2026-12-02');
INSERT INTO runs VALUES ('r1', 't1', 'success', 42, '{}');
INSERT INTO run_events(thread_id, run_id, event_type, category, content, seq) VALUES ('t1', 'r1', 'human_message', 'message', 'hi', 1);
INSERT INTO checkpoints VALUES ('t1', '', 'c1', NULL, 'msgpack', x'81a0', x'80');
INSERT INTO writes VALUES ('t1', '', 'c1', 'task', 0, 'messages', 'msgpack', x'90');
"""


def make_app_file(path):
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript(APP_SCHEMA)
    con.commit()
    con.close()


def app_dump(path):
    """The application's part of the file: header fields, every object not
    named agentstate_*, every row of its tables, as SQLite quotes them."""
    con = sqlite3.connect(path)
    try:
        out = [(p, con.execute(f"PRAGMA {p}").fetchone()) for p in ("application_id", "user_version", "auto_vacuum")]
        objs = con.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master"
            " WHERE name NOT LIKE 'agentstate\\_%' ESCAPE '\\' AND tbl_name NOT LIKE 'agentstate\\_%' ESCAPE '\\' ORDER BY name"
        ).fetchall()
        out += objs
        for typ, name, _, _ in objs:
            if typ != "table":
                continue
            cols = [r[1] for r in con.execute(f'PRAGMA table_info("{name}")')]
            sel = ", ".join(f'quote("{c}")' for c in cols)
            out += [(name, r) for r in con.execute(f'SELECT quote(rowid), {sel} FROM "{name}" ORDER BY rowid')]
        return out
    finally:
        con.close()


def test_the_app_file_is_refused_without_shared(tmp_path):
    path = str(tmp_path / "deerflow.db")
    make_app_file(path)
    before = app_dump(path)
    with pytest.raises(NotAgentStateError, match="shared=True"):
        AgentStateSaver(path)
    assert app_dump(path) == before
    with pytest.raises(InvalidOptionError):
        Database(":memory:", shared=True)


def test_saver_and_store_live_beside_the_app_tables(tmp_path, agentstate_cli):
    path = str(tmp_path / "deerflow.db")
    make_app_file(path)
    before = app_dump(path)

    with AgentStateSaver(path, shared=True) as saver:
        assert saver.db.shared
        store = AgentStateStore(db=saver.db)
        g = chat(saver)
        cfg = drive(g, "thread-1", 4)
        want = values(g.get_state(cfg))
        assert len(want) == 8
        store.put(("users", "u1", "memories"), "m1", {"text": "likes tea"})
        assert store.get(("users", "u1", "memories"), "m1").value == {"text": "likes tea"}
        info = saver.db.info()["info"]
        assert info["shared"] and all(t.startswith("agentstate_") for t in info["rows"])
        assert info["rows"]["agentstate_store_items"] == 1

    assert app_dump(path) == before

    # Our objects are all agentstate_*; the marker is there; the SQLite
    # header is the application's.
    con = sqlite3.connect(path)
    ours = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE name LIKE 'agentstate%' ORDER BY name")]
    assert "agentstate_header" in ours and "agentstate_checkpoints" in ours and "agentstate_runs" in ours
    assert con.execute("PRAGMA application_id").fetchone() == (0,)
    assert con.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    con.close()

    # A plain open finds the marker: the file opens as shared, its state
    # reads back.
    with AgentStateSaver(path) as saver:
        assert saver.db.shared
        assert values(chat(saver).get_state(cfg)) == want

    # The native CLI reads it as it is.
    r = agentstate_cli("verify", path)
    assert r.returncode == 0, r.stdout + r.stderr
    r = agentstate_cli("info", path)
    assert r.returncode == 0 and "shared file" in r.stdout, r.stdout + r.stderr
    assert app_dump(path) == before


APP_WRITER = """
import sqlite3, sys
path, n = sys.argv[1], int(sys.argv[2])
con = sqlite3.connect(path, timeout=30)
for k in range(n):
    con.execute(
        "INSERT INTO run_events(thread_id, run_id, event_type, category, content, seq) VALUES (?, ?, ?, ?, ?, ?)",
        ("t1", "r1", "ai_message", "message", f"event {k}", k + 2),
    )
    con.execute("UPDATE runs SET total_tokens = total_tokens + 1 WHERE run_id = 'r1'")
    con.commit()
con.close()
"""


def test_the_app_writes_its_tables_while_agentstate_writes(tmp_path):
    """The application (another process: Python's sqlite3 module is another
    copy of SQLite than the package's, and two copies in one process do not
    lock each other out; docs/contract.md) and agentstate write the one
    file at once, in WAL: neither waits long enough to fail, and neither
    loses a row."""
    path = str(tmp_path / "deerflow.db")
    make_app_file(path)
    n_app = 200
    with AgentStateSaver(path, shared=True, busy_timeout_ms=30000) as saver:
        store = AgentStateStore(db=saver.db)
        g = chat(saver)
        app = subprocess.Popen([sys.executable, "-c", APP_WRITER, path, str(n_app)], stderr=subprocess.PIPE, text=True)
        cfg = drive(g, "thread-2", 15)
        for k in range(50):
            store.put(("ns",), f"k{k}", {"k": k})
        _, err = app.communicate(timeout=120)
        assert app.returncode == 0, err
        assert len(values(g.get_state(cfg))) == 30
        assert len(store.search(("ns",), limit=100)) == 50

    con = sqlite3.connect(path)
    assert con.execute("SELECT count(*) FROM run_events").fetchone() == (n_app + 1,)
    assert con.execute("SELECT total_tokens FROM runs WHERE run_id = 'r1'").fetchone() == (42 + n_app,)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()


def test_a_shared_open_warns_when_sqlite3_is_loaded(tmp_path):
    # Only through apsw's copy of SQLite: a shared file opens through
    # Python's sqlite3 by default, the copy this process's sqlite3 uses.
    import warnings

    path = str(tmp_path / "deerflow.db")
    make_app_file(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        db = Database(path, shared=True)
        assert db.sqlite == "stdlib"
        db.close()
    with pytest.warns(RuntimeWarning, match="two copies of SQLite"):
        Database(path, shared=True, sqlite="apsw").close()
