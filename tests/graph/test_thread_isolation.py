"""No workspace runs on another workspace's checkpoint thread through the Python API.

A run of workspace B on A's thread is refused before LangGraph writes anything there: its
input checkpoint (``durability="async"``) or the checkpoint it writes as it ends on the
error (``"exit"``) would show B's message in A's Studio view, and a resume would answer
it as A's question.
"""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest

from convrag.assistant import Assistant
from convrag.context import Context
from convrag.services import Services
from convrag.state import InputState
from tests.conftest import thread_rows

FIRST = "What is Prasad Chaudhari's salary?"
FOLLOW_UP = "What about her basic salary?"
INTRUDER = "INTRUDER: what is the CEO's salary?"


async def _intrude(bot: Assistant, how: str, thread_id: str, workspace: str) -> None:
    """Workspace ``workspace`` runs on ``thread_id`` the way ``how`` names."""
    ctx = Context(workspace_id=workspace, llm_model="none")
    if how in ("ask", "async durability", "named thread"):
        await bot.ask(INTRUDER, thread_id, workspace_id=workspace, context=ctx)
    elif how in ("stream", "resume"):
        message = None if how == "resume" else INTRUDER
        async for _ in bot.stream(message, thread_id, workspace_id=workspace, context=ctx):
            pass
    else:
        raise AssertionError(how)


@pytest.mark.parametrize("how", ["ask", "stream", "resume", "async durability", "named thread"])
async def test_another_workspaces_run_on_a_thread_is_refused_and_leaves_its_checkpoints_unchanged(
    assistant: Assistant, services: Services, seeded: str, how: str
) -> None:
    bot = replace(assistant, durability="async") if how == "async durability" else assistant
    ctx = Context(workspace_id=seeded, llm_model="none")
    if how == "named thread":  # a thread name, whose UUID5 is the conversation's id
        thread_id = f"my-chat-{uuid.uuid4().hex[:8]}"
    else:
        thread_id = await bot.new_conversation(seeded)
    first = await bot.ask(FIRST, thread_id, workspace_id=seeded, context=ctx)
    conv = first["conversation_id"]
    before = await thread_rows(services, thread_id)
    assert before
    other = f"{seeded}-b"

    with pytest.raises(PermissionError, match=f"conversation {conv} is not in workspace {other}"):
        await _intrude(bot, how, thread_id, other)

    assert await thread_rows(services, thread_id) == before
    assert await services.db.turns.all_turns(other, conv) == []
    # A goes on with its history intact: the follow-up is read against the first turn.
    state = await bot.ask(FOLLOW_UP, thread_id, workspace_id=seeded, context=ctx)
    assert [t["question"] for t in state["history"]] == [FIRST]
    assert "$80,000" in state["answer"]
    assert [t.question for t in await services.db.turns.all_turns(seeded, conv)] == [
        FIRST,
        FOLLOW_UP,
    ]


async def test_a_thread_answered_for_another_conversation_is_refused_to_other_workspaces(
    assistant: Assistant, services: Services, seeded: str
) -> None:
    """A thread holds a conversation's checkpoints when a run names that conversation in
    its input (Studio and the SDK may): it is then that conversation's workspace's."""
    conv = await assistant.new_conversation(seeded)
    thread_id = str(uuid.uuid4())
    run_ctx = assistant.context(seeded, Context(workspace_id=seeded, llm_model="none"))
    payload = InputState(message=FIRST, conversation_id=conv)
    await assistant.graph.ainvoke(payload, assistant.config(thread_id), context=run_ctx)
    before = await thread_rows(services, thread_id)
    assert before
    other = f"{seeded}-b"

    with pytest.raises(PermissionError, match=f"conversation {conv} is not in workspace {other}"):
        await assistant.ask(
            INTRUDER,
            thread_id,
            workspace_id=other,
            context=Context(workspace_id=other, llm_model="none"),
        )

    assert await thread_rows(services, thread_id) == before
