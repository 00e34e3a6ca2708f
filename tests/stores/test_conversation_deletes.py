"""A conversation's delete in the store, across the processes that share one database.

The delete marks the conversation's row first (``mark_deleting``): no turn starts in it
then, in any process, and a turn that any live process answers keeps the delete out. A
turn whose answer comes after its conversation was deleted never brings it back.
``_another_process`` is a second ``Database`` on the same database, with a liveness key
of its own: another worker, as the store sees one.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from convrag.errors import ANSWERING, BEING_DELETED, ConversationInUse
from convrag.stores.database import Database
from convrag.stores.records import NewTurn, TurnStart
from convrag.stores.turns import ConversationDeleted
from tests.stores.conftest import until_waiting_on_a_lock


@asynccontextmanager
async def _another_process(db: Database) -> AsyncIterator[Database]:
    async with Database.from_url(db.pool.conninfo, max_size=2) as other:
        assert other.owner is not None and other.owner != db.owner
        yield other


def _start(workspace: str, conversation_id: str) -> TurnStart:
    return TurnStart(workspace, conversation_id, str(uuid.uuid4()), "Where do staff park?")


def _answer(start: TurnStart) -> NewTurn:
    return NewTurn(
        id=start.turn_id,
        workspace_id=start.workspace_id,
        conversation_id=start.conversation_id,
        question=start.question,
        answer="In the north car park.",
        contextualized_query=start.question,
        entities=[],
        sources=[],
        web_search_triggered=False,
        repetition_detected=False,
        intent="standalone",
        confidence=None,
    )


async def test_no_turn_starts_in_a_conversation_another_process_is_deleting(
    db: Database, workspace: str
) -> None:
    conv = await db.conversations.create_conversation(workspace)
    async with _another_process(db) as other:
        assert await other.conversations.mark_deleting(workspace, conv)
        refused = await db.turns.start_turn(_start(workspace, conv), 5)
        assert refused is not None and refused.deleting and not refused.started
        with pytest.raises(ConversationInUse, match=BEING_DELETED):
            await db.conversations.mark_deleting(workspace, conv)
        with pytest.raises(ConversationDeleted):  # nor is a turn written into it
            await db.turns.save_turn(_answer(_start(workspace, conv)))
        assert await db.transcripts.turn_details(workspace, conv) == []
        await other.conversations.unmark_deleting(workspace, conv)  # its delete failed midway
        started = await db.turns.start_turn(_start(workspace, conv), 5)
        assert started is not None and started.started and not started.deleting


async def test_a_delete_mark_stops_counting_once_its_process_is_gone_or_it_is_old(
    db: Database, workspace: str
) -> None:
    assert db.owner is not None
    gone, old = [await db.conversations.create_conversation(workspace) for _ in range(2)]
    for conv in (gone, old):
        assert await db.conversations.mark_deleting(workspace, conv)
    async with db.pool.connection() as conn:  # as if a killed process had marked it
        await conn.execute(
            "UPDATE conversations SET deleting_owner = %s WHERE id = %s",
            (db.owner + 1 if db.owner < 2**31 - 1 else 1, gone),
        )
        await conn.execute(  # a live process that never took its mark back
            "UPDATE conversations SET deleting_since = now() - interval '1 hour' WHERE id = %s",
            (old,),
        )
    for conv in (gone, old):
        started = await db.turns.start_turn(_start(workspace, conv), 5)
        assert started is not None and started.started and not started.deleting


async def test_a_delete_is_refused_while_another_process_answers_in_the_conversation(
    db: Database, workspace: str
) -> None:
    conv = await db.conversations.create_conversation(workspace)
    start = _start(workspace, conv)
    async with _another_process(db) as other:
        started = await other.turns.start_turn(start, 5)
        assert started is not None and started.started
        with pytest.raises(ConversationInUse, match=ANSWERING):
            await db.conversations.mark_deleting(workspace, conv)
        # What a stop in this process finds to ask the other one to stop.
        assert await db.turns.turn_answered_elsewhere(workspace, conv) == start.turn_id
        assert await other.turns.turn_answered_elsewhere(workspace, conv) is None
        assert await other.turns.complete_turn(_answer(start))
        assert await db.turns.turn_answered_elsewhere(workspace, conv) is None
        assert await db.conversations.mark_deleting(workspace, conv)
    assert await db.conversations.delete_conversation(workspace, conv)


async def test_a_turn_start_that_waits_for_a_deletes_row_lock_sees_its_mark(
    db: Database, workspace: str
) -> None:
    """The start reads its conversation under the row lock the delete's mark is written
    under: a start that arrives while the mark is being written waits for it and sees it,
    where its statement's snapshot would show the row as it was before."""
    conv = await db.conversations.create_conversation(workspace)
    async with (
        db.pool.connection() as deleter,
        db.pool.connection() as watcher,
        deleter.transaction(),
    ):
        await deleter.execute("SELECT 1 FROM conversations WHERE id = %s FOR UPDATE", (conv,))
        starting = asyncio.create_task(db.turns.start_turn(_start(workspace, conv), 5))
        # until the start waits for the deleter's row lock
        await until_waiting_on_a_lock(watcher, starting, "INSERT INTO conversation_turns")
        await deleter.execute(
            "UPDATE conversations SET deleting_since = now() WHERE id = %s", (conv,)
        )
    started = await starting
    assert started is not None and started.deleting and not started.started
    assert await db.transcripts.turn_details(workspace, conv) == []


async def test_an_answer_stored_after_its_conversation_was_deleted_does_not_bring_it_back(
    db: Database, workspace: str
) -> None:
    """The turn's row went with its conversation; completing it must not write the turn
    whole again, which created the conversation anew."""
    conv = await db.conversations.create_conversation(workspace)
    start = _start(workspace, conv)
    started = await db.turns.start_turn(start, 5)
    assert started is not None and started.started
    assert await db.conversations.delete_conversation(workspace, conv)  # another worker's delete
    with pytest.raises(ConversationDeleted):
        await db.turns.complete_turn(_answer(start))
    assert await db.conversations.get_conversation(workspace, conv) is None
    assert await db.turns.all_turns(workspace, conv) == []


async def test_departing_conversations_are_those_gone_or_being_deleted(
    db: Database, workspace: str
) -> None:
    kept, marked, deleted = [
        await db.conversations.create_conversation(workspace) for _ in range(3)
    ]
    assert await db.conversations.mark_deleting(workspace, marked)
    assert await db.conversations.delete_conversation(workspace, deleted)
    never = str(uuid.uuid4())
    found = await db.conversations.departing_conversations(
        [kept, marked, deleted, never, "not-a-uuid"]
    )
    assert found == {marked, deleted, never}
