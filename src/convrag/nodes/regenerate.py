"""regenerate: answer again with the repeated entities excluded (seed 002)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from convrag.graph.context import Context
from convrag.graph.state import State
from convrag.nodes._util import emit
from convrag.nodes.synthesize import compose_answer


async def regenerate(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    repeated = state["repetition"]["repeated_entities"]
    excluded = list(dict.fromkeys([*state.get("excluded_entities", []), *repeated]))
    attempt = state.get("regenerations", 0) + 1

    def announce() -> None:
        emit(
            runtime,
            "repetition",
            attempt=attempt,
            excluded_entities=excluded,
            overlap_ratio=state["repetition"]["overlap_ratio"],
        )

    update = await compose_answer(
        {**state, "excluded_entities": excluded},
        runtime,
        excluded,
        "regenerate",
        on_start=announce,
    )
    update["regenerations"] = attempt
    update["excluded_entities"] = excluded
    return update
