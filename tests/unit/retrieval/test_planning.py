"""The queries a turn searches, and the weight of each one's list."""

from __future__ import annotations

import pytest

from convrag.retrieval.planning import TurnQuery, plan_queries
from convrag.retrieval.policy import RetrievalPolicy, default_policy

KINDS = {
    "first_turn": (False, "standalone", "rules"),
    "standalone": (True, "standalone", "rules"),
    "follow_up": (True, "follow_up", "rules"),
    "llm_follow_up": (True, "follow_up", "llm"),
}


def _turn(message: str, query: str, kind: str, previous: str | None = None) -> TurnQuery:
    has_history, classification, method = KINDS[kind]
    history = [
        {
            "turn_number": 1,
            "question": previous or "An earlier question?",
            "answer": "An answer.",
            "contextualized_query": None,
            "entities": [],
            "cited_document_ids": [],
        }
    ]
    return TurnQuery("w", message, query, classification, method, history if has_history else [])  # type: ignore[arg-type]


def _plan(
    message: str,
    query: str,
    kind: str,
    previous: str | None = None,
    policy: RetrievalPolicy | None = None,
) -> list:
    return plan_queries(_turn(message, query, kind, previous), policy or default_policy())


def test_a_first_turn_searches_its_query_alone() -> None:
    planned = _plan("What is RAG?", "What is RAG?", "first_turn")
    assert [(q.name, q.text, q.mixed) for q in planned] == [("raw", "What is RAG?", False)]


def test_a_standalone_turn_with_history_searches_its_message_mixed_with_the_history() -> None:
    planned = _plan("Tell me about tomatoes", "Tell me about tomatoes", "standalone")
    assert [(q.name, q.mixed, q.weight) for q in planned] == [("message", True, 1.0)]
    both_policy = default_policy().with_values({"standalone_raw_query": True})
    both = _plan("Tell me", "Tell me", "standalone", policy=both_policy)
    assert [(q.name, q.mixed) for q in both] == [("raw", False), ("message", True)]


def test_with_no_expansion_model_the_history_query_is_the_message_and_previous_question() -> None:
    policy = default_policy().with_values({"expansion_model": {}})
    planned = _plan("Is it free?", "Is it free?", "follow_up", "What is Db2?", policy)
    assert [(q.name, q.text) for q in planned] == [
        ("raw", "Is it free?"),
        ("history", "Is it free? What is Db2?"),
    ]


def test_the_history_query_is_the_message_and_the_terms_the_expansion_model_chooses() -> None:
    model = {"bias": -1.0, "in_previous_question": 2.0, "length": 1.0}
    policy = default_policy().with_values({"expansion_model": model, "expansion_terms": 1})
    planned = _plan("Is it free?", "Is it free?", "follow_up", "What is the Db2 database?", policy)
    assert [(q.name, q.text) for q in planned] == [
        ("raw", "Is it free?"),
        ("history", "Is it free? database"),
    ]


def test_a_rewritten_follow_up_searches_the_rewrite_the_raw_question_and_the_history() -> None:
    policy = default_policy().with_values(
        {"rewrite_query_weight": 2.0, "raw_query_weight": 1.0, "history_query_weight": 0.5}
    )
    planned = _plan(
        "What about her basic salary?",
        "What is Prasad Chaudhari's basic salary?",
        "follow_up",
        policy=policy,
    )
    assert [(q.name, q.mixed, q.weight) for q in planned] == [
        ("rewrite", True, 2.0),
        ("raw", False, 1.0),
        ("history", True, 0.5),
    ]
    assert planned[0].text == "What is Prasad Chaudhari's basic salary?"


def test_a_follow_up_the_llm_rewrote_searches_its_rewrite_and_the_raw_question_only() -> None:
    policy = default_policy().with_values(
        {"llm_rewrite_query_weight": 1.5, "rewrite_query_weight": 0.5}
    )
    planned = _plan(
        "What about her basic salary?",
        "What is Prasad Chaudhari's basic salary?",
        "llm_follow_up",
        "Who is Prasad Chaudhari?",
        policy,
    )
    assert [(q.name, q.mixed, q.weight) for q in planned] == [
        ("rewrite", True, 1.5),
        ("raw", False, 1.0),
    ]


@pytest.mark.parametrize(
    ("history", "classification", "method", "kind"),
    [
        (False, "follow_up", "llm", "first_turn"),
        (True, "standalone", "llm", "standalone"),
        (True, "follow_up", "rules", "follow_up"),
        (True, "follow_up", "fallback", "follow_up"),
        (True, "follow_up", "llm", "llm_follow_up"),
    ],
)
def test_only_a_follow_up_the_llm_rewrote_takes_the_llm_plan(
    history: bool, classification: str, method: str, kind: str
) -> None:
    turns = [{"question": "Who is she?"}] if history else []
    turn = TurnQuery("w", "m", "m", classification, method, turns)  # type: ignore[arg-type]
    assert turn.kind == kind


def test_a_follow_up_without_words_of_its_own_searches_its_rewrite_and_history_not_itself() -> None:
    planned = _plan("Why?", "What is the meal allowance?", "follow_up", "What is the allowance?")
    assert [q.name for q in planned] == ["rewrite", "history"]
    assert planned[0].text == "What is the meal allowance?"
    assert planned[1].text.startswith("Why? ") and "allowance" in planned[1].text


def test_lists_of_weight_zero_are_left_out_but_never_all_of_them() -> None:
    policy = default_policy().with_values({"raw_query_weight": 0.0, "history_query_weight": 0.0})
    planned = _plan("Is it free?", "Is it free?", "follow_up", policy=policy)
    assert [(q.name, q.mixed, q.weight) for q in planned] == [("raw", False, 1.0)]
    assert [q.name for q in _plan("Is it free?", "Is it free?", "follow_up")] == ["raw", "history"]
