"""AgentStateSaver: LangGraph's checkpoint saver on the agentstate engine."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.types import TASKS

from ._db import Database
from .errors import AgentStateError, ConflictError, InvalidArgumentError, NotFoundError, error_for


class MissingThreadIdError(InvalidArgumentError, KeyError):
    """config["configurable"]["thread_id"] is missing (a KeyError, as
    LangGraph's own savers raise)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _thread_id(config: RunnableConfig | None, what: str) -> str:
    c = (config or {}).get("configurable") or {}
    t = c.get("thread_id")
    if t is None or t == "":
        raise MissingThreadIdError(f"agentstate: {what}: config['configurable']['thread_id'] is missing")
    return str(t)


def _wire_config(config: RunnableConfig, what: str) -> dict[str, Any]:
    c = config.get("configurable") or {}
    out: dict[str, Any] = {"thread_id": _thread_id(config, what), "checkpoint_ns": c.get("checkpoint_ns") or ""}
    cid = get_checkpoint_id(config)
    if cid:
        out["checkpoint_id"] = cid
    return out


def _lg_config(c: Mapping[str, Any]) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": c["thread_id"],
            "checkpoint_ns": c.get("checkpoint_ns") or "",
            "checkpoint_id": c.get("checkpoint_id"),
        }
    }


def _version_out(v: Any, what: str) -> str:
    if isinstance(v, bool):
        raise InvalidArgumentError(f"agentstate: {what}: a version must be a str, int or float, got bool")
    if isinstance(v, str):
        return v
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise InvalidArgumentError(f"agentstate: {what}: version {v} is not finite")
        return repr(v)
    raise InvalidArgumentError(f"agentstate: {what}: a version must be a str, int or float, got {type(v).__name__}")


# A version that a caller reused for a different value in the same thread
# is stored as VERSION + _REUSED + the checkpoint id (see put) and read back
# as VERSION.
_REUSED = "\x1f"


def _version_in(s: str) -> Any:
    # What went in as a number comes back as one: "3" is 3, "2.5" is 2.5;
    # LangGraph's own string versions ("000...02.0.51...") stay strings.
    if _REUSED in s:
        s = s.split(_REUSED, 1)[0]
    if s and len(s) < 24:
        if s.isdigit() and (s == "0" or s[0] != "0"):
            return int(s)
        try:
            f = float(s)
        except ValueError:
            return s
        if repr(f) == s:
            return f
    return s


def _versions_out(m: Mapping[str, Any] | None, what: str) -> dict[str, str]:
    return {k: _version_out(v, f"{what} {k}") for k, v in (m or {}).items()}


def _versions_in(m: Mapping[str, str] | None) -> dict[str, Any]:
    return {k: _version_in(v) for k, v in (m or {}).items()}


class _Bufs:
    __slots__ = ("list",)

    def __init__(self) -> None:
        self.list: list[bytes] = []

    def add(self, typed: tuple[str, bytes]) -> dict[str, Any]:
        t, b = typed
        self.list.append(bytes(b))
        return {"t": t, "b": len(self.list) - 1}


_STORED_KEYS = 1024
_PARK_GRACE = 0.005


class _Parked:
    """Writes waiting for their checkpoint's put (AgentStateSaver._park)."""

    __slots__ = ("req", "bufs", "done", "settled", "error")

    def __init__(self, req: dict, bufs: list[bytes]) -> None:
        self.req = req
        self.bufs = bufs
        self.done = False  # the put that took them has ended
        self.settled = False  # ... and stored them, or refused them (error)
        self.error: AgentStateError | None = None


class AgentStateSaver(BaseCheckpointSaver[str]):
    """A LangGraph checkpoint saver that keeps checkpoints in an agentstate
    file: each channel value stored once per version, large values as
    deltas against their previous version, everything in one SQLite file
    that the agentstate CLI, the Go API and the npm package read too.

    Sync and async methods live on one class (the async ones run the sync
    ones in a worker thread, so that an event loop never waits on SQLite).
    The saver is safe to share between threads: calls take turns on the
    engine.

    Args:
        path: the file (created if missing), or ``":memory:"``.
        serde: LangGraph's serializer (default: ``JsonPlusSerializer``); the
            engine stores the ``(type, bytes)`` it makes, unread.
        db: an open :class:`Database` to use instead of ``path`` (shared
            with an :class:`AgentStateStore`); the saver then does not close it.
        **options: :class:`Database`'s options (``mode``, ``every``,
            ``busy_timeout_ms``, ...).
    """

    def __init__(
        self,
        path: str = ":memory:",
        *,
        serde: SerializerProtocol | None = None,
        db: Database | None = None,
        **options: Any,
    ) -> None:
        super().__init__(serde=serde)
        if db is not None and (options or path != ":memory:"):
            raise InvalidArgumentError("agentstate: give a path with options, or db, not both")
        self._owns_db = db is None
        self.db = db if db is not None else Database(path, **options)
        self._cond = threading.Condition()
        self._stored: OrderedDict[str, None] = OrderedDict()
        # How writes meet their checkpoint (see put_writes): under _cond.
        self._inflight: dict[str, int] = {}  # thread key -> puts in progress
        self._putting: dict[str, bool] = {}  # checkpoint key -> its put has sent its request
        self._parked: dict[str, list[_Parked]] = {}  # checkpoint key -> writes waiting for its put
        self._active: OrderedDict[str, None] = OrderedDict()  # thread keys this saver put to (the latest _STORED_KEYS)
        self._prefetched: tuple[str, set[str], dict[str, Any], list[bytes]] | None = None

    # ---- life cycle

    @classmethod
    def from_conn_string(cls, path: str, **options: Any) -> _Opener:
        """A context manager (``with`` and ``async with``) giving a saver on
        path, closed on exit: ``with AgentStateSaver.from_conn_string("agent.db") as saver:``."""
        return _Opener(lambda: cls(path, **options))

    def close(self) -> None:
        """Closes the file if this saver opened it."""
        if self._owns_db:
            self.db.close()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def __enter__(self) -> AgentStateSaver:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    async def __aenter__(self) -> AgentStateSaver:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    # ---- reading

    def _value(self, blob: Mapping[str, Any], bufs: list[bytes]) -> Any:
        return self.serde.loads_typed((blob["t"], bufs[blob["b"]]))

    def _tuple(self, t: Mapping[str, Any], bufs: list[bytes]) -> CheckpointTuple:
        cp = t["checkpoint"]
        checkpoint: Checkpoint = {
            "v": cp["v"],
            "id": cp["id"],
            "ts": cp["ts"],
            "channel_values": {ch: self._value(b, bufs) for ch, b in (cp.get("values") or {}).items()},
            "channel_versions": _versions_in(cp.get("versions")),
            "versions_seen": {n: _versions_in(vs) for n, vs in (cp.get("seen") or {}).items()},
            "updated_channels": cp.get("updated"),
        }
        parent = _lg_config(t["parent"]) if t.get("parent") else None
        writes = [(w["taskId"], w["channel"], self._value(w["value"], bufs)) for w in t.get("writes") or ()]
        if parent is not None and checkpoint["v"] < 4 and TASKS not in checkpoint["channel_values"]:
            self._migrate_pending_sends(checkpoint, parent)
        return CheckpointTuple(_lg_config(t["config"]), checkpoint, t.get("metadata") or {}, parent, writes)

    def _migrate_pending_sends(self, checkpoint: Checkpoint, parent: RunnableConfig) -> None:
        # Format 1-3 kept Send packets as the parent's TASKS writes; LangGraph
        # reads them into the channel, as its own savers do on read.
        r, bufs = self.db.call("getTuple", {"config": _wire_config(parent, "get_tuple")})
        t = r.get("tuple")
        sends = [self._value(w["value"], bufs) for w in (t or {}).get("writes") or () if w["channel"] == TASKS]
        if not sends:
            return
        checkpoint["channel_values"][TASKS] = sends
        versions = checkpoint["channel_versions"]
        checkpoint["channel_versions"][TASKS] = (
            max(versions.values(), key=_version_key) if versions else self.get_next_version(None, None)
        )

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint config names (its checkpoint_id), or the thread's
        latest in its namespace; None when there is none."""
        self._prefetched = None
        r, bufs = self.db.call("getTuple", {"config": _wire_config(config, "get_tuple"), "deltaHistory": True})
        t = r.get("tuple")
        if not t:
            return None
        c = t["config"]
        self._remember(_key(c, c.get("checkpoint_id")))  # writes to it need not wait
        if r.get("history"):
            self._prefetched = (_key(c, c.get("checkpoint_id")), set(r.get("historyChannels") or ()), r["history"], bufs)
        return self._tuple(t, bufs)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first: of config's thread (and namespace, when
        it names one), or of every thread when config is None."""
        self._prefetched = None
        c = (config or {}).get("configurable") or {}
        if limit is not None and limit <= 0:
            return
        tid = c.get("thread_id")
        req: dict[str, Any] = {"threadId": "" if tid is None else str(tid), "limit": limit or 0}
        if "checkpoint_ns" in c and c["checkpoint_ns"] is not None:
            req["namespace"] = c["checkpoint_ns"]
        if filter:
            req["filter"] = filter
        b = get_checkpoint_id(before) if before else None
        if b:
            req["before"] = b
        only = c.get("checkpoint_id")
        if only:
            if b and only >= b:
                return
            req["before"] = only + "\u0000"
            req["limit"] = 0
        r, _ = self.db.call("list.open", req)
        cursor = r["cursor"]
        finished = False
        try:
            more = True
            while more:
                r, bufs = self.db.call("list.next", {"cursor": cursor, "n": 8 if only else 32})
                finished = r["done"]
                more = not finished
                for t in r["tuples"]:
                    if only and t["config"].get("checkpoint_id") != only:
                        if t["config"].get("checkpoint_id", "") < only:
                            more = False
                            break
                        continue
                    yield self._tuple(t, bufs)
        finally:
            if not finished and not self.db.closed:
                try:
                    self.db.call("list.close", {"cursor": cursor})
                except AgentStateError:
                    pass

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """For each channel, the writes since its nearest stored value on
        the parent chain of config's checkpoint, oldest first, and that
        value as the seed (absent when the walk reached the root)."""
        if not channels:
            return {}
        wc = _wire_config(config, "get_delta_channel_history")
        pre = self._prefetched
        self._prefetched = None
        if pre is not None and "checkpoint_id" in wc and pre[0] == _key(wc, wc["checkpoint_id"]) and set(channels) <= pre[1]:
            hist, bufs = pre[2], pre[3]
        else:
            hist, bufs = self.db.call("deltaHistory", {"config": wc, "channels": list(channels)})
        out: dict[str, DeltaChannelHistory] = {}
        for ch in channels:
            h = hist.get(ch) or {}
            entry: DeltaChannelHistory = {
                "writes": [(w["taskId"], w["channel"], self._value(w["value"], bufs)) for w in h.get("writes") or ()]
            }
            if h.get("seed") is not None:
                entry["seed"] = self._value(h["seed"], bufs)
            out[ch] = entry
        return out

    # ---- writing

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Stores a checkpoint: the values of the channels in new_versions,
        its versions, metadata and parent (config's checkpoint_id)."""
        self._prefetched = None
        cfg = _wire_config(config, "put")
        key = _key(cfg, checkpoint["id"])
        tkey = _key(cfg, None)
        with self._cond:
            # Writes for this checkpoint that come from now on wait for it.
            self._inflight[tkey] = self._inflight.get(tkey, 0) + 1
            self._putting[key] = False
        try:
            return self._put_registered(cfg, key, checkpoint, metadata, new_versions, config)
        finally:
            with self._cond:
                n = self._inflight[tkey] - 1
                if n:
                    self._inflight[tkey] = n
                else:
                    del self._inflight[tkey]
                self._putting.pop(key, None)
                self._cond.notify_all()

    def _put_registered(self, cfg, key, checkpoint, metadata, new_versions, config) -> RunnableConfig:
        bufs = _Bufs()
        values: dict[str, Any] = {}
        cv = checkpoint.get("channel_values") or {}
        dumps = self.serde.dumps_typed
        for ch in new_versions or {}:
            if ch in cv:
                values[ch] = bufs.add(dumps(cv[ch]))
        cp: dict[str, Any] = {
            "v": checkpoint["v"],
            "id": checkpoint["id"],
            "ts": checkpoint["ts"],
            "values": values,
            "versions": _versions_out(checkpoint.get("channel_versions"), "channel_versions"),
            "seen": {n: _versions_out(vs, f"versions_seen {n}") for n, vs in (checkpoint.get("versions_seen") or {}).items()},
        }
        updated = checkpoint.get("updated_channels")
        if updated is not None:
            cp["updated"] = list(updated)
        md = get_checkpoint_metadata(config, metadata)
        req = {"config": cfg, "checkpoint": cp, "metadata": md, "newVersions": _versions_out(new_versions, "new_versions")}
        with self._cond:
            parked = self._parked.pop(key, None)
            self._putting[key] = True
        try:
            r = self._put(req, cp, checkpoint["id"], values, bufs.list, parked)
            self._remember(_key(r["config"], r["config"].get("checkpoint_id")), _key(cfg, None))
            return _lg_config(r["config"])
        finally:
            if parked:
                with self._cond:
                    for p in parked:
                        p.done = True  # those the batch did not settle send themselves
                    self._cond.notify_all()

    def _put(self, req: dict, cp: dict, cid: str, values: dict, bufs: list[bytes], parked: list[_Parked] | None) -> dict:
        try:
            if not parked:
                r, _ = self.db.call("put", req, bufs)
                return r
            # The writes that waited for this checkpoint go with it, in one
            # crossing (writes.batch: each op in its own transaction, in
            # order). Their blob references index the batch's one list.
            ops: list[dict[str, Any]] = [{"op": "put", "req": req}]
            allbufs = list(bufs)
            for p in parked:
                base = len(allbufs)
                allbufs.extend(p.bufs)
                wreq = dict(p.req)
                wreq["writes"] = [{"channel": w["channel"], "value": {"t": w["value"]["t"], "b": w["value"]["b"] + base}} for w in p.req["writes"]]
                ops.append({"op": "putWrites", "req": wreq})
            rb, _ = self.db.call("writes.batch", {"ops": ops}, allbufs)
            res = rb["results"]
            if "error" in res[0]:
                # The put failed: its writes were refused with it (NOT_FOUND)
                # and send themselves again, after what follows.
                raise error_for(res[0]["code"], res[0]["error"])
            for p, wr in zip(parked, res[1:]):
                p.error = error_for(wr["code"], wr["error"]) if "error" in wr else None
                p.settled = True
            return res[0]["ok"]
        except ConflictError as e:
            # The engine keeps one value per (channel, version) of a thread;
            # LangGraph's versions are unique, but a caller may reuse one
            # for another value. Each checkpoint then keeps its own value,
            # under a version only it uses, read back as the one put.
            if "already holds" not in str(e) or not values:
                raise
            for ch in values:
                sv = f"{cp['versions'][ch]}{_REUSED}{cid}"
                cp["versions"][ch] = sv
                req["newVersions"][ch] = sv
            r, _ = self.db.call("put", req, bufs)
            return r

    def _remember(self, key: str, tkey: str | None = None) -> None:
        with self._cond:
            for d, k in ((self._stored, key), (self._active, tkey)):
                if k is None:
                    continue
                d.pop(k, None)
                d[k] = None
                if len(d) > _STORED_KEYS:
                    d.popitem(last=False)
            self._cond.notify_all()

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Stores a task's writes under config's checkpoint, which must have
        been put (LangGraph may send them while that put is still on its
        way in another thread: they then wait for it)."""
        self._prefetched = None
        cfg = _wire_config(config, "put_writes")
        if "checkpoint_id" not in cfg:
            raise InvalidArgumentError("agentstate: put_writes: config['configurable']['checkpoint_id'] is missing")
        bufs = _Bufs()
        dumps = self.serde.dumps_typed
        ws = [{"channel": ch, "value": bufs.add(dumps(v))} for ch, v in writes]
        req = {"config": cfg, "writes": ws, "taskId": task_id, "taskPath": task_path or ""}
        key = _key(cfg, cfg["checkpoint_id"])
        if self._park(key, _key(cfg, None), req, bufs.list):
            return
        try:
            self.db.call("putWrites", req, bufs.list)
        except NotFoundError:
            if not self._wait_stored(key):
                raise
            self.db.call("putWrites", req, bufs.list)

    # How writes meet their checkpoint. LangGraph runs each put behind the
    # one before, in a background thread, and sends a task's writes as soon
    # as the task ends, so the writes often come while the put of their
    # checkpoint is still waiting for the put before it, or running (the
    # engine refuses writes to a checkpoint it does not have). Writes whose
    # checkpoint this saver has stored (or read) go at once; writes whose
    # checkpoint's put has not yet sent its request, or that come while a put
    # of their thread is in progress (or to a thread this saver has put to:
    # LangGraph has submitted the put, which has not begun yet), wait
    # (parked) and that put, if it is theirs, sends them with it in one
    # crossing; writes whose checkpoint's
    # put has been sent wait for it to end. Parked writes whose put has not
    # come when their thread has no put in progress (after a short grace for
    # the next put to begin) go alone, as before: a NOT_FOUND then waits for
    # the checkpoint to be stored, then retries.

    def _park(self, key: str, tkey: str, req: dict, bufs: list[bytes]) -> bool:
        """True when a put took the writes along and stored them (their
        error, if any, is raised); False when the caller sends them."""
        with self._cond:
            if key in self._stored:
                return False
            sent = self._putting.get(key)
            if sent:
                while key in self._putting:
                    self._cond.wait()
                return False
            if sent is None and not self._inflight.get(tkey) and tkey not in self._active:
                return False
            p = _Parked(req, bufs)
            self._parked.setdefault(key, []).append(p)
            grace = 0.0
            try:
                while not p.done:
                    if self._parked.get(key) is not None and p in self._parked[key] and key not in self._putting and not self._inflight.get(tkey):
                        # Nothing in progress could be this checkpoint's put:
                        # give the next one a moment to begin, then go alone.
                        now = time.monotonic()
                        if not grace:
                            grace = now + _PARK_GRACE
                        elif now >= grace:
                            break
                        self._cond.wait(grace - now)
                        continue
                    grace = 0.0
                    self._cond.wait(1.0)
            finally:
                lst = self._parked.get(key)
                if lst is not None and p in lst:
                    lst.remove(p)
                    if not lst:
                        del self._parked[key]
        if not p.settled:
            return False
        if p.error is not None:
            raise p.error
        return True

    def _wait_stored(self, key: str, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while key not in self._stored:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def delete_thread(self, thread_id: str) -> None:
        """Deletes every checkpoint and write of the thread, in every namespace."""
        self._prefetched = None
        self.db.call("deleteThread", {"threadId": str(thread_id)})

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Deletes the checkpoints (and their writes) whose metadata names
        one of run_ids. A checkpoint of another run that descends from one
        of them stays, as a root (LangGraph's semantics: a DeltaChannel whose
        history ran through the deleted checkpoints restarts there)."""
        self._prefetched = None
        self.db.call("deleteForRuns", {"runIds": [str(r) for r in run_ids], "reroot": True})

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copies every checkpoint and write of source to target."""
        self._prefetched = None
        self.db.call("copyThread", {"src": str(source_thread_id), "dst": str(target_thread_id)})

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``"keep_latest"`` keeps each namespace's latest checkpoint (and
        what its delta channels need); ``"delete"`` removes every checkpoint."""
        self._prefetched = None
        self.db.call("prune", {"threadIds": [str(t) for t in thread_ids], "strategy": strategy})

    def get_next_version(self, current: str | None, channel: None = None) -> str:
        """LangGraph's own string versions (as SqliteSaver's): a counter and a
        random tie-breaker, increasing as strings."""
        if current is None:
            v = 0
        elif isinstance(current, (int, float)):
            v = int(current)
        else:
            v = int(str(current).split(".")[0])
        return f"{v + 1:032}.{random.random():016}"

    # ---- async: the same calls in a worker thread

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        it = self.list(config, filter=filter, before=before, limit=limit)
        done = object()
        try:
            while True:
                t = await asyncio.to_thread(next, it, done)
                if t is done:
                    return
                yield t
        finally:
            await asyncio.to_thread(it.close)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await asyncio.to_thread(lambda: self.get_delta_channel_history(config=config, channels=channels))


def _key(c: Mapping[str, Any], cid: str | None) -> str:
    return f"{c['thread_id']}\0{c.get('checkpoint_ns') or ''}\0{cid}"


def _version_key(v: Any) -> tuple:
    return (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v))


class _Opener(AbstractContextManager, AbstractAsyncContextManager):
    """What from_conn_string returns: opens on enter, closes on exit."""

    def __init__(self, make: Any) -> None:
        self._make = make
        self._obj: Any = None

    def __enter__(self) -> Any:
        self._obj = self._make()
        return self._obj

    def __exit__(self, *exc: Any) -> None:
        if self._obj is not None:
            self._obj.close()

    async def __aenter__(self) -> Any:
        self._obj = await asyncio.to_thread(self._make)
        return self._obj

    async def __aexit__(self, *exc: Any) -> None:
        if self._obj is not None:
            await asyncio.to_thread(self._obj.close)
