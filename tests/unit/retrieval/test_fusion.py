"""The wing's one fusion: a query's dense and keyword lists, a turn's planned queries and
the anchor list, each a weighted ranked list (no stores: plain hits)."""

from __future__ import annotations

import pytest

from convrag.retrieval.candidates import fuse_planned, keyword_candidate
from convrag.retrieval.fusion import RankedList, fuse
from convrag.retrieval.planning import TurnQuery
from convrag.retrieval.policy import default_policy
from convrag.retrieval.search import SearchResult
from convrag.stores.vectors import Hit


def _hits(*ids: str, doc: str | None = None) -> list[SearchResult]:
    return [SearchResult(i, doc or f"d{i}", i, 1.0 / (n + 1)) for n, i in enumerate(ids)]


def _ids(fused: list[SearchResult]) -> list[str]:
    return [r.chunk_id for r in fused]


def _follow_up(*anchors: str) -> TurnQuery:
    history = [
        {
            "turn_number": 1,
            "question": "Q?",
            "answer": "A.",
            "contextualized_query": None,
            "entities": [],
            "cited_document_ids": [],
        }
    ]
    return TurnQuery("w", "m", "m", "follow_up", "rules", history, anchors)  # type: ignore[arg-type]


def _planned(lists: list[RankedList], *anchors: str, anchor_weight: float = 0.0) -> list[str]:
    policy = default_policy().with_values({"anchor_weight": anchor_weight, "raw_top_weight": 0.0})
    return _ids(fuse_planned(lists, _follow_up(*anchors), policy))


def test_a_chunk_both_lists_find_ranks_first_with_its_rank_in_each() -> None:
    dense = [Hit("a", "d", "a", 0.9), Hit("b", "d", "b", 0.8), Hit("c", "d", "c", 0.7)]
    keyword = [Hit("c", "d", "c", 12.0), Hit("e", "d", "e", 3.0)]
    fused = fuse([RankedList("dense", dense, 1.0), RankedList("keyword", keyword, 1.0)], k=60)
    assert fused[0].hit.chunk_id == "c"
    assert fused[0].ranks == {"dense": (3, 0.7), "keyword": (1, 12.0)}


def test_a_chunk_first_in_every_list_scores_one() -> None:
    fused = fuse(
        [RankedList("rewrite", _hits("x", "y"), 2.0), RankedList("raw", _hits("x"), 1.0)], k=60
    )
    assert fused[0].hit.chunk_id == "x" and fused[0].score == pytest.approx(1.0)


def test_a_bad_rewrite_cannot_push_the_raw_questions_hits_out() -> None:
    """Twenty junk hits of a rewrite weighing as much as the raw list leave the raw
    question's first hit in the top 5."""
    raw = RankedList("raw", _hits("gold", "a", "b"), 1.0)
    rewrite = RankedList("rewrite", _hits(*(f"junk{i}" for i in range(20))), 1.0)
    assert "gold" in _planned([rewrite, raw])[:5]


def test_a_single_list_comes_back_in_its_order_with_its_own_scores() -> None:
    hits = _hits("a", "b")
    fused = fuse([RankedList("raw", hits, 1.0), RankedList("history", [], 1.0)], k=60)
    assert [(f.hit, f.score) for f in fused] == [(h, h.score) for h in hits]
    assert fuse([RankedList("raw", hits, 0.0)], k=60) == []


def test_a_chunk_keeps_the_fields_of_the_list_whose_query_is_shown() -> None:
    shown = SearchResult("c", "d", "c", 0.5, dense_score=0.7)
    other = SearchResult("c", "d", "c", 0.5, dense_score=0.2)
    lists = [RankedList("rewrite", [shown], 1.0), RankedList("raw", [other], 1.0)]
    (fused,) = fuse_planned(lists, _follow_up(), default_policy())
    assert fused.dense_score == 0.7


def test_anchoring_is_one_more_voice_not_a_flat_boost() -> None:
    """An anchored hit moves up past hits it was level with, but one far down both lists
    does not jump above a hit both lists put first."""
    level = [RankedList("raw", _hits("top", "b", "z"), 1.0)]
    level.append(RankedList("history", _hits("top", "z", "b"), 1.0))
    assert _planned(level) == ["top", "b", "z"]
    anchored = _planned(level, "dz", anchor_weight=0.5)
    assert anchored.index("z") < anchored.index("b")
    deep = _hits("top", *(f"f{i}" for i in range(28)), "z")
    far = [RankedList("raw", deep, 1.0), RankedList("history", deep, 1.0)]
    assert _planned(far, "dz", anchor_weight=0.5)[0] == "top"
    flagged = fuse_planned(
        level, _follow_up("dz"), default_policy().with_values({"anchor_weight": 0})
    )
    assert flagged[2].anchored  # weight 0: the flag only


def test_the_keyword_top_hit_below_the_sources_is_the_candidate_for_a_second_look() -> None:
    """BM25's first hit, ranked below the five sources or cut from the fused list, is the
    one the "not found" decision weighs before refusing; among the sources, none is."""
    fused = _hits(*(f"d{i}" for i in range(8)))
    option = SearchResult("option", "dopt", "--sandbox: ...", 0.001, bm25_rank=1)
    assert keyword_candidate(fused, option, 5) == option
    assert keyword_candidate([*fused, option], option, 5) == option
    assert keyword_candidate([*fused[:3], option, *fused[3:]], option, 5) is None
    assert keyword_candidate(fused, None, 5) is None


def test_fusion_refuses_negative_weights_and_a_nonpositive_k() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        fuse([RankedList("raw", _hits("a"), -1.0)], k=60)
    with pytest.raises(ValueError, match="rrf k must be >= 1"):
        fuse([], k=0)


def test_a_weighted_list_wins_a_tie_of_ranks() -> None:
    dense = [Hit("a", "d", "a", 0.9), Hit("b", "d", "b", 0.8)]
    keyword = [Hit("b", "d", "b", 9.0), Hit("a", "d", "a", 8.0)]
    even = fuse([RankedList("dense", dense, 1.0), RankedList("keyword", keyword, 1.0)], k=60)
    assert even[0].score == pytest.approx(even[1].score)
    weighted = fuse([RankedList("dense", dense, 1.0), RankedList("keyword", keyword, 0.5)], k=60)
    assert [f.hit.chunk_id for f in weighted] == ["a", "b"]


def test_the_policys_k_governs_the_fusion_of_the_planned_queries() -> None:
    """A larger k flattens the ranks: the chunk two lists hold at ranks 2 and 3 passes the
    one a single list holds first only when the ranks' difference counts less."""
    lists = [
        RankedList("raw", _hits("solo", "both"), 1.0),
        RankedList("history", _hits("x", "y", "both"), 0.3),
    ]
    sharp = _planned_with_k(lists, 1)
    flat = _planned_with_k(lists, 1000)
    assert sharp[0] == "solo" and flat[0] == "both"


def _planned_with_k(lists: list[RankedList], k: int) -> list[str]:
    policy = default_policy().with_values({"rrf_k": k, "raw_top_weight": 0.0})
    return _ids(fuse_planned(lists, _follow_up(), policy))


def test_the_raw_messages_best_hit_stays_first_unless_the_other_lists_outweigh_it() -> None:
    """The rewrite and history lists agreeing on a neighbour push the raw message's first
    hit down; its own list (``raw_top_weight``) keeps it first, and a stronger agreement
    still wins against a small weight."""
    lists = [
        RankedList("raw", _hits("best", "near"), 1.0),
        RankedList("rewrite", _hits("near", "best"), 0.5),
        RankedList("history", _hits("near", "best"), 0.5),
    ]

    def first(top: float, others: float = 0.6) -> str:
        weighted = [
            RankedList(q.name, q.hits, q.weight if q.name == "raw" else others) for q in lists
        ]
        policy = default_policy().with_values({"raw_top_weight": top, "anchor_weight": 0.0})
        return _ids(fuse_planned(weighted, _follow_up(), policy))[0]

    assert first(0.0) == "near"
    assert first(1.0) == "best"
    assert first(0.05, others=3.0) == "near"


def test_the_raw_top_list_joins_only_a_fusion_that_holds_the_raw_list() -> None:
    from convrag.retrieval.candidates import with_raw_top

    alone = [RankedList("raw", _hits("a"), 1.0)]
    no_raw = [RankedList("rewrite", _hits("a"), 1.0), RankedList("history", _hits("b"), 1.0)]
    assert with_raw_top(alone, 1.0) == alone and with_raw_top(no_raw, 1.0) == no_raw
    both = [*no_raw, RankedList("raw", _hits("c", "d"), 1.0)]
    assert [(q.name, _ids(list(q.hits))) for q in with_raw_top(both, 2.0)][-1] == ("raw_top", ["c"])
