"""retrieve_vectors: hybrid dense + BM25 search, anchored to the last answer on a follow-up,
then rescored by the reranker when one is configured."""

from __future__ import annotations

from langgraph.runtime import Runtime

from convrag.context import Context
from convrag.records import previous_question
from convrag.rerank import rerank_sources
from convrag.state import State, VectorHitsUpdate


async def retrieve_vectors(state: State, runtime: Runtime[Context]) -> VectorHitsUpdate:
    """Fused dense and keyword hits for the standalone query."""
    ctx = runtime.context
    follow_up = state.get("classification") == "follow_up"
    history = state.get("history") or []
    services = ctx.deps
    query = state.get("rewritten_query") or state["message"]
    wanted = max(2 * ctx.top_k, 10)
    reranker = services.reranker
    timings: dict[str, float] = {}
    results = await services.searcher.search(
        state["workspace_id"],
        query,
        top_k=max(wanted, services.settings.rerank_top_n) if reranker else wanted,
        anchor_document_ids=state.get("anchor_document_ids", []) if follow_up else [],
        anchor_boost=ctx.anchor_boost,
        context_query=previous_question(history),
        context_weight=ctx.history_weight,
        feedback_weight=ctx.feedback_weight,
        timings=timings,
    )
    hits = [r.as_source() for r in results]
    if reranker is None:
        return VectorHitsUpdate(vector_hits=hits, timings=timings)
    reranked, failure = await rerank_sources(
        reranker, query, hits, services.settings.rerank_timeout_s
    )
    update = VectorHitsUpdate(vector_hits=reranked[:wanted], timings=timings)
    if failure is not None:
        update["flags"] = {"rerank_fallback": failure}
        update["errors"] = {"rerank": failure}
    return update
