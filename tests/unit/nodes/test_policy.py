"""How the graph runs every node: services, timing, time limits, degrading, turn start."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, cast

import pytest
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from convrag.context import Context
from convrag.graph import NODES, POLICIES
from convrag.nodes.policy import NodePolicy, apply_policy
from convrag.state import State, per_turn_fields
from tests.nodes.test_policy import _runtime


async def _ok(state: State, runtime: Runtime[Context]) -> Mapping[str, Any]:
    return {"draft": "x"}


async def _slow(state: State, runtime: Runtime[Context]) -> Mapping[str, Any]:
    await asyncio.sleep(5)
    return {"vector_hits": ["never"]}


async def _broken(state: State, runtime: Runtime[Context]) -> Mapping[str, Any]:
    raise ConnectionError("milvus is down")


async def test_every_node_reports_its_wall_time() -> None:
    node = apply_policy("synthesize", _ok, NodePolicy())
    out = await node(cast(State, {}), runtime=_runtime())
    assert out["draft"] == "x" and out["timings"]["synthesize"] >= 0.0


async def test_a_node_over_the_runs_time_limit_degrades_to_its_fallback() -> None:
    policy = NodePolicy(
        timeout=lambda ctx: ctx.retrieval_timeout_s, fallback=lambda _: {"vector_hits": []}
    )
    node = apply_policy("retrieve_vectors", _slow, policy)
    out = await node(cast(State, {}), runtime=_runtime(retrieval_timeout_s=0.05))
    assert out["vector_hits"] == [] and out["errors"] == {"retrieve_vectors": "timeout"}


async def test_a_failing_node_with_a_fallback_records_the_error_and_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    node = apply_policy("retrieve_vectors", _broken, NodePolicy(fallback=lambda _: {"x": 1}))
    out = await node(cast(State, {}), runtime=_runtime())
    assert out["x"] == 1
    assert out["errors"]["retrieve_vectors"] == "error: ConnectionError"
    assert "flags" not in out
    # One warning line with the full message, for the server log only.
    [record] = caplog.records
    assert "retrieve_vectors failed" in record.getMessage()
    assert "milvus is down" in record.getMessage()


async def test_a_fallback_with_a_flag_tells_the_client_why() -> None:
    policy = NodePolicy(fallback=lambda _: {"flags": {"seen": True}}, flag="step_fallback")
    out = await apply_policy("web_search", _broken, policy)(cast(State, {}), runtime=_runtime())
    assert out["flags"] == {"seen": True, "step_fallback": "error: ConnectionError"}


async def test_a_failing_node_without_a_fallback_fails_the_turn() -> None:
    node = apply_policy("persist", _broken, NodePolicy())
    with pytest.raises(ConnectionError):
        await node(cast(State, {}), runtime=_runtime())


async def test_the_first_node_resets_every_per_turn_field() -> None:
    node = apply_policy("load_history", _ok, NodePolicy(starts_turn=True))
    out = await node(cast(State, {}), runtime=_runtime())
    assert set(per_turn_fields()) <= set(out)
    assert out["draft"] == "x" and out["sources"] == [] and out["pending_web_query"] is None
    merged = [name for name, reducer in per_turn_fields().items() if reducer.merge is not None]
    assert sorted(merged) == ["errors", "flags", "timings"]
    assert all(isinstance(out[name], Overwrite) for name in merged)
    assert set(out["timings"].value) == {"load_history"} and out["flags"].value == {}


async def test_a_run_without_services_fails_with_the_fix_named() -> None:
    async def needs(state: State, runtime: Runtime[Context]) -> Mapping[str, Any]:
        return {"x": runtime.context.deps}

    node = apply_policy("persist", needs, NodePolicy())
    with pytest.raises(RuntimeError, match="open_services"):
        await node(cast(State, {}), runtime=_runtime())


def test_only_retrieval_and_web_search_degrade_and_only_load_history_starts_a_turn() -> None:
    degrading = {name for name, p in POLICIES.items() if p.fallback is not None}
    assert degrading == {"retrieve_documents", "retrieve_vectors", "web_search"}
    assert [name for name, p in POLICIES.items() if p.starts_turn] == ["load_history"]
    assert set(POLICIES) <= set(NODES)
