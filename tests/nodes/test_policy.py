"""How the graph runs every node: services, timing, time limits, degrading, turn start."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, cast

from langgraph.runtime import Runtime

from convrag.context import Context
from convrag.nodes.policy import NodePolicy, apply_policy
from convrag.services import Services
from convrag.state import State


def _runtime(**ctx: Any) -> Runtime[Context]:
    return Runtime(context=Context(**ctx))


async def test_the_runs_own_services_win_over_the_compiled_default(services: Services) -> None:
    other = replace(services, milvus_uri="http://other")

    async def which(state: State, runtime: Runtime[Context]) -> Mapping[str, Any]:
        return {"uri": runtime.context.deps.milvus_uri}

    node = apply_policy("persist", which, NodePolicy(), services=other)
    default = await node(cast(State, {}), runtime=_runtime())
    own = await node(cast(State, {}), runtime=_runtime(services=services))
    assert default["uri"] == "http://other" and own["uri"] == services.milvus_uri
