"""The Python blocks of the READMEs run as printed, twice in one directory
(the second run finds the thread the first left)."""

import contextlib
import io
import os
import re

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
READMES = [os.path.join(HERE, "..", "..", "README.md"), os.path.join(HERE, "..", "README.md")]


def blocks(path):
    text = open(path, encoding="utf-8").read()
    return re.findall(r"```python\n(.*?)```", text, re.S)


@pytest.mark.parametrize("path", READMES, ids=["README.md", "python/README.md"])
def test_readme_python_blocks_run(path, tmp_path, monkeypatch):
    found = blocks(path)
    assert found, f"no python block in {path}"
    monkeypatch.chdir(tmp_path)
    for code in found:
        outs = []
        for _ in range(2):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                exec(compile(code, path, "exec"), {"__name__": "__readme__"})
            outs.append(buf.getvalue())
        assert outs[0].strip() == "You said: hi" == outs[1].strip(), outs
        assert os.path.exists(tmp_path / "agent.db")
        from langgraph.checkpoint.agentstate import AgentStateSaver

        with AgentStateSaver("agent.db") as s:
            cfg = {"configurable": {"thread_id": "t1"}}
            st = s.get_tuple(cfg)
            msgs = st.checkpoint["channel_values"].get("messages")
            if not isinstance(msgs, list):  # a DeltaChannel between snapshots: its writes since the seed
                h = s.get_delta_channel_history(config=cfg, channels=["messages"])["messages"]
                msgs = list(h.get("seed") or []) + [m for w in h["writes"] for m in (w[2] if isinstance(w[2], list) else [w[2]])]
                msgs += [m for w in st.pending_writes if w[1] == "messages" for m in w[2]]
            assert len(msgs) == 4  # two runs of hi -> You said: hi
        os.remove(tmp_path / "agent.db")
        for suffix in ("-wal", "-shm"):
            if os.path.exists(str(tmp_path / "agent.db") + suffix):
                os.remove(str(tmp_path / "agent.db") + suffix)
