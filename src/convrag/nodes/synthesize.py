"""synthesize: a conversation-aware answer with ``[n]`` citations; tokens stream.

When retrieval ran, it first merges the hits into the turn's sources and decides "not
found" (the retrieval wing's :func:`~convrag.retrieval.sources.merge_sources`; a step of
this node, not a node of its own: a superstep between the search and the first token
costs time); when that asks for the web, the search runs first, as it does for the LLM's
``google_search`` call.

With an LLM the answer does not repeat earlier answers, builds on them, and may call the
``google_search`` tool once; when the sources do not hold the answer it replies the
configured "not found" sentence alone, and the turn carries ``no_answer`` as the
extractive "not found" does. Without one, or when the LLM fails mid-turn, the extractive
answer runs instead (flagged), in the same graph. Chit-chat ("thanks!") gets its fixed
reply either way: an LLM call (with the web search tool) to say "you're welcome" costs
time and tokens for nothing.
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from convrag.answering.llm import says_not_found
from convrag.answering.replies import NOT_ANSWERED
from convrag.context import Context
from convrag.events import SourcesEvent, emit
from convrag.llm import resolve_model
from convrag.nodes._drafting import drafted, extractive_draft, fell_back, llm_draft, stream_text
from convrag.records import sources_out
from convrag.retrieval.planning import TurnQuery
from convrag.retrieval.sources import (
    SearchOutcome,
    SourceBudget,
    merge_sources,
    web_search_reason,
)
from convrag.rewriting.classify import is_chit_chat
from convrag.state import DraftUpdate, MergeUpdate, State, SynthesizeUpdate
from convrag.text.tokens import clean


def retrieves(state: State, ctx: Context) -> bool:
    """Whether the turn searches the workspace (both retrieval nodes run, then the merge)."""
    return ctx.rag_enabled and state.get("classification") != "no_retrieval"


async def merged_sources(state: State, ctx: Context) -> MergeUpdate:
    """The turn's sources and its "not found" and web decisions, as a state update."""
    turn = TurnQuery.of(state)
    policy = ctx.retrieval_policy
    hits = (state.get("document_hits", []), state.get("vector_hits", []), state.get("keyword_hit"))
    outcome = SearchOutcome(
        failed=(state.get("errors") or {}).get("retrieve_vectors"),
        degraded="search_degraded" in (state.get("flags") or {}),
    )
    merged = await merge_sources(
        turn,
        hits,
        ctx.deps,
        policy,
        SourceBudget(ctx.top_k, ctx.context_budget_chars, ctx.score_threshold),
        outcome,
    )
    reason = web_search_reason(
        turn, merged, policy, mode=ctx.web_search, web_available=ctx.deps.web is not None
    )
    update = MergeUpdate(
        sources=merged.sources,
        flags={"low_confidence": True} if merged.low_confidence else {},
        retrieval_confidence=merged.confidence,
        abstain=merged.abstain,
        abstention_signals=(
            {**merged.signals.as_dict(), "probability": round(merged.probability or 0.0, 6)}
            if merged.signals is not None
            else None
        ),
        web_search_reason=reason,
        merged=True,
        timings=merged.timings,
    )
    if reason is not None:  # the web_search node runs next, then synthesize again
        update["pending_web_query"] = turn.query
    return update


async def synthesize(
    state: State, runtime: Runtime[Context]
) -> SynthesizeUpdate | MergeUpdate | DraftUpdate:
    """Merge the retrieved sources (once), then the turn's first draft, or a web search
    to run first (the merge's policy, or the LLM's tool call)."""
    if not retrieves(state, runtime.context) or state.get("merged"):
        return await draft(state, runtime)
    merged = await merged_sources(state, runtime.context)
    emit(runtime, SourcesEvent(event="sources", sources=sources_out(merged["sources"])))
    if merged.get("pending_web_query"):
        return merged
    drafted = await draft({**state, **merged}, runtime)
    flags = {**merged.get("flags", {}), **drafted.get("flags", {})}  # both may flag
    return SynthesizeUpdate(**{**merged, **drafted, "flags": flags})


async def draft(state: State, runtime: Runtime[Context]) -> DraftUpdate:
    """The first draft over the merged sources (or a pending web search the LLM asked for)."""
    ctx = runtime.context
    if state.get("abstain") and not state.get("web_results"):
        text = ctx.deps.settings.no_answer_text
        stream_text(runtime, text, "synthesize")
        return {**drafted(state, text, extractive=True), "flags": {"no_answer": True}}
    excluded = state.get("excluded_entities") or []
    model_name = resolve_model(ctx.llm_model, ctx.deps.settings)
    if state.get("classification") == "no_retrieval" and is_chit_chat(clean(state["question"])):
        model_name = None  # chit-chat gets its fixed reply, never an LLM call
    fallback = DraftUpdate()
    refused = None
    if model_name is not None:
        result = await llm_draft(state, runtime, model_name, excluded, "synthesize")
        if result.web_query is not None:
            return DraftUpdate(pending_web_query=result.web_query)
        if result.text is not None:
            update = drafted(state, result.text, extractive=False)
            if says_not_found(result.text, ctx.deps.settings.no_answer_text):
                update["flags"] = {"no_answer": True}
            return update
        fallback, refused = fell_back("synthesize", result.failure), result.failure
    text = await extractive_draft(state, ctx, excluded, refused)
    stream_text(runtime, text, "synthesize")
    if text in NOT_ANSWERED or text == ctx.deps.settings.no_answer_text:
        fallback["flags"] = {**fallback.get("flags", {}), "no_answer": True}
    return {**drafted(state, text, extractive=True), **fallback}
