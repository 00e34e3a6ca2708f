"""regenerate: answer again with the repeated entities excluded.

The ``repetition`` event tells clients to discard the tokens so far. An extractive
regeneration leaves out only the sentences an earlier answer said that name a repeated
entity, and takes the next relevant ones; one that finds nothing new to cite, or only
something less relevant to the question, streams nothing: the earlier draft stands.
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from convrag.context import Context
from convrag.events import RepetitionEvent, emit
from convrag.llm import resolve_model
from convrag.nodes._drafting import (
    drafted,
    extractive_draft,
    fell_back,
    llm_draft,
    may_replace_first,
    stream_text,
)
from convrag.state import DraftUpdate, State


async def regenerate(state: State, runtime: Runtime[Context]) -> DraftUpdate:
    """A new draft that leaves out the entities the last answers already named."""
    ctx = runtime.context
    repetition = state["repetition"]
    excluded = list(
        dict.fromkeys([*state.get("excluded_entities", []), *repetition["repeated_entities"]])
    )
    attempt = state.get("regenerations", 0) + 1
    announce = RepetitionEvent(
        event="repetition",
        attempt=attempt,
        excluded_entities=excluded,
        overlap_ratio=repetition["overlap_ratio"],
    )
    bookkeeping = DraftUpdate(regenerations=attempt, excluded_entities=excluded)
    regen_state: State = {**state, "excluded_entities": excluded}
    model_name = resolve_model(ctx.llm_model, ctx.deps.settings)
    fallback = DraftUpdate()
    refused = None
    if model_name is not None:
        emit(runtime, announce)
        result = await llm_draft(regen_state, runtime, model_name, excluded, "regenerate")
        if result.web_query is not None:
            return {**bookkeeping, "pending_web_query": result.web_query}
        if result.text is not None:
            return {**drafted(regen_state, result.text, extractive=False), **bookkeeping}
        fallback, refused = fell_back("regenerate", result.failure), result.failure
    text = await extractive_draft(regen_state, ctx, excluded, refused)
    update = drafted(regen_state, text, extractive=True)
    new = update["drafts"][-1]
    # Nothing new to cite (the same sentences again), or only something less relevant:
    # stream nothing; persist keeps the earlier draft and flags the repetition unresolved.
    first = (state.get("drafts") or [new])[0]
    if not state.get("sources") or (
        may_replace_first(new, first) and new["answer"] != state.get("draft")
    ):
        if model_name is None:
            emit(runtime, announce)
        stream_text(runtime, text, "regenerate")
    return {**update, **fallback, **bookkeeping}
