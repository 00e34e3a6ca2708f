"""Retrieval and rewriting metrics on hand-computed cases."""

from __future__ import annotations

import math

import pytest

from convrag.evaluation.metrics import ndcg_at, recall_at, retrieval_scores, token_f1


def test_recall_counts_relevant_passages_found_in_the_top_k() -> None:
    rel = {"a": 1, "b": 1, "x": 0}
    assert recall_at(["c", "a", "d"], rel, 1) == 0.0
    assert recall_at(["c", "a", "d"], rel, 3) == 0.5


def test_ndcg_is_one_for_the_ideal_ranking_and_discounts_late_hits() -> None:
    rel = {"a": 2, "b": 1}
    assert ndcg_at(["a", "b", "c"], rel, 5) == pytest.approx(1.0)
    late = ndcg_at(["c", "a"], rel, 5)
    ideal = 2 + 1 / math.log2(3)
    assert late == pytest.approx((2 / math.log2(3)) / ideal)


def test_retrieval_scores_report_every_documented_metric() -> None:
    assert set(retrieval_scores(["a"], {"a": 1})) == {
        "R@1",
        "R@3",
        "R@5",
        "R@10",
        "nDCG@5",
        "nDCG@10",
    }


def test_token_f1_is_a_bag_of_words_f1() -> None:
    assert token_f1("What is her salary", "What is Prasad's salary") == pytest.approx(
        2 * (3 / 4) * (3 / 5) / (3 / 4 + 3 / 5)
    )
    assert token_f1("", "x") == 0.0
