"""How sure an answer is travels from the turn's flags to every record a client reads: the
stored turn, the JSON reply, the ``done`` event. Fast: no server."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from convrag.api.schemas import TurnOut
from convrag.api.turn_replies import done_event, stored_answer
from convrag.records import TurnMetadata
from convrag.stores.records import TurnRecord


def _turn(flags: dict[str, bool]) -> TurnRecord:
    return TurnRecord(
        id="t1",
        turn_number=1,
        question="What is the meal allowance?",
        answer="60 euros a day [1].",
        contextualized_query=None,
        entities_mentioned=[],
        sources=[],
        web_search_triggered=False,
        repetition_detected=False,
        metadata=TurnMetadata(flags=flags),
        created_at=datetime.now(UTC),
    )


@pytest.mark.parametrize(("flags", "expected"), [({"low_confidence": True}, "low"), ({}, "high")])
def test_a_close_call_reads_low_confidence_in_the_stored_turn_reply_and_done_event(
    flags: dict[str, bool], expected: str
) -> None:
    turn = _turn(flags)
    assert TurnOut.model_validate(turn).confidence == expected
    reply = stored_answer("c1", turn, [])
    assert reply.confidence == expected
    assert done_event(reply)["confidence"] == expected
