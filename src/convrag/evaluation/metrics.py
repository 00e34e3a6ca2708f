"""Retrieval and rewriting metrics, as the benchmarks' papers define them."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence

KS = (1, 3, 5, 10)
NDCG_KS = (5, 10)
_WORD = re.compile(r"\w+")


def recall_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """Share of the relevant passages found in the top k."""
    rel = {p for p, g in relevant.items() if g > 0}
    if not rel:
        return 0.0
    return len(rel.intersection(ranked[:k])) / len(rel)


def ndcg_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """nDCG@k with graded relevance (gain = grade, log2 discount)."""
    dcg = sum(relevant.get(p, 0) / math.log2(i + 2) for i, p in enumerate(ranked[:k]))
    ideal = sorted((g for g in relevant.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def retrieval_scores(ranked: Sequence[str], relevant: Mapping[str, int]) -> dict[str, float]:
    out = {f"R@{k}": recall_at(ranked, relevant, k) for k in KS}
    out.update({f"nDCG@{k}": ndcg_at(ranked, relevant, k) for k in NDCG_KS})
    return out


def mean_scores(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    keys = list(rows[0])
    return {k: round(sum(r[k] for r in rows) / len(rows), 4) for k in keys}


def token_f1(hypothesis: str, reference: str) -> float:
    """Bag-of-words F1 between lowercased word tokens."""
    h = Counter(_WORD.findall(hypothesis.lower()))
    r = Counter(_WORD.findall(reference.lower()))
    common = sum((h & r).values())
    if not common:
        return 0.0
    precision = common / sum(h.values())
    recall = common / sum(r.values())
    return 2 * precision * recall / (precision + recall)
