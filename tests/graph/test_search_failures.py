"""A store failure is an error, never an answer: a turn whose search lost a list answers
from the other with low confidence, and one whose search failed fails, never "not found"."""

from __future__ import annotations

from typing import Any

import pytest

from convrag.assistant import Assistant
from convrag.context import Context
from convrag.retrieval.sources import SearchUnavailable
from convrag.services import Services


async def _down(*args: Any, **kwargs: Any) -> Any:
    raise ConnectionError("the vector index is down")


async def test_a_search_that_lost_its_dense_list_answers_from_the_keywords_marked_low(
    services: Services, assistant: Assistant, seeded: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(services.searcher, "_dense", _down)
    conv = await assistant.new_conversation(seeded)
    ctx = Context(workspace_id=seeded, llm_model="none")
    state = await assistant.ask(
        "What is Prasad Chaudhari's basic salary?", conv, workspace_id=seeded, context=ctx
    )
    assert state["flags"]["search_degraded"] == "dense: error: ConnectionError"
    assert state["flags"]["low_confidence"] is True
    assert not state["flags"].get("no_answer") and state["sources"]
    assert not state["abstain"]


async def test_a_search_that_failed_fails_the_turn_instead_of_saying_not_found(
    services: Services, assistant: Assistant, seeded: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(services.searcher, "_dense", _down)
    monkeypatch.setattr(services.searcher, "_keyword", _down)
    conv = await assistant.new_conversation(seeded)
    ctx = Context(workspace_id=seeded, llm_model="none")
    with pytest.raises(SearchUnavailable):
        await assistant.ask(
            "What is Prasad Chaudhari's basic salary?", conv, workspace_id=seeded, context=ctx
        )
    (turn,) = await services.db.transcripts.turn_details(seeded, conv)
    assert turn.status == "failed"
