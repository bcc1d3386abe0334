"""AgentStateStore: LangGraph's BaseStore on the agentstate engine."""

from __future__ import annotations

import asyncio
import math
import sys
import threading
from array import array
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
)

from ._db import Database
from .errors import ClosedError, InvalidArgumentError
from .saver import _DONE, _Done, _Opener

_MINUTE_MS = 60_000.0
# The npm package's words for the same refusal (wasm/npm/src/store.js).
_NO_INDEX = "agentstate: search with a query needs an index (semantic search): this store has no index; search with a filter instead"


def _dt(s: str) -> datetime:
    return datetime.fromisoformat(s.replace("Z", "+00:00"))


def _item(i: dict[str, Any] | None) -> Item | None:
    if not i:
        return None
    return Item(
        value=i["value"],
        key=i["key"],
        namespace=tuple(i["namespace"]),
        created_at=_dt(i["created_at"]),
        updated_at=_dt(i["updated_at"]),
    )


def _search_item(i: dict[str, Any]) -> SearchItem:
    return SearchItem(
        tuple(i["namespace"]), i["key"], i["value"], _dt(i["created_at"]), _dt(i["updated_at"]), score=i.get("score")
    )


_DISTANCES = ("cosine", "l2", "inner_product")


def _index_config(index: dict[str, Any]) -> tuple[dict[str, Any], Any, list[tuple[str, Any]]]:
    """Checks LangGraph's IndexConfig; returns it (a copy), the embeddings
    (LangGraph's ensure_embeddings: an Embeddings, a sync or async function,
    or a "provider:model" string) and the fields as tokenized paths."""
    if not isinstance(index, dict):
        raise InvalidArgumentError(f"agentstate: index must be a dict (LangGraph's IndexConfig), got {type(index).__name__}")
    index = dict(index)
    dims = index.get("dims")
    if not isinstance(dims, int) or isinstance(dims, bool) or not 0 < dims <= 16384:
        raise InvalidArgumentError(f"agentstate: index dims must be an integer from 1 to 16384, got {dims!r}")
    if index.get("embed") is None:
        raise InvalidArgumentError("agentstate: index needs embed (an Embeddings, a function of texts, or 'provider:model')")
    distance = index.get("distance_type") or "cosine"
    if distance not in _DISTANCES:
        raise InvalidArgumentError(f"agentstate: index distance_type {distance!r}: want cosine, l2 or inner_product")
    index["distance_type"] = distance
    fields = index.get("fields") or ["$"]
    if isinstance(fields, str):
        fields = [fields]
    tokenized = [(f, "$" if f == "$" else tokenize_path(f)) for f in fields]
    index["fields"] = list(fields)
    return index, ensure_embeddings(index["embed"]), tokenized


def _vector(v: Any, dims: int, what: str) -> bytes:
    """A vector as the bridge takes it: float32 little-endian bytes, passed
    as one of the call's buffers (JSON would cost the engine a scan of it)."""
    try:
        a = array("f", v)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"agentstate: the embedder gave {what} that is not a list of numbers: {e}") from None
    if len(a) != dims:
        raise InvalidArgumentError(f"agentstate: the embedder gave {what} of {len(a)} dimensions, the index has dims={dims}")
    if sys.byteorder != "little":
        a.byteswap()
    return a.tobytes()


class AgentStateStore(BaseStore):
    """A LangGraph store (``BaseStore``) in an agentstate file: items by
    namespace and key, filters on their values, namespace listing, and TTL
    (minutes, as LangGraph counts them) with refresh on read and a sweeper.

    Args:
        path: the file (created if missing), or ``":memory:"``.
        db: an open :class:`Database` (for example ``saver.db``) to share one
            file and handle with a saver; the store then does not close it.
        ttl: LangGraph's ``TTLConfig``: ``default_ttl`` (minutes),
            ``refresh_on_read`` (default True), ``sweep_interval_minutes``
            (starts a sweeper thread; ``stop_ttl_sweeper`` stops it).
        **options: :class:`Database`'s options.

        index: LangGraph's ``IndexConfig`` for semantic search: ``dims``,
            ``embed`` (an ``Embeddings``, a sync or async function of texts,
            or ``"provider:model"``), ``fields`` (JSON paths: ``"$"``, the
            default, ``"a.b"``, ``"arr[*].f"``) and ``distance_type``
            (``"cosine"``, the default, ``"inner_product"`` or ``"l2"``).
            A put embeds its fields (or ``index=[paths]``; ``index=False``
            leaves the item unindexed) and stores the vectors in the file
            with the item; ``search(query=...)`` ranks in the engine and
            sets each item's ``score`` (higher first).

    Without an index a search with a query is refused (InvalidArgumentError
    naming index), not answered unranked.
    """

    supports_ttl = True

    def __init__(
        self,
        path: str = ":memory:",
        *,
        db: Database | None = None,
        ttl: TTLConfig | None = None,
        index: Any = None,
        **options: Any,
    ) -> None:
        self.index_config: dict[str, Any] | None = None
        self.embeddings: Any = None
        self._fields: list[tuple[str, Any]] = []
        if index is not None:
            self.index_config, self.embeddings, self._fields = _index_config(index)
        if db is not None and (options or path != ":memory:"):
            raise InvalidArgumentError("agentstate: give a path with options, or db, not both")
        self.ttl_config = ttl
        self._owns_db = db is None
        self.db = db if db is not None else Database(path, **options)
        self._sweeper: threading.Thread | None = None
        self._stop = threading.Event()
        if ttl and ttl.get("sweep_interval_minutes"):
            self.start_ttl_sweeper()

    @classmethod
    def from_conn_string(cls, path: str, **options: Any) -> _Opener:
        """A context manager (``with`` and ``async with``) giving a store on
        path, closed on exit."""
        return _Opener(lambda: cls(path, **options))

    def setup(self) -> _Done:
        """LangGraph's set-up call, as ``store.setup()`` or ``await
        store.setup()``. The file is opened, migrated and checked when the
        store is made, so there is nothing left to do: setup checks that the
        store is open (``ClosedError`` if not) and may be called any number
        of times."""
        if self.db.closed:
            raise ClosedError(f"agentstate: {self.db.path} is closed")
        return _DONE

    async def asetup(self) -> None:
        """The async form of :meth:`setup`."""
        self.setup()

    def close(self) -> None:
        """Stops the sweeper and closes the file if this store opened it."""
        self.stop_ttl_sweeper()
        if self._owns_db:
            self.db.close()

    def __enter__(self) -> AgentStateStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    async def __aenter__(self) -> AgentStateStore:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await asyncio.to_thread(self.close)

    # ---- operations

    def _op(self, op: Op) -> dict[str, Any]:
        if isinstance(op, GetOp):
            return {"op": "get", "namespace": list(op.namespace), "key": str(op.key), "refresh": bool(op.refresh_ttl)}
        if isinstance(op, PutOp):
            req: dict[str, Any] = {"op": "put", "namespace": list(op.namespace), "key": str(op.key), "value": op.value}
            if op.value is not None:
                if not isinstance(op.value, dict):
                    raise InvalidArgumentError(f"agentstate: store values are dicts, got {type(op.value).__name__}")
                if op.ttl is None:
                    req["noExpiry"] = True
                else:
                    try:
                        ttl = float(op.ttl)
                    except (TypeError, ValueError):
                        ttl = math.nan
                    # Not finite (inf, nan) is refused, not clamped: "never
                    # expires" is ttl=None.
                    if not (ttl > 0 and math.isfinite(ttl * _MINUTE_MS)):
                        raise InvalidArgumentError(
                            f"agentstate: ttl must be a positive, finite number of minutes, or None for no expiry, got {op.ttl!r}"
                        )
                    req["ttlMs"] = ttl * _MINUTE_MS
            return req
        if isinstance(op, SearchOp):
            if op.query and self.index_config is None:
                raise InvalidArgumentError(_NO_INDEX)
            req = {
                "op": "search",
                "prefix": list(op.namespace_prefix),
                "limit": op.limit,
                "offset": op.offset,
                "refresh": bool(op.refresh_ttl),
            }
            if op.filter:
                req["filter"] = op.filter
            return req
        if isinstance(op, ListNamespacesOp):
            req = {"op": "list", "maxDepth": op.max_depth or 0, "limit": op.limit, "offset": op.offset}
            for c in op.match_conditions or ():
                if c.match_type == "prefix":
                    req["prefix"] = list(c.path)
                elif c.match_type == "suffix":
                    req["suffix"] = list(c.path)
                else:
                    raise InvalidArgumentError(f"agentstate: unknown match type {c.match_type!r}")
            return req
        raise InvalidArgumentError(f"agentstate: unknown store operation {op!r}")

    def _texts(self, ops: list[Op], wire: list[dict[str, Any]]) -> tuple[list[tuple[dict, str]], list[str], list[tuple[dict, str]]]:
        """What the batch's puts and searches need embedded: (request, field
        path) per document text, the texts, and (request, text) per query."""
        docs: list[tuple[dict, str]] = []
        texts: list[str] = []
        queries: list[tuple[dict, str]] = []
        if self.index_config is None:
            return docs, texts, queries
        for op, req in zip(ops, wire):
            if isinstance(op, PutOp) and op.value is not None and op.index is not False:
                paths = self._fields if op.index is None else [(p, "$" if p == "$" else tokenize_path(p)) for p in op.index]
                for path, toks in paths:
                    found = get_text_at_path(op.value, toks)
                    for i, text in enumerate(found):
                        docs.append((req, f"{path}.{i}" if len(found) > 1 else path))
                        texts.append(text)
            elif isinstance(op, SearchOp) and op.query:
                queries.append((req, op.query))
        return docs, texts, queries

    def _attach(self, docs: list[tuple[dict, str]], vectors: list[Any], queries: list[tuple[dict, str]], qvecs: dict[str, Any]) -> list[bytes]:
        """Puts the vectors in the requests (as buffer numbers); returns the buffers."""
        dims = self.index_config["dims"]  # type: ignore[index]
        if len(vectors) != len(docs):
            raise InvalidArgumentError(f"agentstate: the embedder gave {len(vectors)} vectors for {len(docs)} texts")
        bufs: list[bytes] = []
        for (req, path), v in zip(docs, vectors):
            req.setdefault("vectors", {})[path] = len(bufs)
            bufs.append(_vector(v, dims, f"the vector of {path!r}"))
        for req, q in queries:
            req["query"] = len(bufs)
            bufs.append(_vector(qvecs[q], dims, "the query's vector"))
            req["distance"] = self.index_config["distance_type"]  # type: ignore[index]
        return bufs

    def _run(self, wire: list[dict[str, Any]], bufs: list[bytes] = ()) -> list[Result]:  # type: ignore[assignment]
        r, _ = self.db.call("store.batch", {"ops": wire}, bufs)
        out: list[Result] = []
        for w, res in zip(wire, r["results"]):
            if w["op"] == "get":
                out.append(_item(res.get("item")))
            elif w["op"] == "search":
                out.append([_search_item(i) for i in res["items"]])
            elif w["op"] == "list":
                out.append([tuple(ns) for ns in res["namespaces"]])
            else:
                out.append(None)
        return out

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Runs ops in one call of the engine, in order (a put then a get of
        the same key sees the put), in one transaction. With an index, the
        puts' texts are embedded in one embed_documents call first."""
        ops = list(ops)
        if not ops:
            return []
        wire = [self._op(op) for op in ops]
        docs, texts, queries = self._texts(ops, wire)
        bufs: list[bytes] = []
        if docs or queries:
            vectors = self.embeddings.embed_documents(texts) if texts else []
            qvecs = {q: self.embeddings.embed_query(q) for q in dict.fromkeys(q for _, q in queries)}
            bufs = self._attach(docs, vectors, queries, qvecs)
        return self._run(wire, bufs)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """The async form of :meth:`batch`: embeds with the embedder's async
        methods (aembed_documents, aembed_query), then runs the engine in a
        worker thread."""
        ops = list(ops)
        if not ops:
            return []
        wire = [self._op(op) for op in ops]
        docs, texts, queries = self._texts(ops, wire)
        bufs: list[bytes] = []
        if docs or queries:
            vectors = await self.embeddings.aembed_documents(texts) if texts else []
            uniq = list(dict.fromkeys(q for _, q in queries))
            qv = await asyncio.gather(*(self.embeddings.aembed_query(q) for q in uniq))
            bufs = self._attach(docs, vectors, queries, dict(zip(uniq, qv)))
        return await asyncio.to_thread(self._run, wire, bufs)

    # ---- TTL

    def sweep_ttl(self) -> int:
        """Deletes expired items now; returns how many."""
        return int(self.db.call("store.sweep")[0]["deleted"])

    async def asweep_ttl(self) -> int:
        return await asyncio.to_thread(self.sweep_ttl)

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> None:
        """Starts a daemon thread that sweeps every sweep_interval_minutes
        (default: the TTL config's, else 5)."""
        if self._sweeper is not None:
            return
        interval = sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes") or 5
        self._stop.clear()

        def loop() -> None:
            while not self._stop.wait(float(interval) * 60):
                if self.db.closed:
                    return
                try:
                    self.sweep_ttl()
                except Exception:  # noqa: BLE001 - the next round tries again
                    pass

        self._sweeper = threading.Thread(target=loop, name="agentstate-ttl-sweeper", daemon=True)
        self._sweeper.start()

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stops the sweeper thread; True once it has ended."""
        t = self._sweeper
        if t is None:
            return True
        self._stop.set()
        t.join(timeout)
        self._sweeper = None
        return not t.is_alive()
