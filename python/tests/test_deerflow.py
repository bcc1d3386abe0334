"""DeerFlow's store contracts (langgraph.checkpoint.agentstate.deerflow), in
the project's own words: the shapes DeerFlow's Gateway reads, its "missing
is None, foreign is a no-op" rules, owner scoping with AUTO / None / a user
id, and the invariants the engine keeps under them. DeerFlow itself is not
needed (docs/deerflow.md; python/bench/deerflow_check.sh runs DeerFlow's
own tests against these classes)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from langgraph.checkpoint.agentstate import ConflictError, Database, InvalidArgumentError
from langgraph.checkpoint.agentstate import deerflow as df


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def db():
    d = Database()
    yield d
    d.close()


def test_each_store_opens_its_own_database_or_shares_one(db):
    for cls in (df.AgentStateRunEventStore, df.AgentStateThreadMetaStore, df.AgentStateRunStore):
        own = cls()
        assert own.db is not db and not own.db.closed
        own.close()
        assert own.db.closed
        shared = cls(db=db)
        shared.close()  # a shared database stays open
        assert not db.closed
    with pytest.raises(InvalidArgumentError):
        df.AgentStateThreadMetaStore(db="file.db")


def test_event_records_have_deerflows_shape_and_gap_free_seq(db):
    s = df.AgentStateRunEventStore(db=db)

    async def go():
        r = await s.put(thread_id="t", run_id="r1", event_type="human_message", category="message", content="hi")
        assert r == {
            "thread_id": "t",
            "run_id": "r1",
            "event_type": "human_message",
            "category": "message",
            "content": "hi",
            "metadata": {},
            "seq": 1,
            "user_id": None,
            "created_at": r["created_at"],
        }
        assert r["created_at"].endswith("+00:00")
        at = "2024-06-01T12:00:00+00:00"
        kept = await s.put(thread_id="t", run_id="r1", event_type="x", category="trace", created_at=at)
        assert kept["created_at"] == at
        batch = await s.put_batch(
            [{"thread_id": "t", "run_id": "r1", "event_type": "ai_message", "category": "message", "content": {"a": 1}} for _ in range(5)]
        )
        assert [e["seq"] for e in batch] == [3, 4, 5, 6, 7]
        assert batch[0]["content"] == {"a": 1} and batch[0]["metadata"] == {"content_is_json": True, "content_is_dict": True}
        # several writers at once: still unique and gap-free
        got = await asyncio.gather(*(s.put(thread_id="t", run_id="r2", event_type="e", category="trace") for _ in range(10)))
        assert sorted(e["seq"] for e in got) == list(range(8, 18))
        assert await s.count_messages("t", user_id=None) == 6
        return at

    run(go())


def test_put_if_absent_keeps_the_first_event_of_a_type(db):
    s = df.AgentStateRunEventStore(db=db)

    async def go():
        first, created = await s.put_if_absent(thread_id="t", run_id="r", event_type="run.end", category="outputs", content="one")
        assert created and first["seq"] == 1
        again, created = await s.put_if_absent(thread_id="t", run_id="r", event_type="run.end", category="outputs", content="two")
        assert not created and again["content"] == "one" and again["seq"] == 1
        other, created = await s.put_if_absent(thread_id="t", run_id="r2", event_type="run.end", category="outputs")
        assert created and other["seq"] == 2
        results = await asyncio.gather(
            *(s.put_if_absent(thread_id="t", run_id="r3", event_type="run.end", category="outputs", content=i) for i in range(8))
        )
        assert sum(c for _, c in results) == 1
        assert len({e["seq"] for e, _ in results}) == 1

    run(go())


def test_message_cursors_task_filter_and_last_visible_reply(db):
    s = df.AgentStateRunEventStore(db=db)

    async def go():
        evs = []
        for i in range(1, 13):
            run_id = "r1" if i <= 6 else "r2"
            if i % 2:
                evs.append({"thread_id": "t", "run_id": run_id, "event_type": "llm.ai.response", "category": "message", "content": str(i)})
            else:
                evs.append({"thread_id": "t", "run_id": run_id, "event_type": "tool", "category": "trace", "metadata": {"task_id": f"k{i % 4}"}})
        await s.put_batch(evs)
        seqs = lambda rs: [r["seq"] for r in rs]  # noqa: E731
        assert seqs(await s.list_messages("t", limit=2, user_id=None)) == [9, 11]
        assert seqs(await s.list_messages("t", before_seq=5, limit=5, user_id=None)) == [1, 3]
        assert seqs(await s.list_messages("t", after_seq=7, limit=1, user_id=None)) == [9]
        assert seqs(await s.list_messages_by_run("t", "r2", user_id=None)) == [7, 9, 11]
        assert seqs(await s.list_messages_by_run("t", "r2", before_seq=11, limit=1, user_id=None)) == [9]
        assert seqs(await s.list_messages_by_run("t", "r1", after_seq=1, user_id=None)) == [3, 5]
        # task_id applies before the limit: the run's first event is not k0's
        assert seqs(await s.list_events("t", "r1", task_id="k0", limit=1, user_id=None)) == [4]
        assert seqs(await s.list_events("t", "r2", event_types=["tool"], after_seq=8, user_id=None)) == [10, 12]
        assert await s.list_events("t", "r1", limit=0, user_id=None) == []
        await s.put(
            thread_id="t", run_id="r2", event_type="llm.ai.response", category="message", metadata={"caller": "middleware:title"}
        )
        assert await s.get_last_visible_ai_seq_by_run("t", {"r1", "r2", "r9"}, user_id=None) == {"r1": 5, "r2": 11}
        many = {f"x{i}" for i in range(2500)} | {"r1"}  # more than one engine call's worth
        assert await s.get_last_visible_ai_seq_by_run("t", many, user_id=None) == {"r1": 5}
        assert await s.delete_by_run("t", "r1", user_id=None) == 6
        assert await s.delete_by_thread("t", user_id=None) == 7
        assert await s.delete_by_thread("t", user_id=None) == 0

    run(go())


def test_bad_events_are_refused_whole(db):
    s = df.AgentStateRunEventStore(db=db)

    async def go():
        await s.put(thread_id="t", run_id="r", event_type="ok", category="message")
        with pytest.raises(InvalidArgumentError, match="event type"):
            await s.put(thread_id="t", run_id="r", event_type="x" * 33, category="message")
        with pytest.raises(InvalidArgumentError, match="category"):
            await s.put_batch(
                [
                    {"thread_id": "t", "run_id": "r", "event_type": "ok", "category": "message"},
                    {"thread_id": "t", "run_id": "r", "event_type": "ok", "category": "c" * 17},
                ]
            )
        with pytest.raises(InvalidArgumentError, match="created_at"):
            await s.put(thread_id="t", run_id="r", event_type="ok", category="message", created_at="yesterday")
        assert await s.count_messages("t", user_id=None) == 1

    run(go())


def test_events_carry_their_writers_user_and_reads_filter_by_it(db):
    # DeerFlow's SQL event store: writes are stamped with the request's user,
    # reads take AUTO (that user), a user id, or None (every event).
    s = df.AgentStateRunEventStore(db=db)

    async def as_user(user, coro_fn):
        token = df.current_user_id.set(user)
        try:
            return await coro_fn()
        finally:
            df.current_user_id.reset(token)

    async def go():
        msg = dict(thread_id="t", run_id="r", event_type="llm.ai.response", category="message")
        a = await as_user("alice", lambda: s.put(**msg, content="a1"))
        assert a["user_id"] == "alice"
        await as_user("bob", lambda: s.put_batch([{**msg, "content": "b1"}, {**msg, "content": "b2", "user_id": "carol"}]))
        await as_user("alice", lambda: s.put_if_absent(thread_id="t", run_id="r", event_type="run.end", category="outputs"))
        await s.put(**msg, content="nobody")  # no request: no owner
        seqs = lambda rs: [r["seq"] for r in rs]  # noqa: E731
        assert seqs(await s.list_messages("t", user_id="alice")) == [1]
        assert seqs(await as_user("bob", lambda: s.list_messages("t"))) == [2]
        assert [e["user_id"] for e in await s.list_messages("t", user_id=None)] == ["alice", "bob", "carol", None]
        # a foreign user's reads see nothing of the thread
        assert await s.list_messages("t", user_id="mallory") == []
        assert await s.list_messages_by_run("t", "r", user_id="mallory") == []
        assert await s.list_events("t", "r", user_id="mallory") == []
        assert await s.count_messages("t", user_id="mallory") == 0
        assert await s.get_last_visible_ai_seq_by_run("t", {"r"}, user_id="mallory") == {}
        assert await s.delete_by_thread("t", user_id="mallory") == 0
        assert seqs(await s.list_events("t", "r", user_id="alice")) == [1, 4]
        assert await s.count_messages("t", user_id="carol") == 1
        assert await s.get_last_visible_ai_seq_by_run("t", {"r"}, user_id="bob") == {"r": 2}
        with pytest.raises(RuntimeError, match="AUTO"):
            await s.list_messages("t")
        # a user's deletes leave the others' events
        assert await s.delete_by_run("t", "r", user_id="alice") == 2
        assert await s.delete_by_thread("t", user_id="bob") == 1
        assert seqs(await s.list_events("t", "r", user_id=None)) == [3, 5]

    if df._DFAutoSentinel is not None:
        pytest.skip("DeerFlow is importable here: AUTO is its sentinel, read from its own request context")
    run(go())


def test_threads_follow_deerflows_owner_rules(db):
    s = df.AgentStateThreadMetaStore(db=db)

    async def go():
        t = await s.create("t1", user_id="alice", assistant_id="lead", metadata={"a": 1})
        assert t["user_id"] == "alice" and t["assistant_id"] == "lead" and t["display_name"] is None
        assert t["status"] == "idle" and t["metadata"] == {"a": 1} and t["created_at"].endswith("+00:00")
        with pytest.raises(ConflictError):
            await s.create("t1", user_id="bob")
        assert await s.get("t1", user_id="bob") is None
        assert (await s.get("t1", user_id=None))["thread_id"] == "t1"
        # another owner's writes are no-ops, as DeerFlow's repository has them
        await s.update_display_name("t1", "stolen", user_id="bob")
        await s.update_metadata("t1", {"b": 2}, user_id="bob")
        await s.delete("t1", user_id="bob")
        got = await s.get("t1", user_id="alice")
        assert got["display_name"] is None and got["metadata"] == {"a": 1}
        # missing threads too
        await s.update_status("nope", "busy", user_id="alice")
        await s.delete("nope", user_id="alice")
        # a thread of no owner is everyone's
        await s.create("shared", user_id=None)
        assert await s.check_access("shared", "anyone", require_existing=True)
        assert await s.check_access("t1", "alice") and not await s.check_access("t1", "bob")
        assert await s.check_access("gone", "bob") and not await s.check_access("gone", "bob", require_existing=True)
        await s.update_owner("t1", "carol", user_id=None)
        assert await s.get("t1", user_id="alice") is None
        assert (await s.get("t1", user_id="carol"))["metadata"] == {"a": 1}

    run(go())


def test_auto_reads_the_request_user_and_refuses_without_one(db):
    s = df.AgentStateThreadMetaStore(db=db)

    async def go():
        with pytest.raises(RuntimeError, match="AUTO"):
            await s.create("t1")
        token = df.current_user_id.set("alice")
        try:
            await s.create("t1")
            assert [t["thread_id"] for t in await s.search()] == ["t1"]
        finally:
            df.current_user_id.reset(token)
        assert (await s.get("t1", user_id="alice"))["user_id"] == "alice"

    if df._DFAutoSentinel is not None:
        pytest.skip("DeerFlow is importable here: AUTO is its sentinel, read from its own request context")
    run(go())


def test_search_pins_first_and_compares_types(db):
    s = df.AgentStateThreadMetaStore(db=db)

    async def go():
        await s.create("pinned-old", user_id="u", metadata={df.THREAD_PINNED_METADATA_KEY: True})
        for tid, v in (("bool", True), ("int", 1), ("null", None), ("big", 2**53 + 1), ("big-1", 2**53)):
            await s.create(tid, user_id="u", metadata={"v": v})
        await s.create("missing", user_id="u", metadata={})
        assert [t["thread_id"] for t in await s.search(user_id="u", limit=1)] == ["pinned-old"]
        ids = lambda rs: {r["thread_id"] for r in rs}  # noqa: E731
        assert ids(await s.search(user_id="u", metadata={"v": True})) == {"bool"}
        assert ids(await s.search(user_id="u", metadata={"v": 1})) == {"int"}
        assert ids(await s.search(user_id="u", metadata={"v": None})) == {"null"}
        assert ids(await s.search(user_id="u", metadata={"v": 2**53 + 1})) == {"big"}
        assert await s.search(user_id="someone-else") == []
        # pinning without touch keeps recency order
        before = (await s.get("int", user_id="u"))["updated_at"]
        await s.update_metadata("int", {df.THREAD_PINNED_METADATA_KEY: True}, touch=False, user_id="u")
        assert (await s.get("int", user_id="u"))["updated_at"] == before
        assert [t["thread_id"] for t in await s.search(user_id="u", limit=2)] == ["int", "pinned-old"]

    run(go())


def test_search_skips_unsafe_filter_keys_and_refuses_when_all_are(db, caplog):
    s = df.AgentStateThreadMetaStore(db=db)

    async def go():
        await s.create("t1", user_id="u", metadata={"env": "prod"})
        await s.create("t2", user_id="u", metadata={"env": "dev"})
        with caplog.at_level(logging.WARNING):
            got = await s.search(user_id="u", metadata={"env": "prod", "bad;key": 1})
        assert [t["thread_id"] for t in got] == ["t1"]
        assert any("bad;key" in r.getMessage() for r in caplog.records)
        for bad in ({"a.b": 1}, {1: "x"}, {"env": ["prod"]}, {"n": 2**64}):
            with pytest.raises(df.InvalidMetadataFilterError, match="rejected") as e:
                await s.search(user_id="u", metadata=bad)
            assert isinstance(e.value, ValueError) and isinstance(e.value, InvalidArgumentError)

    run(go())


def test_concurrent_metadata_merges_lose_no_key(db):
    s = df.AgentStateThreadMetaStore(db=db)

    async def go():
        await s.create("t", user_id=None, metadata={"base": 0})
        await asyncio.gather(*(s.update_metadata("t", {f"k{i}": i}, user_id=None) for i in range(16)))
        md = (await s.get("t", user_id=None))["metadata"]
        assert md == {"base": 0, **{f"k{i}": i for i in range(16)}}

    run(go())


def test_runs_one_active_per_thread_and_completion_never_replaces_an_end(db):
    s = df.AgentStateRunStore(db=db)

    async def go():
        await s.put("r1", thread_id="t", user_id="alice", model_name="gpt", metadata={"k": object()})
        row = await s.get("r1", user_id="alice")
        assert row["status"] == "pending" and row["model_name"] == "gpt" and isinstance(row["metadata"]["k"], str)
        assert await s.get("r1", user_id="bob") is None
        with pytest.raises(ConflictError):
            await s.put("r2", thread_id="t", user_id="alice")
        assert await s.start_run("r1") is True
        assert await s.start_run("r1") is False
        assert await s.update_status("r1", "error", error="peer takeover") is True
        assert await s.update_run_completion("r1", status="success", total_tokens=5) is False
        assert (await s.get("r1", user_id=None))["status"] == "error"
        assert await s.update_status("missing", "error") is False
        await s.put("r2", thread_id="t", user_id="alice", status="running")
        assert await s.update_run_completion(
            "r2", status="success", token_usage_by_model={"gpt": {"input_tokens": 2, "output_tokens": 3, "total_tokens": 5}}, lead_agent_tokens=5
        )
        agg = await s.aggregate_tokens_by_thread("t")
        # r1 ended with an error under the same model: a run of it, with no tokens
        assert agg["total_tokens"] == 5 and agg["by_model"]["gpt"] == {"tokens": 5, "runs": 2}
        assert agg["by_caller"] == {"lead_agent": 5, "subagent": 0, "middleware": 0}
        assert [r["run_id"] for r in await s.list_by_thread("t", user_id=None)] == ["r2", "r1"]
        await s.delete("r1", user_id="bob")  # another user's run: a no-op
        assert await s.get("r1", user_id=None) is not None
        await s.delete("r1", user_id=None)
        await s.delete("r1", user_id=None)
        assert await s.get("r1", user_id=None) is None
        with pytest.raises(InvalidArgumentError):
            await s.put("r3", thread_id="t", user_id="alice", status="bogus")
        assert await s.get("r3", user_id=None) is None

    run(go())


def test_run_progress_model_name_and_recovery_lists(db):
    s = df.AgentStateRunStore(db=db)

    async def go():
        await s.put("old", thread_id="t1", user_id=None, created_at="2026-01-01T00:00:00+00:00")
        await s.put("busy", thread_id="t2", user_id=None, status="running", created_at="2026-01-01T00:00:01")
        await s.put("done", thread_id="t3", user_id=None, status="success", created_at="2026-01-01T00:00:02+00:00")
        assert (await s.get("old", user_id=None))["created_at"] == "2026-01-01T00:00:00+00:00"
        assert [r["run_id"] for r in await s.list_pending()] == ["old"]
        assert [r["run_id"] for r in await s.list_inflight()] == ["old", "busy"]
        assert [r["run_id"] for r in await s.list_inflight(before="2026-01-01T00:00:00+00:00")] == ["old"]
        await s.update_model_name("busy", "  " + "m" * 200)
        assert (await s.get("busy", user_id=None))["model_name"] == "m" * 128
        await s.update_model_name("missing", "m")  # no-op
        await s.update_run_progress("busy", total_tokens=7, last_ai_message="partial")
        await s.update_run_progress("busy", llm_call_count=1)
        row = await s.get("busy", user_id=None)
        assert (row["status"], row["total_tokens"], row["llm_call_count"], row["last_ai_message"]) == ("running", 7, 1, "partial")
        assert (await s.aggregate_tokens_by_thread("t2", include_active=True))["total_tokens"] == 7
        assert (await s.aggregate_tokens_by_thread("t2"))["total_tokens"] == 0
        await s.update_run_progress("done", total_tokens=99)  # an ended run keeps its totals
        assert (await s.get("done", user_id=None))["total_tokens"] == 0

    run(go())


def test_trace_contents_are_cut_by_utf8_bytes_at_the_stores_limit(db):
    s = df.AgentStateRunEventStore(db=db, max_trace_content=100)

    async def go():
        long = "é" * 80  # 160 bytes
        r = await s.put(thread_id="t", run_id="r", event_type="llm_end", category="trace", content=long)
        assert len(r["content"].encode()) == 100 and r["content"] == "é" * 50
        assert r["metadata"] == {"content_truncated": True, "original_byte_length": 160}
        m = await s.put(thread_id="t", run_id="r", event_type="ai_message", category="message", content=long)
        assert m["content"] == long
        (b,) = await s.put_batch([{"thread_id": "t", "run_id": "r", "event_type": "x", "category": "trace", "content": long}])
        assert b["metadata"]["content_truncated"] is True
        # another store on the same database keeps the default (10240)
        other = await df.AgentStateRunEventStore(db=db).put(thread_id="t", run_id="r", event_type="x", category="trace", content=long)
        assert other["content"] == long

    run(go())
    with pytest.raises(InvalidArgumentError):
        df.AgentStateRunEventStore(db=db, max_trace_content=0)


def test_put_overwrites_a_run_as_deerflows_retried_put_does(db):
    s = df.AgentStateRunStore(db=db)

    async def go():
        await s.put("r1", thread_id="t", user_id=None, assistant_id="old")
        await s.put("r1", thread_id="t", user_id=None, assistant_id="new", status="running", error="retry", stop_reason="why")
        row = await s.get("r1", user_id=None)
        assert (row["assistant_id"], row["status"], row["error"], row["stop_reason"]) == ("new", "running", "retry", "why")
        # a reservation holds the thread's one slot but is no run of its history
        await s.put("r1", thread_id="t", user_id=None, status="success")
        await s.put("cw", thread_id="t", user_id=None, operation_kind="checkpoint_write")
        assert [r["run_id"] for r in await s.list_by_thread("t", user_id=None)] == ["r1"]
        assert [r["run_id"] for r in await s.list_inflight()] == ["cw"]
        assert await s.list_pending() == []
        with pytest.raises(ConflictError):
            await s.put("r2", thread_id="t", user_id=None)

    run(go())


def test_admission_leases_takeover_and_first_cancel_wins(db):
    from datetime import datetime, timedelta, timezone

    s = df.AgentStateRunStore(db=db)

    def at(seconds):
        return (datetime.now(timezone.utc) + timedelta(seconds=seconds)).isoformat()

    async def go():
        row, claimed = await s.create_thread_operation_atomic("a", thread_id="t", owner_worker_id="w1", lease_expires_at=at(30), user_id="u")
        assert (row["status"], row["owner_worker_id"], claimed) == ("pending", "w1", [])
        assert datetime.fromisoformat(row["lease_expires_at"]) > datetime.now(timezone.utc)
        # reject, and an interrupt of another worker's live run: refused
        for strategy in ("reject", "interrupt"):
            with pytest.raises(ConflictError):
                await s.create_thread_operation_atomic("b", thread_id="t", owner_worker_id="w2", lease_expires_at=at(30), user_id="u", multitask_strategy=strategy)
        # the same idempotency key returns the first run, from any worker
        k, _ = await s.create_thread_operation_atomic("k1", thread_id="tk", owner_worker_id="w1", lease_expires_at=None, user_id="u", idempotency_key="key")
        with pytest.raises(ConflictError) as e:
            await s.create_thread_operation_atomic("k2", thread_id="tk", owner_worker_id="w2", lease_expires_at=None, user_id="u", idempotency_key="key")
        assert e.value.existing["run_id"] == "k1"
        # the first cancel wins and reaches the owner through its renewal
        assert await s.request_cancel("a", action="rollback") == "rollback"
        assert await s.request_cancel("a", action="interrupt") == "rollback"
        assert (await s.renew_lease("a", owner_worker_id="w2", lease_expires_at=at(60))).renewed is False
        renewal = await s.renew_lease("a", owner_worker_id="w1", lease_expires_at=at(60))
        assert (renewal.renewed, renewal.cancel_action) == (True, "rollback")
        fin = await s.finalize_if_not_cancelled("a", status="success")
        assert (fin.finalized, fin.cancel_action) == (False, "rollback")
        assert (await s.get("a", user_id=None))["status"] == "pending"
        with pytest.raises(InvalidArgumentError):
            await s.request_cancel("a", action="stop")
        # takeover: a CAS on the lease, after the grace
        assert await s.claim_for_takeover("a", grace_seconds=10, error="claimed") is False
        await s.update_lease("a", owner_worker_id="w1", lease_expires_at=at(-15))
        assert [r["run_id"] for r in await s.list_inflight_with_expired_lease(grace_seconds=10) if r["thread_id"] == "t"] == ["a"]
        assert await s.claim_for_takeover("a", grace_seconds=10, error="claimed", stop_reason="takeover") is True
        row = await s.get("a", user_id=None)
        assert (row["status"], row["error"], row["stop_reason"]) == ("error", "claimed", "takeover")
        assert await s.claim_for_takeover("a", grace_seconds=10, error="again") is False
        assert await s.request_cancel("a", action="interrupt") is None
        # an interrupt takes an expired reservation and hands it to the new worker
        await s.put("cw", thread_id="t2", user_id=None, operation_kind="checkpoint_write", owner_worker_id="dead", lease_expires_at=at(-30))
        row, claimed = await s.create_thread_operation_atomic("n", thread_id="t2", owner_worker_id="w3", lease_expires_at=at(30), user_id="u", multitask_strategy="interrupt")
        assert [c["run_id"] for c in claimed] == ["cw"]
        old = await s.get("cw", user_id=None)
        assert (old["status"], old["owner_worker_id"]) == ("interrupted", "w3")

    run(go())


def test_idempotency_keys_are_unique_across_threads(db):
    # DeerFlow's RunStore: a key names one request in the whole database;
    # a second admission with it, on another thread too, raises
    # RunIdempotencyConflict carrying the first run and writes nothing.
    s = df.AgentStateRunStore(db=db)

    async def go():
        first, _ = await s.create_thread_operation_atomic("k1", thread_id="t1", owner_worker_id="w1", lease_expires_at=None, user_id="u", idempotency_key="mcp:1")
        with pytest.raises(ConflictError) as e:
            await s.create_thread_operation_atomic("k2", thread_id="t2", owner_worker_id="w2", lease_expires_at=None, user_id="u", idempotency_key="mcp:1")
        assert type(e.value).__name__ == "RunIdempotencyConflict"
        assert (e.value.existing["run_id"], e.value.existing["thread_id"]) == ("k1", "t1")
        assert await s.get("k2", user_id=None) is None and await s.list_by_thread("t2", user_id=None) == []
        assert first["idempotency_key"] == "mcp:1"

    run(go())


def test_update_status_records_stop_reason_and_the_rollback_path(db):
    # DeerFlow's update_status: error and stop_reason in the same write
    # (None keeps them); the rollback path moves interrupted on to error;
    # an ended run, or one asked to end as it already has, reports False.
    s = df.AgentStateRunStore(db=db)

    async def go():
        await s.put("r1", thread_id="t", user_id=None, status="running")
        await s.update_run_progress("r1", total_tokens=7)
        assert await s.update_status("r1", "interrupted", stop_reason="user_cancel") is True
        row = await s.get("r1", user_id=None)
        assert (row["status"], row["stop_reason"], row["total_tokens"]) == ("interrupted", "user_cancel", 7)
        assert await s.update_status("r1", "error", error="rolled back") is True
        row = await s.get("r1", user_id=None)
        assert (row["status"], row["error"], row["stop_reason"]) == ("error", "rolled back", "user_cancel")
        assert await s.update_status("r1", "error", error="late", stop_reason="late") is False
        assert await s.update_status("r1", "success") is False
        row = await s.get("r1", user_id=None)
        assert (row["status"], row["error"], row["stop_reason"]) == ("error", "rolled back", "user_cancel")
        # a completion may record the rollback's error over interrupted, not a success
        await s.put("r2", thread_id="t", user_id=None, status="running")
        assert await s.update_status("r2", "interrupted") is True
        assert await s.update_run_completion("r2", status="success", total_tokens=1) is False
        assert await s.update_run_completion("r2", status="error", total_tokens=3, error="rolled back") is True
        assert (await s.get("r2", user_id=None))["status"] == "error"
        with pytest.raises(InvalidArgumentError):
            await s.update_status("r2", "done")
        # DeerFlow's guard: a run still pending, running or interrupted
        # moves anywhere (back to pending, resumed after an interrupt)
        await s.put("r3", thread_id="t3", user_id=None, status="running")
        for to in ("pending", "running", "interrupted", "running", "success"):
            assert await s.update_status("r3", to) is True, to
        assert await s.update_status("r3", "running") is False
        assert (await s.get("r3", user_id=None))["status"] == "success"

    run(go())


def test_deleting_a_runs_events_leaves_the_other_runs_whole(db):
    # The user-visible half of DeerFlow's by-run index tests (whose other
    # half reads MemoryRunEventStore's private projections).
    s = df.AgentStateRunEventStore(db=db)
    plan = ["a:message", "a:trace", "b:message", "a:message", "b:trace", "b:message", "a:trace", "a:message", "b:message", "a:message", "b:message", "a:message"]

    async def go():
        for i, p in enumerate(plan):
            run_id, category = p.split(":")
            await s.put(thread_id="t1", run_id=run_id, event_type=f"e{i}", category=category, content=str(i))
        assert await s.delete_by_run("t1", "a", user_id=None) == 7
        assert await s.list_events("t1", "a", user_id=None) == []
        assert await s.list_messages_by_run("t1", "a", user_id=None) == []
        msgs_b = await s.list_messages_by_run("t1", "b", user_id=None)
        assert [m["event_type"] for m in msgs_b] == ["e2", "e5", "e8", "e10"]
        assert all(m["run_id"] == "b" for m in await s.list_messages("t1", user_id=None))
        await s.delete_by_thread("t1", user_id=None)
        assert await s.list_events("t1", "b", user_id=None) == [] and await s.list_messages_by_run("t1", "b", user_id=None) == []

    run(go())
