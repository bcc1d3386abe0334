"""A pytest plugin that runs DeerFlow's own store tests against agentstate's
DeerFlow classes, without editing a test body: before the test modules are
imported, DeerFlow's store classes are replaced, where the tests import them
from, by thin subclasses of ours that take (and ignore) DeerFlow's
constructor arguments (a SQLAlchemy session factory, a LangGraph store),
passing on the event store's max_trace_content. Each construction opens a private in-memory Database.

Used by deerflow_check.sh (python -m pytest -p deerflow_subst ...). Which
classes are replaced: AGENTSTATE_SUBST, a comma list of events, runs,
threads (default all three).
"""

from __future__ import annotations

import os

from langgraph.checkpoint.agentstate import deerflow as _ours

_WHICH = set(filter(None, os.environ.get("AGENTSTATE_SUBST", "events,runs,threads").split(","))) - {"none"}


def _taking_any_args(cls: type, name: str, keep: tuple[str, ...] = ()) -> type:
    def __init__(self, *args, **kwargs):  # noqa: N807
        cls.__init__(self, **{k: v for k, v in kwargs.items() if k in keep})

    return type(name, (cls,), {"__init__": __init__, "__module__": __name__})


def _replace(module: str, attr: str, new: type) -> None:
    mod = __import__(module, fromlist=[attr])
    if hasattr(mod, attr):
        setattr(mod, attr, new)


if "events" in _WHICH:
    _ev = _taking_any_args(_ours.AgentStateRunEventStore, "SubstRunEventStore", keep=("max_trace_content",))
    _replace("deerflow.runtime.events.store.memory", "MemoryRunEventStore", _ev)
    _replace("deerflow.runtime.events.store", "MemoryRunEventStore", _ev)
    _replace("deerflow.runtime.events.store.db", "DbRunEventStore", _ev)
    _replace("deerflow.runtime.events.store", "DbRunEventStore", _ev)
if "threads" in _WHICH:
    _th = _taking_any_args(_ours.AgentStateThreadMetaStore, "SubstThreadMetaStore")
    for m in ("deerflow.persistence.thread_meta", "deerflow.persistence.thread_meta.sql"):
        _replace(m, "ThreadMetaRepository", _th)
    for m in ("deerflow.persistence.thread_meta", "deerflow.persistence.thread_meta.memory"):
        _replace(m, "MemoryThreadMetaStore", _th)
if "runs" in _WHICH:
    _ru = _taking_any_args(_ours.AgentStateRunStore, "SubstRunStore")
    for m in ("deerflow.persistence.run", "deerflow.persistence.run.sql"):
        _replace(m, "RunRepository", _ru)


def pytest_report_header(config):
    import deerflow.persistence.run as run_mod
    import deerflow.persistence.thread_meta as tm_mod
    import deerflow.runtime.events.store.memory as ev_mod

    return "agentstate substitution: MemoryRunEventStore=%s ThreadMetaRepository=%s RunRepository=%s" % (
        ev_mod.MemoryRunEventStore.__name__,
        tm_mod.ThreadMetaRepository.__name__,
        run_mod.RunRepository.__name__,
    )
