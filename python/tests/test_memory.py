"""What the process keeps after large calls (issue 38 class 7: "after any
sequence of calls, RSS back within 256 MB + 2x the largest value in
flight, and a refused value costs no more than its own size").

Each case runs in a child process of its own (RSS is the whole process's),
which prints its numbers as JSON. The engine module's linear memory is
measured beside RSS: it never shrinks, so its growth is what a call left
behind for the life of the process, and it does not move with the load of
the machine. python/bench/memory.py prints the same numbers (docs/memory.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

MB = 1_000_000

_PRELUDE = textwrap.dedent(
    """
    import gc, json, os, sys
    from langgraph.checkpoint.agentstate import AgentStateSaver, AgentStateStore, _engine
    from langgraph.checkpoint.agentstate.errors import InvalidArgumentError
    from langgraph.checkpoint.base import empty_checkpoint

    def rss():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024

    def linear():
        e = _engine._engine
        return e._memory.data_len(e._store)

    saver = AgentStateSaver(sys.argv[1])
    cfg = saver.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, empty_checkpoint(), {}, {})
    gc.collect()
    """
)


def _child(tmp_path, body: str) -> dict:
    code = _PRELUDE + textwrap.dedent(body)
    env = {k: v for k, v in os.environ.items() if k not in ("GOGC", "GOMEMLIMIT", "AGENTSTATE_MEMORY_LIMIT")}
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "m.db")], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_a_refused_store_value_costs_no_more_than_its_own_size(tmp_path):
    # 100 MB is past MaxValueBytes (16 MiB of msgpack): refused before it is
    # decoded. Before, the engine decoded and encoded it first: its memory
    # grew by 872 MB and stayed there, RSS 881 MB after.
    r = _child(
        tmp_path,
        """
        store = AgentStateStore(db=saver.db)
        store.put(("ns",), "small", {"v": 1})
        gc.collect()
        before, lin = rss(), linear()
        value = {"v": "x" * 100_000_000}
        try:
            store.put(("ns",), "big", value)
            refused = False
        except InvalidArgumentError as e:
            refused = "MaxValueBytes" in str(e)
        del value
        gc.collect()
        after1, lin1 = rss(), linear()
        # and a second one reuses that memory, not more
        value = {"v": "y" * 100_000_000}
        try:
            store.put(("ns",), "big2", value)
        except InvalidArgumentError:
            pass
        del value
        gc.collect()
        small = store.get(("ns",), "small").value
        print(json.dumps({"refused": refused, "before": before, "after1": after1, "after2": rss(),
                          "lin": lin, "lin1": lin1, "lin2": linear(), "small": small}))
        """,
    )
    assert r["refused"], "the 100 MB store value should be refused naming MaxValueBytes"
    assert r["small"] == {"v": 1}
    value = 100 * MB
    # its own size (the request the host wrote into the module), and 8 MB of slack
    assert r["lin1"] - r["lin"] <= value + 8 * MB, r
    assert r["lin2"] - r["lin"] <= value + 8 * MB, r
    # RSS: the same, with 48 MB for the Python side's allocator
    assert r["after1"] - r["before"] <= value + 48 * MB, r
    assert r["after2"] - r["before"] <= value + 48 * MB, r


def test_a_refused_pending_write_costs_no_more_than_its_own_size(tmp_path):
    r = _child(
        tmp_path,
        """
        before, lin = rss(), linear()
        for i in range(2):
            w = "x" * 100_000_000
            try:
                saver.put_writes(cfg, [("messages", w)], f"task-{i}")
                refused = False
            except InvalidArgumentError:
                refused = True
            del w
            gc.collect()
        print(json.dumps({"refused": refused, "before": before, "after": rss(), "lin": lin, "lin2": linear()}))
        """,
    )
    assert r["refused"]
    # two 100 MB writes refused one after the other: the second reuses the
    # first's memory (before: +200 MB of linear memory)
    assert r["lin2"] - r["lin"] <= 100 * MB + 8 * MB, r
    assert r["after"] - r["before"] <= 100 * MB + 48 * MB, r


def test_rss_after_large_puts_is_within_the_bound(tmp_path):
    # Three puts of a checkpoint holding a 50 MB value: RSS after each within
    # 256 MB + 2 x 50 MB (before: 238, 338, 438 MB, growing by a value a put;
    # the module's memory 395 MB).
    r = _child(
        tmp_path,
        """
        after = []
        c = cfg
        for i in range(3):
            value = "x" * 50_000_000
            cp = empty_checkpoint()
            cp["channel_values"] = {"blob": value}
            cp["channel_versions"] = {"blob": i + 1}
            c = saver.put(c, cp, {"step": i}, {"blob": i + 1})
            del value, cp
            gc.collect()
            after.append(rss())
        lin = linear()
        got = saver.get_tuple(c).checkpoint["channel_values"]["blob"]
        ok = len(got) == 50_000_000
        print(json.dumps({"after": after, "lin": lin, "ok": ok}))
        """,
    )
    assert r["ok"]
    bound = 256 * MB + 2 * 50 * MB
    assert max(r["after"]) <= bound, r
    # The module's memory after the puts: about three values (the request,
    # the cache's copy, the compressed form), not one more for every put.
    assert r["lin"] <= 4 * 50 * MB, r


def test_a_module_of_another_result_format_is_refused_by_name(tmp_path):
    # Results give byte arrays by address since format 2; a host reading a
    # format-1 module's results that way would read wild addresses (a
    # segfault, as with AGENTSTATE_WASM set to an older build).
    code = textwrap.dedent(
        """
        import sys
        from langgraph.checkpoint.agentstate import AgentStateSaver, _engine
        _engine._RESULT_FORMAT = 3  # what this module is not
        try:
            AgentStateSaver(sys.argv[1])
        except RuntimeError as e:
            print(e)
        """
    )
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "f.db")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "results of format 2, this package reads format 3" in r.stdout
