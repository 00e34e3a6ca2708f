"""retrieve_vectors: hybrid dense + BM25 search, then rescored by the reranker when one is
configured.

A first turn searches its message; a turn the rules call standalone, its message with the
previous question mixed into the dense query. A follow-up searches up to three queries and
fuses their lists (:mod:`convrag.fusion`, :data:`PLANS`): the rewrite, the raw message as
typed, and the message with the previous question (the history query); one that an LLM
rewrote searches its rewrite and the raw message. The previous answer's documents can join
as a list of their own (``anchor_weight``). The raw message is always one of a follow-up's
queries (when it has a word to search), so a garbled rewrite can push its hits down but
not out.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Literal

from langgraph.runtime import Runtime

from convrag.context import Context
from convrag.fusion import QueryList, fuse_queries
from convrag.records import HistoryTurn, previous_question
from convrag.rerank import rerank_sources
from convrag.rewriting.gate import is_continuation
from convrag.search import SearchResult
from convrag.state import State, VectorHitsUpdate
from convrag.text.tokens import content_words, tokenize


@dataclass(frozen=True, slots=True)
class PlannedQuery:
    """One query of a turn: its text, whether its dense query mixes in the previous
    question, and the weight of its list."""

    name: str
    text: str
    mixed: bool
    weight: float


TurnKind = Literal["first_turn", "standalone", "follow_up", "llm_follow_up"]

PLANS: dict[TurnKind, tuple[str, ...]] = {
    "first_turn": ("raw",),
    "standalone": ("message",),
    "follow_up": ("rewrite", "raw", "history"),
    "llm_follow_up": ("rewrite", "raw"),
}
"""The lists each kind of turn searches. ``rewrite``: the standalone query, only when it
differs from the message; ``raw``: the message as typed; ``history``: the message and the
previous question as one query (its keywords keep the topic a bare follow-up lacks);
``message``: the message alone. All but ``raw`` mix the previous question's vector into
the dense query (``history_weight``). A turn the rules call standalone keeps the one query
it searched before issue 31, or adds the raw list (``standalone_raw_query``); a first turn
has nothing to mix. A follow-up that an LLM rewrote has no history list: its rewrite
already names the conversation's topic, and the history list cost R@5 on both MTRAG
domains with MTRAG's own LLM rewrites (``convrag eval mtrag -s convrag_llm_reference``).
Fitted with ``benchmarks/fit_fusion.py`` and that strategy (BENCHMARKS.md)."""


def turn_kind(state: State) -> TurnKind:
    """Which row of :data:`PLANS` a turn searches by."""
    return _kind(
        bool(state.get("history")), state.get("classification"), state.get("rewrite_method")
    )


def _kind(has_history: bool, classification: str | None, method: str | None) -> TurnKind:
    if not has_history:
        return "first_turn"
    if classification != "follow_up":
        return "standalone"
    return "llm_follow_up" if method == "llm" else "follow_up"


def query_texts(
    message: str,
    query: str,
    classification: str,
    method: str,
    history: list[HistoryTurn],
    ctx: Context,
) -> list[str]:
    """The texts a turn will search (:func:`plan_queries`), known once it is classified
    and rewritten (by ``method``): the rewrite node starts embedding them while the graph
    moves on to the search."""
    kind = _kind(bool(history), classification, method)
    return [q.text for q in plan_queries(message, query, kind, ctx, previous_question(history))]


def plan_queries(
    message: str, query: str, kind: TurnKind, ctx: Context, previous: str | None = None
) -> list[PlannedQuery]:
    """The queries a turn searches (:data:`PLANS`), the one whose words it shows first;
    ``previous`` is the previous standalone question.

    The raw list needs a content word and more than a continuation ("Why?", "Can you
    elaborate?": the rewrite, the previous question, carries the topic); the history list
    does not, its previous question carries the topic. Lists of weight 0 are left out, but
    never all of them: the first stays, at 1.
    """
    weights = {
        "rewrite": ctx.llm_rewrite_query_weight
        if kind == "llm_follow_up"
        else ctx.rewrite_query_weight,
        "raw": ctx.raw_query_weight,
        "history": ctx.history_query_weight,
        "message": ctx.history_query_weight,
    }
    texts = {"rewrite": query, "raw": message, "message": message}
    texts["history"] = f"{message.strip()} {previous}" if previous else message
    rewritten = _words(query) != _words(message)
    wordy = bool(content_words(tokenize(message))) and not is_continuation(message)
    names = PLANS[kind]
    if kind == "standalone" and ctx.standalone_raw_query:
        names = ("raw", "message")
    planned = [
        PlannedQuery(name, texts[name], name != "raw", weights[name])
        for name in names
        if {"rewrite": rewritten, "raw": wordy or not rewritten}.get(name, True)
    ]
    if len(planned) == 1 or kind == "first_turn":
        return [replace(planned[0], text=query, weight=1.0)]
    kept = [q for q in planned if q.weight > 0]
    return kept or [replace(planned[0], weight=1.0)]


def _words(text: str) -> list[str]:
    return [t.low for t in tokenize(text) if t.kind != "punct"]


async def search_planned(
    state: State, ctx: Context, planned: list[PlannedQuery], depth: int
) -> tuple[list[QueryList], SearchResult | None, dict[str, float]]:
    """Each planned query's hybrid list, ``depth`` deep, searched concurrently; and the
    first query's keyword top hit (``keyword_second_look``), which stays out of the
    fusion."""
    history = state.get("history") or []
    timings: dict[str, float] = {}
    searcher = ctx.deps.searcher
    labels = await searcher.current_labels(state["workspace_id"])  # once for every query

    async def one(q: PlannedQuery, first: bool) -> list[SearchResult]:
        return await searcher.search(
            state["workspace_id"],
            q.text,
            top_k=depth,
            context_query=previous_question(history) if q.mixed else None,
            context_weight=ctx.history_weight if q.mixed else 0.0,
            feedback_weight=ctx.feedback_weight,
            timings=timings,
            labels=labels,
            keyword_first=first and ctx.keyword_second_look,
        )

    found = await asyncio.gather(*(one(q, i == 0) for i, q in enumerate(planned)))
    keyword = None
    if ctx.keyword_second_look:
        keyword = next((h for hits in found[:1] for h in hits if h.bm25_rank == 1), None)
    lists = [
        QueryList(q.name, hits[:depth], q.weight) for q, hits in zip(planned, found, strict=True)
    ]
    return lists, keyword, timings


def keyword_candidate(
    results: list[SearchResult], keyword: SearchResult | None, top_k: int
) -> SearchResult | None:
    """The first query's keyword top hit when the fusion ranks it below the ``top_k``
    sources (its fused record when it is among ``results``), else None: what
    ``merge_context`` weighs alone before "not found"."""
    if keyword is None:
        return None
    at = next((i for i, r in enumerate(results) if r.chunk_id == keyword.chunk_id), None)
    if at is None:
        return keyword
    return results[at] if at >= top_k else None


async def retrieve_vectors(state: State, runtime: Runtime[Context]) -> VectorHitsUpdate:
    """Fused dense and keyword hits of the turn's queries (see :func:`plan_queries`)."""
    ctx = runtime.context
    services = ctx.deps
    follow_up = state.get("classification") == "follow_up"
    message = state["question"]
    query = state.get("rewritten_query") or message
    wanted = max(2 * ctx.top_k, 10)
    reranker = services.reranker
    depth = max(wanted, services.settings.rerank_top_n) if reranker else wanted
    history = state.get("history") or []
    planned = plan_queries(message, query, turn_kind(state), ctx, previous_question(history))
    lists, keyword_top, timings = await search_planned(state, ctx, planned, depth)
    results = fuse_queries(
        lists,
        anchor_document_ids=state.get("anchor_document_ids", []) if follow_up else [],
        anchor_weight=ctx.anchor_weight,
    )[:depth]
    hits = [r.as_source() for r in results]
    candidate = keyword_candidate(results, keyword_top, ctx.top_k)
    keyword = candidate.as_source() if candidate is not None else None
    if reranker is None:
        return VectorHitsUpdate(vector_hits=hits, keyword_hit=keyword, timings=timings)
    reranked, failure = await rerank_sources(
        reranker, query, hits, services.settings.rerank_timeout_s
    )
    update = VectorHitsUpdate(vector_hits=reranked[:wanted], keyword_hit=keyword, timings=timings)
    if failure is not None:
        update["flags"] = {"rerank_fallback": failure}
        update["errors"] = {"rerank": failure}
    return update
