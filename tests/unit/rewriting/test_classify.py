"""Classification of a message as no_retrieval, follow_up or standalone."""

from __future__ import annotations

import pytest

from convrag.rewriting.classify import classify, split_pleasantries
from convrag.rewriting.history import Turn
from tests.unit.rewriting.conftest import (
    BURLESQUE,
    CAPITAL_OF_FRANCE,
    DALI,
    ENGINEERS,
    NETFLIX_REVENUE,
    RAG,
    SALARIES,
    SALARY,
    SELF_BOUND_PRONOUNS,
)


@pytest.mark.parametrize(
    ("message", "history"),
    [
        pytest.param("What about her basic salary?", SALARY, id="her-without-antecedent"),
        pytest.param("What are their salaries?", ENGINEERS, id="their-without-antecedent"),
        pytest.param("Who earns more?", SALARIES, id="comparison-fragment"),
        pytest.param("Can you elaborate on that?", RAG, id="elaborate-on-that"),
        pytest.param("and in 2019?", NETFLIX_REVENUE, id="ellipsis-with-a-new-year"),
        pytest.param("Did Dali paint in Paris?", DALI, id="surname-of-a-fuller-name"),
        pytest.param("Thanks! What about Germany?", CAPITAL_OF_FRANCE, id="after-thanks"),
    ],
)
def test_messages_that_need_the_conversation_are_follow_ups(
    message: str, history: list[Turn]
) -> None:
    assert classify(message, history) == "follow_up"


@pytest.mark.parametrize(
    "message",
    SELF_BOUND_PRONOUNS,
)
def test_pronouns_with_an_antecedent_inside_the_message_are_standalone(message: str) -> None:
    assert classify(message, BURLESQUE) == "standalone"


def test_a_new_explicit_subject_is_a_standalone_topic_switch() -> None:
    assert classify("Now tell me about Topic B", SALARY) == "standalone"


def test_a_complete_question_with_history_is_standalone() -> None:
    assert classify("What is the capital of France?", SALARY) == "standalone"


@pytest.mark.parametrize(
    "message", ["hi", "Hello there!", "thanks!", "Thank you so much", "ok great", "got it, bye"]
)
def test_greetings_and_thanks_need_no_retrieval(message: str) -> None:
    assert classify(message, SALARY) == "no_retrieval"
    assert classify(message, []) == "no_retrieval"


@pytest.mark.parametrize(
    "message",
    [
        "format that as a table",
        "make it shorter",
        "translate that into French",
        "summarize your last answer",
        "Can you put that in bullet points?",
    ],
)
def test_reformatting_the_previous_answer_needs_no_retrieval(message: str) -> None:
    assert classify(message, SALARY) == "no_retrieval"


def test_a_request_about_a_new_subject_is_not_mistaken_for_reformatting() -> None:
    assert classify("summarize the history of the Roman Empire", SALARY) == "standalone"
    assert classify("Can you explain that further?", RAG) == "follow_up"


def test_without_history_a_follow_up_shaped_message_is_standalone() -> None:
    assert classify("What about her basic salary?", []) == "standalone"


def test_expletive_it_is_not_treated_as_a_reference() -> None:
    assert classify("Is it possible to pay salaries weekly in India?", SALARY) == "standalone"


@pytest.mark.parametrize(
    "message", ["hello, who are you?", "Who are you?", "What can you do?", "Are you a bot?"]
)
def test_questions_about_the_assistant_itself_need_no_retrieval(message: str) -> None:
    history = [Turn("What is the meal allowance in Europe?", "It is 60 euros a day [1].")]
    assert classify(message, history) == "no_retrieval"
    assert classify(message, []) == "no_retrieval"


@pytest.mark.parametrize(
    ("message", "pleasantries", "rest"),
    [
        (
            "OK thanks. Now, how many sick days do I get?",
            "OK thanks. Now, ",
            "how many sick days do I get?",
        ),
        ("Thanks! What about Germany?", "Thanks! ", "What about Germany?"),
        ("By the way, who is the CISO?", "By the way, ", "who is the CISO?"),
        ("So what is it?", "", "So what is it?"),
    ],
)
def test_pleasantries_and_discourse_markers_are_split_from_the_request(
    message: str, pleasantries: str, rest: str
) -> None:
    assert split_pleasantries(message) == (pleasantries, rest)
