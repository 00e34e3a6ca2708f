"""A turn's candidates: each planned query's hybrid list, fused with the others and the
anchor list, then rescored by the reranker when one is configured."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace

from convrag.records import Source
from convrag.rerank import rerank_sources
from convrag.retrieval.focus import stays_on_focus
from convrag.retrieval.fusion import RankedList, fuse
from convrag.retrieval.planning import PlannedQuery, TurnQuery, plan_queries
from convrag.retrieval.policy import RetrievalPolicy
from convrag.retrieval.search import SearchResult
from convrag.retrieval.uses import WingServices
from convrag.stores.vectors import Hit


@dataclass(slots=True)
class Candidates:
    """What a turn's search found."""

    hits: list[Source]
    keyword_hit: Source | None = None
    """The first query's keyword top hit when the fusion ranked it below the sources:
    what the "not found" decision weighs alone before refusing."""
    timings: dict[str, float] = field(default_factory=dict)
    rerank_failure: str | None = None
    degraded: str | None = None
    """Why a search went on with one list only (``dense: timeout``), or None."""


async def search_planned(
    turn: TurnQuery,
    services: WingServices,
    policy: RetrievalPolicy,
    planned: list[PlannedQuery],
    depth: int,
    failures: list[str],
) -> tuple[list[RankedList], SearchResult | None, dict[str, float]]:
    """Each planned query's hybrid list, ``depth`` deep, searched concurrently; and the
    first query's keyword top hit (``keyword_second_look``), which stays out of the
    fusion. A list that fails is left out, why appended to ``failures``."""
    timings: dict[str, float] = {}
    searcher = services.searcher
    labels = await searcher.current_labels(turn.workspace_id)  # once for every query

    async def one(q: PlannedQuery, first: bool) -> list[SearchResult]:
        return await searcher.search(
            turn.workspace_id,
            q.text,
            top_k=depth,
            context_query=turn.previous if q.mixed else None,
            context_weight=policy.history_weight if q.mixed else 0.0,
            feedback_weight=policy.feedback_weight,
            timings=timings,
            labels=labels,
            keyword_first=first and policy.keyword_second_look,
            policy=policy,
            failures=failures,
        )

    found = await asyncio.gather(*(one(q, i == 0) for i, q in enumerate(planned)))
    keyword = None
    if policy.keyword_second_look:
        keyword = next((h for hits in found[:1] for h in hits if h.bm25_rank == 1), None)
    lists = [
        RankedList(q.name, hits[:depth], q.weight) for q, hits in zip(planned, found, strict=True)
    ]
    return lists, keyword, timings


def with_raw_top(lists: list[RankedList], weight: float) -> list[RankedList]:
    """``lists`` and, when the raw message's list is fused with others, its first hit as a
    list of its own at ``weight``: the passage the message alone finds best stays first
    unless the other lists together outweigh it (the rewrite and history lists agreeing
    on a near neighbour pushed it down, and an answer quoting its first source paid)."""
    raw = next((q for q in lists if q.name == "raw" and q.weight > 0 and q.hits), None)
    if raw is None or weight <= 0 or len(lists) < 2:
        return lists
    return [*lists, RankedList("raw_top", raw.hits[:1], weight)]


def fuse_planned(
    lists: list[RankedList], turn: TurnQuery, policy: RetrievalPolicy, focus: float = 1.0
) -> list[SearchResult]:
    """The planned queries' lists fused (with the raw message's first hit,
    :func:`with_raw_top`), anchored to the previous answer's documents on a follow-up at
    ``anchor_weight`` times ``focus`` (:func:`~convrag.retrieval.focus.stays_on_focus`)."""
    fused = fuse(
        with_raw_top(lists, policy.raw_top_weight),
        k=policy.rrf_k,
        anchor_document_ids=turn.anchor_document_ids if turn.follow_up else (),
        anchor_weight=policy.anchor_weight * focus,
    )
    return [_result(f.hit, f.score, f.anchored) for f in fused]


def _result(hit: Hit, score: float, anchored: bool) -> SearchResult:
    """A fused hit as a search result (every planned list holds search results)."""
    if not isinstance(hit, SearchResult):
        raise TypeError(f"a planned query's list holds search results, not {type(hit)}")
    return replace(hit, score=score, anchored=anchored)


def keyword_candidate(
    results: list[SearchResult], keyword: SearchResult | None, top_k: int
) -> SearchResult | None:
    """The first query's keyword top hit when the fusion ranks it below the ``top_k``
    sources (its fused record when it is among ``results``), else None."""
    if keyword is None:
        return None
    at = next((i for i, r in enumerate(results) if r.chunk_id == keyword.chunk_id), None)
    if at is None:
        return keyword
    return results[at] if at >= top_k else None


async def find_candidates(
    turn: TurnQuery, services: WingServices, policy: RetrievalPolicy, top_k: int
) -> Candidates:
    """The turn's fused candidates (see :func:`plan_queries`), reranked when a reranker
    is configured (on its failure, the fused order stands and why is recorded)."""
    wanted = max(2 * top_k, 10)
    reranker = services.reranker
    depth = max(wanted, services.settings.rerank_top_n) if reranker else wanted
    planned = plan_queries(turn, policy)
    failures: list[str] = []
    lists, keyword_top, timings = await search_planned(
        turn, services, policy, planned, depth, failures
    )
    degraded = "; ".join(dict.fromkeys(failures)) or None
    focus = stays_on_focus(turn, services.searcher, policy.focus_model)
    results = fuse_planned(lists, turn, policy, focus)[:depth]
    hits = [r.as_source() for r in results]
    candidate = keyword_candidate(results, keyword_top, top_k)
    keyword = candidate.as_source() if candidate is not None else None
    if reranker is None:
        return Candidates(hits, keyword, timings, degraded=degraded)
    reranked, failure = await rerank_sources(
        reranker, turn.query, hits, services.settings.rerank_timeout_s
    )
    return Candidates(reranked[:wanted], keyword, timings, failure, degraded)
