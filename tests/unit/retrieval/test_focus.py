"""The focus decision: how much a follow-up's anchors weigh, from named signals."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from convrag.records import HistoryTurn
from convrag.retrieval.focus import focus_features, focus_text, stays_on_focus
from convrag.retrieval.planning import TurnQuery


class _Rarity:
    """A searcher whose only use here is the rarity of a message's rarest new word."""

    def __init__(self, idf: dict[str, float]) -> None:
        self.idf = idf

    def rarest_missing_term(
        self, workspace_id: str, query: str, texts: Sequence[str], *, typed: str | None = None
    ) -> float:
        held = " ".join(texts).lower()
        missing = [w for w in query.lower().strip("?").split() if w not in held]
        return max((self.idf.get(w, 0.0) for w in missing), default=0.0)


def _turn(message: str, query: str | None = None) -> TurnQuery:
    last = HistoryTurn(
        turn_number=1,
        question="How does Cachegrind simulate branches?",
        answer="Cachegrind's branch simulation is off by default [1].",
        contextualized_query=None,
        entities=[],
        cited_document_ids=["cg"],
        cited_titles=["Cachegrind manual"],
    )
    return TurnQuery("w", message, query or message, "follow_up", "rules", [last], ["cg"])


def test_the_focus_is_the_previous_question_answer_and_cited_titles() -> None:
    text = focus_text(_turn("Why?"))
    assert "simulate branches" in text and "off by default" in text and "manual" in text


def test_a_follow_up_with_a_new_rare_word_counts_it_and_its_rarity() -> None:
    searcher = _Rarity({"expat": 6.0, "default": 1.0})
    subjectless = focus_features(_turn("Why isn't that on by default?"), searcher)  # type: ignore[arg-type]
    assert subjectless["new_words"] == 0 and subjectless["new_rarity"] == 0.0
    moved = focus_features(_turn("How does expat parse encodings?"), searcher)  # type: ignore[arg-type]
    assert moved["new_rarity"] == 6.0 and moved["new_words"] >= 2


def test_the_models_probability_scales_the_anchors_and_no_model_keeps_them() -> None:
    searcher = _Rarity({"expat": 6.0})
    turn = _turn("How does expat parse encodings?")
    assert stays_on_focus(turn, searcher, {}) == 1.0  # type: ignore[arg-type]
    model = {"bias": 2.0, "new_rarity": -1.0}
    assert stays_on_focus(turn, searcher, model) == pytest.approx(1 / (1 + 2.718281828**4))  # type: ignore[arg-type]
    stays = _turn("Why is that?")
    assert stays_on_focus(stays, searcher, model) > 0.8  # type: ignore[arg-type]
