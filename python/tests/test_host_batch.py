"""The statements a write queues (the checkpoint, its values, the seal)
reach the SQLite host in one call, ``run_batch`` (docs/profiles/turn-cpu.md):
a statement that fails in the middle of a batch stops it, its own error is
the call's, and nothing of the transaction is written. Both hosts: apsw,
and Python's sqlite3 (a file shared with the application)."""

from __future__ import annotations

import sys

import pytest

from langgraph.checkpoint.agentstate import AgentStateSaver, Database
from langgraph.checkpoint.agentstate import _sqlite_host
from langgraph.checkpoint.agentstate.errors import DiskFullError

from test_graph import chat, drive, values

SQLITE_FULL = 13


def _batch_entries(real_run, on_entry):
    """A SQLiteHost._run that calls on_entry(self, i, args) for the i-th
    statement of each run_batch call (its frame tells them apart: the
    engine binds the host's imports once, so run_batch itself cannot be
    patched after the first engine started), before or instead of running
    it."""
    cur = {"frame": None, "i": 0}

    def run(self, *a):
        caller = sys._getframe(1)
        if caller.f_code.co_name != "run_batch":
            return real_run(self, *a)
        if cur["frame"] is not caller:
            cur["frame"], cur["i"] = caller, 0
        i = cur["i"]
        cur["i"] = i + 1
        r = on_entry(self, i, a)
        return real_run(self, *a) if r is None else r

    return run


@pytest.mark.parametrize("sqlite", ["apsw", "stdlib"])
def test_a_put_sends_its_queued_statements_in_one_host_call(tmp_path, sqlite):
    H = _sqlite_host.SQLiteHost
    sizes: list[int] = []

    def entry(self, i, a):
        if i == 0:
            sizes.append(0)
        sizes[-1] += 1

    db = Database(str(tmp_path / "b.db"), sqlite=sqlite)
    saver = AgentStateSaver(db=db)
    g = chat(saver, True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(H, "_run", _batch_entries(H._run, entry))
        cfg = drive(g, "t", 3)
    assert sizes and max(sizes) >= 3, sizes
    assert len(values(g.get_state(cfg))) == 6
    saver.close()
    db.close()


@pytest.mark.parametrize("sqlite", ["apsw", "stdlib"])
def test_a_statement_failing_in_the_middle_of_a_batch_writes_nothing(tmp_path, sqlite):
    db = Database(str(tmp_path / "f.db"), sqlite=sqlite)
    saver = AgentStateSaver(db=db)
    g = chat(saver, True)
    cfg = drive(g, "t", 2)
    before = g.get_state(cfg)
    n_before = len(list(saver.list(cfg)))

    H = _sqlite_host.SQLiteHost
    seen = {"failed": 0, "after": 0}

    def entry(self, i, a):
        buf, cap = a[2], a[3]
        if seen["failed"]:
            if i > 0:
                seen["after"] += 1  # a statement after the failed one ran
        elif i == 1:
            # The second statement of the first batch fails (the disk is
            # full): it is not run, and the batch must stop there.
            seen["failed"] = 1
            return self._error(buf, cap, SQLITE_FULL, SQLITE_FULL, "database or disk is full")
        return None

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(H, "_run", _batch_entries(H._run, entry))
        with pytest.raises(DiskFullError):
            drive(g, "t", 1, start=2)
    assert seen["failed"] == 1
    assert seen["after"] == 0
    # Nothing of the failed write: the head and the history are as they were.
    assert values(g.get_state(cfg)) == values(before)
    assert g.get_state(cfg).config == before.config
    assert len(list(saver.list(cfg))) == n_before
    saver.close()
    db.close()
    # Reopened: the file holds what it held, and takes the next turn.
    with AgentStateSaver.from_conn_string(str(tmp_path / "f.db")) as again:
        g2 = chat(again, True)
        assert values(g2.get_state(cfg)) == values(before)
        drive(g2, "t", 1, start=2)
        assert len(values(g2.get_state(cfg))) == len(values(before)) + 2
