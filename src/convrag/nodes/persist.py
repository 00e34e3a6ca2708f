"""persist: one transaction completes the turn and writes its resolved citations.

``load_history`` stored the question as a ``processing`` turn; this node writes its
answer and marks it ``done``.

Only markers that resolve to a source are stored; the others are removed from the answer
and counted, as are the images and links whose URL is not a source's
(:func:`~convrag.answering.guard.strip_foreign_links`, flag ``links_removed``). The
turn id was fixed by load_history, so re-running this node after a crash
never duplicates a turn.
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from convrag.answering.guard import strip_foreign_links
from convrag.citations import resolve_citations
from convrag.context import Context
from convrag.nodes._drafting import may_replace_first
from convrag.records import StoredSource, TurnMetadata
from convrag.state import PersistUpdate, State, repetition_detected
from convrag.stores.records import NewTurn


def final_draft(state: State, threshold: float) -> tuple[str, bool]:
    """The answer to keep and whether repetition stayed unresolved.

    Only drafts that :func:`may_replace_first` count; among them, the current draft
    when it is not repetitive, else the one with the lowest overlap.
    """
    current = state.get("draft", "")
    repetition = state.get("repetition")
    repetitive = bool(repetition and repetition["is_repetitive"])
    drafts = state.get("drafts") or []
    if not drafts:
        return current, repetitive
    eligible = [d for d in drafts if may_replace_first(d, drafts[0])]
    if not eligible:
        return current, repetitive
    if not repetitive and any(d["answer"] == current for d in eligible):
        return current, False
    best = min(eligible, key=lambda d: d["overlap_ratio"])
    return best["answer"], best["overlap_ratio"] > threshold


async def persist(state: State, runtime: Runtime[Context]) -> PersistUpdate:
    """Complete the turn and write its citations once."""
    services = runtime.context.deps
    draft, unresolved_repetition = final_draft(state, runtime.context.repetition_threshold)
    sources = state.get("sources") or []
    # Whatever the model was told: no image or link of its own making leaves the service.
    links = strip_foreign_links(draft, sources)
    answer, citations, unresolved = resolve_citations(links.answer, sources)
    for c in citations:  # the page travels with the citation into the reply and Postgres
        c["page"] = sources[c["source_index"] - 1].get("page")
    cited = {c["source_index"] for c in citations}
    flags = dict(state.get("flags") or {})
    flags.update({"unresolved_markers": unresolved, "repetition_unresolved": unresolved_repetition})
    if links.removed:
        flags["links_removed"] = links.removed
    stored_sources = [
        StoredSource.of(n, s, cited=n in cited) for n, s in enumerate(sources, start=1)
    ]
    turn = NewTurn(
        id=state["turn_id"],
        workspace_id=state["workspace_id"],
        conversation_id=state["conversation_id"],
        question=state["question"],
        answer=answer,
        contextualized_query=state.get("rewritten_query"),
        entities=list(state.get("entities") or []),
        sources=stored_sources,
        web_search_triggered=bool(flags.get("web_search_triggered")),
        repetition_detected=repetition_detected(state),
        intent=state.get("classification"),
        confidence=state.get("retrieval_confidence"),
        metadata=TurnMetadata(
            flags=flags,
            errors=state.get("errors") or {},
            rewrite_method=state.get("rewrite_method"),
            regenerations=state.get("regenerations", 0),
            timings_ms=state.get("timings") or {},
        ),
        citations=citations,
    )
    written = await services.db.turns.complete_turn(turn)
    return PersistUpdate(answer=answer, citations=citations, persisted=written, flags=flags)
