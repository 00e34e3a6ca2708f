"""The gate a rules rewrite passes, and the continuations that reuse the last question."""

from __future__ import annotations

import pytest

from convrag.rewriting.gate import SWITCHES, check_switches, gated_rewrite, is_continuation, rejects
from convrag.rewriting.history import Turn

from .conftest import SALARY

BROWSER = [
    Turn("Do I have to use a certain browser to use this service?", "No, any browser works."),
    Turn("Does it detect emotions?", "Yes: anger, disgust, fear, joy and sadness."),
]

PRESENTER = [Turn("Who is James May?", "James May is a presenter of a television show.")]


@pytest.mark.parametrize(
    "message",
    [
        "Why?",
        "Why not?",
        "How?",
        "how so?",
        "Tell me more",
        "OK, and why?",
        "Can you elaborate more on that?",
        "explain further",
    ],
)
def test_bare_continuations_are_recognised(message: str) -> None:
    assert is_continuation(message)


@pytest.mark.parametrize("message", ["Why is the sky blue?", "How do I reset it?", "More cats?"])
def test_questions_with_words_of_their_own_are_no_continuation(message: str) -> None:
    assert not is_continuation(message)


def test_a_continuation_reuses_the_previous_standalone_question() -> None:
    history = [Turn("And in Asia?", "50 dollars a day.", "What is the meal allowance in Asia?")]
    assert gated_rewrite("Why not?", history) == ("What is the meal allowance in Asia?", None)
    # switched off, the rules' own "why" rewrite runs instead
    assert gated_rewrite("Why not?", history, without=["continuation"])[0] != (
        "What is the meal allowance in Asia?"
    )


def test_a_continuation_after_a_question_that_still_leans_on_a_pronoun_is_left_as_typed() -> None:
    history = [Turn("What divides them?", "Their accounts of the creation.", "What divides them?")]
    assert gated_rewrite("Can you elaborate on this?", history) == (
        "Can you elaborate on this?",
        None,
    )


def test_a_possessive_after_an_initial_is_a_referent_the_history_named() -> None:
    history = [
        Turn("Bill W.", "Marriage, work, and alcoholism"),
        Turn("Where did he work?", "A bank"),
    ]
    assert gated_rewrite("How did alcohol impact his life?", history) == (
        "How did alcohol impact Bill W.'s life?",
        None,
    )


@pytest.mark.parametrize(
    ("message", "rewrite", "check"),
    [
        (
            "Why don't you provide that?",
            "Why don't you provide the certain browser?",
            "fixed_phrase",
        ),
        ("And how do I undo that?", "And how do I undo MIME?", "fixed_phrase"),
        ("Why did it fail?", "What did the certain browser fail?", "type_changed"),
        ("Is it free?", "the certain browser free", "not_a_question"),
        (
            "Does it detect disgust?",
            "Does Watson Tone Analyzer detect disgust?",
            "unsupported_referent",
        ),
        (
            "How do I add a flag to it?",
            "How do I add a flag to the browser tell whether?",
            "not_a_phrase",
        ),
        ("Tell me more about them.", "Tell me more about what's.", "not_a_phrase"),
        ("And for emotions?", "Does it detect for for emotions?", "not_a_phrase"),
        ("Why can't it set a cookie?", "Why can't the browser get set a cookie?", "not_a_phrase"),
        ("What is it?", "What is the emotions?", "number_disagrees"),
        ("Does it detect anger?", "Does the emotions detect anger?", "number_disagrees"),
    ],
)
def test_a_garbled_rewrite_is_rejected_by_name(message: str, rewrite: str, check: str) -> None:
    assert rejects(message, rewrite, BROWSER) == check


@pytest.mark.parametrize(
    ("message", "rewrite", "history"),
    [
        ("What benefits does it offer?", "What benefits does the certain browser offer?", BROWSER),
        ("What about her basic salary?", "What is Prasad Chaudhari's basic salary?", SALARY),
        ("what about why can't I use it?", "Why can't I use the certain browser?", BROWSER),
        ("Who did he work with?", "Who did James May work with?", PRESENTER),
        ("Was their show popular?", "Was the show of James May popular?", PRESENTER),
        ("What is it?", "What is the certain browser?", BROWSER),
        ("What are they?", "What are the emotions?", BROWSER),
    ],
)
def test_a_well_formed_rewrite_passes(message: str, rewrite: str, history: list[Turn]) -> None:
    assert rejects(message, rewrite, history) is None


def test_a_rejected_rewrite_leaves_the_message_as_typed() -> None:
    query, why = gated_rewrite("Why don't you provide that?", BROWSER)
    assert (query, why) in {
        ("Why don't you provide that?", "fixed_phrase"),
        ("Why don't you provide that?", None),
    }
    assert gated_rewrite("What about her basic salary?", SALARY) == (
        "What about Prasad Chaudhari's basic salary?",
        None,
    )


def test_unknown_switches_are_refused_with_the_list() -> None:
    assert check_switches(["gate", "topic"]) == {"gate", "topic"}
    with pytest.raises(ValueError, match="the rules are continuation, gate"):
        check_switches(["pronouns"])
    assert "lead_fragment" in SWITCHES


def test_the_title_of_a_document_the_last_answer_cited_is_a_supported_referent() -> None:
    history = [
        Turn(
            "How often are backups made?",
            "Production databases are backed up every 4 hours. [1]",
            titles=("Acme Data Security Policy",),
        )
    ]
    message = "Who do I contact about this policy?"
    assert (
        rejects(message, "Who do I contact about the Acme Data Security Policy?", history) is None
    )
    assert rejects(message, "Who do I contact about the Acme Travel Policy?", history) == (
        "unsupported_referent"
    )


def test_a_plural_phrase_for_a_singular_it_is_rejected_past_an_adjective_after_its_noun() -> None:
    """ "the Lite pricing plans available": the noun before "available" is the head."""
    plans = [Turn("What are the Lite pricing plans available?", "There is one Lite plan.")]
    assert rejects("What is it?", "What is the Lite pricing plans available?", plans) == (
        "number_disagrees"
    )
    assert rejects("What is it?", "What is the Lite pricing plan?", plans) is None
