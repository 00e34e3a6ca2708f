"""A run's input: a turn needs its own message, never the thread's previous one."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from convrag.assistant import Assistant
from convrag.context import Context
from convrag.services import Services

FIRST = "What is Prasad Chaudhari's salary?"


async def _questions(services: Services, conversation_id: str) -> list[str]:
    """Every stored turn's question, whatever its status, in order."""
    async with services.db.pool.connection() as conn:
        rows = await (
            await conn.execute(
                "SELECT question FROM conversation_turns WHERE conversation_id = %s "
                "ORDER BY turn_number",
                (conversation_id,),
            )
        ).fetchall()
    return [r["question"] for r in rows]


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ({}, r"has no 'message': send \{'message'"),
        ({"mesage": "What about his basic salary?"}, r"has no 'message'"),
        ({"turn_request": None}, r"has no 'message'"),
        ({"message": None}, "message: expected a string, got NoneType"),
        ({"message": "  "}, "message is empty"),
    ],
)
async def test_a_run_without_a_message_is_refused_and_stores_no_turn(
    assistant: Assistant,
    services: Services,
    seeded: str,
    payload: dict[str, Any],
    problem: str,
) -> None:
    ctx = Context(workspace_id=seeded, llm_model="none")
    conv = await assistant.new_conversation(seeded)
    await assistant.ask(FIRST, conv, workspace_id=seeded, context=ctx)
    config = assistant.config(conv)
    run_ctx = assistant.context(seeded, ctx)

    with pytest.raises(ValueError, match=problem):
        await assistant.graph.ainvoke(payload, config, context=run_ctx)

    # Not the previous question answered again: nothing stored, the state read back as
    # after the answered turn, and the next message is answered as usual.
    assert await _questions(services, conv) == [FIRST]
    state = await assistant.graph.aget_state(config)
    assert state.values["question"] == FIRST
    await assistant.ask("How many days of annual leave do employees get?", conv, context=ctx)
    assert await _questions(services, conv) == [
        FIRST,
        "How many days of annual leave do employees get?",
    ]


async def test_a_failed_runs_message_is_not_answered_by_the_next_run_without_one(
    assistant: Assistant, services: Services, seeded: str
) -> None:
    ctx = Context(workspace_id=seeded, llm_model="none")
    conv = await assistant.new_conversation(seeded)
    await assistant.ask(FIRST, conv, workspace_id=seeded, context=ctx)
    config = assistant.config(conv)
    other = str(uuid.uuid4())
    elsewhere = assistant.context(other, Context(workspace_id=other, llm_model="none"))
    with pytest.raises(PermissionError, match="is not in workspace"):
        await assistant.graph.ainvoke({"message": "And his bonus?"}, config, context=elsewhere)

    # The failed run's checkpoint keeps its input, but only for that run's first step.
    with pytest.raises(ValueError, match="has no 'message'"):
        await assistant.graph.ainvoke({}, config, context=assistant.context(seeded, ctx))
    assert await _questions(services, conv) == [FIRST]
