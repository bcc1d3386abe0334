"""Factories for LangGraph's server (``langgraph dev``, the Agent Server,
DeerFlow's LangGraph mode), which takes a checkpointer and a store as
import paths of async context managers in ``langgraph.json``::

    {
      "graphs": {"agent": "./agent.py:graph"},
      "checkpointer": {"path": "./persistence.py:make_checkpointer"},
      "store": {"path": "./persistence.py:make_store"}
    }

with ``persistence.py`` holding one line::

    from langgraph.checkpoint.agentstate.server import make_checkpointer, make_store

The file is ``AGENTSTATE_PATH`` (default ``agentstate.db`` in the server's
working directory). The saver and the store share one handle of it while
both are open; the file is closed when the server stops.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ._db import Database
from .saver import AgentStateSaver
from .store import AgentStateStore

_lock = threading.Lock()
_shared: dict[str, tuple[Database, int]] = {}


def _path() -> str:
    return os.path.abspath(os.environ.get("AGENTSTATE_PATH") or "agentstate.db")


def _acquire(path: str) -> Database:
    with _lock:
        db, n = _shared.get(path, (None, 0))
        if db is None or db.closed:
            db, n = Database(path), 0
        _shared[path] = (db, n + 1)
        return db


def _release(path: str) -> None:
    with _lock:
        db, n = _shared[path]
        if n > 1:
            _shared[path] = (db, n - 1)
            return
        del _shared[path]
    db.close()


@asynccontextmanager
async def make_checkpointer() -> AsyncIterator[AgentStateSaver]:
    """An AgentStateSaver on AGENTSTATE_PATH, for langgraph.json's
    "checkpointer"."""
    path = _path()
    db = await asyncio.to_thread(_acquire, path)
    try:
        yield AgentStateSaver(db=db)
    finally:
        await asyncio.to_thread(_release, path)


@asynccontextmanager
async def make_store() -> AsyncIterator[AgentStateStore]:
    """An AgentStateStore on AGENTSTATE_PATH, for langgraph.json's "store"."""
    path = _path()
    db = await asyncio.to_thread(_acquire, path)
    store = AgentStateStore(db=db)
    try:
        yield store
    finally:
        store.stop_ttl_sweeper()
        await asyncio.to_thread(_release, path)
