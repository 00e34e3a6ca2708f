"""Sentences ranked by the question's words, and what counts as said already."""

from __future__ import annotations

from convrag.records import HistoryTurn
from convrag.retrieval.ranking import is_said, said_before


def test_every_sentence_of_an_earlier_answer_counts_as_said_whatever_its_markers() -> None:
    turn = HistoryTurn(
        turn_number=1,
        question="What are pyroclastic flows?",
        answer="Pyroclastic flows are currents of hot gas. [1] They travel fast. [1] "
        "Dome collapse can trigger further flows. [2]",
        contextualized_query=None,
        entities=[],
        cited_document_ids=[],
    )
    said = said_before([turn])
    assert is_said("Dome collapse can trigger further flows.", said)
    assert is_said("They travel fast.", said)
    assert not is_said("Ash clouds ground planes.", said)
