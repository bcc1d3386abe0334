"""The engine's record surfaces on a :class:`Database`: run records, the
event stream and thread records (docs/records.md), the same as Go's
``db.Runs()``, ``db.Events()`` and ``db.Threads()`` and the npm package's
``db.runs``, ``db.events`` and ``db.threads``.

Records cross in the engine's JSON shape: dicts with snake_case keys, times
as RFC 3339 strings. Each method is one engine call (the bridge's op names,
wasm/bridge/records.go); the engine checks the arguments and keeps the
invariants (one active run per thread, gap-free event seq per thread, owner
scoping of threads), and its errors arrive as this package's typed errors
(:mod:`.errors`). Every method has an ``a``-prefixed coroutine twin that runs
the call in a worker thread, so the event loop is never blocked.

    db = Database("agent.db")
    created = db.runs.create({"thread_id": "t1", "run_id": "r1"})
    db.events.put({"thread_id": "t1", "run_id": "r1", "event_type": "ai", "category": "message", "content": "hi"})
    db.threads.create("alice", {"thread_id": "t1"})
"""

from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from .errors import InvalidArgumentError

if TYPE_CHECKING:
    from ._db import Database

__all__ = ["ANY_OWNER", "Events", "Runs", "Threads"]


class _AnyOwner:
    """The owner that reaches every user's threads (admin tools only)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ANY_OWNER"


ANY_OWNER: Any = _AnyOwner()

_T = TypeVar("_T")


def _id(what: str, v: Any) -> str:
    if not isinstance(v, str) or v == "":
        raise InvalidArgumentError(f"agentstate: {what} must be a non-empty string, got {v!r}")
    return v


def _obj(what: str, v: Any) -> dict[str, Any]:
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise InvalidArgumentError(f"agentstate: {what} must be a dict, not {type(v).__name__}")
    return v


def _opt_int(what: str, v: Any) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise InvalidArgumentError(f"agentstate: {what} must be an int, got {v!r}")
    return v


def _owner(v: Any) -> dict[str, Any]:
    if v is ANY_OWNER:
        return {"any_owner": True}
    return {"owner": _id("owner (a user id, or ANY_OWNER)", v)}


def _opt_user(v: Any) -> str | None:
    """An events call's ``user_id`` filter: None (or "") reads every
    writer's events."""
    if v is None or v == "":
        return None
    if not isinstance(v, str):
        raise InvalidArgumentError(f"agentstate: user_id must be a string or None, got {v!r}")
    return v


def _strip(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def _async_twin(fn: Callable[..., _T]) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def twin(self: Any, *args: Any, **kwargs: Any) -> _T:
        return await asyncio.to_thread(fn, self, *args, **kwargs)

    twin.__name__ = "a" + fn.__name__
    twin.__qualname__ = fn.__qualname__.rsplit(".", 1)[0] + ".a" + fn.__name__
    twin.__doc__ = f"The coroutine of :meth:`{fn.__name__}` (run in a worker thread)."
    return twin


class _Surface:
    __slots__ = ("_db",)

    def __init__(self, db: Database) -> None:
        self._db = db

    def _call(self, op: str, req: dict[str, Any]) -> Any:
        return self._db.call(op, req)[0]


class Runs(_Surface):
    """Run records: at most one pending or running run per thread, kept by
    the database across processes; a run whose process is gone is
    reconciled to ``"error"``."""

    __slots__ = ()

    def create(self, run: dict[str, Any]) -> dict[str, Any]:
        """Creates a run (``run["thread_id"]`` required; ``run_id`` omitted:
        a new id). Returns ``{"run", "new", "interrupted"}``: a run id or
        ``idempotency_key`` used before (a key on any thread: keys are unique
        in the database) returns that run, unchanged, with ``new`` False; with ``multitask_strategy`` ``"interrupt"`` or
        ``"rollback"`` an active run of the thread is marked interrupted (its
        id in ``interrupted``); with ``"reject"`` (the default) an active run
        makes this a ConflictError."""
        r = _obj("run", run)
        _id("run['thread_id']", r.get("thread_id"))
        return self._call("runs.create", _strip(r))

    def get(self, run_id: str) -> dict[str, Any]:
        """The run; NotFoundError when there is none."""
        return self._call("runs.get", {"run_id": _id("run_id", run_id)})["run"]

    def list(self, thread_id: str) -> list[dict[str, Any]]:
        """The thread's runs, newest first."""
        return self._call("runs.list", {"thread_id": _id("thread_id", thread_id)})["runs"]

    def set_status(self, run_id: str, status: str, error: str = "") -> None:
        """Moves a run to ``status``: pending to running, either to a
        terminal status; ConflictError once it has ended (a terminal status
        is final, but an interrupted run may end as an error: DeerFlow's
        rollback path), InvalidArgumentError for an unknown status."""
        self._call("runs.setStatus", {"run_id": _id("run_id", run_id), "status": _id("status", status), "error": error or ""})

    def complete(self, run_id: str, status: str, *, error: str = "", totals: dict[str, Any] | None = None) -> None:
        """Ends a run with its totals (``total_*`` left at zero are summed
        from ``token_usage_by_model``)."""
        self._call(
            "runs.complete",
            {"run_id": _id("run_id", run_id), "status": _id("status", status), "error": error or "", "totals": _obj("totals", totals)},
        )

    def delete(self, run_id: str) -> None:
        self._call("runs.delete", {"run_id": _id("run_id", run_id)})

    def token_usage(self, thread_id: str, *, include_active: bool = False) -> dict[str, Any]:
        """Token usage of the thread's ended runs (``include_active``:
        running ones too)."""
        return self._call("runs.tokenUsage", {"thread_id": _id("thread_id", thread_id), "include_active": bool(include_active)})["usage"]

    def set_model_name(self, run_id: str, model_name: str) -> None:
        """Sets the model a run uses; NotFoundError when there is no run."""
        if not isinstance(model_name, str):
            raise InvalidArgumentError(f"agentstate: model_name must be a str, got {model_name!r}")
        self._call("runs.setModelName", {"run_id": _id("run_id", run_id), "model_name": model_name})

    def progress(self, run_id: str, progress: dict[str, Any]) -> None:
        """Records a running snapshot of an active run's totals (the keys of
        ``complete``'s totals; a key left out keeps its value).
        ConflictError once the run has ended."""
        self._call("runs.progress", {"run_id": _id("run_id", run_id), "progress": _strip(_obj("progress", progress))})

    def list_active(
        self,
        *,
        pending_only: bool = False,
        before: str | None = None,
        limit: int | None = None,
        runs_only: bool = False,
        worker_lease_before: str | None = None,
    ) -> list[dict[str, Any]]:
        """The active runs of every thread (with ``pending_only``, the pending
        ones), created at or before ``before`` (RFC 3339), oldest first.
        ``runs_only`` leaves out reservations (an ``operation_kind``);
        ``worker_lease_before`` keeps the runs whose worker lease expired
        before it, or was never taken."""
        return self._call(
            "runs.listActive",
            _strip(
                {
                    "pending_only": bool(pending_only),
                    "before": before,
                    "limit": _opt_int("limit", limit),
                    "runs_only": bool(runs_only),
                    "worker_lease_before": worker_lease_before,
                }
            ),
        )["runs"]

    def apply(self, op: dict[str, Any]) -> dict[str, Any]:
        """One worker-level change of a run, atomic in the database
        (docs/records.md): ``{"op": "put", "run_id", "status", "error",
        "stop_reason", "run": {...}}`` writes the run whole (a new one, or
        every field of an existing one); ``"renew"`` (``worker``, ``lease``)
        moves the lease of an active run that worker owns; ``"cancel"``
        (``action`` ``"interrupt"`` or ``"rollback"``) records the first
        cancellation of an active run; ``"finalize"`` (``status``) ends an
        active run unless a cancellation was requested; ``"takeover"``
        (``grace_seconds``, ``error``) ends an active run as an error once its
        worker lease expired more than the grace ago, or was never taken;
        ``"status"`` (``status``, ``error``, ``stop_reason``) moves a run as
        ``set_status`` does, but not to a terminal status it already has,
        and records its stop reason (DeerFlow's ``update_status``).
        Returns ``{"done", "cancel_action"}``: whether the run changed, and
        its cancellation action when it has one."""
        o = _obj("op", op)
        _id("op['run_id']", o.get("run_id"))
        res = self._call("runs.apply", _strip(o))
        return {"done": bool(res.get("done")), "cancel_action": res.get("cancel_action") or None}

    acreate = _async_twin(create)
    aget = _async_twin(get)
    alist = _async_twin(list)
    aset_model_name = _async_twin(set_model_name)
    aprogress = _async_twin(progress)
    alist_active = _async_twin(list_active)
    aapply = _async_twin(apply)
    aset_status = _async_twin(set_status)
    acomplete = _async_twin(complete)
    adelete = _async_twin(delete)
    atoken_usage = _async_twin(token_usage)


class Events(_Surface):
    """The event stream: ``seq`` is allocated inside the write, gap-free per
    thread."""

    __slots__ = ()

    def put(self, events: dict[str, Any] | list[dict[str, Any]], *, trace_limit: int | None = None) -> Any:
        """Appends one event (a dict) or a list of them in one transaction;
        returns them (one dict, or a list) with ``seq`` and ``created_at``.
        ``trace_limit``: the bound, in UTF-8 bytes, on the content of trace
        events for this call (default: the database's, 10240)."""
        one = isinstance(events, dict)
        if not one and not isinstance(events, (list, tuple)):
            raise InvalidArgumentError(f"agentstate: events must be a dict or a list of dicts, not {type(events).__name__}")
        lst = [events] if one else list(events)
        for i, e in enumerate(lst):
            _id(f"events[{i}]['thread_id']", _obj(f"events[{i}]", e).get("thread_id"))
        out = self._call("events.put", _strip({"events": lst, "trace_limit": _opt_int("trace_limit", trace_limit)}))["events"]
        return out[0] if one else out

    def put_if_absent(self, event: dict[str, Any], *, trace_limit: int | None = None) -> tuple[dict[str, Any], bool]:
        """Stores one event unless its run already holds an event of its
        ``event_type``; returns ``(event, created)``: the stored event, or
        the first one of that type and False. The check and the write are
        one transaction, serialised with the thread's other writers, in
        every process."""
        e = _obj("event", event)
        _id("event['thread_id']", e.get("thread_id"))
        r = self._call("events.putIfAbsent", _strip({"event": e, "trace_limit": _opt_int("trace_limit", trace_limit)}))
        return r["event"], r["created"]

    def list_messages(
        self,
        thread_id: str,
        *,
        limit: int | None = None,
        before_seq: int | None = None,
        after_seq: int | None = None,
        user_id: str | None = None,
    ) -> list[dict[str, Any]]:
        """The thread's events of category ``"message"``, oldest first;
        ``limit``, ``before_seq`` and ``after_seq`` page through them.
        ``user_id`` (on every read, count and delete of events): only the
        events written with that ``user_id``; None: every event."""
        return self._call(
            "events.listMessages",
            _strip(
                {
                    "thread_id": _id("thread_id", thread_id),
                    "limit": _opt_int("limit", limit),
                    "before_seq": _opt_int("before_seq", before_seq),
                    "after_seq": _opt_int("after_seq", after_seq),
                    "user_id": _opt_user(user_id),
                }
            ),
        )["events"]

    def list_run_events(
        self,
        thread_id: str,
        run_id: str,
        *,
        types: list[str] | None = None,
        task_id: str | None = None,
        after_seq: int | None = None,
        limit: int | None = None,
        user_id: str | None = None,
    ) -> list[dict[str, Any]]:
        """One run's events in seq order, optionally of some types or of one
        task (``metadata["task_id"]``, applied before the limit)."""
        if types is not None and (isinstance(types, str) or not all(isinstance(t, str) for t in types)):
            raise InvalidArgumentError("agentstate: types must be a list of strings")
        return self._call(
            "events.listRunEvents",
            _strip(
                {
                    "thread_id": _id("thread_id", thread_id),
                    "run_id": _id("run_id", run_id),
                    "types": list(types) if types is not None else None,
                    "task_id": task_id,
                    "after_seq": _opt_int("after_seq", after_seq),
                    "limit": _opt_int("limit", limit),
                    "user_id": _opt_user(user_id),
                }
            ),
        )["events"]

    def list_run_messages(
        self,
        thread_id: str,
        run_id: str,
        *,
        limit: int | None = None,
        before_seq: int | None = None,
        after_seq: int | None = None,
        user_id: str | None = None,
    ) -> list[dict[str, Any]]:
        """One run's events of category ``"message"``, oldest first, paged as
        :meth:`list_messages` pages the thread's."""
        return self._call(
            "events.listRunMessages",
            _strip(
                {
                    "thread_id": _id("thread_id", thread_id),
                    "run_id": _id("run_id", run_id),
                    "limit": _opt_int("limit", limit),
                    "before_seq": _opt_int("before_seq", before_seq),
                    "after_seq": _opt_int("after_seq", after_seq),
                    "user_id": _opt_user(user_id),
                }
            ),
        )["events"]

    def last_visible_ai_seq(self, thread_id: str, run_ids: Any, *, user_id: str | None = None) -> dict[str, int]:
        """For each run of ``run_ids`` that has one, the seq of its last AI
        reply a user sees (a message of type ``llm.ai.response`` or
        ``ai_message`` whose metadata ``caller`` does not begin with
        ``middleware:``)."""
        if isinstance(run_ids, str):
            raise InvalidArgumentError("agentstate: run_ids must be a collection of run ids, not a string")
        ids = [_id("run id", r) for r in run_ids]
        req = {"thread_id": _id("thread_id", thread_id), "run_ids": ids, "user_id": _opt_user(user_id)}
        return self._call("events.lastVisibleAISeq", _strip(req))["seqs"]

    def count_messages(self, thread_id: str, *, user_id: str | None = None) -> int:
        req = {"thread_id": _id("thread_id", thread_id), "user_id": _opt_user(user_id)}
        return self._call("events.countMessages", _strip(req))["count"]

    def delete_thread(self, thread_id: str, *, user_id: str | None = None) -> int:
        """Deletes the thread's events (with ``user_id``: that user's only;
        the others' stay and seqs go on); returns how many."""
        req = {"thread_id": _id("thread_id", thread_id), "user_id": _opt_user(user_id)}
        return self._call("events.deleteThread", _strip(req))["deleted"]

    def delete_run(self, thread_id: str, run_id: str, *, user_id: str | None = None) -> int:
        """Deletes one run's events; returns how many."""
        req = {"thread_id": _id("thread_id", thread_id), "run_id": _id("run_id", run_id), "user_id": _opt_user(user_id)}
        return self._call("events.deleteRun", _strip(req))["deleted"]

    aput = _async_twin(put)
    aput_if_absent = _async_twin(put_if_absent)
    alist_run_messages = _async_twin(list_run_messages)
    alast_visible_ai_seq = _async_twin(last_visible_ai_seq)
    alist_messages = _async_twin(list_messages)
    alist_run_events = _async_twin(list_run_events)
    acount_messages = _async_twin(count_messages)
    adelete_thread = _async_twin(delete_thread)
    adelete_run = _async_twin(delete_run)


class Threads(_Surface):
    """Thread records, each scoped to an owner (a user id, or
    :data:`ANY_OWNER` for admin tools): another owner's thread is
    NotFoundError."""

    __slots__ = ()

    def create(self, owner: Any, thread: dict[str, Any] | None = None) -> dict[str, Any]:
        """Creates a thread record (``thread_id`` omitted: a new id);
        ConflictError when the id is taken."""
        t = dict(_obj("thread", thread))
        t.pop("owner", None)
        t.pop("any_owner", None)
        return self._call("threads.create", {**_strip(t), **_owner(owner)})["thread"]

    def get(self, owner: Any, thread_id: str) -> dict[str, Any]:
        return self._call("threads.get", {**_owner(owner), "thread_id": _id("thread_id", thread_id)})["thread"]

    def search(
        self,
        owner: Any,
        *,
        metadata: dict[str, Any] | None = None,
        status: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> list[dict[str, Any]]:
        """The owner's threads whose metadata holds every key of ``metadata``
        (values compared with their types), optionally of one status: pinned
        threads first, then the most recently updated."""
        return self._call(
            "threads.search",
            _strip(
                {
                    **_owner(owner),
                    "metadata": _obj("metadata", metadata) if metadata is not None else None,
                    "status": status,
                    "limit": _opt_int("limit", limit),
                    "offset": _opt_int("offset", offset),
                }
            ),
        )["threads"]

    def update(
        self,
        owner: Any,
        thread_id: str,
        *,
        display_name: str | None = None,
        status: str | None = None,
        metadata: dict[str, Any] | None = None,
        touch: bool = False,
    ) -> None:
        """Sets the display name and/or status, and/or merges a metadata
        patch into the stored metadata (``touch``: also bump
        ``updated_at``)."""
        self._call(
            "threads.update",
            _strip(
                {
                    **_owner(owner),
                    "thread_id": _id("thread_id", thread_id),
                    "display_name": display_name,
                    "status": status,
                    "metadata": _obj("metadata", metadata) if metadata is not None else None,
                    "touch": bool(touch),
                }
            ),
        )

    def set_owner(self, owner: Any, thread_id: str, new_owner: str) -> None:
        """Moves the thread to user ``new_owner`` (repair and migration
        paths)."""
        self._call(
            "threads.setOwner", {**_owner(owner), "thread_id": _id("thread_id", thread_id), "new_owner": _id("new_owner", new_owner)}
        )

    def delete(self, owner: Any, thread_id: str) -> None:
        self._call("threads.delete", {**_owner(owner), "thread_id": _id("thread_id", thread_id)})

    acreate = _async_twin(create)
    aget = _async_twin(get)
    asearch = _async_twin(search)
    aupdate = _async_twin(update)
    aset_owner = _async_twin(set_owner)
    adelete = _async_twin(delete)
