"""Multi-query fusion: the raw question as a floor under a follow-up's rewrite.

A turn with history searches more than one query: the raw message as typed (its hits are
what the same stack finds without any conversational layer), the rewrite when the rules
or the LLM produced one, and the raw message with the previous question's vector mixed
into its dense query. Each query's hybrid list is fused with the others by weighted
reciprocal-rank fusion, so a bad rewrite can move the raw question's hits down but never
out. Anchoring (chunks of the documents the previous answer cited) is one more list of
its own: the anchored candidates, in their fused order, with a weight like the queries'.
It counts as one more voice for a passage the queries found, not as a flat boost that
would put every anchored chunk above everything else.

The weights are run knobs (:class:`convrag.context.Context`), fitted by
``benchmarks/fit_fusion.py`` on one MTRAG domain and tested on the other (BENCHMARKS.md).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from convrag.search import SearchResult


@dataclass(frozen=True, slots=True)
class QueryList:
    """One query's ranked hits and the weight its ranks carry in the fusion."""

    name: str
    """``rewrite``, ``raw`` or ``history`` (for timings and tests)."""
    hits: Sequence[SearchResult]
    weight: float


def fuse_queries(
    lists: Sequence[QueryList],
    *,
    k: int = 60,
    anchor_document_ids: Collection[str] = (),
    anchor_weight: float = 0.0,
) -> list[SearchResult]:
    """Fuse the lists by ``sum(weight / (k + rank))``, plus the anchor list, normalised so
    a chunk first in every list (anchored, when anything is) scores 1.0.

    A chunk keeps the fields of its first occurrence in ``lists`` (the caller puts the
    list whose query it shows first: its dense score is the cosine to that query).
    Lists of weight 0 or without hits take no part; with none left, the result is empty,
    and a single one (nothing anchored) comes back as it is, its own scores unchanged.
    """
    if k < 1:
        raise ValueError(f"rrf k must be >= 1, got {k}")
    if any(q.weight < 0 for q in lists) or anchor_weight < 0:
        raise ValueError("fusion weights must be non-negative")
    used = [q for q in lists if q.weight > 0 and q.hits]
    scores: dict[str, float] = {}
    first: dict[str, SearchResult] = {}
    for q in used:
        for rank, hit in enumerate(q.hits, start=1):
            scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + q.weight / (k + rank)
            first.setdefault(hit.chunk_id, hit)
    anchors = set(anchor_document_ids)
    order = sorted(scores, key=lambda c: (-scores[c], c))
    anchored = [c for c in order if first[c].document_id in anchors] if anchor_weight else []
    if len(used) == 1 and not anchored:
        return list(used[0].hits)  # nothing to fuse: the list's own scores stand
    for rank, cid in enumerate(anchored, start=1):
        scores[cid] += anchor_weight / (k + rank)
    total = sum(q.weight for q in used) + (anchor_weight if anchored else 0.0)
    norm = total / (k + 1) or 1.0
    out = [
        replace(first[c], score=s / norm, anchored=first[c].document_id in anchors)
        for c, s in scores.items()
    ]
    out.sort(key=lambda r: (-r.score, r.chunk_id))
    return out
