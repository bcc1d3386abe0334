"""DeerFlow's persistence contracts on the agentstate engine (docs/deerflow.md).

    from langgraph.checkpoint.agentstate import Database
    from langgraph.checkpoint.agentstate.deerflow import (
        AgentStateRunEventStore, AgentStateRunStore, AgentStateThreadMetaStore)

    db = Database("deerflow-state.db")          # shared with the saver and the store
    events = AgentStateRunEventStore(db=db)     # DeerFlow's RunEventStore
    threads = AgentStateThreadMetaStore(db=db)  # DeerFlow's ThreadMetaStore
    runs = AgentStateRunStore(db=db)            # DeerFlow's RunStore

Each class takes no argument (a private in-memory Database) or ``db=`` a
:class:`Database`. The methods are DeerFlow's, with its signatures, return
shapes (dicts with ISO 8601 times) and "missing is None / no-op" rules; the
work is the engine's (one call each), this module maps shapes and errors.

This package does not depend on DeerFlow. Where DeerFlow is importable, the
classes are registered as virtual subclasses of its ABCs (``RunEventStore``,
``ThreadMetaStore``, ``RunStore``), its ``AUTO`` user sentinel is accepted
and resolved from its request context (``resolve_user_id``), and the
metadata filter error is DeerFlow's ``InvalidMetadataFilterError`` as well as
this package's :class:`InvalidArgumentError`. Without DeerFlow, :data:`AUTO`
is this module's and resolves from :data:`current_user_id`.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import logging
import re
from datetime import datetime, timedelta, timezone
from typing import Any

from ._db import Database
from .errors import ConflictError, InvalidArgumentError, NotFoundError
from .records import ANY_OWNER

logger = logging.getLogger(__name__)

__all__ = [
    "AUTO",
    "AgentStateRunEventStore",
    "AgentStateRunStore",
    "AgentStateThreadMetaStore",
    "InvalidMetadataFilterError",
    "current_user_id",
]

# --- DeerFlow, where it is importable -------------------------------------

try:  # pragma: no cover - exercised where DeerFlow is installed
    from deerflow.runtime.user_context import AUTO as _DF_AUTO  # type: ignore[import-not-found]
    from deerflow.runtime.user_context import _AutoSentinel as _DFAutoSentinel  # type: ignore[import-not-found]
    from deerflow.runtime.user_context import resolve_user_id as _df_resolve_user_id  # type: ignore[import-not-found]
except Exception:  # noqa: BLE001 - absent, or failing to import: run without it
    _DF_AUTO = None
    _DFAutoSentinel = None
    _df_resolve_user_id = None

try:  # pragma: no cover - exercised where DeerFlow is installed
    from deerflow.runtime.user_context import get_current_user as _df_get_current_user  # type: ignore[import-not-found]
except Exception:  # noqa: BLE001
    _df_get_current_user = None


def _df_class(module: str, name: str) -> Any:
    try:
        mod = __import__(module, fromlist=[name])
        return getattr(mod, name)
    except Exception:  # noqa: BLE001
        return None


_DFInvalidMetadataFilterError = _df_class("deerflow.persistence.thread_meta.base", "InvalidMetadataFilterError")


class _Auto:
    """Resolve the user from the request context (DeerFlow's AUTO)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "AUTO"


#: The default ``user_id``: the user of the current request. DeerFlow's own
#: sentinel where DeerFlow is importable.
AUTO: Any = _DF_AUTO if _DF_AUTO is not None else _Auto()

#: The request's user where DeerFlow is not installed (its auth middleware
#: sets its own context variable, which AUTO reads where it is).
current_user_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("agentstate_deerflow_user_id", default=None)


def _resolve(user_id: Any, method: str) -> str | None:
    """DeerFlow's three states: AUTO (the request's user; RuntimeError when
    there is none), a user id, or None (no owner filter)."""
    if _DFAutoSentinel is not None and isinstance(user_id, _DFAutoSentinel):
        return _df_resolve_user_id(user_id, method_name=method)
    if isinstance(user_id, _Auto):
        u = current_user_id.get()
        if u is None:
            raise RuntimeError(
                f"{method} called with user_id=AUTO but no user context is set; pass an explicit user_id, "
                "set agentstate.deerflow.current_user_id, or opt out with user_id=None"
            )
        return u
    if user_id is None:
        return None
    return str(user_id)


def _writer() -> str | None:
    """The user a write is stamped with, as DeerFlow's event store stamps
    it: the request's user, or None (no owner) outside a request (a
    background worker's writes)."""
    if _df_get_current_user is not None:
        user = _df_get_current_user()
        if user is not None:
            return str(user.id)
    return current_user_id.get()


_BASES: tuple[type, ...] = (InvalidArgumentError,)
if _DFInvalidMetadataFilterError is not None:  # pragma: no cover
    _BASES = (_DFInvalidMetadataFilterError, InvalidArgumentError)


class InvalidMetadataFilterError(*_BASES):  # type: ignore[misc]
    """Every key of a thread search's metadata filter was refused as unsafe
    (DeerFlow's error where DeerFlow is installed; a ValueError)."""

    code = "INVALID_ARGUMENT"


# --- shapes ----------------------------------------------------------------


def _iso(s: Any) -> Any:
    """The engine's RFC 3339 time as Python's isoformat (DeerFlow's shape)."""
    if not isinstance(s, str) or not s:
        return s
    try:
        return datetime.fromisoformat(s.replace("Z", "+00:00")).isoformat()
    except ValueError:
        return s


def _rfc3339(what: str, v: Any) -> str | None:
    """A caller's time (ISO string or datetime) as RFC 3339 for the engine;
    naive times are UTC, as DeerFlow reads them."""
    if v is None or v == "":
        return None
    if isinstance(v, datetime):
        d = v
    elif isinstance(v, str):
        try:
            d = datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidArgumentError(f"agentstate: {what} {v!r} is not an ISO 8601 time") from None
    else:
        raise InvalidArgumentError(f"agentstate: {what} must be an ISO 8601 string or a datetime, not {type(v).__name__}")
    if d.tzinfo is None:
        d = d.replace(tzinfo=timezone.utc)
    return d.isoformat()


def _none_if_empty(v: Any) -> Any:
    return None if v == "" else v


def _to_thread(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return asyncio.to_thread(fn, *args, **kwargs)


class _OnDatabase:
    def __init__(self, db: Database | None = None) -> None:
        if db is not None and not isinstance(db, Database):
            raise InvalidArgumentError(f"agentstate: db must be a Database, not {type(db).__name__}")
        self._own = db is None
        self._db = Database() if db is None else db

    @property
    def db(self) -> Database:
        return self._db

    def close(self) -> None:
        """Closes the private database (a shared one stays open)."""
        if self._own:
            self._db.close()


# --- RunEventStore ---------------------------------------------------------

_EVENT_KEYS = ("thread_id", "run_id", "event_type", "category", "content", "metadata", "created_at", "user_id")


def _event_in(ev: dict[str, Any]) -> dict[str, Any]:
    unknown = set(ev) - set(_EVENT_KEYS)
    if unknown:
        raise InvalidArgumentError(f"agentstate: unknown event field(s) {sorted(unknown)}")
    for k in ("thread_id", "run_id", "event_type", "category"):
        if k not in ev:
            raise InvalidArgumentError(f"agentstate: event without {k}")
    content = ev.get("content", "")
    metadata = ev.get("metadata") or None
    if content is not None and not isinstance(content, str):
        # DeerFlow's SQL store marks structured content so in its metadata;
        # the engine stores it as it is, and the marks keep the records the same.
        metadata = {**(metadata or {}), "content_is_json": True}
        if isinstance(content, dict):
            metadata["content_is_dict"] = True
    out = {
        "thread_id": ev["thread_id"],
        "run_id": ev["run_id"],
        "event_type": ev["event_type"],
        "category": ev["category"],
        "content": content,
        "metadata": metadata,
    }
    at = _rfc3339("created_at", ev.get("created_at"))
    if at is not None:
        out["created_at"] = at
    if ev.get("user_id") is not None:
        out["user_id"] = str(ev["user_id"])
    return out


def _event_out(e: dict[str, Any], given_at: Any = None) -> dict[str, Any]:
    return {
        "thread_id": e["thread_id"],
        "run_id": e["run_id"],
        "event_type": e["event_type"],
        "category": e["category"],
        "content": e["content"] if e["content"] is not None else "",
        "metadata": e["metadata"] or {},
        "seq": e["seq"],
        "user_id": e.get("user_id") or None,
        # the caller's own text comes back as given (DeerFlow's stores do)
        "created_at": given_at if isinstance(given_at, str) and given_at else _iso(e["created_at"]),
    }


def _limit(limit: Any) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InvalidArgumentError(f"agentstate: limit must be an int, got {limit!r}")
    return min(limit, 1000)


class AgentStateRunEventStore(_OnDatabase):
    """DeerFlow's ``RunEventStore`` on the engine's event stream: seq is
    allocated inside the write, gap-free and unique per thread across
    processes; ``put_if_absent`` checks and writes in one transaction; trace
    contents are cut to the Database's trace limit in UTF-8 bytes, with
    ``content_truncated`` and ``original_byte_length`` in the metadata.

    Owners, as DeerFlow's SQL store keeps them: a write is stamped with the
    request's user (None outside a request; ``put_batch`` keeps an event's
    own ``user_id``), and every read, count and delete takes ``user_id``:
    AUTO (the request's user; RuntimeError without one), a user id (only
    that user's events), or None (every event)."""

    def __init__(self, db: Database | None = None, *, max_trace_content: int | None = None, **_ignored: Any) -> None:
        """``max_trace_content``: DeerFlow's ``run_events.max_trace_content``,
        the bound in UTF-8 bytes on trace contents (default: the database's,
        10240, DeerFlow's default)."""
        super().__init__(db)
        if max_trace_content is not None and (isinstance(max_trace_content, bool) or not isinstance(max_trace_content, int) or max_trace_content <= 0):
            raise InvalidArgumentError(f"agentstate: max_trace_content must be a positive int, got {max_trace_content!r}")
        self._trace_limit = max_trace_content
        self._events = self._db.events

    # writes

    def _put_sync(self, ev: dict[str, Any]) -> dict[str, Any]:
        return _event_out(self._events.put(_event_in(ev), trace_limit=self._trace_limit), ev.get("created_at"))

    async def put(
        self,
        *,
        thread_id: str,
        run_id: str,
        event_type: str,
        category: str,
        content: str | dict = "",
        metadata: dict | None = None,
        created_at: str | None = None,
    ) -> dict:
        ev = dict(
            thread_id=thread_id, run_id=run_id, event_type=event_type, category=category, content=content, metadata=metadata, created_at=created_at
        )
        ev["user_id"] = _writer()
        return await _to_thread(self._put_sync, ev)

    def _put_batch_sync(self, events: list[dict]) -> list[dict]:
        ins = [_event_in(dict(e)) for e in events]
        out: list[dict] = []
        # The engine takes one thread per batch (its seq lock): a batch
        # naming several threads is written as one batch per run of events
        # of the same thread, in order.
        i = 0
        while i < len(ins):
            j = i
            while j < len(ins) and ins[j]["thread_id"] == ins[i]["thread_id"]:
                j += 1
            stored = self._events.put(ins[i:j], trace_limit=self._trace_limit)
            out.extend(_event_out(s, events[i + k].get("created_at")) for k, s in enumerate(stored))
            i = j
        return out

    async def put_batch(self, events: list[dict]) -> list[dict]:
        if not events:
            return []
        user = _writer()
        return await _to_thread(self._put_batch_sync, [{"user_id": user, **e} for e in events])

    def _put_if_absent_sync(self, ev: dict[str, Any]) -> tuple[dict, bool]:
        e, created = self._events.put_if_absent(_event_in(ev), trace_limit=self._trace_limit)
        return _event_out(e, ev.get("created_at") if created else None), created

    async def put_if_absent(
        self,
        *,
        thread_id: str,
        run_id: str,
        event_type: str,
        category: str,
        content: str | dict = "",
        metadata: dict | None = None,
        created_at: str | None = None,
    ) -> tuple[dict, bool]:
        ev = dict(
            thread_id=thread_id, run_id=run_id, event_type=event_type, category=category, content=content, metadata=metadata, created_at=created_at
        )
        ev["user_id"] = _writer()
        return await _to_thread(self._put_if_absent_sync, ev)

    # reads

    def _messages_sync(self, thread_id: str, limit: int, before_seq: int | None, after_seq: int | None, user: str | None) -> list[dict]:
        if limit <= 0:
            return []
        page = self._events.list_messages(thread_id, limit=limit, before_seq=before_seq, after_seq=after_seq, user_id=user)
        return [_event_out(e) for e in page]

    async def list_messages(
        self,
        thread_id: str,
        *,
        limit: int = 50,
        before_seq: int | None = None,
        after_seq: int | None = None,
        user_id: Any = AUTO,
    ) -> list[dict]:
        user = _resolve(user_id, "AgentStateRunEventStore.list_messages")
        return await _to_thread(self._messages_sync, thread_id, _limit(limit), before_seq, after_seq, user)

    def _events_sync(self, thread_id: str, run_id: str, types: Any, task_id: Any, limit: int, after_seq: Any, user: str | None) -> list[dict]:
        out: list[dict] = []
        cursor = after_seq or 0
        while len(out) < limit:
            page = self._events.list_run_events(
                thread_id, run_id, types=types, task_id=task_id, after_seq=cursor, limit=min(1000, limit - len(out)), user_id=user
            )
            out.extend(_event_out(e) for e in page)
            if len(page) < min(1000, limit - len(out) + len(page)):
                break
            cursor = page[-1]["seq"]
        return out

    async def list_events(
        self,
        thread_id: str,
        run_id: str,
        *,
        event_types: list[str] | None = None,
        task_id: str | None = None,
        limit: int = 500,
        after_seq: int | None = None,
        user_id: Any = AUTO,
    ) -> list[dict]:
        user = _resolve(user_id, "AgentStateRunEventStore.list_events")
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise InvalidArgumentError(f"agentstate: limit must be an int, got {limit!r}")
        if limit <= 0 or (event_types is not None and len(event_types) == 0):
            return []
        types = list(event_types) if event_types is not None else None
        return await _to_thread(self._events_sync, thread_id, run_id, types, task_id, limit, after_seq, user)

    def _run_messages_sync(self, thread_id: str, run_id: str, limit: int, before_seq: Any, after_seq: Any, user: str | None) -> list[dict]:
        if limit <= 0:
            return []
        if before_seq is not None and after_seq is not None:
            # DeerFlow's window: seq in (after, before), the first `limit`.
            out: list[dict] = []
            cursor = after_seq
            while len(out) < limit:
                page = self._events.list_run_messages(thread_id, run_id, after_seq=cursor, limit=min(1000, limit - len(out)), user_id=user)
                keep = [e for e in page if e["seq"] < before_seq]
                out.extend(_event_out(e) for e in keep)
                if len(keep) < len(page) or not page or len(page) < min(1000, limit):
                    break
                cursor = page[-1]["seq"]
            return out
        page = self._events.list_run_messages(thread_id, run_id, limit=limit, before_seq=before_seq, after_seq=after_seq, user_id=user)
        return [_event_out(e) for e in page]

    async def list_messages_by_run(
        self,
        thread_id: str,
        run_id: str,
        *,
        limit: int = 50,
        before_seq: int | None = None,
        after_seq: int | None = None,
        user_id: Any = AUTO,
    ) -> list[dict]:
        user = _resolve(user_id, "AgentStateRunEventStore.list_messages_by_run")
        return await _to_thread(self._run_messages_sync, thread_id, run_id, _limit(limit), before_seq, after_seq, user)

    async def get_last_visible_ai_seq_by_run(self, thread_id: str, run_ids: set[str], *, user_id: Any = AUTO) -> dict[str, int]:
        ids = sorted(run_ids)
        if not ids:
            return {}
        user = _resolve(user_id, "AgentStateRunEventStore.get_last_visible_ai_seq_by_run")
        return await _to_thread(self._last_visible_sync, thread_id, ids, user)

    def _last_visible_sync(self, thread_id: str, ids: list[str], user: str | None) -> dict[str, int]:
        out: dict[str, int] = {}
        for i in range(0, len(ids), 1000):  # the engine's bound per call
            out.update(self._events.last_visible_ai_seq(thread_id, ids[i : i + 1000], user_id=user))
        return out

    async def count_messages(self, thread_id: str, *, user_id: Any = AUTO) -> int:
        user = _resolve(user_id, "AgentStateRunEventStore.count_messages")
        return await _to_thread(self._events.count_messages, thread_id, user_id=user)

    async def delete_by_thread(self, thread_id: str, *, user_id: Any = AUTO) -> int:
        user = _resolve(user_id, "AgentStateRunEventStore.delete_by_thread")
        return await _to_thread(self._events.delete_thread, thread_id, user_id=user)

    async def delete_by_run(self, thread_id: str, run_id: str, *, user_id: Any = AUTO) -> int:
        user = _resolve(user_id, "AgentStateRunEventStore.delete_by_run")
        return await _to_thread(self._events.delete_run, thread_id, run_id, user_id=user)


# --- ThreadMetaStore -------------------------------------------------------

THREAD_PINNED_METADATA_KEY = "deerflow_pinned"

_FILTER_KEY = re.compile(r"^[A-Za-z0-9_\-]+$")
_INT64 = (-(2**63), 2**63 - 1)


def _filter_refusal(key: Any, value: Any) -> str | None:
    """Why DeerFlow refuses a metadata filter entry, or None."""
    if not isinstance(key, str) or not _FILTER_KEY.match(key):
        return "key must be a non-empty string of letters, digits, _ or -"
    if value is not None and not isinstance(value, (bool, int, float, str)):
        return f"value of type {type(value).__name__} (want None, bool, int, float or str)"
    if isinstance(value, int) and not isinstance(value, bool) and not _INT64[0] <= value <= _INT64[1]:
        return "integer outside the signed 64-bit range"
    return None


def _thread_out(t: dict[str, Any]) -> dict[str, Any]:
    return {
        "thread_id": t["thread_id"],
        "assistant_id": _none_if_empty(t["assistant_id"]),
        "user_id": _none_if_empty(t["user_id"]),
        "display_name": _none_if_empty(t["display_name"]),
        "status": t["status"],
        "metadata": t["metadata"] or {},
        "created_at": _iso(t["created_at"]),
        "updated_at": _iso(t["updated_at"]),
    }


def _owner(user: str | None) -> Any:
    return ANY_OWNER if user is None else user


class AgentStateThreadMetaStore(_OnDatabase):
    """DeerFlow's ``ThreadMetaStore`` on the engine's thread records: every
    call scoped to its owner in the database (``user_id=None``: no owner
    filter; a thread created with ``None`` belongs to no user and is shared,
    as DeerFlow's NULL owner is); search orders pinned threads
    (``deerflow_pinned: true``) first and compares metadata values with
    their JSON types; metadata merges lock the thread, so concurrent writers
    lose no key."""

    def __init__(self, db: Database | None = None, **_ignored: Any) -> None:
        super().__init__(db)
        self._threads = self._db.threads

    def _create_sync(self, thread_id: str, assistant_id: Any, user: str | None, display_name: Any, metadata: Any) -> dict:
        t = {"thread_id": thread_id, "assistant_id": assistant_id, "display_name": display_name, "metadata": metadata or None}
        return _thread_out(self._threads.create(_owner(user), {k: v for k, v in t.items() if v is not None}))

    async def create(
        self,
        thread_id: str,
        *,
        assistant_id: str | None = None,
        user_id: Any = AUTO,
        display_name: str | None = None,
        metadata: dict | None = None,
    ) -> dict:
        user = _resolve(user_id, "AgentStateThreadMetaStore.create")
        return await _to_thread(self._create_sync, thread_id, assistant_id, user, display_name, metadata)

    def _get_sync(self, thread_id: str, user: str | None) -> dict | None:
        try:
            return _thread_out(self._threads.get(_owner(user), thread_id))
        except NotFoundError:
            return None

    async def get(self, thread_id: str, *, user_id: Any = AUTO) -> dict | None:
        user = _resolve(user_id, "AgentStateThreadMetaStore.get")
        return await _to_thread(self._get_sync, thread_id, user)

    def _check_access_sync(self, thread_id: str, user_id: str, require_existing: bool) -> bool:
        row = self._get_sync(thread_id, None)
        if row is None:
            return not require_existing
        return row["user_id"] is None or row["user_id"] == user_id

    async def check_access(self, thread_id: str, user_id: str, *, require_existing: bool = False) -> bool:
        """True for the thread's owner and for a thread of no owner; a
        missing thread is allowed unless ``require_existing``."""
        return await _to_thread(self._check_access_sync, thread_id, user_id, bool(require_existing))

    async def search(
        self,
        *,
        metadata: dict[str, Any] | None = None,
        status: str | None = None,
        limit: int = 100,
        offset: int = 0,
        user_id: Any = AUTO,
    ) -> list[dict[str, Any]]:
        user = _resolve(user_id, "AgentStateThreadMetaStore.search")
        flt: dict[str, Any] | None = None
        if metadata:
            flt = {}
            for k, v in metadata.items():
                why = _filter_refusal(k, v)
                if why is None:
                    flt[k] = v
                else:
                    logger.warning("Skipping metadata filter key %s: %s", ascii(k), why)
            if not flt:
                raise InvalidMetadataFilterError(
                    "All metadata filter keys were rejected as unsafe: " + ", ".join(sorted(str(k) for k in metadata))
                )
        if limit <= 0:
            return []
        rows = await _to_thread(
            self._threads.search, _owner(user), metadata=flt, status=status or None, limit=min(limit, 1000), offset=offset or None
        )
        return [_thread_out(t) for t in rows]

    def _update_sync(self, thread_id: str, user: str | None, **kw: Any) -> None:
        try:
            self._threads.update(_owner(user), thread_id, **kw)
        except NotFoundError:
            pass  # DeerFlow: a missing thread or another owner's is a no-op

    async def update_display_name(self, thread_id: str, display_name: str, *, user_id: Any = AUTO) -> None:
        user = _resolve(user_id, "AgentStateThreadMetaStore.update_display_name")
        await _to_thread(self._update_sync, thread_id, user, display_name=display_name, touch=True)

    async def update_status(self, thread_id: str, status: str, *, user_id: Any = AUTO) -> None:
        user = _resolve(user_id, "AgentStateThreadMetaStore.update_status")
        await _to_thread(self._update_sync, thread_id, user, status=status)

    async def update_metadata(self, thread_id: str, metadata: dict, *, touch: bool = True, user_id: Any = AUTO) -> None:
        user = _resolve(user_id, "AgentStateThreadMetaStore.update_metadata")
        await _to_thread(self._update_sync, thread_id, user, metadata=dict(metadata), touch=bool(touch))

    def _set_owner_sync(self, thread_id: str, user: str | None, new_owner: str) -> None:
        try:
            self._threads.set_owner(_owner(user), thread_id, new_owner)
        except NotFoundError:
            pass

    async def update_owner(self, thread_id: str, owner_user_id: str, *, user_id: Any = AUTO) -> None:
        user = _resolve(user_id, "AgentStateThreadMetaStore.update_owner")
        await _to_thread(self._set_owner_sync, thread_id, user, owner_user_id)

    def _delete_sync(self, thread_id: str, user: str | None) -> None:
        try:
            self._threads.delete(_owner(user), thread_id)
        except NotFoundError:
            pass

    async def delete(self, thread_id: str, *, user_id: Any = AUTO) -> None:
        user = _resolve(user_id, "AgentStateThreadMetaStore.delete")
        await _to_thread(self._delete_sync, thread_id, user)


# --- RunStore ----------------------------------------------------------------

_TOTAL_KEYS = (
    "total_input_tokens",
    "total_output_tokens",
    "total_tokens",
    "llm_call_count",
    "lead_agent_tokens",
    "subagent_tokens",
    "middleware_tokens",
    "message_count",
)


def _by_model_in(m: dict[str, dict[str, int]] | None) -> dict[str, dict[str, int]] | None:
    """DeerFlow's {model: {input_tokens, output_tokens, total_tokens}} as the
    engine's {model: {input, output, total}}."""
    if not m:
        return None
    out = {}
    for model, u in m.items():
        u = u or {}
        out[str(model)] = {
            "input": int(u.get("input_tokens", u.get("input", 0)) or 0),
            "output": int(u.get("output_tokens", u.get("output", 0)) or 0),
            "total": int(u.get("total_tokens", u.get("total", 0)) or 0),
        }
    return out


def _by_model_out(m: dict[str, dict[str, int]] | None) -> dict[str, dict[str, int]]:
    return {
        k: {"input_tokens": v.get("input", 0), "output_tokens": v.get("output", 0), "total_tokens": v.get("total", 0)} for k, v in (m or {}).items()
    }


def _run_out(r: dict[str, Any]) -> dict[str, Any]:
    out = {
        "run_id": r["run_id"],
        "thread_id": r["thread_id"],
        "assistant_id": _none_if_empty(r["assistant_id"]),
        "user_id": _none_if_empty(r["user_id"]),
        "status": r["status"],
        "model_name": _none_if_empty(r["model_name"]),
        "multitask_strategy": r["multitask_strategy"],
        "metadata": r["metadata"] or {},
        "kwargs": r["kwargs"] or {},
        "error": _none_if_empty(r["error"]),
        "created_at": _iso(r["created_at"]),
        "updated_at": _iso(r["updated_at"]),
        "idempotency_key": r.get("idempotency_key") or None,
        "operation_kind": r.get("operation_kind") or "run",
        "stop_reason": r.get("stop_reason") or None,
        "owner_worker_id": r.get("worker") or None,
        "lease_expires_at": _iso(r["worker_lease"]) if r.get("worker_lease") else None,
        "cancel_action": r.get("cancel_action") or None,
        "cancel_requested_at": _iso(r["cancel_requested_at"]) if r.get("cancel_requested_at") else None,
        "token_usage_by_model": _by_model_out(r.get("token_usage_by_model")),
        "last_ai_message": _none_if_empty(r.get("last_ai_message")),
        "first_human_message": _none_if_empty(r.get("first_human_message")),
    }
    for k in _TOTAL_KEYS:
        out[k] = r.get(k, 0)
    return out


def _jsonable(v: Any) -> Any:
    """DeerFlow stores run metadata and kwargs as JSON, replacing what JSON
    cannot hold by its text."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return str(v)



def _model_name(v: Any) -> str | None:
    """DeerFlow's normalisation: text, stripped, at most 128 characters."""
    if v is None:
        return None
    return str(v).strip()[:128]


def _progress_in(**fields: Any) -> dict[str, Any]:
    out = {k: v for k, v in fields.items() if v is not None and k != "token_usage_by_model"}
    by_model = fields.get("token_usage_by_model")
    if by_model is not None:
        out["token_usage_by_model"] = _by_model_in(by_model) or {}
    return out


def _df_run_classes() -> dict[str, Any]:
    """DeerFlow's run-store result types and errors where it is importable
    (looked up when first needed: its run manager imports much of DeerFlow),
    else this module's."""
    global _RUN_CLASSES
    if _RUN_CLASSES is None:
        base = "deerflow.runtime.runs.store.base"
        df_conflict = _df_class("deerflow.runtime.runs.manager", "ConflictError")
        df_idem = _df_class(base, "RunIdempotencyConflict")
        conflict: type = ConflictError
        if df_conflict is not None:  # pragma: no cover - where DeerFlow is installed
            conflict = type("RunConflictError", (df_conflict, ConflictError), {"__module__": __name__})
        idem_bases: tuple[type, ...] = (ConflictError,) if df_idem is None else (df_idem, ConflictError)

        def _idem_init(self: Any, existing: dict[str, Any]) -> None:
            Exception.__init__(self, f"Run idempotency key already belongs to {existing.get('run_id')}")
            self.existing = existing

        _RUN_CLASSES = {
            "conflict": conflict,
            "idempotency": type("RunIdempotencyConflict", idem_bases, {"__init__": _idem_init, "__module__": __name__}),
            "lease": _df_class(base, "LeaseRenewal") or _LeaseRenewal,
            "final": _df_class(base, "StatusFinalization") or _StatusFinalization,
        }
    return _RUN_CLASSES


_RUN_CLASSES: dict[str, Any] | None = None


@dataclasses.dataclass(frozen=True)
class _LeaseRenewal:
    renewed: bool
    cancel_action: str | None = None


@dataclasses.dataclass(frozen=True)
class _StatusFinalization:
    finalized: bool
    cancel_action: str | None = None


def _active_conflict(thread_id: str, err: ConflictError) -> Exception:
    """The engine's refusal of a second active operation on a thread, as
    DeerFlow words it (its ConflictError, also this package's)."""
    text = str(err)
    if "reservation" in text:
        msg = f"Thread {thread_id} has an active checkpoint write"
    elif "another worker" in text:
        msg = f"Thread {thread_id} already has an active run owned by another worker"
    elif "already has an active run" in text:
        msg = f"Thread {thread_id} already has an active run"
    else:
        return err
    out = _df_run_classes()["conflict"](msg)
    out.__cause__ = err
    return out


class AgentStateRunStore(_OnDatabase):
    """DeerFlow's ``RunStore`` on the engine's run records: at most one
    pending or running operation per thread (a run, or a reservation such
    as a checkpoint write; the database keeps it across processes), admission
    with reject / interrupt / rollback and idempotency keys, DeerFlow's
    worker leases with renewal and compare-and-set takeover after a grace,
    cancellation where the first action wins and a completion after it is
    refused, and a completion that never replaces a different terminal
    status. Each of those is one engine call, atomic in the database.

    Idempotency keys are unique in the database, as DeerFlow's are: a key
    used before, on any thread, raises ``RunIdempotencyConflict`` carrying
    that run. Not mapped (docs/deerflow.md): ``update_status`` refuses the
    moves DeerFlow allows that would reopen an ended run (running back to
    pending, interrupted to anything but error);
    ``list_successful_regenerate_sources`` and ``list_edit_regenerate_runs``
    read every run of the thread."""

    def __init__(self, db: Database | None = None, **_ignored: Any) -> None:
        super().__init__(db)
        self._runs = self._db.runs

    def _put_sync(self, run_id: str, status: str, error: Any, stop_reason: Any, run: dict[str, Any]) -> None:
        try:
            self._runs.apply(
                {"op": "put", "run_id": run_id, "status": status, "error": error or "", "stop_reason": stop_reason or "", "run": run}
            )
        except ConflictError as e:
            raise _active_conflict(run["thread_id"], e) from e

    async def put(
        self,
        run_id: str,
        *,
        thread_id: str,
        assistant_id: str | None = None,
        user_id: Any = AUTO,
        model_name: str | None = None,
        status: str = "pending",
        operation_kind: str = "run",
        multitask_strategy: str = "reject",
        metadata: dict[str, Any] | None = None,
        kwargs: dict[str, Any] | None = None,
        error: str | None = None,
        stop_reason: str | None = None,
        created_at: str | None = None,
        owner_worker_id: str | None = None,
        lease_expires_at: str | None = None,
        idempotency_key: str | None = None,
        **_more: Any,
    ) -> None:
        """Writes the run whole: a new run, or every field of an existing
        one (status included), as DeerFlow's put does. A second active run on
        the thread is a ConflictError; an unknown status an
        InvalidArgumentError; nothing is written then."""
        user = _resolve(user_id, "AgentStateRunStore.put")
        run = {
            "thread_id": thread_id,
            "assistant_id": assistant_id,
            "user_id": user,
            "model_name": _model_name(model_name),
            "multitask_strategy": multitask_strategy,
            "metadata": _jsonable(metadata) or None,
            "kwargs": _jsonable(kwargs) or None,
            "idempotency_key": idempotency_key,
            "created_at": _rfc3339("created_at", created_at),
            "operation_kind": _kind(operation_kind),
            "worker": owner_worker_id,
            "worker_lease": _rfc3339("lease_expires_at", lease_expires_at),
        }
        await _to_thread(self._put_sync, run_id, str(status), error, stop_reason, {k: v for k, v in run.items() if v is not None})

    def _get_sync(self, run_id: str, user: str | None) -> dict | None:
        try:
            r = _run_out(self._runs.get(run_id))
        except NotFoundError:
            return None
        if user is not None and r["user_id"] != user:
            return None
        return r

    async def get(self, run_id: str, *, user_id: Any = AUTO) -> dict[str, Any] | None:
        user = _resolve(user_id, "AgentStateRunStore.get")
        return await _to_thread(self._get_sync, run_id, user)

    def _list_sync(self, thread_id: str, user: str | None, limit: int, runs_only: bool = True) -> list[dict]:
        rows = [_run_out(r) for r in self._runs.list(thread_id)]
        if runs_only:
            rows = [r for r in rows if r["operation_kind"] == "run"]
        if user is not None:
            rows = [r for r in rows if r["user_id"] == user]
        return rows[: max(limit, 0)]

    async def list_by_thread(self, thread_id: str, *, user_id: Any = AUTO, limit: int = 100) -> list[dict[str, Any]]:
        """The thread's runs (not its reservations), newest first."""
        user = _resolve(user_id, "AgentStateRunStore.list_by_thread")
        return await _to_thread(self._list_sync, thread_id, user, limit)

    async def get_many_by_thread(self, thread_id: str, run_ids: set[str], *, user_id: Any = AUTO) -> dict[str, dict[str, Any]]:
        user = _resolve(user_id, "AgentStateRunStore.get_many_by_thread")
        rows = await _to_thread(self._list_sync, thread_id, user, 1 << 62)
        return {r["run_id"]: r for r in rows if r["run_id"] in run_ids}

    async def list_successful_regenerate_sources(self, thread_id: str, *, user_id: Any = AUTO) -> set[str]:
        """Source run ids that a successful regeneration superseded (the
        whole thread, no limit)."""
        user = _resolve(user_id, "AgentStateRunStore.list_successful_regenerate_sources")
        rows = await _to_thread(self._list_sync, thread_id, user, 1 << 62)
        out = set()
        for r in rows:
            src = (r["metadata"] or {}).get("regenerate_from_run_id")
            if r["status"] == "success" and isinstance(src, str) and src:
                out.add(src)
        return out

    async def list_edit_regenerate_runs(self, thread_id: str, *, user_id: Any = AUTO) -> list[dict[str, Any]]:
        """The thread's edit-regenerate attempts, oldest first."""
        user = _resolve(user_id, "AgentStateRunStore.list_edit_regenerate_runs")
        rows = await _to_thread(self._list_sync, thread_id, user, 1 << 62, False)
        out = []
        for r in reversed(rows):
            md = r["metadata"] or {}
            src = md.get("regenerate_from_run_id")
            if md.get("replay_kind") == "edit" and isinstance(src, str) and src:
                out.append(r)
        return out

    async def update_status(self, run_id: str, status: str, *, error: str | None = None, stop_reason: str | None = None) -> bool | None:
        """Moves the run to ``status`` with ``error`` and ``stop_reason``
        (None keeps the stored ones; totals are left alone) in one write.
        False when no run moved: missing, or already ended, but for
        DeerFlow's rollback path (interrupted, then error). An unknown
        status is an InvalidArgumentError."""
        res = await self._apply({"op": "status", "run_id": run_id, "status": str(status), "error": error, "stop_reason": stop_reason})
        return res["done"]

    def _start_sync(self, run_id: str) -> bool:
        try:
            if self._runs.get(run_id)["status"] != "pending":
                return False
            self._runs.set_status(run_id, "running")
        except (NotFoundError, ConflictError):
            return False
        return True

    async def start_run(self, run_id: str) -> bool:
        return await _to_thread(self._start_sync, run_id)

    def _delete_sync(self, run_id: str, user: str | None) -> None:
        try:
            if user is not None and self._runs.get(run_id)["user_id"] != user:
                return
            self._runs.delete(run_id)
        except NotFoundError:
            pass

    async def delete(self, run_id: str, *, user_id: Any = AUTO) -> None:
        user = _resolve(user_id, "AgentStateRunStore.delete")
        await _to_thread(self._delete_sync, run_id, user)

    async def delete_thread_operation(self, run_id: str, *, user_id: str | None) -> None:
        """Releases an admitted operation for its recorded owner (no request
        context needed)."""
        await _to_thread(self._delete_sync, run_id, user_id)

    def _complete_sync(self, run_id: str, status: str, error: Any, totals: dict[str, Any]) -> bool:
        try:
            if status in ("pending", "running"):
                # totals of a run still going: a snapshot, its status kept
                # (refused, False, once it has ended)
                self._runs.progress(run_id, totals)
                return True
            self._runs.complete(run_id, status, error=error or "", totals=totals)
        except (NotFoundError, ConflictError):
            return False
        return True

    async def update_run_completion(
        self,
        run_id: str,
        *,
        status: str,
        total_input_tokens: int = 0,
        total_output_tokens: int = 0,
        total_tokens: int = 0,
        llm_call_count: int = 0,
        lead_agent_tokens: int = 0,
        subagent_tokens: int = 0,
        middleware_tokens: int = 0,
        token_usage_by_model: dict[str, dict[str, int]] | None = None,
        message_count: int = 0,
        last_ai_message: str | None = None,
        first_human_message: str | None = None,
        error: str | None = None,
    ) -> bool | None:
        totals: dict[str, Any] = {
            "total_input_tokens": total_input_tokens,
            "total_output_tokens": total_output_tokens,
            "total_tokens": total_tokens,
            "llm_call_count": llm_call_count,
            "lead_agent_tokens": lead_agent_tokens,
            "subagent_tokens": subagent_tokens,
            "middleware_tokens": middleware_tokens,
            "message_count": message_count,
        }
        by_model = _by_model_in(token_usage_by_model)
        if by_model:
            totals["token_usage_by_model"] = by_model
        if last_ai_message:
            totals["last_ai_message"] = last_ai_message
        if first_human_message:
            totals["first_human_message"] = first_human_message
        return await _to_thread(self._complete_sync, run_id, status, error, totals)

    def _aggregate_sync(self, thread_id: str, include_active: bool) -> dict[str, Any]:
        u = self._runs.token_usage(thread_id, include_active=include_active)
        return {
            "total_tokens": u["total_tokens"],
            "total_input_tokens": u["total_input_tokens"],
            "total_output_tokens": u["total_output_tokens"],
            "total_runs": u["total_runs"],
            "by_model": {m: {"tokens": v.get("total", 0), "runs": v.get("runs", 0)} for m, v in (u.get("by_model") or {}).items()},
            "by_caller": dict(u["by_caller"]),
        }

    async def aggregate_tokens_by_thread(self, thread_id: str, *, include_active: bool = False) -> dict[str, Any]:
        return await _to_thread(self._aggregate_sync, thread_id, bool(include_active))

    def _model_sync(self, run_id: str, name: str) -> None:
        try:
            self._runs.set_model_name(run_id, name)
        except NotFoundError:
            pass

    async def update_model_name(self, run_id: str, model_name: str | None) -> None:
        """Sets the run's model (stripped, at most 128 characters; None
        clears it). A missing run is a no-op."""
        await _to_thread(self._model_sync, run_id, _model_name(model_name) or "")

    def _progress_sync(self, run_id: str, p: dict[str, Any]) -> None:
        try:
            self._runs.progress(run_id, p)
        except (NotFoundError, ConflictError):
            pass  # best effort: a run that ended keeps its final totals

    async def update_run_progress(
        self,
        run_id: str,
        *,
        total_input_tokens: int | None = None,
        total_output_tokens: int | None = None,
        total_tokens: int | None = None,
        llm_call_count: int | None = None,
        lead_agent_tokens: int | None = None,
        subagent_tokens: int | None = None,
        middleware_tokens: int | None = None,
        token_usage_by_model: dict[str, dict[str, int]] | None = None,
        message_count: int | None = None,
        last_ai_message: str | None = None,
        first_human_message: str | None = None,
    ) -> None:
        """A running snapshot of an active run's totals; omitted fields keep
        their values, the status is kept, an ended run is left alone."""
        p = _progress_in(
            total_input_tokens=total_input_tokens,
            total_output_tokens=total_output_tokens,
            total_tokens=total_tokens,
            llm_call_count=llm_call_count,
            lead_agent_tokens=lead_agent_tokens,
            subagent_tokens=subagent_tokens,
            middleware_tokens=middleware_tokens,
            token_usage_by_model=token_usage_by_model,
            message_count=message_count,
            last_ai_message=last_ai_message,
            first_human_message=first_human_message,
        )
        await _to_thread(self._progress_sync, run_id, p)

    def _active_sync(self, pending_only: bool, before: Any, runs_only: bool, lease_before: str | None = None) -> list[dict[str, Any]]:
        # at most 1000 (the engine's page): a thread has one active run, so
        # this is 1000 threads busy at once
        at = _rfc3339("before", before) or datetime.now(timezone.utc).isoformat()
        rows = self._runs.list_active(pending_only=pending_only, before=at, limit=1000, runs_only=runs_only, worker_lease_before=lease_before)
        return [_run_out(r) for r in rows]

    async def list_pending(self, *, before: str | None = None) -> list[dict[str, Any]]:
        """Pending runs (not reservations) of every thread created at or
        before ``before`` (default now), oldest first."""
        return await _to_thread(self._active_sync, True, before, True)

    async def list_inflight(self, *, before: str | None = None) -> list[dict[str, Any]]:
        """Pending and running operations of every thread created at or
        before ``before`` (default now), oldest first."""
        return await _to_thread(self._active_sync, False, before, False)

    async def list_inflight_with_expired_lease(self, *, before: str | None = None, grace_seconds: int = 10) -> list[dict[str, Any]]:
        """Active operations whose worker lease expired more than
        ``grace_seconds`` ago, or was never taken."""
        cutoff = (datetime.now(timezone.utc) - timedelta(seconds=grace_seconds)).isoformat()
        return await _to_thread(self._active_sync, False, before, False, cutoff)

    async def _apply(self, op: dict[str, Any]) -> dict[str, Any]:
        return await _to_thread(self._runs.apply, op)

    async def update_lease(self, run_id: str, *, owner_worker_id: str, lease_expires_at: str) -> bool:
        """Moves the lease of an active run that ``owner_worker_id`` owns;
        False when none matched."""
        return (await self.renew_lease(run_id, owner_worker_id=owner_worker_id, lease_expires_at=lease_expires_at)).renewed

    async def renew_lease(self, run_id: str, *, owner_worker_id: str, lease_expires_at: str) -> Any:
        """Renews the owner's lease and reads the cancellation requested, in
        one transaction (DeerFlow's ``LeaseRenewal``)."""
        res = await self._apply({"op": "renew", "run_id": run_id, "worker": owner_worker_id, "lease": _rfc3339("lease_expires_at", lease_expires_at)})
        return _df_run_classes()["lease"](renewed=res["done"], cancel_action=res["cancel_action"] if res["done"] else None)

    async def request_cancel(self, run_id: str, *, action: str) -> str | None:
        """Records the first cancellation action of an active run and
        returns the winning one; None when no active run matched."""
        if action not in ("interrupt", "rollback"):
            raise InvalidArgumentError(f"Unsupported cancellation action: {action}")
        res = await self._apply({"op": "cancel", "run_id": run_id, "action": action})
        return res["cancel_action"] if res["done"] else None

    async def finalize_if_not_cancelled(self, run_id: str, *, status: str, error: str | None = None, stop_reason: str | None = None) -> Any:
        """Ends an active run with ``status`` unless a cancellation won
        first (DeerFlow's ``StatusFinalization``)."""
        res = await self._apply({"op": "finalize", "run_id": run_id, "status": status, "error": error, "stop_reason": stop_reason})
        return _df_run_classes()["final"](finalized=res["done"], cancel_action=None if res["done"] else res["cancel_action"])

    async def claim_for_takeover(self, run_id: str, *, grace_seconds: int, error: str, stop_reason: str | None = None) -> bool:
        """Marks an active run ``error`` if its worker lease expired more than
        ``grace_seconds`` ago (or was never taken): one compare-and-set, so a
        renewal since the caller's read makes it False."""
        res = await self._apply({"op": "takeover", "run_id": run_id, "grace_seconds": int(grace_seconds), "error": error, "stop_reason": stop_reason})
        return res["done"]

    def _admit_sync(self, run: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        try:
            created = self._runs.create(run)
        except ConflictError as e:
            raise _active_conflict(run["thread_id"], e) from e
        out = _run_out(created["run"])
        if not created["new"]:
            if out["run_id"] != run["run_id"]:
                raise _df_run_classes()["idempotency"](out)
            return out, []
        claimed = []
        if created.get("interrupted"):
            claimed.append(_run_out(self._runs.get(created["interrupted"])))
        return out, claimed

    async def create_thread_operation_atomic(
        self,
        run_id: str,
        *,
        thread_id: str,
        owner_worker_id: str,
        lease_expires_at: str | None,
        operation_kind: str = "run",
        multitask_strategy: str = "reject",
        assistant_id: str | None = None,
        user_id: str | None = None,
        model_name: str | None = None,
        metadata: dict[str, Any] | None = None,
        kwargs: dict[str, Any] | None = None,
        created_at: str | None = None,
        grace_seconds: int = 10,
        idempotency_key: str | None = None,
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Admits a pending operation on the thread in one transaction:
        ``reject`` refuses an active one (DeerFlow's ConflictError);
        ``interrupt`` / ``rollback`` interrupt it unless another worker's
        lease on it is valid or it is a live reservation, and return it as
        claimed. An idempotency key used before, on any thread, raises
        ``RunIdempotencyConflict`` carrying that run."""
        user = _resolve(user_id if user_id is not None else AUTO, "AgentStateRunStore.create_thread_operation_atomic")
        run = {
            "run_id": run_id,
            "thread_id": thread_id,
            "assistant_id": assistant_id,
            "user_id": user,
            "model_name": _model_name(model_name),
            "multitask_strategy": multitask_strategy,
            "metadata": _jsonable(metadata) or None,
            "kwargs": _jsonable(kwargs) or None,
            "idempotency_key": idempotency_key,
            "created_at": _rfc3339("created_at", created_at),
            "operation_kind": _kind(operation_kind),
            "worker": owner_worker_id,
            "worker_lease": _rfc3339("lease_expires_at", lease_expires_at),
            "worker_grace_seconds": int(grace_seconds),
        }
        return await _to_thread(self._admit_sync, {k: v for k, v in run.items() if v is not None})

    async def create_run_atomic(self, run_id: str, **kw: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """DeerFlow's former name of ``create_thread_operation_atomic`` for runs."""
        kw.pop("operation_kind", None)
        return await self.create_thread_operation_atomic(run_id, operation_kind="run", **kw)


def _kind(operation_kind: Any) -> str | None:
    """DeerFlow's operation kind (an enum or its value); "run" is the
    engine's default, stored as nothing."""
    k = getattr(operation_kind, "value", operation_kind)
    k = str(k) if k is not None else "run"
    return None if k == "run" else k


# --- registration with DeerFlow's ABCs, where DeerFlow is importable --------

for _abc, _cls in (
    (_df_class("deerflow.runtime.events.store.base", "RunEventStore"), AgentStateRunEventStore),
    (_df_class("deerflow.persistence.thread_meta.base", "ThreadMetaStore"), AgentStateThreadMetaStore),
    (_df_class("deerflow.runtime.runs.store.base", "RunStore"), AgentStateRunStore),
):
    if _abc is not None:  # pragma: no cover
        _abc.register(_cls)
