"""Deleting a conversation deletes the checkpoints of every thread it was answered under,
and the vectors that conversation memory wrote for it before its removal.

A thread id that is not a UUID (``"my-chat"``) stores its turns under that name's UUID5,
while the checkpointer keys its checkpoints by the name itself.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from convrag.assistant import Assistant, open_assistant
from convrag.context import Context
from convrag.conversations import delete_conversation, sweep_expired
from convrag.documents.base import SourceDocument
from convrag.ids import conversation_uuid
from convrag.ingest import ingest_documents
from convrag.services import Services
from tests.legacy import conversation_vectors, legacy_memory_vector

QUESTION = "How many days of annual leave do employees get?"
POLICY = "Leave policy.\n\nEmployees get 25 days of annual leave per year."


@pytest.fixture
async def assistant(services: Services, workspace: str) -> AsyncIterator[Assistant]:
    policy = SourceDocument("leave.md", "Leave", POLICY, {})
    await ingest_documents(services, workspace, [policy])
    async with open_assistant(services=services) as bot:
        yield bot
    await services.drain()


async def _checkpoints(services: Services, thread_id: str) -> int:
    """The checkpointer's rows of ``thread_id``, in all its tables."""
    n = 0
    async with services.db.pool.connection() as conn:
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
            row = await (
                await conn.execute(
                    f"SELECT count(*) AS n FROM {table} WHERE thread_id = %s", (thread_id,)
                )
            ).fetchone()
            n += row["n"] if row else 0
    return n


async def _asked_under(bot: Assistant, workspace: str, thread_id: str) -> str:
    """Ask one question under the thread id ``thread_id``; the conversation's id."""
    ctx = Context(workspace_id=workspace, llm_model="none")
    state = await bot.ask(QUESTION, thread_id, context=ctx)
    assert state["conversation_id"] == conversation_uuid(thread_id) != thread_id
    assert await _checkpoints(bot.services, thread_id) > 0
    return state["conversation_id"]


@pytest.mark.parametrize("name", ["my-chat", "upper-case-uuid"])
async def test_deleting_a_conversation_deletes_the_checkpoints_of_the_thread_it_was_asked_under(
    assistant: Assistant, workspace: str, name: str
) -> None:
    thread_id = f"{name}-{uuid.uuid4().hex[:8]}"
    if name == "upper-case-uuid":  # a UUID, but not as the conversation's id is spelt
        thread_id = str(uuid.uuid4()).upper()
    conversation_id = await _asked_under(assistant, workspace, thread_id)

    assert await delete_conversation(assistant, workspace, conversation_id)

    assert await _checkpoints(assistant.services, thread_id) == 0
    state = await assistant.graph.aget_state(assistant.config(thread_id))
    assert state.values == {}


async def test_a_sweep_deletes_the_checkpoints_of_the_thread_an_expired_one_was_asked_under(
    assistant: Assistant, workspace: str
) -> None:
    services = assistant.services
    thread_id = f"my-chat-{uuid.uuid4().hex[:8]}"
    conversation_id = await _asked_under(assistant, workspace, thread_id)
    age = timedelta(days=40)
    async with services.db.pool.connection() as conn:
        await conn.execute(
            "UPDATE conversations SET last_activity_at = last_activity_at - %s WHERE id = %s",
            (age, conversation_id),
        )
        await conn.execute(
            "UPDATE conversation_turns SET updated_at = updated_at - %s WHERE conversation_id = %s",
            (age, conversation_id),
        )

    assert await sweep_expired(assistant, 30) >= 1

    assert not await services.db.conversations.conversation_exists(workspace, conversation_id)
    assert await _checkpoints(services, thread_id) == 0


async def test_a_run_that_ends_after_its_conversation_was_deleted_keeps_no_checkpoint(
    assistant: Assistant, workspace: str
) -> None:
    """Another worker deleted the conversation, its checkpoints first, as this run was
    writing its last one: the run's settling deletes it, as nothing else ever would."""
    thread_id = f"my-chat-{uuid.uuid4().hex[:8]}"
    conversation_id = await _asked_under(assistant, workspace, thread_id)
    assert await assistant.services.db.conversations.delete_conversation(workspace, conversation_id)

    await assistant.settle(thread_id)

    assert await _checkpoints(assistant.services, thread_id) == 0


async def test_a_delete_clears_the_memory_vectors_of_an_earlier_version_that_search_never_finds(
    assistant: Assistant, workspace: str
) -> None:
    """Conversation memory is gone, but a collection made before still holds a vector of
    each answered turn, with its text: searching never returns one, and the
    conversation's delete removes them (and those of no other conversation)."""
    services = assistant.services
    deleted, kept = [
        await services.db.conversations.create_conversation(workspace) for _ in range(2)
    ]
    text = f"Q: {QUESTION}\nA: Employees get 25 days of annual leave per year."
    index = services.index
    chunks = await asyncio.to_thread(index.count, workspace)
    legacy = {await legacy_memory_vector(services, workspace, c, text) for c in (deleted, kept)}

    vector = (await asyncio.to_thread(services.embedder.embed, [text]))[0]
    found = [
        *await asyncio.to_thread(index.dense_search, workspace, vector, 10),
        *await asyncio.to_thread(index.bm25_search, workspace, "annual leave employees", 10),
        *await services.searcher.search(workspace, QUESTION, top_k=10),
    ]
    assert found and not legacy & {h.chunk_id for h in found}
    assert await asyncio.to_thread(index.count, workspace) == chunks
    assert await delete_conversation(assistant, workspace, deleted)

    assert await conversation_vectors(services, deleted) == []
    assert len(await conversation_vectors(services, kept)) == 1
