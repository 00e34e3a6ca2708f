"""CONVERSATION_TTL_DAYS: expired conversations are swept from every store, nothing else is.

Conversations are made old by moving their timestamps back in SQL, never by waiting.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from convrag.api.app import create_app
from convrag.assistant import Assistant, open_assistant
from convrag.conversations import sweep_expired, sweep_periodically
from convrag.documents.base import SourceDocument
from convrag.ingest import ingest_documents
from convrag.services import Services
from convrag.stores.database import Database
from convrag.stores.records import TurnStart
from tests.legacy import legacy_memory_vector

QUESTION = "How many days of annual leave do employees get?"
POLICY = "Leave policy.\n\nEmployees get 25 days of annual leave per year."


@pytest.fixture
async def assistant(services: Services) -> AsyncIterator[Assistant]:
    async with open_assistant(services=services) as bot:
        yield bot
    await services.drain()


async def _conversation(bot: Assistant, workspace: str) -> str:
    """A conversation with one answered, cited and rated turn, and the memory vector that
    versions before conversation memory's removal wrote for it."""
    services = bot.services
    if not await services.db.documents.list_documents(workspace):
        policy = SourceDocument("leave.md", "Leave", POLICY, {})
        await ingest_documents(services, workspace, [policy])
    conv = await bot.new_conversation(workspace)
    state = await bot.ask(QUESTION, conv, workspace_id=workspace)
    await services.db.feedback.save_feedback(workspace, state["turn_id"], "up", "clear")
    await legacy_memory_vector(services, workspace, conv, f"Q: {QUESTION}\nA: {state['answer']}")
    return conv


async def _age(services: Services, conversation_id: str, days: int) -> None:
    """Move the conversation's activity, and its turns', ``days`` into the past."""
    age = timedelta(days=days)
    async with services.db.pool.connection() as conn:
        await conn.execute(
            "UPDATE conversations SET last_activity_at = last_activity_at - %s, "
            "started_at = started_at - %s WHERE id = %s",
            (age, age, conversation_id),
        )
        await conn.execute(
            "UPDATE conversation_turns SET updated_at = updated_at - %s, "
            "created_at = created_at - %s WHERE conversation_id = %s",
            (age, age, conversation_id),
        )


async def _stored(services: Services, workspace: str, conversation_id: str) -> dict[str, int]:
    """How many rows or vectors of the conversation each store holds."""
    counts: dict[str, int] = {}
    async with services.db.pool.connection() as conn:
        turns = [
            r["id"]
            for r in await (
                await conn.execute(
                    "SELECT id FROM conversation_turns WHERE conversation_id = %s",
                    (conversation_id,),
                )
            ).fetchall()
        ]
        counts["conversations"] = len(
            await (
                await conn.execute("SELECT 1 FROM conversations WHERE id = %s", (conversation_id,))
            ).fetchall()
        )
        counts["turns"] = len(turns)
        for table in ("message_citations", "message_feedback"):
            row = await (
                await conn.execute(
                    f"SELECT count(*) AS n FROM {table} WHERE message_id = ANY(%s)", (turns,)
                )
            ).fetchone()
            counts[table] = row["n"] if row else 0
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
            row = await (
                await conn.execute(
                    f"SELECT count(*) AS n FROM {table} WHERE thread_id = %s", (conversation_id,)
                )
            ).fetchone()
            counts[table] = row["n"] if row else 0
    index = services.index
    res = await asyncio.to_thread(
        index.client.query,
        index.collection,
        filter=f'workspace_id == "{workspace}" and kind == "memory" '
        f'and conversation_id == "{conversation_id}"',
        output_fields=["count(*)"],
    )
    counts["memory_vectors"] = int(res[0]["count(*)"]) if res else 0
    return counts


def _kept(counts: dict[str, int]) -> bool:
    """Whether a conversation made by :func:`_conversation` is whole."""
    whole = ("conversations", "turns", "message_citations", "message_feedback")
    return all(counts[k] >= 1 for k in (*whole, "checkpoints", "memory_vectors"))


async def test_a_sweep_deletes_an_expired_conversation_from_every_store_and_nothing_else(
    assistant: Assistant, workspace: str
) -> None:
    services = assistant.services
    other_workspace = workspace + "-b"
    old = await _conversation(assistant, workspace)
    recent = await _conversation(assistant, workspace)
    elsewhere = await _conversation(assistant, other_workspace)
    await _age(services, old, days=40)
    await _age(services, recent, days=20)
    assert _kept(await _stored(services, workspace, old))

    assert await sweep_expired(assistant, 30) >= 1

    gone = await _stored(services, workspace, old)
    assert gone == dict.fromkeys(gone, 0)
    assert _kept(await _stored(services, workspace, recent))
    assert _kept(await _stored(services, other_workspace, elsewhere))


async def test_with_the_ttl_off_a_sweep_deletes_nothing(
    assistant: Assistant, workspace: str
) -> None:
    services = assistant.services
    assert services.settings.conversation_ttl_days is None
    old = await _conversation(assistant, workspace)
    await _age(services, old, days=400)
    assert await sweep_expired(assistant) == 0
    assert await sweep_expired(assistant, 0) == 0
    assert _kept(await _stored(services, workspace, old))
    await sweep_expired(assistant, 365)  # leave no expired conversation to other tests


async def test_a_sweep_reads_the_ttl_from_the_settings_and_works_through_batches(
    assistant: Assistant, workspace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    services = assistant.services
    monkeypatch.setattr(
        services, "settings", services.settings.model_copy(update={"conversation_ttl_days": 7})
    )
    convs = [await services.db.conversations.create_conversation(workspace) for _ in range(3)]
    for conv in convs:
        await _age(services, conv, days=8)
    assert await sweep_expired(assistant, batch=2) >= 3
    assert [
        c for c in convs if await services.db.conversations.conversation_exists(workspace, c)
    ] == []


async def test_a_conversation_answering_a_new_message_is_not_expired(
    services: Services, workspace: str
) -> None:
    conv = await services.db.conversations.create_conversation(workspace)
    await _age(services, conv, days=10)
    # A message arrives: its turn starts now, the conversation's last activity stays old
    # until the answer is written.
    await services.db.turns.start_turn(TurnStart(workspace, conv, str(uuid.uuid4()), "Hello?"), 5)
    expired = await services.db.conversations.expired_conversations(timedelta(days=5), limit=1000)
    assert (workspace, conv) not in expired
    async with services.db.pool.connection() as conn:
        await conn.execute("DELETE FROM conversation_turns WHERE conversation_id = %s", (conv,))
    expired = await services.db.conversations.expired_conversations(timedelta(days=5), limit=1000)
    assert (workspace, conv) in expired
    assert await services.db.conversations.delete_conversation(workspace, conv)


async def test_the_periodic_sweep_runs_at_start_and_stops_when_cancelled(
    assistant: Assistant, monkeypatch: pytest.MonkeyPatch
) -> None:
    swept = asyncio.Event()

    async def sweep(bot: Assistant, ttl_days: float | None = None) -> int:
        swept.set()
        return 0

    monkeypatch.setattr("convrag.conversations.sweep_expired", sweep)
    task = asyncio.create_task(sweep_periodically(assistant, timedelta(hours=1)))
    await swept.wait()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert task.cancelled()


async def test_the_service_sweeps_only_with_a_ttl_and_stops_the_sweep_on_shutdown(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[Assistant] = []
    stopped = asyncio.Event()

    async def sweeper(bot: Assistant) -> None:
        started.append(bot)
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()

    monkeypatch.setattr("convrag.api.app.sweep_periodically", sweeper)
    app = create_app(services=services)
    async with app.router.lifespan_context(app):
        await asyncio.sleep(0)
    assert started == []

    monkeypatch.setattr(
        services, "settings", services.settings.model_copy(update={"conversation_ttl_days": 30})
    )
    app = create_app(services=services)
    async with app.router.lifespan_context(app):
        await asyncio.sleep(0)
        assert len(started) == 1 and not stopped.is_set()
    assert stopped.is_set()


async def test_a_conversation_another_process_is_deleting_is_not_listed_as_expired(
    services: Services, workspace: str
) -> None:
    """Every worker sweeps; one whose sweep is deleting a conversation leaves it to it."""
    conv = await services.db.conversations.create_conversation(workspace)
    await _age(services, conv, days=10)
    async with Database.from_url(services.database_url, max_size=1) as other:
        assert await other.conversations.mark_deleting(workspace, conv)
        expired = await services.db.conversations.expired_conversations(
            timedelta(days=5), limit=1000
        )
        assert (workspace, conv) not in expired
    assert await services.db.conversations.delete_conversation(workspace, conv)
