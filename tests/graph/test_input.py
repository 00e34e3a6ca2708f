"""A run's input: a turn needs its own message, never the thread's previous one."""

from __future__ import annotations

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
        ({}, r"no 'message'.*keys sent: none"),
        ({"mesage": "What about his basic salary?"}, r"no 'message'.*keys sent: 'mesage'"),
        ({"message": None}, "message: expected a string, got NoneType"),
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
    assert state.values["message"] == FIRST
    await assistant.ask("How many days of annual leave do employees get?", conv, context=ctx)
    assert await _questions(services, conv) == [
        FIRST,
        "How many days of annual leave do employees get?",
    ]
