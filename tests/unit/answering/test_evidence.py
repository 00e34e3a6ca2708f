"""The sentence evidence behind "not found"."""

from __future__ import annotations

from collections.abc import Sequence

from convrag.retrieval.evidence import (
    names_every_term,
    paragraph_evidence,
    sentence_evidence,
)
from convrag.retrieval.policy import default_policy
from tests.unit.answering.samples import source


def test_the_evidence_is_the_mean_of_the_two_closest_sentences_sharing_a_word() -> None:
    asked: list[list[str]] = []

    def similarity(query: str, texts: Sequence[str]) -> list[float]:
        asked.append(list(texts))
        return [0.9 if "60 euros" in t else 0.7 if "70 dollars" in t else 0.1 for t in texts]

    meals = source(
        "The meal allowance in Europe is 60 euros per day. Offices close at 6 pm. "
        "The allowance in America is 70 dollars. A meal is not a gift.",
        1,
    )
    assert round(sentence_evidence("What is the meal allowance?", [meals], similarity), 6) == 0.8
    assert sorted(asked[0]) == [
        "A meal is not a gift.",
        "The allowance in America is 70 dollars.",
        "The meal allowance in Europe is 60 euros per day.",
    ]
    one = source("The meal allowance in Europe is 60 euros per day. Offices close at 6 pm.", 2)
    assert sentence_evidence("What is the meal allowance?", [one], similarity) == 0.9
    # No sentence shares a word with the question: no sentence evidence at all.
    assert sentence_evidence("Where do staff park?", [meals], similarity) is None


def test_one_sentence_much_closer_than_the_floor_is_evidence_alone() -> None:
    def similarity(query: str, texts: Sequence[str]) -> list[float]:
        return [0.64 if "Business class" in t else 0.26 for t in texts]

    rules = source(
        "Expense reports must be filed within 30 days of the trip. "
        "Business class flights are only allowed for flights longer than 8 hours."
    )
    evidence = sentence_evidence("Can I fly business class as an expense?", [rules], similarity)
    # more than the mean of the two, 0.45
    assert evidence == 0.64 - default_policy().lone_sentence_margin


def test_light_verbs_are_no_content_words_a_sentence_must_hold() -> None:
    stipend = source("Remote employees receive a one-time home office stipend of 500 USD.")
    assert names_every_term("What do I get for my home office?", [stipend])
    assert not names_every_term("What do I get for my home printer?", [stipend])


def test_a_sentence_names_what_its_source_title_names() -> None:
    carry = "Unused days carry over until 31 March of the next year."
    assert not names_every_term("Can I carry over unused leave?", [source(carry)])
    titled = {**source(carry), "title": "leave_policy"}
    assert names_every_term("Can I carry over unused leave?", [titled])


HISTORY = (
    "Corvane was founded in 1987 in Eindhoven. The first product was a thickness gauge.\n\n"
    "Daniel Okafor left Corvane in 1995 to become a professor. He stayed on the board.\n\n"
    "In 2023 Aisha Demir became chief executive."
)


def test_the_paragraph_holding_the_closest_sentence_is_weighed_on_its_own() -> None:
    """In a chunk of several paragraphs, the one whose sentence is closest is embedded
    alone: the scale of a paragraph-sized passage, not the whole chunk's."""
    asked: list[list[str]] = []

    def similarity(query: str, texts: Sequence[str]) -> list[float]:
        asked.append(list(texts))
        return [0.58 if "Okafor left" in t else 0.1 for t in texts]

    chunk = source(HISTORY, 1)
    assert paragraph_evidence("When did Daniel Okafor leave?", [chunk], similarity) == 0.58
    assert asked[-1] == [
        "Daniel Okafor left Corvane in 1995 to become a professor. He stayed on the board."
    ]


def test_a_chunk_of_one_paragraph_or_no_shared_word_has_no_paragraph_evidence() -> None:
    def similarity(query: str, texts: Sequence[str]) -> list[float]:
        return [0.5 for _ in texts]

    one = source("Daniel Okafor left Corvane in 1995 to become a professor.", 1)
    assert paragraph_evidence("When did Daniel Okafor leave?", [one], similarity) is None
    assert paragraph_evidence("Where do staff park?", [source(HISTORY, 2)], similarity) is None
