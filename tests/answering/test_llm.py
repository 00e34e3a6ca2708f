"""Recognising the LLM's "not found" reply."""

from __future__ import annotations

import pytest

from convrag.answering.llm import says_not_found


@pytest.mark.parametrize(
    ("answer", "meant"),
    [
        ("I could not find this in the workspace's documents.", True),
        ('"I could not find this in the workspace\'s documents"', True),
        ("  i could not find this in the workspace's   documents! ", True),
        (
            "I could not find this in the workspace's documents. "
            "The travel policy [1] only covers Europe.",
            False,
        ),
        ("Prasad Chaudhari's salary is $120,000 [1].", False),
    ],
)
def test_only_the_not_found_sentence_alone_reads_as_not_found(answer: str, meant: bool) -> None:
    assert says_not_found(answer, "I could not find this in the workspace's documents.") is meant
