"""The rules strategy: the history read once, the message classified once, a follow-up
rewritten by the gated rules."""

from __future__ import annotations

import pytest

from convrag.records import HistoryTurn
from convrag.rewriting.rules import RulesRewriter, standalone_question

from .conftest import stored_turn

STANDALONE = "What is the meal allowance in Europe?"


async def _query(message: str, history: list[HistoryTurn]) -> str:
    return (await RulesRewriter().rewrite(message, history)).query


@pytest.mark.parametrize(
    ("message", "history"),
    [
        pytest.param(
            "what did he do?",
            [
                stored_turn(
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
                stored_turn(
                    "How is Sickle cell treated?",
                    "The treatment for sickle cell disease may include antibiotics, pain "
                    "medication and blood transfusions.",
                )
            ],
            id="first-word-of-a-term-is-not-it",
        ),
    ],
)
async def test_an_unresolved_pronoun_is_kept_as_typed_never_glued_to_the_previous_question(
    message: str, history: list[HistoryTurn]
) -> None:
    """Retrieval sees the topic through the history-aware query, and the page shows a
    question the user can read."""
    out = await RulesRewriter().rewrite(message, history)
    assert (out.classification, out.query, out.method) == ("follow_up", message, "unchanged")


async def test_a_continuation_reuses_the_previous_standalone_question_without_nesting() -> None:
    first = "How do volcanic eruptions begin?"
    history = [
        stored_turn(first, "Volcanic eruptions begin when magma rises. [1]"),
        stored_turn(
            "Can you elaborate?",
            "Magma chambers collect molten rock. [1]",
            2,
            f"Can you elaborate? ({first})",
        ),
    ]
    assert await _query("Tell me more", history) == first


async def test_an_and_fragment_maps_onto_the_previous_turn_as_rewritten() -> None:
    history = [
        stored_turn(STANDALONE, "The meal allowance in Europe is 60 euros a day. [1]"),
        stored_turn(
            "And in North America?",
            "It is 75 dollars a day. [1]",
            2,
            "What is the meal allowance in North America?",
        ),
    ]
    assert await _query("And in Asia?", history) == "What is the meal allowance in Asia?"


async def test_a_greeting_in_the_history_is_no_referent() -> None:
    history = [
        stored_turn("Hi there!", "Hello! Ask me anything about the documents in this workspace."),
        stored_turn("How many vacation days do I get?", "25 days of paid annual leave. [1]", 2),
    ]
    out = await RulesRewriter().rewrite("Can I carry them over?", history)
    assert (out.query, out.method) == ("Can I carry vacation days over?", "rules")


async def test_a_switched_off_rule_leaves_its_follow_up_as_typed() -> None:
    history = [stored_turn("Tell me about the Eiffel Tower.", "It is a wrought-iron tower.")]
    assert await _query("How tall is it?", history) == "How tall is the Eiffel Tower?"
    out = await RulesRewriter(without=("topic",)).rewrite("How tall is it?", history)
    assert (out.query, out.method) == ("How tall is it?", "unchanged")


async def test_a_standalone_message_and_chit_chat_stay_as_typed() -> None:
    history = [stored_turn("How many vacation days do I get?", "25 days. [1]")]
    for message, kind in ((STANDALONE, "standalone"), ("Thanks!", "no_retrieval")):
        out = await RulesRewriter().rewrite(message, history)
        assert (out.classification, out.query, out.method) == (kind, message, "unchanged")


def test_the_standalone_question_of_a_turn_drops_the_pleasantries_before_it() -> None:
    question = "OK thanks. Now, how many sick days do I get?"
    turn = stored_turn(question, "10 days of paid sick leave per year. [1]", 1, question)
    assert standalone_question(turn) == "how many sick days do I get?"
    carried = stored_turn("Tell me more", "It is paid. [1]", 2, f"Tell me more ({question})")
    assert standalone_question(carried) == "how many sick days do I get?"


async def test_a_rewrite_the_gate_rejects_keeps_the_message_and_names_the_check() -> None:
    history = [
        stored_turn(
            "Do I have to use a certain browser to use this service?", "No, any browser works."
        )
    ]
    out = await RulesRewriter().rewrite("How do I undo that?", history)
    assert (out.classification, out.query, out.method) == (
        "follow_up",
        "How do I undo that?",
        "unchanged",
    )
    assert out.rejected == "fixed_phrase"
