"""AgentStateSaver: LangGraph's checkpoint saver on the agentstate engine."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import re
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
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
from .errors import AgentStateError, ClosedError, ConflictError, InvalidArgumentError, NotFoundError, error_for


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
# Writes held for checkpoints whose put has not come (see put_writes): at
# most this many bytes in all; tried alone again after _HELD_RETRY seconds.
_HELD_BYTES = 256 << 20
_HELD_RETRY = 1.0
# Turns of the event loop aput_writes gives a put that is likely on its way
# before it tries its writes alone, and that an aput's thread keeps counting
# as putting after it ends (aput).
_YIELDS = 4
_LINGER_TURNS = 4


def _after_turns(loop: asyncio.AbstractEventLoop, n: int, fn: Callable[[], None]) -> None:
    """Runs fn after n turns of loop (callbacks scheduled now run first)."""
    if n <= 0:
        fn()
    else:
        loop.call_soon(_after_turns, loop, n - 1, fn)

_log = logging.getLogger("langgraph.checkpoint.agentstate")


class _Writes:
    """One put_writes call's request, on its way to the engine."""

    __slots__ = ("req", "bufs", "size", "held", "since", "settled", "error")

    def __init__(self, req: dict, bufs: list[bytes]) -> None:
        self.req = req
        self.bufs = bufs
        self.size = sum(len(b) for b in bufs) + 256
        self.held = False  # acknowledged before its checkpoint's put came
        self.since = 0.0
        self.settled = False  # a put sent it with itself: stored, or refused (error)
        self.error: AgentStateError | None = None


class _Put:
    """A put in progress, for the writes that come for its checkpoint."""

    __slots__ = ("began", "sent", "done", "writes", "wakers", "linger")

    def __init__(self) -> None:
        self.linger = False  # aput ends its thread's count later (_release)
        self.began = False  # its worker has begun it
        self.sent = False  # its request (and the writes in it) has gone
        self.done = False
        self.writes: list[_Writes] = []  # what goes with it
        self.wakers: list[Callable[[], None]] = []  # coroutines waiting for it to end


# How put_writes routes writes (AgentStateSaver._route).
_DIRECT, _TRY, _WITH_PUT, _AFTER_PUT, _HELD = (object() for _ in range(5))


def _taken(w: _Writes) -> bool:
    """Whether a put sent w with itself (raising the error it met)."""
    if not w.settled:
        return False
    if w.error is not None:
        raise w.error
    return True


class _ExtraConflict(Exception):
    """A put's values beside new_versions met values stored already."""


_CONFLICT_CHANNEL = re.compile(r'channel ("(?:[^"\\]|\\.)*") version')


def _conflict_channel(e: BaseException | None) -> str | None:
    """The channel a ConflictError of the engine names, if it names one."""
    m = _CONFLICT_CHANNEL.search(str(e or ""))
    if m is None:
        return None
    try:
        return json.loads(m.group(1))
    except ValueError:
        return None


def _settle(ws: list[_Writes], error: AgentStateError | None) -> None:
    for w in ws:
        w.settled = True
        w.error = error


def _reused_version(e: AgentStateError, values: dict) -> bool:
    return isinstance(e, ConflictError) and "already holds" in str(e) and bool(values)


def _show_key(k: str) -> str:
    t, ns, cid = k.split("\0", 2)
    return f"{cid!r} of thread {t!r}" + (f" (namespace {ns!r})" if ns else "")


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
        self._pid = os.getpid()
        _savers.add(self)
        # How writes meet their checkpoint (see put_writes): under _cond.
        self._stored: OrderedDict[str, None] = OrderedDict()  # checkpoint keys stored or read (the latest _STORED_KEYS)
        self._inflight: dict[str, int] = {}  # thread key -> puts in progress
        self._puts: dict[str, _Put] = {}  # checkpoint key -> its put, in progress
        self._held: dict[str, list[_Writes]] = {}  # checkpoint key -> writes acknowledged before its put came
        self._held_bytes = 0
        self._recent: OrderedDict[str, None] = OrderedDict()  # thread keys this saver put to (the latest _STORED_KEYS)
        # thread key -> channel -> the version whose value is known stored (see _put_request)
        self._known: OrderedDict[str, dict[str, str]] = OrderedDict()
        self._prefetched: tuple[str, set[str], dict[str, Any], list[bytes]] | None = None

    # ---- life cycle

    @classmethod
    def from_conn_string(cls, path: str, **options: Any) -> _Opener:
        """A context manager (``with`` and ``async with``) giving a saver on
        path, closed on exit: ``with AgentStateSaver.from_conn_string("agent.db") as saver:``."""
        return _Opener(lambda: cls(path, **options))

    def close(self) -> None:
        """Stores the writes still held for a checkpoint whose put has not
        come (reporting, as a warning, those whose checkpoint the file does
        not hold), then closes the file if this saver opened it."""
        if self._held and self._pid == os.getpid() and not self.db.closed:
            self._flush_held(lambda k: True)
            with self._cond:
                lost, self._held, self._held_bytes = self._held, {}, 0
            for k, ws in lost.items():
                _log.warning(
                    "agentstate: %d writes for checkpoint %s were not stored: the checkpoint was never put",
                    len(ws), _show_key(k),
                )
        if self._owns_db:
            self.db.close()

    def setup(self) -> _Done:
        """LangGraph's set-up call, in both of its forms: ``saver.setup()``
        (SqliteSaver's) and ``await saver.setup()`` (AsyncSqliteSaver's).
        The file is opened, migrated and checked when the saver is made, so
        there is nothing left to do: setup checks that the saver is open
        (``ClosedError`` if not) and may be called any number of times."""
        if self.db.closed:
            raise ClosedError(f"agentstate: {self.db.path} is closed")
        return _DONE

    async def asetup(self) -> None:
        """The async form of :meth:`setup`."""
        self.setup()

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
        self._flush_held_of(config)
        r, bufs = self.db.call("getTuple", {"config": _wire_config(config, "get_tuple"), "deltaHistory": True})
        t = r.get("tuple")
        if not t:
            return None
        c = t["config"]
        self._remember(_key(c, c.get("checkpoint_id")))  # writes to it need not wait
        self._learn(_key(c, None), t["checkpoint"].get("versions") or {}, t["checkpoint"].get("values") or {})
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
        self._flush_held_of(config)
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
            try:
                hist, bufs = self.db.call("deltaHistory", {"config": wc, "channels": list(channels)})
            except NotFoundError:
                # No such thread or checkpoint: no writes, no seed, as
                # LangGraph's own walk answers (it asks before a new
                # thread's first checkpoint).
                hist, bufs = {}, []
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
    #
    # How writes meet their checkpoint. LangGraph sends a task's writes as
    # soon as the task ends, while the put of their checkpoint may still be
    # queued behind the put before it (in a background thread, or a task of
    # the event loop), and the engine refuses writes to a checkpoint it does
    # not hold. No call here ever waits for a call that may be queued behind
    # it (the executor's threads are not ours to hold):
    #
    # - writes whose checkpoint this saver has stored (or read) go at once;
    # - writes whose checkpoint's put is running go with it, in its crossing
    #   (writes.batch), and return when it has stored them, or wait for it
    #   to end when it has already sent its request, then go alone;
    # - writes whose checkpoint's put has not begun are held: they return at
    #   once, and the put of their checkpoint stores them (in its crossing,
    #   before it returns, so before LangGraph's next put, which waits for
    #   both). A write held while no put of its thread runs is first tried
    #   alone; only a NOT_FOUND holds it. Held writes whose put does not come
    #   are tried again by later puts (after _HELD_RETRY seconds), by reads
    #   of their thread, and at close, where what still has no checkpoint is
    #   reported (a warning naming it), as LangGraph's savers, which store
    #   writes without their checkpoint, would keep rows no read returns.

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
        key, tkey = _key(cfg, checkpoint["id"]), _key(cfg, None)
        with self._cond:
            while key in self._puts:  # the same checkpoint put twice at once: after the running one
                self._check_fork()
                self._cond.wait()
            p = self._begin_put(key, tkey)
        return self._put_begun(cfg, key, tkey, p, checkpoint, metadata, new_versions, config)

    def _put_begun(self, cfg, key, tkey, p: _Put, checkpoint, metadata, new_versions, config) -> RunnableConfig:
        with self._cond:
            if p.done:  # ended before it began (aput was cancelled)
                raise asyncio.CancelledError()
            p.began = True
        try:
            req, values, bufs, extra = self._put_request(cfg, tkey, checkpoint, metadata, new_versions, config)
            with self._cond:
                ws = self._take_held(key)
                ws.extend(p.writes)
                p.writes = ws
                p.sent = True
            while True:
                try:
                    r = self._send_put(req, checkpoint["id"], values, bufs, ws, bool(extra))
                    break
                except _ExtraConflict as e:
                    # A value put beside new_versions met a value stored
                    # under its version already: that one stays (the one
                    # the error names, else all of them).
                    ch = _conflict_channel(e.__cause__)
                    for c in [ch] if ch in extra else list(extra):
                        extra.remove(c)
                        del req["newVersions"][c], values[c]  # values is req["checkpoint"]["values"]
            self._remember(_key(r["config"], r["config"].get("checkpoint_id")), tkey)
            self._learn(tkey, req["checkpoint"]["versions"], req["checkpoint"]["values"])
            failed = next((w.error for w in ws if w.held and w.error is not None), None)
            if failed is not None:
                # Writes this saver had acknowledged were refused: the run
                # must not go on as if they were stored.
                raise failed
            return _lg_config(r["config"])
        finally:
            self._end_put(key, tkey, p)

    def _begin_put(self, key: str, tkey: str) -> _Put:
        # under _cond, with no put of key in progress
        self._check_fork()
        p = self._puts[key] = _Put()
        self._inflight[tkey] = self._inflight.get(tkey, 0) + 1
        return p

    def _end_put(self, key: str, tkey: str, p: _Put) -> None:
        with self._cond:
            if p.done:
                return
            if not p.linger:
                self._release(tkey)
            del self._puts[key]
            p.done = True
            wakers, p.wakers = p.wakers, []
            retry = self._held and min(ws[0].since for ws in self._held.values()) < time.monotonic() - _HELD_RETRY
            self._cond.notify_all()
        for wake in wakers:
            wake()
        if retry:
            self._flush_held(lambda k: True, older=_HELD_RETRY)

    def _release(self, tkey: str) -> None:
        # under _cond: a put of tkey's thread no longer in progress
        n = self._inflight[tkey] - 1
        if n:
            self._inflight[tkey] = n
        else:
            del self._inflight[tkey]

    def _put_request(self, cfg, tkey, checkpoint, metadata, new_versions, config) -> tuple[dict, dict, list[bytes], list[str]]:
        bufs = _Bufs()
        values: dict[str, Any] = {}
        cv = checkpoint.get("channel_values") or {}
        dumps = self.serde.dumps_typed
        for ch in new_versions or {}:
            if ch in cv:
                values[ch] = bufs.add(dumps(cv[ch]))
        versions = _versions_out(checkpoint.get("channel_versions"), "channel_versions")
        new = _versions_out(new_versions, "new_versions")
        # A value for a channel new_versions does not name is put too when
        # this saver does not know its version's value to be stored (a
        # checkpoint written by hand, as DeerFlow's are, rather than by
        # LangGraph's loop, which names every changed channel): stored when
        # no value of that version is (AsyncSqliteSaver keeps every value it
        # is given), never replacing one that is.
        with self._cond:
            known = self._known.get(tkey) or {}
            extra = [ch for ch in cv if ch not in values and ch in versions and known.get(ch) != versions[ch]]
        for ch in extra:
            values[ch] = bufs.add(dumps(cv[ch]))
            new[ch] = versions[ch]
        cp: dict[str, Any] = {
            "v": checkpoint["v"],
            "id": checkpoint["id"],
            "ts": checkpoint["ts"],
            "values": values,
            "versions": versions,
            "seen": {n: _versions_out(vs, f"versions_seen {n}") for n, vs in (checkpoint.get("versions_seen") or {}).items()},
        }
        updated = checkpoint.get("updated_channels")
        if updated is not None:
            cp["updated"] = list(updated)
        md = get_checkpoint_metadata(config, metadata)
        req = {"config": cfg, "checkpoint": cp, "metadata": md, "newVersions": new}
        return req, values, bufs.list, extra

    def _learn(self, tkey: str, versions: Mapping[str, str], values: Mapping[str, Any]) -> None:
        """Remembers that the values of these channels' versions are stored
        (see _put_request)."""
        with self._cond:
            known = self._known.pop(tkey, None) or {}
            self._known[tkey] = known
            for ch in values:
                v = versions.get(ch)
                if v is not None:
                    known[ch] = v
            if len(self._known) > _STORED_KEYS:
                self._known.popitem(last=False)

    def _send_put(self, req: dict, cid: str, values: dict, bufs: list[bytes], ws: list[_Writes], extra: bool) -> dict:
        """Sends the put and the writes ws with it. extra: the put carries
        values beside new_versions, which a ConflictError may be about
        (_ExtraConflict, nothing stored)."""
        if not ws:
            try:
                return self.db.call("put", req, bufs)[0]
            except ConflictError as e:
                if extra:
                    raise _ExtraConflict() from e
                if not _reused_version(e, values):
                    raise
                return self._put_reusing(req, cid, values, bufs)
        # The writes that came for this checkpoint go with it, in one
        # crossing (writes.batch: in order, each op with its own outcome; a put
        # and the writes under its checkpoint commit together).
        # Their blob references index the batch's one list.
        ops: list[dict[str, Any]] = [{"op": "put", "req": req}]
        allbufs = list(bufs)
        for w in ws:
            base = len(allbufs)
            allbufs.extend(w.bufs)
            wreq = dict(w.req)
            wreq["writes"] = [{"channel": x["channel"], "value": {"t": x["value"]["t"], "b": x["value"]["b"] + base}} for x in w.req["writes"]]
            ops.append({"op": "putWrites", "req": wreq})
        try:
            res = self.db.call("writes.batch", {"ops": ops}, allbufs)[0]["results"]
        except AgentStateError as e:
            _settle(ws, e)
            raise
        if "error" not in res[0]:
            for w, wr in zip(ws, res[1:]):
                _settle([w], error_for(wr["code"], wr["error"]) if "error" in wr else None)
            return res[0]["ok"]
        err = error_for(res[0]["code"], res[0]["error"])
        if extra and isinstance(err, ConflictError):
            raise _ExtraConflict() from err
        if not (isinstance(err, ConflictError) and _reused_version(err, values)):
            _settle(ws, err)  # no checkpoint, so none of its writes
            raise err
        r = self._put_reusing(req, cid, values, bufs)
        for w in ws:
            try:
                self.db.call("putWrites", w.req, w.bufs)
                _settle([w], None)
            except AgentStateError as e:
                _settle([w], e)
        return r

    def _put_reusing(self, req: dict, cid: str, values: dict, bufs: list[bytes]) -> dict:
        # The engine keeps one value per (channel, version) of a thread;
        # LangGraph's versions are unique, but a caller may reuse one for
        # another value. Each checkpoint then keeps its own value, under a
        # version only it uses, read back as the one put.
        cp = req["checkpoint"]
        for ch in values:
            sv = f"{cp['versions'][ch]}{_REUSED}{cid}"
            cp["versions"][ch] = sv
            req["newVersions"][ch] = sv
        return self.db.call("put", req, bufs)[0]

    def _remember(self, key: str, tkey: str | None = None) -> None:
        with self._cond:
            for d, k in ((self._stored, key), (self._recent, tkey)):
                if k is not None:
                    d.pop(k, None)
                    d[k] = None
                    if len(d) > _STORED_KEYS:
                        d.popitem(last=False)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Stores a task's writes under config's checkpoint. Writes that come
        before their checkpoint's put (LangGraph sends them while that put
        is still on its way) are stored with it (see above)."""
        self._prefetched = None
        key, tkey, w = self._writes(config, writes, task_id, task_path)
        while True:
            how, p = self._route(key, tkey, w)
            if how is _HELD:
                return
            if how is _WITH_PUT or how is _AFTER_PUT:
                with self._cond:
                    while not p.done and not w.settled:
                        self._cond.wait()
                if _taken(w):
                    return
                continue
            try:
                self.db.call("putWrites", w.req, w.bufs)
                return
            except NotFoundError as e:
                if self._hold_missing(key, tkey, w, e):
                    return

    def _writes(self, config, writes, task_id, task_path) -> tuple[str, str, _Writes]:
        cfg = _wire_config(config, "put_writes")
        if "checkpoint_id" not in cfg:
            raise InvalidArgumentError("agentstate: put_writes: config['configurable']['checkpoint_id'] is missing")
        bufs = _Bufs()
        dumps = self.serde.dumps_typed
        ws = [{"channel": ch, "value": bufs.add(dumps(v))} for ch, v in writes]
        req = {"config": cfg, "writes": ws, "taskId": task_id, "taskPath": task_path or ""}
        return _key(cfg, cfg["checkpoint_id"]), _key(cfg, None), _Writes(req, bufs.list)

    def _route(self, key: str, tkey: str, w: _Writes) -> tuple[object, _Put | None]:
        """Where writes go now (see the section's comment); never waits."""
        with self._cond:
            self._check_fork()
            if key in self._stored:
                return _DIRECT, None
            p = self._puts.get(key)
            if p is not None:
                if not p.sent:
                    p.writes.append(w)
                    return _WITH_PUT, p
                return _AFTER_PUT, p
            if self._inflight.get(tkey) and self._hold(key, w):
                return _HELD, None
            return _TRY, None

    def _hold(self, key: str, w: _Writes) -> bool:
        # under _cond
        if self._held_bytes + w.size > _HELD_BYTES:
            return False
        w.held = True
        w.since = time.monotonic()
        self._held.setdefault(key, []).append(w)
        self._held_bytes += w.size
        return True

    def _hold_missing(self, key: str, tkey: str, w: _Writes, e: NotFoundError) -> bool:
        """After a NOT_FOUND: False to route the writes again (their put has
        begun, or stored the checkpoint, meanwhile); True when held; raises
        when they cannot be held."""
        with self._cond:
            if key in self._stored or key in self._puts:
                return False
            if self._hold(key, w):
                return True
        raise NotFoundError(f"{e} (and {_HELD_BYTES >> 20} MiB of writes already wait for their checkpoints' puts)") from None

    def _take_held(self, key: str) -> list[_Writes]:
        # under _cond
        ws = self._held.pop(key, None) or []
        for w in ws:
            self._held_bytes -= w.size
        return ws

    def _flush_held(self, which: Callable[[str], bool], older: float = 0.0) -> None:
        """Tries alone the held writes of the checkpoints which(key) names
        (held longer than older seconds); those still without their
        checkpoint stay held."""
        now = time.monotonic()
        with self._cond:
            keys = [k for k, ws in self._held.items() if which(k) and now - ws[0].since >= older and k not in self._puts]
            batches = [(k, self._take_held(k)) for k in keys]
        for k, ws in batches:
            for i, w in enumerate(ws):
                try:
                    self.db.call("putWrites", w.req, w.bufs)
                except NotFoundError:
                    with self._cond:
                        for rest in ws[i:]:
                            self._held.setdefault(k, []).append(rest)
                            self._held_bytes += rest.size
                    break
                except AgentStateError as e:
                    _log.warning("agentstate: held writes of task %s for checkpoint %s were refused: %s", w.req["taskId"], _show_key(k), e)

    def _flush_held_of(self, config: RunnableConfig | None) -> None:
        if not self._held:
            return
        c = (config or {}).get("configurable") or {}
        tid = c.get("thread_id")
        if tid is None or tid == "":
            self._flush_held(lambda k: True)
            return
        prefix = f"{tid}\0"
        self._flush_held(lambda k: k.startswith(prefix))

    def _check_fork(self) -> None:
        # under _cond
        if self._pid != os.getpid():
            raise ClosedError("agentstate: this saver was opened before the process forked: open the file again in the child")

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
        # The put is registered here, on the event loop, before it waits for
        # a worker thread: writes for its checkpoint that come meanwhile go
        # with it instead of finding no put (put_writes's routing).
        self._prefetched = None
        cfg = _wire_config(config, "put")
        key, tkey = _key(cfg, checkpoint["id"]), _key(cfg, None)
        loop = asyncio.get_running_loop()
        while True:
            with self._cond:
                running = self._puts.get(key)
                if running is None:
                    p = self._begin_put(key, tkey)
                    break
            await self._ended(loop, running)
        # Its thread counts as having a put in progress until a few turns of
        # the loop after it ends: LangGraph's next put, chained behind this
        # one, begins then, and writes for its checkpoint that come before
        # are held for it instead of sent to be refused.
        p.linger = True
        try:
            return await asyncio.to_thread(self._put_begun, cfg, key, tkey, p, checkpoint, metadata, new_versions, config)
        except asyncio.CancelledError:
            # A put whose thread never began ends here; one that began ends
            # itself.
            with self._cond:
                began = p.began
            if not began:
                self._end_put(key, tkey, p)
            raise
        finally:
            _after_turns(loop, _LINGER_TURNS, lambda: self._release_locked(tkey))

    def _release_locked(self, tkey: str) -> None:
        with self._cond:
            self._release(tkey)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        # put_writes's routing, with the waiting for a running put done on
        # the event loop: no worker thread is held while it waits.
        self._prefetched = None
        key, tkey, w = self._writes(config, writes, task_id, task_path)
        loop = asyncio.get_running_loop()
        yields = 0
        while True:
            how, p = self._route(key, tkey, w)
            if how is _HELD:
                return
            if how is _TRY and yields < _YIELDS and tkey in self._recent:
                # LangGraph chains each put behind the one before: the put
                # of these writes' checkpoint is likely a few turns of the
                # loop away (the one before has just ended). Let it begin
                # rather than send the writes to be refused.
                yields += 1
                await asyncio.sleep(0)
                continue
            if how is _WITH_PUT or how is _AFTER_PUT:
                await self._ended(loop, p)
                if _taken(w):
                    return
                continue
            try:
                await asyncio.to_thread(self.db.call, "putWrites", w.req, w.bufs)
                return
            except NotFoundError as e:
                if self._hold_missing(key, tkey, w, e):
                    return

    async def _ended(self, loop: asyncio.AbstractEventLoop, p: _Put) -> None:
        """Returns once the put p (running in another thread) has ended."""
        fut = loop.create_future()

        def wake() -> None:
            try:
                loop.call_soon_threadsafe(lambda: fut.done() or fut.set_result(None))
            except RuntimeError:  # the loop has closed: nobody waits
                pass

        with self._cond:
            if p.done:
                return
            p.wakers.append(wake)
        await fut

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


_savers: weakref.WeakSet[AgentStateSaver] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    # Another thread may have held a saver's lock when the process forked:
    # the child's copy would never be released. The child gets fresh locks,
    # and each call raises ClosedError (_check_fork) instead of touching the
    # parent's handle.
    for s in list(_savers):
        s._cond = threading.Condition()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _key(c: Mapping[str, Any], cid: str | None) -> str:
    return f"{c['thread_id']}\0{c.get('checkpoint_ns') or ''}\0{cid}"


def _version_key(v: Any) -> tuple:
    return (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v))


class _Done:
    """What setup returns: None to a sync caller, and awaitable (at once) by
    an async one, as LangGraph's async savers' setup is."""

    __slots__ = ()

    def __await__(self):
        return iter(())

    def __repr__(self) -> str:
        return "None"


_DONE = _Done()


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
