"""What the package says when a file cannot be opened as asked: advice in
Python's terms, and the way in for a file of LangGraph's own SqliteSaver."""

import sqlite3

import pytest

from langgraph.checkpoint.agentstate import AgentStateSaver, ModeMismatchError, NotAgentStateError


def test_a_mode_mismatch_names_python_options(db_path):
    AgentStateSaver(db_path, mode="delta", every=5).close()
    with pytest.raises(ModeMismatchError) as e:
        AgentStateSaver(db_path, mode="full")
    msg = str(e.value)
    assert 'mode="auto"' in msg and 'mode="delta", every=5' in msg
    assert "mode: " not in msg  # the npm package's spelling


def test_a_sqlitesaver_file_points_to_import_langgraph(tmp_path):
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = str(tmp_path / "lg.db")
    with SqliteSaver.from_conn_string(path) as s:
        s.setup()
    before = open(path, "rb").read()
    with pytest.raises(NotAgentStateError) as e:
        AgentStateSaver(path)
    assert f"agentstate import-langgraph {path} {tmp_path / 'lg.agentstate.db'}" in str(e.value)
    assert open(path, "rb").read() == before  # only read


def test_another_sqlite_file_gets_no_such_hint(tmp_path):
    path = str(tmp_path / "other.db")
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(NotAgentStateError) as e:
        AgentStateSaver(path)
    assert "import-langgraph" not in str(e.value)
