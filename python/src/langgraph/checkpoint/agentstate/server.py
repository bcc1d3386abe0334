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

Semantic search: the server does not hand ``langgraph.json``'s
``store.index`` to a store of one's own, so the index is given here, either
as ``AGENTSTATE_STORE_INDEX`` (LangGraph's IndexConfig as JSON, the embedder
a provider string such as ``"openai:text-embedding-3-small"``) or in code::

    make_store = store_factory(index={"dims": 1536, "embed": my_embeddings, "fields": ["$"]})
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ._db import Database
from .errors import InvalidArgumentError
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


def _env_index() -> dict | None:
    raw = os.environ.get("AGENTSTATE_STORE_INDEX")
    if not raw:
        return None
    try:
        index = json.loads(raw)
    except ValueError as e:
        raise InvalidArgumentError(f"agentstate: AGENTSTATE_STORE_INDEX is not JSON ({e})") from None
    if not isinstance(index, dict):
        raise InvalidArgumentError("agentstate: AGENTSTATE_STORE_INDEX must be a JSON object (LangGraph's IndexConfig)")
    return index


def store_factory(index: dict | None = None):
    """make_store with an index for semantic search (LangGraph's
    IndexConfig: dims, embed, fields, distance_type); ``index=None`` reads
    AGENTSTATE_STORE_INDEX, and no index at all gives a store without
    semantic search."""

    @asynccontextmanager
    async def make_store() -> AsyncIterator[AgentStateStore]:
        idx = index if index is not None else _env_index()
        path = _path()
        db = await asyncio.to_thread(_acquire, path)
        try:
            store = AgentStateStore(db=db, index=idx) if idx is not None else AgentStateStore(db=db)
        except BaseException:
            await asyncio.to_thread(_release, path)
            raise
        try:
            yield store
        finally:
            store.stop_ttl_sweeper()
            await asyncio.to_thread(_release, path)

    return make_store


make_store = store_factory()
make_store.__doc__ = """An AgentStateStore on AGENTSTATE_PATH, for langgraph.json's "store"
(with AGENTSTATE_STORE_INDEX's index, if set)."""
