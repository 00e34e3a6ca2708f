"""The chats remembered for the OpenAI-compatible endpoint: the hash of a chat so far finds
its conversation again, in its own workspace only, and goes with the conversation."""

from __future__ import annotations

import uuid

from convrag.stores.database import Database


def _workspace() -> str:
    return f"ws-{uuid.uuid4().hex[:12]}"


async def test_a_remembered_chat_finds_its_conversation_in_its_workspace_only(
    db: Database,
) -> None:
    mine, other = _workspace(), _workspace()
    conv = await db.conversations.create_conversation(mine)
    await db.conversations.remember_transcript(mine, conv, "chat-hash")
    await db.conversations.remember_transcript(
        other, conv, "foreign-hash"
    )  # not the other's to name
    assert await db.conversations.conversation_of_transcript(mine, "chat-hash") == conv
    assert await db.conversations.conversation_of_transcript(other, "chat-hash") is None
    assert await db.conversations.conversation_of_transcript(other, "foreign-hash") is None
    assert await db.conversations.conversation_of_transcript(mine, "another-hash") is None


async def test_the_same_chat_in_two_conversations_finds_the_most_recently_active(
    db: Database,
) -> None:
    ws = _workspace()
    older, newer = (
        await db.conversations.create_conversation(ws),
        await db.conversations.create_conversation(ws),
    )
    for conv in (older, newer):
        await db.conversations.remember_transcript(ws, conv, "same-chat")
    async with db.pool.connection() as conn:
        await conn.execute(
            "UPDATE conversations SET last_activity_at = now() - interval '1 hour' WHERE id = %s",
            (older,),
        )
    assert await db.conversations.conversation_of_transcript(ws, "same-chat") == newer


async def test_a_deleted_conversations_chats_go_with_it(db: Database) -> None:
    ws = _workspace()
    conv = await db.conversations.create_conversation(ws)
    await db.conversations.remember_transcript(ws, conv, "chat-hash")
    assert await db.conversations.delete_conversation(ws, conv)
    await db.conversations.remember_transcript(ws, conv, "chat-hash")  # written after: nothing
    assert await db.conversations.conversation_of_transcript(ws, "chat-hash") is None
    async with db.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n FROM conversation_transcripts WHERE conversation_id = %s",
            (conv,),
        )
        row = await cur.fetchone()
    assert row is not None and row["n"] == 0
