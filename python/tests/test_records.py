"""The engine's run, event and thread records on a Database (records.py):
the calls reach the engine, its invariants hold through them, its errors
arrive typed, and the coroutine twins give the same answers."""

from __future__ import annotations

import asyncio

import pytest

from langgraph.checkpoint.agentstate import ConflictError, Database, InvalidArgumentError, NotFoundError
from langgraph.checkpoint.agentstate.records import ANY_OWNER


@pytest.fixture
def db():
    d = Database()
    yield d
    d.close()


def test_run_lifecycle_and_one_active_run_per_thread(db):
    c = db.runs.create({"thread_id": "t1", "run_id": "r1", "model_name": "m", "metadata": {"k": 1}})
    assert c["new"] is True and c["run"]["status"] == "pending" and c["run"]["metadata"] == {"k": 1}
    again = db.runs.create({"thread_id": "t1", "run_id": "r1"})
    assert again["new"] is False and again["run"]["run_id"] == "r1"
    with pytest.raises(ConflictError):
        db.runs.create({"thread_id": "t1", "run_id": "r2"})
    second = db.runs.create({"thread_id": "t1", "run_id": "r2", "multitask_strategy": "interrupt"})
    assert second["interrupted"] == "r1"
    assert db.runs.get("r1")["status"] == "interrupted"
    db.runs.set_status("r2", "running")
    db.runs.complete(
        "r2",
        "success",
        totals={"token_usage_by_model": {"gpt": {"input": 3, "output": 4, "total": 7}}, "lead_agent_tokens": 7},
    )
    r2 = db.runs.get("r2")
    assert r2["status"] == "success" and r2["total_tokens"] == 7
    with pytest.raises(ConflictError):
        db.runs.set_status("r2", "running")
    assert [r["run_id"] for r in db.runs.list("t1")] == ["r2", "r1"]
    usage = db.runs.token_usage("t1")
    assert usage["by_model"]["gpt"]["total"] == 7 and usage["by_caller"]["lead_agent"] == 7
    db.runs.delete("r1")
    with pytest.raises(NotFoundError):
        db.runs.get("r1")


def test_run_bad_input_is_typed_and_writes_nothing(db):
    with pytest.raises(InvalidArgumentError):
        db.runs.create({"run_id": "r1"})
    with pytest.raises(InvalidArgumentError):
        db.runs.create({"thread_id": "t1", "status": "bogus"})
    with pytest.raises(InvalidArgumentError):
        db.runs.create("t1")  # type: ignore[arg-type]
    assert db.runs.list("t1") == []
    db.runs.create({"thread_id": "t1", "run_id": "r1"})
    with pytest.raises(InvalidArgumentError):
        db.runs.set_status("r1", "bogus")
    assert db.runs.get("r1")["status"] == "pending"
    with pytest.raises(NotFoundError):
        db.runs.set_status("nope", "running")


def test_event_seq_is_gap_free_per_thread_and_pages(db):
    one = db.events.put({"thread_id": "t1", "run_id": "r1", "event_type": "human", "category": "message", "content": "q"})
    assert one["seq"] == 1 and one["created_at"]
    batch = db.events.put(
        [
            {"thread_id": "t1", "run_id": "r1", "event_type": "llm_start", "category": "trace", "metadata": {"task_id": "a"}},
            {"thread_id": "t1", "run_id": "r1", "event_type": "ai", "category": "message", "content": {"text": "x"}},
            {"thread_id": "t1", "run_id": "r2", "event_type": "ai", "category": "message", "content": "y", "metadata": {"task_id": "a"}},
        ]
    )
    assert [e["seq"] for e in batch] == [2, 3, 4]
    other = db.events.put({"thread_id": "t2", "run_id": "r9", "event_type": "ai", "category": "message", "content": "other"})
    assert other["seq"] == 1
    with pytest.raises(InvalidArgumentError):  # one thread per batch: its seq is allocated under one lock
        db.events.put([{"thread_id": "t1", "run_id": "r1", "event_type": "ai", "category": "message"}, dict(other, seq=0)])
    assert db.events.count_messages("t1") == 3
    msgs = db.events.list_messages("t1")
    assert [e["seq"] for e in msgs] == [1, 3, 4]
    assert [e["seq"] for e in db.events.list_messages("t1", limit=2)] == [3, 4]
    assert [e["seq"] for e in db.events.list_messages("t1", before_seq=4, limit=1)] == [3]
    assert [e["seq"] for e in db.events.list_messages("t1", after_seq=1)] == [3, 4]
    assert db.events.count_messages("t1") == 3
    assert [e["seq"] for e in db.events.list_run_events("t1", "r1")] == [1, 2, 3]
    assert [e["seq"] for e in db.events.list_run_events("t1", "r1", types=["ai"])] == [3]
    assert [e["seq"] for e in db.events.list_run_events("t1", "r1", task_id="a")] == [2]
    assert [e["seq"] for e in db.events.list_run_events("t1", "r1", after_seq=1, limit=1)] == [2]
    assert db.events.delete_run("t1", "r2") == 1
    assert db.events.delete_thread("t1") == 3
    assert db.events.list_messages("t1") == []
    assert db.events.count_messages("t2") == 1


def test_event_bad_input_writes_nothing(db):
    with pytest.raises(InvalidArgumentError):
        db.events.put([{"thread_id": "t1", "run_id": "r1", "event_type": "ai", "category": "message"}, {"run_id": "r1"}])
    with pytest.raises(InvalidArgumentError):
        db.events.put("event")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        db.events.list_messages("t1", limit="5")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        db.events.list_run_events("t1", "r1", types="ai")  # type: ignore[arg-type]
    assert db.events.count_messages("t1") == 0


def test_threads_are_scoped_to_their_owner(db):
    t = db.threads.create("alice", {"thread_id": "t1", "metadata": {"n": 1, "flag": True}, "display_name": "first"})
    assert t["user_id"] == "alice" and t["status"] == "idle"
    with pytest.raises(ConflictError):
        db.threads.create("alice", {"thread_id": "t1"})
    with pytest.raises(NotFoundError):
        db.threads.get("bob", "t1")
    assert db.threads.get(ANY_OWNER, "t1")["display_name"] == "first"
    fresh = db.threads.create("bob")
    assert fresh["thread_id"] and fresh["user_id"] == "bob"
    db.threads.update("alice", "t1", display_name="renamed", status="busy", metadata={"extra": "x"})
    got = db.threads.get("alice", "t1")
    assert got["display_name"] == "renamed" and got["status"] == "busy"
    assert got["metadata"] == {"n": 1, "flag": True, "extra": "x"}
    # values compare with their types: True is not 1
    assert [x["thread_id"] for x in db.threads.search("alice", metadata={"flag": True})] == ["t1"]
    assert db.threads.search("alice", metadata={"flag": 1}) == []
    assert db.threads.search("alice", status="idle") == []
    assert len(db.threads.search(ANY_OWNER)) == 2
    with pytest.raises(NotFoundError):
        db.threads.update("bob", "t1", display_name="stolen")
    with pytest.raises(NotFoundError):
        db.threads.delete("bob", "t1")
    db.threads.delete("alice", "t1")
    with pytest.raises(NotFoundError):
        db.threads.get("alice", "t1")


def test_thread_owner_must_be_named(db):
    for bad in (None, "", 3):
        with pytest.raises(InvalidArgumentError):
            db.threads.create(bad, {"thread_id": "t1"})
    assert db.threads.search(ANY_OWNER) == []


def test_async_twins_answer_as_the_calls_do(db):
    async def go():
        c = await db.runs.acreate({"thread_id": "t1", "run_id": "r1"})
        assert c["new"]
        await db.runs.aset_status("r1", "running")
        assert (await db.runs.aget("r1"))["status"] == "running"
        evs = await asyncio.gather(
            *(db.events.aput({"thread_id": "t1", "run_id": "r1", "event_type": "ai", "category": "message"}) for _ in range(8))
        )
        assert sorted(e["seq"] for e in evs) == list(range(1, 9))
        assert await db.events.acount_messages("t1") == 8
        await db.threads.acreate("u", {"thread_id": "t1"})
        assert [t["thread_id"] for t in await db.threads.asearch("u")] == ["t1"]
        with pytest.raises(NotFoundError):
            await db.runs.aget("missing")

    asyncio.run(go())


def test_closed_database_refuses_record_calls():
    from langgraph.checkpoint.agentstate import ClosedError

    d = Database()
    runs = d.runs
    d.close()
    with pytest.raises(ClosedError):
        runs.list("t1")


def test_a_database_collected_during_another_call_leaves_its_answer_alone(monkeypatch):
    # The record stores of DeerFlow's tests open a Database each and never
    # close it; the collector finalizes them whenever it runs, also in the
    # middle of another handle's engine call on the same thread.
    from langgraph.checkpoint.agentstate import _engine

    a = Database()
    a.events.put({"thread_id": "t", "run_id": "r", "event_type": "e", "category": "message"})
    b = Database()
    orig = _engine._decode_result
    fired = []

    def decode(*args):
        if not fired:
            fired.append(1)
            b._finalizer()  # what collecting an unreachable Database does
        return orig(*args)

    monkeypatch.setattr(_engine, "_decode_result", decode)
    assert a.events.count_messages("t") == 1
    monkeypatch.setattr(_engine, "_decode_result", orig)
    assert fired and a.events.count_messages("t") == 1
    a.close()


def test_run_apply_changes_worker_fields_atomically_and_refuses_bad_input(db):
    db.runs.apply({"op": "put", "run_id": "r1", "status": "running", "run": {"thread_id": "t", "worker": "w", "worker_lease": "2030-01-01T00:00:00Z"}})
    run = db.runs.get("r1")
    assert (run["status"], run["worker"], run["worker_lease"]) == ("running", "w", "2030-01-01T00:00:00Z")
    assert db.runs.apply({"op": "cancel", "run_id": "r1", "action": "interrupt"}) == {"done": True, "cancel_action": "interrupt"}
    assert db.runs.apply({"op": "cancel", "run_id": "r1", "action": "rollback"})["cancel_action"] == "interrupt"
    assert db.runs.apply({"op": "finalize", "run_id": "r1", "status": "success"}) == {"done": False, "cancel_action": "interrupt"}
    assert db.runs.apply({"op": "takeover", "run_id": "r1", "grace_seconds": 0, "error": "x"})["done"] is False  # leased to 2030
    before = db.runs.get("r1")
    for bad in (
        {"op": "nap", "run_id": "r1"},
        {"op": "cancel", "run_id": "r1", "action": "stop"},
        {"op": "put", "run_id": "r1", "status": "done", "run": {"thread_id": "t"}},
        {"op": "takeover", "run_id": "r1", "grace_seconds": -1},
    ):
        with pytest.raises(InvalidArgumentError):
            db.runs.apply(bad)
    with pytest.raises(ConflictError):
        db.runs.apply({"op": "put", "run_id": "r2", "run": {"thread_id": "t"}})  # the thread's slot is taken
    assert db.runs.get("r1") == before
    with pytest.raises(NotFoundError):
        db.runs.get("r2")
    assert asyncio.run(db.runs.aapply({"op": "renew", "run_id": "r1", "worker": "w", "lease": "2031-01-01T00:00:00Z"}))["done"] is True
