"""Checkpoints stay bounded: one per conversation at rest, however long it runs."""

from __future__ import annotations

from convrag.assistant import open_assistant
from convrag.context import Context
from convrag.services import Services
from tests.conftest import checkpoint_count


async def test_a_conversation_keeps_one_checkpoint_at_rest_and_its_state(
    services: Services, seeded: str
) -> None:
    ctx = Context(workspace_id=seeded, llm_model="none")
    async with open_assistant(services=services) as bot:
        conv = await bot.new_conversation(seeded)
        for question in (
            "What is Prasad Chaudhari's salary?",
            "What about his basic salary?",
            "How many days of annual leave do employees get?",
        ):
            await bot.ask(question, conv, workspace_id=seeded, context=ctx)
            assert await checkpoint_count(services, conv) == 1
        state = await bot.graph.aget_state(bot.config(conv))
    assert state.values["question"] == "How many days of annual leave do employees get?"
