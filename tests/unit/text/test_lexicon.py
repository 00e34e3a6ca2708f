"""The shared word lists' helpers."""

from __future__ import annotations

from convrag.text.lexicon import subject_words


def test_subject_words_drops_a_questions_framing_and_keeps_what_it_is_about() -> None:
    assert subject_words("How could I tell the annual leave days?") == "annual leave days"
    assert subject_words("Can't you explain Prasad Chaudhari's salary?") == (
        "Prasad Chaudhari's salary"
    )


def test_subject_words_keeps_a_question_that_is_all_framing() -> None:
    assert subject_words("What is it?") == "What is it?"
