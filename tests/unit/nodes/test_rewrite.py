"""The rewrite node without an LLM server: the rules path, the query checks, and the
fallback when no model can be built."""

from __future__ import annotations

import pytest

from convrag.config import Settings
from convrag.nodes.rewrite import (
    answer_like,
    off_subject,
    rules_rewrite,
    standalone_question,
)
from convrag.records import HistoryTurn
from tests.nodes.test_rewrite import FOLLOW_UP, SALARY, STANDALONE, _run, _turn


async def test_a_model_that_cannot_be_built_falls_back_instead_of_raising(
    settings: Settings,
) -> None:
    out, _ = await _run(FOLLOW_UP, SALARY, settings, None, llm_model="nonexistent:model")
    assert out["rewrite_method"] == "fallback"
    assert out["flags"]["rewrite_fallback"] == "error: ValueError"
    assert out["rewritten_query"] == "What is Prasad Chaudhari's basic salary?"


@pytest.mark.parametrize(
    "query",
    [
        "What is Prasad Chaudhari's basic salary?",
        "Does Prasad Chaudhari earn more than John Doe",
        "Explain the meal allowance policy in Europe",
        "Prasad Chaudhari basic salary",
    ],
)
def test_questions_requests_and_keywords_are_queries(query: str) -> None:
    assert not answer_like(query, FOLLOW_UP)


@pytest.mark.parametrize(
    "query",
    [
        "Prasad Chaudhari's basic salary is $80,000.",
        "Her basic salary is $80,000",
        "Prasad Chaudhari earns $80,000 a year.",
        "Eighty thousand dollars",  # keywords that keep none of the message's words
    ],
)
def test_statements_that_answer_the_question_are_not_queries(query: str) -> None:
    assert answer_like(query, FOLLOW_UP)


@pytest.mark.parametrize(
    ("query", "off"),
    [
        ("What is Prasad Chaudhari's basic salary?", False),
        ("What is the basic pay of Prasad?", False),  # "Prasad" was said
        ("What is the capital of France?", True),  # a subject nobody named
    ],
)
def test_an_llm_query_must_say_a_word_of_the_conversation(query: str, off: bool) -> None:
    assert off_subject(query, FOLLOW_UP, SALARY) is off


# --------------------------------------------------------------------------------------------
# Without an LLM: the rules
# --------------------------------------------------------------------------------------------


async def test_without_an_llm_the_rules_rewrite_a_follow_up(settings: Settings) -> None:
    out, _ = await _run(FOLLOW_UP, SALARY, settings, None)
    assert out["rewrite_method"] == "rules"
    assert out["rewritten_query"] == "What is Prasad Chaudhari's basic salary?"


async def test_without_an_llm_a_standalone_turn_is_unchanged(settings: Settings) -> None:
    out, _ = await _run(STANDALONE, SALARY, settings, None)
    assert out["classification"] == "standalone"
    assert (out["rewritten_query"], out["rewrite_method"]) == (STANDALONE, "unchanged")


@pytest.mark.parametrize(
    ("message", "history"),
    [
        pytest.param(
            "what did he do?",
            [
                _turn(
                    "what was the indian independence movement?",
                    "Indian nationalists led by Gandhi and Sardar Patel campaigned against "
                    "British rule.",
                )
            ],
            id="demonym-is-not-he",
        ),
        pytest.param(
            "Will it kill me?",
            [
                _turn(
                    "How is Sickle cell treated?",
                    "The treatment for sickle cell disease may include antibiotics, pain "
                    "medication and blood transfusions.",
                )
            ],
            id="first-word-of-a-term-is-not-it",
        ),
    ],
)
def test_an_unresolved_pronoun_is_kept_as_typed_never_glued_to_the_previous_question(
    message: str, history: list[HistoryTurn]
) -> None:
    """Retrieval sees the topic through the history-aware query, and the page shows a
    question the user can read."""
    assert rules_rewrite(message, history) == message


def _rewritten(question: str, answer: str, query: str, n: int) -> HistoryTurn:
    return {**_turn(question, answer, n), "contextualized_query": query}


def test_a_continuation_reuses_the_previous_standalone_question_without_nesting() -> None:
    first = "How do volcanic eruptions begin?"
    history = [
        _turn(first, "Volcanic eruptions begin when magma rises. [1]"),
        _rewritten(
            "Can you elaborate?",
            "Magma chambers collect molten rock. [1]",
            f"Can you elaborate? ({first})",
            2,
        ),
    ]
    assert rules_rewrite("Tell me more", history) == first


def test_a_what_about_follow_up_maps_onto_the_previous_turn_as_rewritten() -> None:
    history = [
        _turn(STANDALONE, "The meal allowance in Europe is 60 euros a day. [1]"),
        _rewritten(
            "And in North America?",
            "It is 75 dollars a day. [1]",
            "What is the meal allowance in North America?",
            2,
        ),
    ]
    assert rules_rewrite("What about Asia?", history) == "What is the meal allowance in Asia?"


def test_a_greeting_in_the_history_is_no_referent() -> None:
    history = [
        _turn("Hi there!", "Hello! Ask me anything about the documents in this workspace."),
        _turn("How many vacation days do I get?", "25 days of paid annual leave. [1]", 2),
    ]
    assert rules_rewrite("Can I carry them over?", history) == "Can I carry vacation days over?"


def test_the_standalone_question_of_a_turn_drops_the_pleasantries_before_it() -> None:
    question = "OK thanks. Now, how many sick days do I get?"
    turn = _rewritten(question, "10 days of paid sick leave per year. [1]", question, 1)
    assert standalone_question(turn) == "how many sick days do I get?"
    carried = _rewritten("Tell me more", "It is paid. [1]", f"Tell me more ({question})", 2)
    assert standalone_question(carried) == "how many sick days do I get?"
