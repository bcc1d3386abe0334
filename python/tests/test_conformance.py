"""LangGraph's own conformance suite for checkpoint savers
(langgraph-checkpoint-conformance), through its validate()."""

import asyncio
import os

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES, DetectedCapabilities

from langgraph.checkpoint.agentstate import AgentStateSaver


def _run(factory):
    return asyncio.run(validate(factory))


def _check(report):
    results = report.to_dict()["results"] if "results" in report.to_dict() else None
    total = 0
    for cap in ALL_CAPABILITIES:
        r = report.results[cap]
        assert r.detected, f"{cap.value} is not detected as implemented"
        assert r.passed is True, f"{cap.value}: {r.tests_failed} failed, {r.tests_skipped} skipped"
        assert r.tests_failed == 0 and r.tests_skipped == 0, cap.value
        total += r.tests_passed
    print(f"conformance: {total} passed, 0 failed, 0 skipped over {len(ALL_CAPABILITIES)} capabilities")
    assert results is None or results
    return total


def test_every_capability_is_detected():
    s = AgentStateSaver()
    try:
        d = DetectedCapabilities.from_instance(s)
        assert d.missing == frozenset(), d.missing
    finally:
        s.close()


def test_conformance_on_a_file(tmp_path):
    n = [0]

    @checkpointer_test(name="AgentStateSaver (file)")
    async def factory():
        n[0] += 1
        s = AgentStateSaver(os.path.join(tmp_path, f"c{n[0]}.db"))
        yield s
        s.close()

    total = _check(_run(factory))
    # SqliteSaver passes 58 with three capabilities skipped; every test of
    # the suite runs here.
    assert total > 58


def test_conformance_in_memory():
    @checkpointer_test(name="AgentStateSaver (memory)")
    async def factory():
        s = AgentStateSaver()
        yield s
        s.close()

    _check(_run(factory))


def test_conformance_in_delta_mode(tmp_path):
    n = [0]

    @checkpointer_test(name="AgentStateSaver (delta)")
    async def factory():
        n[0] += 1
        s = AgentStateSaver(os.path.join(tmp_path, f"d{n[0]}.db"), mode="delta", every=10)
        yield s
        s.close()

    _check(_run(factory))
