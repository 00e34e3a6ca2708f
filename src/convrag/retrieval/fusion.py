"""One fusion for every ranked list of the wing: weighted reciprocal-rank fusion.

A query's dense and keyword lists are fused into its hybrid list; a turn's planned
queries' hybrid lists, and the anchor list, are fused into the turn's candidates. Each is
a :class:`RankedList` with a weight, and :func:`fuse` scores a chunk
``sum(weight / (k + rank))`` over the lists that hold it, normalised so that a chunk
first in every list scores 1.0; ``k`` is the policy's ``rrf_k``.

Anchoring (the documents the previous answer cited) is one more list: the anchored
candidates, in their fused order. It counts as one more voice for a passage the queries
found, not as a flat boost that would put every anchored chunk above everything else.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from convrag.stores.vectors import Hit


@dataclass(frozen=True, slots=True)
class RankedList:
    """One ranked list and the weight its ranks carry in the fusion."""

    name: str
    """What the list is (``dense``, ``keyword``, a planned query's name): the key of
    :attr:`Fused.ranks`."""
    hits: Sequence[Hit]
    weight: float


@dataclass(frozen=True, slots=True)
class Fused:
    """One chunk after the fusion."""

    hit: Hit
    """The chunk's first occurrence among the lists (the caller puts first the list
    whose fields should stand)."""
    score: float
    """The normalised fused score; with nothing to fuse, the hit's own score."""
    ranks: dict[str, tuple[int, float]] = field(default_factory=dict)
    """Per list that holds the chunk, by name: its rank there and its score there."""
    anchored: bool = False
    """Whether the chunk's document is one of the anchors."""


def fuse(
    lists: Sequence[RankedList],
    *,
    k: int,
    anchor_document_ids: Collection[str] = (),
    anchor_weight: float = 0.0,
) -> list[Fused]:
    """Fuse ``lists`` (and the anchor list) by weighted, normalised RRF.

    Lists of weight 0 or without hits take no part. A single list left, with nothing
    anchored, is returned in its own order with its own scores (there is nothing to
    fuse) and none marked anchored. Ties are broken by chunk id, so the order is deterministic.
    """
    if k < 1:
        raise ValueError(f"rrf k must be >= 1, got {k}")
    if any(q.weight < 0 for q in lists) or anchor_weight < 0:
        raise ValueError("fusion weights must be non-negative")
    used = [q for q in lists if q.weight > 0 and q.hits]
    scores: dict[str, float] = {}
    first: dict[str, Hit] = {}
    ranks: dict[str, dict[str, tuple[int, float]]] = {}
    for q in used:
        for rank, hit in enumerate(q.hits, start=1):
            scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + q.weight / (k + rank)
            first.setdefault(hit.chunk_id, hit)
            ranks.setdefault(hit.chunk_id, {}).setdefault(q.name, (rank, hit.score))
    anchors = set(anchor_document_ids)
    order = sorted(scores, key=lambda c: (-scores[c], c))
    anchored = [c for c in order if first[c].document_id in anchors] if anchor_weight else []
    if len(used) == 1 and not anchored:
        name = used[0].name
        return [
            Fused(h, h.score, {name: (r, h.score)}) for r, h in enumerate(used[0].hits, start=1)
        ]
    for rank, cid in enumerate(anchored, start=1):
        scores[cid] += anchor_weight / (k + rank)
    total = sum(q.weight for q in used) + (anchor_weight if anchored else 0.0)
    norm = total / (k + 1) or 1.0
    out = [
        Fused(first[c], s / norm, ranks[c], first[c].document_id in anchors)
        for c, s in scores.items()
    ]
    out.sort(key=lambda f: (-f.score, f.hit.chunk_id))
    return out
