"""Durable turns: the question is stored when the turn starts, whatever becomes of it."""

from __future__ import annotations

import asyncio
import importlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from psycopg import OperationalError

from convrag.assistant import Assistant
from convrag.context import Context
from convrag.errors import TurnConflict
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
    assert await services.db.turns.all_turns(seeded, conv) == []
    [shown] = await services.db.transcripts.turn_details(seeded, conv)
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
    assert await services.db.turns.all_turns(seeded, conv) == []
    assert await services.db.transcripts.turn_details(seeded, conv) == []
    state = await asking
    [done] = await _rows(services, conv)
    assert done["id"] == state["turn_id"] and done["status"] == "done"
    assert done["answer"] == state["answer"] and "$80,000" in state["answer"]


class _FailsOnce:
    """The checkpointer's ``aput``, failing its first call as a database that blinked
    would: with ``durability="exit"`` that is the checkpoint written as the run ends,
    after ``persist`` committed the turn."""

    def __init__(self, aput: Callable[..., Awaitable[Any]]) -> None:
        self.aput = aput
        self.calls = 0

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            raise OperationalError("consuming input failed: server closed the connection")
        return await self.aput(*args, **kwargs)


async def test_ask_answers_with_the_stored_turn_when_the_checkpoint_write_after_persist_fails(
    assistant: Assistant,
    services: Services,
    seeded: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    failing = _FailsOnce(services.db.checkpoints.aput)
    monkeypatch.setattr(services.db.checkpoints, "aput", failing)
    conv = await assistant.new_conversation(seeded)
    ctx = Context(workspace_id=seeded, llm_model="none")
    with caplog.at_level(logging.WARNING, logger="convrag.assistant"):
        state = await assistant.ask(
            "What is Prasad Chaudhari's salary?", conv, workspace_id=seeded, context=ctx
        )
    assert failing.calls == 1
    [turn] = await services.db.transcripts.turn_details(seeded, conv)
    assert turn.status == "done" and "$120,000" in turn.answer
    # What the CLI prints of a turn, read back from the store.
    assert state["answer"] == turn.answer and state["turn_id"] == turn.id
    assert state["conversation_id"] == conv and state["classification"] == "standalone"
    assert state["rewritten_query"] == turn.contextualized_query
    assert state["citations"] == await services.db.transcripts.citations(seeded, turn.id)
    assert state["citations"] and state["sources"][0]["title"] == "employee_data"
    assert state["flags"] == turn.flags and state["timings"]["synthesize"] > 0
    assert "a write after it failed: the database was unavailable" in caplog.text
    # The conversation goes on.
    state = await assistant.ask("And John Doe's?", conv, workspace_id=seeded, context=ctx)
    assert [t.status for t in await services.db.transcripts.turn_details(seeded, conv)] == [
        "done",
        "done",
    ]


async def test_a_stream_failing_after_persist_stored_its_answer_ends_without_raising(
    assistant: Assistant, services: Services, seeded: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(services.db.checkpoints, "aput", _FailsOnce(services.db.checkpoints.aput))
    conv = await assistant.new_conversation(seeded)
    ctx = Context(workspace_id=seeded, llm_model="none")
    updates = [
        chunk
        async for mode, chunk in assistant.stream(
            "What is Prasad Chaudhari's salary?", conv, workspace_id=seeded, context=ctx
        )
        if mode == "updates"
    ]
    [turn] = await services.db.transcripts.turn_details(seeded, conv)
    assert turn.status == "done" and updates[-1]["persist"]["answer"] == turn.answer


async def test_ask_still_raises_when_the_run_fails_before_its_turn_is_stored_done(
    assistant: Assistant, services: Services, seeded: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def down(*_: object, **__: object) -> None:
        raise OperationalError("consuming input failed: server closed the connection")

    monkeypatch.setattr(services.db.turns, "complete_turn", down)
    monkeypatch.setattr(services.db.checkpoints, "aput", _FailsOnce(services.db.checkpoints.aput))
    conv = await assistant.new_conversation(seeded)
    ctx = Context(workspace_id=seeded, llm_model="none")
    with pytest.raises(OperationalError):
        await assistant.ask(
            "What is Prasad Chaudhari's salary?", conv, workspace_id=seeded, context=ctx
        )
    [turn] = await services.db.transcripts.turn_details(seeded, conv)
    assert (turn.status, turn.error) == ("failed", "the database was unavailable")
