"""The candidate history terms of a follow-up and the ones the expansion model chooses."""

from __future__ import annotations

from convrag.records import HistoryTurn
from convrag.retrieval.expansion import EXPANSION_FEATURES, expansion_terms, term_features


def _turn(question: str, answer: str) -> HistoryTurn:
    return HistoryTurn(
        turn_number=1,
        question=question,
        answer=answer,
        contextualized_query=None,
        entities=[],
        cited_document_ids=[],
    )


HISTORY = [
    _turn("What does Cloudant store?", "Cloudant stores JSON documents in databases."),
    _turn("Can it store attachments?", "Yes, documents may carry binary attachments."),
]


def test_a_first_turn_has_no_candidate_terms() -> None:
    assert term_features("What is Cloudant?", []) == {}


def test_the_candidates_are_the_historys_content_words_the_message_lacks() -> None:
    found = term_features("Is there a size limit for attachments?", HISTORY)
    assert "attachments" not in found  # the message says it already
    assert {"cloudant", "documents", "binary", "json"} <= set(found)
    assert all(set(f) == set(EXPANSION_FEATURES) for f in found.values())


def test_each_candidate_says_where_and_how_recently_the_history_holds_it() -> None:
    found = term_features("Is there a size limit?", HISTORY)
    cloudant, binary = found["cloudant"], found["binary"]
    assert cloudant["in_first_question"] == 1.0 and cloudant["in_previous_question"] == 0.0
    assert cloudant["recency"] == 0.5  # said in the turn before the previous one
    assert binary["in_previous_answer"] == 1.0 and binary["recency"] == 1.0
    assert found["documents"]["answer_mentions"] > binary["answer_mentions"]


def test_the_model_chooses_its_best_terms_up_to_the_policys_number() -> None:
    names = {"bias": -2.0, "capitalised": 4.0, "in_first_question": 1.0}
    assert expansion_terms("Is there a size limit?", HISTORY, names, 1) == ["cloudant"]
    assert len(expansion_terms("Is there a size limit?", HISTORY, names, 3)) == 3
    assert expansion_terms("Is there a size limit?", [], names, 3) == []


def test_the_candidates_follow_the_order_the_history_says_them() -> None:
    found = term_features("Is there a size limit?", HISTORY)
    assert list(found)[:3] == ["cloudant", "store", "stores"]
