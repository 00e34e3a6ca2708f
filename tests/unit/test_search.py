"""Fusion, anchoring and the document-content lookup."""

from __future__ import annotations

import pytest

from convrag.retrieval.search import referenced_items
from convrag.stores.vectors import Hit


def _hits(*ids: str, doc: str = "d") -> list[Hit]:
    return [Hit(i, doc if not i.startswith("x") else "other", i, 1.0) for i in ids]


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
