"""synthesize: a conversation-aware answer with ``[n]`` citations; tokens stream.

With an LLM the answer does not repeat earlier answers, builds on them, and may call the
``google_search`` tool once. Without one, or when the LLM fails mid-turn, the extractive
answer runs instead (flagged), in the same graph.
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from convrag.context import Context
from convrag.llm import resolve_model
from convrag.nodes._drafting import drafted, extractive_draft, fell_back, llm_draft, stream_text
from convrag.state import DraftUpdate, State


async def synthesize(state: State, runtime: Runtime[Context]) -> DraftUpdate:
    """The turn's first draft (or a pending web search the LLM asked for)."""
    ctx = runtime.context
    if state.get("abstain") and not state.get("web_results"):
        text = ctx.deps.settings.no_answer_text
        stream_text(runtime, text, "synthesize")
        return {**drafted(state, text, extractive=True), "flags": {"no_answer": True}}
    excluded = state.get("excluded_entities") or []
    model_name = resolve_model(ctx.llm_model, ctx.deps.settings)
    fallback = DraftUpdate()
    if model_name is not None:
        result = await llm_draft(state, runtime, model_name, excluded, "synthesize")
        if result.web_query is not None:
            return DraftUpdate(pending_web_query=result.web_query)
        if result.text is not None:
            return drafted(state, result.text, extractive=False)
        fallback = fell_back("synthesize", result.failure)
    text = await extractive_draft(state, ctx, excluded)
    stream_text(runtime, text, "synthesize")
    return {**drafted(state, text, extractive=True), **fallback}
