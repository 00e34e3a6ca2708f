"""retrieve_vectors: the turn's hybrid dense + keyword candidates, from the retrieval wing
(:func:`convrag.retrieval.candidates.find_candidates`)."""

from __future__ import annotations

from langgraph.runtime import Runtime

from convrag.context import Context
from convrag.retrieval.candidates import find_candidates
from convrag.retrieval.planning import TurnQuery
from convrag.state import State, VectorHitsUpdate


async def retrieve_vectors(state: State, runtime: Runtime[Context]) -> VectorHitsUpdate:
    """Fused dense and keyword hits of the turn's planned queries."""
    ctx = runtime.context
    found = await find_candidates(TurnQuery.of(state), ctx.deps, ctx.retrieval_policy, ctx.top_k)
    update = VectorHitsUpdate(
        vector_hits=found.hits, keyword_hit=found.keyword_hit, timings=found.timings
    )
    flags: dict[str, str] = {}
    errors: dict[str, str] = {}
    if found.rerank_failure is not None:
        flags["rerank_fallback"] = errors["rerank"] = found.rerank_failure
    if found.degraded is not None:
        flags["search_degraded"] = errors["search"] = found.degraded
    if flags:
        update["flags"], update["errors"] = flags, errors
    return update
