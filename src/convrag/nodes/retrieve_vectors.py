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
    if found.rerank_failure is not None:
        update["flags"] = {"rerank_fallback": found.rerank_failure}
        update["errors"] = {"rerank": found.rerank_failure}
    return update
