"""Durable turns: the question is stored when the turn starts, whatever becomes of it."""

from __future__ import annotations

import asyncio
import importlib
import uuid

import pytest

from convrag.assistant import Assistant
from convrag.context import Context
from convrag.nodes.load_history import TurnConflict
from convrag.services import Services
from convrag.testing.openai_stub import OpenAIStub, Reply


async def _rows(services: Services, conv: str) -> list[dict[str, object]]:
    """Every stored turn of ``conv``, whatever its status, in order."""
    async with services.db.pool.connection() as conn:
        return list(
            await (
                await conn.execute(
                    "SELECT id::text AS id, turn_number, question, answer, status, error "
                    "FROM conversation_turns WHERE conversation_id = %s ORDER BY turn_number",
                    (conv,),
                )
            ).fetchall()
        )


async def test_a_turn_whose_graph_fails_mid_way_keeps_its_question_as_failed_with_the_reason(
    assistant: Assistant, services: Services, seeded: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    drafting = importlib.import_module("convrag.nodes._drafting")

    def broken(text: str) -> list[str]:
        raise RuntimeError("simulated failure inside synthesize")

    monkeypatch.setattr(drafting, "extract_entities", broken)
    conv = await assistant.new_conversation(seeded)
    ctx = Context(workspace_id=seeded, llm_model="none")
    question = "What is Prasad Chaudhari's basic salary?"
    with pytest.raises(RuntimeError, match="simulated failure"):
        await assistant.ask(question, conv, workspace_id=seeded, context=ctx)
    [failed] = await _rows(services, conv)
    assert failed["question"] == question and failed["status"] == "failed"
    assert failed["error"] == "RuntimeError: simulated failure inside synthesize"
    assert failed["turn_number"] == 1 and failed["answer"] == ""
    # History reads answered turns only; the conversation's page shows the failed one.
    assert await services.db.all_turns(seeded, conv) == []
    [shown] = await services.db.turn_details(seeded, conv)
    assert shown.status == "failed" and shown.error == failed["error"]

    monkeypatch.undo()
    state = await assistant.ask(question, conv, workspace_id=seeded, context=ctx)
    assert "$80,000" in state["answer"] and state["history"] == []
    rows = await _rows(services, conv)
    assert [(r["turn_number"], r["status"]) for r in rows] == [(1, "failed"), (2, "done")]


async def test_a_failed_turn_asked_again_under_its_id_is_answered_in_the_same_row(
    assistant: Assistant, services: Services, seeded: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    drafting = importlib.import_module("convrag.nodes._drafting")
    real = drafting.extract_entities
    calls = {"n": 0}

    def fail_once(text: str) -> list[str]:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("simulated failure")
        return real(text)

    monkeypatch.setattr(drafting, "extract_entities", fail_once)
    conv = await assistant.new_conversation(seeded)
    ctx = Context(workspace_id=seeded, llm_model="none")
    turn_id = str(uuid.uuid4())
    question = "What is Prasad Chaudhari's basic salary?"
    with pytest.raises(RuntimeError):
        await assistant.ask(question, conv, workspace_id=seeded, context=ctx, turn_id=turn_id)
    state = await assistant.ask(question, conv, workspace_id=seeded, context=ctx, turn_id=turn_id)
    assert state["turn_id"] == turn_id and "$80,000" in state["answer"]
    rows = await _rows(services, conv)
    assert [(r["id"], r["turn_number"], r["status"], r["error"]) for r in rows] == [
        (turn_id, 1, "done", None)
    ]
    # An answered turn id is not answered twice.
    with pytest.raises(TurnConflict, match="already answered"):
        await assistant.ask(question, conv, workspace_id=seeded, context=ctx, turn_id=turn_id)
    assert len(await _rows(services, conv)) == 1


async def test_an_in_flight_turn_is_visible_as_processing_while_it_runs(
    assistant: Assistant, services: Services, llm: OpenAIStub, seeded: str
) -> None:
    llm.add_rule(
        "CURRENT QUESTION",
        Reply(content="Prasad Chaudhari's basic salary is $80,000 [1].", first_token_delay_s=1.5),
    )
    conv = await assistant.new_conversation(seeded)
    question = "What is Prasad Chaudhari's basic salary?"
    asking = asyncio.create_task(assistant.ask(question, conv, workspace_id=seeded))
    rows: list[dict[str, object]] = []
    for _ in range(100):
        rows = await _rows(services, conv)
        if rows:
            break
        await asyncio.sleep(0.05)
    assert [(r["question"], r["status"], r["answer"]) for r in rows] == [
        (question, "processing", "")
    ]
    assert not asking.done()
    # History and the conversation's page skip it while it has no answer.
    assert await services.db.all_turns(seeded, conv) == []
    assert await services.db.turn_details(seeded, conv) == []
    state = await asking
    [done] = await _rows(services, conv)
    assert done["id"] == state["turn_id"] and done["status"] == "done"
    assert done["answer"] == state["answer"] and "$80,000" in state["answer"]
