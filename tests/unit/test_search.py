"""Fusion, anchoring and the document-content lookup."""

from __future__ import annotations

import pytest

from convrag.search import referenced_items, rrf_fuse
from convrag.stores.vectors import Hit


def _hits(*ids: str, doc: str = "d") -> list[Hit]:
    return [Hit(i, doc if not i.startswith("x") else "other", i, 1.0) for i in ids]


def test_rrf_ranks_a_chunk_found_by_both_lists_first() -> None:
    fused = rrf_fuse([_hits("a", "b", "c"), _hits("c", "d")], k=60)
    assert [r.chunk_id for r in fused][:1] == ["c"]
    assert fused[0].dense_rank == 3 and fused[0].bm25_rank == 1


def test_rrf_score_is_normalised_to_one_for_rank_one_in_every_list() -> None:
    fused = rrf_fuse([_hits("a"), _hits("a")], k=60)
    assert fused[0].score == pytest.approx(1.0)


def test_anchoring_adds_the_boost_to_chunks_of_anchor_documents_only() -> None:
    plain = {r.chunk_id: r.score for r in rrf_fuse([_hits("a", "xb")], k=60)}
    boosted = {
        r.chunk_id: r.score
        for r in rrf_fuse([_hits("a", "xb")], k=60, anchor_document_ids={"other"}, anchor_boost=0.3)
    }
    assert boosted["xb"] == pytest.approx(plain["xb"] + 0.3)
    assert boosted["a"] == pytest.approx(plain["a"])


def test_empty_anchor_list_gives_identical_results() -> None:
    lists = [_hits("a", "b"), _hits("b", "c")]
    assert rrf_fuse(lists, k=60) == rrf_fuse(lists, k=60, anchor_document_ids=(), anchor_boost=0.3)


def test_rrf_rejects_a_nonpositive_k() -> None:
    with pytest.raises(ValueError, match="rrf k must be >= 1"):
        rrf_fuse([], k=0)


@pytest.mark.parametrize(
    ("message", "items"),
    [
        ("Can you explain question 6 again?", [("question", "6")]),
        ("what is the answer to Q12", [("question", "12")]),
        ("compare section 2 and section 3", [("section", "2"), ("section", "3")]),
        ("what is the salary of Prasad", []),
    ],
)
def test_referenced_items_finds_numbered_questions(
    message: str, items: list[tuple[str, str]]
) -> None:
    assert referenced_items(message) == items


def test_weighted_rrf_lets_the_stronger_list_win_a_tie() -> None:
    lists = [_hits("a", "b"), _hits("b", "a")]
    assert rrf_fuse(lists, k=60)[0].score == pytest.approx(rrf_fuse(lists, k=60)[1].score)
    fused = rrf_fuse(lists, k=60, weights=[1.0, 0.5])
    assert [r.chunk_id for r in fused] == ["a", "b"]
    assert rrf_fuse([_hits("a"), _hits("a")], k=60, weights=[1.0, 0.5])[0].score == (
        pytest.approx(1.0)
    )


def test_rrf_rejects_weights_that_do_not_fit() -> None:
    with pytest.raises(ValueError, match="rrf weights"):
        rrf_fuse([_hits("a"), _hits("b")], weights=[1.0])


def test_feedback_ranks_by_the_first_passages_neighbourhood_but_scores_stay_the_querys_cosine() -> (
    None
):
    import numpy as np

    from convrag.stores.vectors import NumpyDenseIndex

    def unit(*v: float) -> list[float]:
        a = np.asarray(v, dtype=np.float32)
        return [float(x) for x in a / np.linalg.norm(a)]

    # "aside" is closer to the query than "near", but "near" lies towards "top", the
    # passage the query finds first.
    vectors = {
        "top": unit(1.0, 0.5, 0.0),
        "near": unit(0.6, 0.8, 0.0),
        "aside": unit(0.7, 0.0, 0.714),
    }
    index = NumpyDenseIndex()
    index.build("w", 1, [(c, c, c) for c in vectors], np.asarray(list(vectors.values())))
    query = unit(1.0, 0.0, 0.0)
    plain = index.search("w", query, 3)
    moved = index.search("w", query, 3, feedback_weight=1.0, feedback_depth=1)
    assert [h.chunk_id for h in plain] == ["top", "aside", "near"]
    assert [h.chunk_id for h in moved] == ["top", "near", "aside"]
    assert {h.chunk_id: h.score for h in moved} == pytest.approx(
        {h.chunk_id: h.score for h in plain}
    )
