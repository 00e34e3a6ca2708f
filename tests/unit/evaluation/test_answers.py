"""The answer evaluation on small files of MTRAG's format."""

from __future__ import annotations

import pytest

from convrag.evaluation.answers import abstention_scores, rouge_l_recall


def test_abstention_counts_unanswerable_as_positive_and_answerable_as_negative() -> None:
    pairs = [
        ("UNANSWERABLE", True),
        ("UNANSWERABLE", False),
        ("ANSWERABLE", True),
        ("ANSWERABLE", False),
        ("ANSWERABLE", False),
        ("ANSWERABLE", False),
        ("PARTIAL", True),
    ]
    scores = abstention_scores(pairs)
    assert scores["precision"] == 0.5 and scores["recall"] == 0.5 and scores["f1"] == 0.5
    assert scores["false_abstention_rate"] == 0.25 and scores["abstained"] == 2


def test_rouge_l_recall_is_the_share_of_the_reference_in_common_order() -> None:
    assert rouge_l_recall("The NFL has 32 teams.", "The NFL has 32 teams.") == 1.0
    assert rouge_l_recall("teams", "The NFL has 32 teams.") == pytest.approx(0.2)
