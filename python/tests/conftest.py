import os
import shutil
import subprocess

import pytest


@pytest.fixture
def db_path(tmp_path):
    return str(tmp_path / "agent.db")


def cli() -> str | None:
    """The native agentstate CLI: AGENTSTATE_CLI, else None."""
    return os.environ.get("AGENTSTATE_CLI") or shutil.which("agentstate")


@pytest.fixture
def agentstate_cli():
    c = cli()
    if c is None:
        if os.environ.get("CI"):
            pytest.fail("AGENTSTATE_CLI is not set: CI must give the tests the native CLI")
        pytest.skip("no agentstate CLI (set AGENTSTATE_CLI)")
    return lambda *args: subprocess.run([c, *args], capture_output=True, text=True, timeout=120)
