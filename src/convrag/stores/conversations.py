"""Conversations: created, listed, renamed, and deleted in two steps (marked, so that no
turn starts in one while its rows elsewhere are cleared, then deleted), and the
checkpoint threads each was answered under.

Their turns are :mod:`~convrag.stores.turns`', their feedback
:mod:`~convrag.stores.feedback`'s, what their answers cite
:mod:`~convrag.stores.citations`', and their transcripts
:mod:`~convrag.stores.transcripts`'; the records of all of them
:mod:`~convrag.stores.records`'.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from psycopg.errors import ForeignKeyViolation

from convrag.errors import ANSWERING, BEING_DELETED, ConversationInUse
from convrag.ids import is_uuid
from convrag.stores.base import (
    ANSWERING_TURN,
    After,
    PooledStore,
    deleting,
    fetch_bool,
    fetch_one,
    owns,
)
from convrag.stores.records import (
    ConversationRecord,
)

TITLE_CHARS = 80
"""The longest title a conversation gets from its first question."""


def title_from_question(question: str | None) -> str | None:
    """A conversation's default title: its first question on one line, cut at a word
    boundary to at most :data:`TITLE_CHARS` characters (with an ellipsis when cut)."""
    text = " ".join((question or "").split())
    if not text:
        return None
    if len(text) <= TITLE_CHARS:
        return text
    cut = text[: TITLE_CHARS - 1]
    space = cut.rfind(" ")
    if space >= TITLE_CHARS // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "\u2026"


_CONVERSATION_COLUMNS = """SELECT c.id::text AS id, c.title,
           c.started_at AS created_at, c.last_activity_at AS updated_at,
           (SELECT count(*) FROM conversation_turns t
            WHERE t.workspace_id = c.workspace_id AND t.conversation_id = c.id
              AND t.status <> 'processing') AS turn_count,
           (SELECT t.question FROM conversation_turns t
            WHERE t.workspace_id = c.workspace_id AND t.conversation_id = c.id
            ORDER BY t.turn_number LIMIT 1) AS first_question
    FROM conversations c"""


def _conversation(row: dict[str, Any]) -> ConversationRecord:
    """A row of :data:`_CONVERSATION_COLUMNS` as a record: its own title, else its first
    question's."""
    first_question = row.pop("first_question")
    row["title"] = row["title"] or title_from_question(first_question)
    return ConversationRecord(**row)


class ConversationStore(PooledStore):
    """A workspace's conversations: their rows, their delete marks, and the checkpoint
    threads they were answered under."""

    async def create_conversation(
        self, workspace_id: str, conversation_id: str | None = None
    ) -> str:
        """Create the conversation (a new id unless given; an existing one is left as
        it is) and its workspace's row if needed; its id."""
        await self.ensure_workspace(workspace_id)
        cid = conversation_id or str(uuid.uuid4())
        await self.execute(
            "INSERT INTO conversations (id, workspace_id) VALUES (%s, %s) "
            "ON CONFLICT (id) DO NOTHING",
            (cid, workspace_id),
        )
        return cid

    async def list_conversations(
        self, workspace_id: str, *, limit: int, after: After | None = None
    ) -> list[ConversationRecord]:
        """The workspace's conversations, most recently active first: at most ``limit``,
        starting after the ``(updated_at, id)`` position ``after``."""
        where = "c.workspace_id = %s"
        params: list[object] = [workspace_id]
        if after is not None:
            where += " AND (c.last_activity_at, c.id) < (%s, %s::uuid)"
            params += [after[0], after[1]]
        rows = await self.fetch_all(
            f"""{_CONVERSATION_COLUMNS} WHERE {where}
                ORDER BY c.last_activity_at DESC, c.id DESC LIMIT %s""",
            [*params, limit],
        )
        return [_conversation(r) for r in rows]

    async def get_conversation(
        self, workspace_id: str, conversation_id: str
    ) -> ConversationRecord | None:
        """One conversation as listed; None when it is not this workspace's."""
        if not is_uuid(conversation_id):
            return None
        row = await self.fetch_one(
            f"{_CONVERSATION_COLUMNS} WHERE c.workspace_id = %s AND c.id = %s",
            (workspace_id, conversation_id),
        )
        return None if row is None else _conversation(row)

    async def rename_conversation(
        self, workspace_id: str, conversation_id: str, title: str
    ) -> ConversationRecord | None:
        """Give the conversation ``title``; None when it is not this workspace's. Its
        last activity (``updated_at``) stays: a rename does not move it up the list."""
        if not is_uuid(conversation_id):
            return None
        renamed = await self.execute(
            "UPDATE conversations SET title = %s WHERE workspace_id = %s AND id = %s",
            (title, workspace_id, conversation_id),
        )
        if renamed == 0:
            return None
        return await self.get_conversation(workspace_id, conversation_id)

    async def conversation_exists(self, workspace_id: str, conversation_id: str) -> bool:
        """Whether ``conversation_id`` is a conversation of this workspace."""
        async with self.pool.connection() as conn:
            return await owns(conn, "conversations", workspace_id, conversation_id)

    async def mark_deleting(self, workspace_id: str, conversation_id: str) -> bool:
        """Mark the conversation as being deleted, for every process sharing the database:
        until its rows are deleted (or :meth:`unmark_deleting`), no turn starts in it
        (:meth:`~convrag.stores.turns.TurnStore.start_turn`) and no turn is written into
        it (:meth:`~convrag.stores.turns.TurnStore.save_turn`). False when it is not this
        workspace's.

        :class:`ConversationInUse` instead when another delete of it is under way
        (:data:`BEING_DELETED`), or when a process that still lives is answering a
        message in it (:data:`ANSWERING`, the same turns that make it busy for a new
        message). Both are read under the conversation's row lock, which a turn's start
        takes too: a start that came first has its ``processing`` turn seen here, one
        that comes after sees the mark.
        """
        if not is_uuid(conversation_id):
            return False
        async with self.pool.connection() as conn, conn.transaction():
            row = await fetch_one(
                conn,
                f"""SELECT {deleting("conversations")} AS deleting FROM conversations
                    WHERE workspace_id = %s AND id = %s FOR UPDATE""",
                (workspace_id, conversation_id),
            )
            if row is None:
                return False
            if row["deleting"]:
                raise ConversationInUse(BEING_DELETED)
            # A statement of its own: its snapshot is taken once the lock is held, so it
            # sees a turn whose start committed while this transaction waited for it.
            if await fetch_bool(
                conn,
                f"""SELECT EXISTS (SELECT 1 FROM conversation_turns
                        WHERE conversation_id = %s AND {ANSWERING_TURN})""",
                conversation_id,
            ):
                raise ConversationInUse(ANSWERING)
            await conn.execute(
                """UPDATE conversations SET deleting_since = now(), deleting_owner = %s
                   WHERE id = %s""",
                (self.owner, conversation_id),
            )
        return True

    async def unmark_deleting(self, workspace_id: str, conversation_id: str) -> None:
        """Take back this process's :meth:`mark_deleting` of a delete that failed midway:
        the conversation takes messages again, and a retried delete may begin at once."""
        if not is_uuid(conversation_id):
            return
        await self.execute(
            """UPDATE conversations SET deleting_since = NULL, deleting_owner = NULL
               WHERE workspace_id = %s AND id = %s
                 AND deleting_owner IS NOT DISTINCT FROM %s""",
            (workspace_id, conversation_id, self.owner),
        )

    async def departing_conversations(self, conversation_ids: Sequence[str]) -> set[str]:
        """Those of ``conversation_ids`` (UUIDs) that are gone or whose delete is under
        way, in any workspace: what is written for them now (a checkpoint) may have
        missed their delete's clearing and must be removed again."""
        ids = sorted({c.lower() for c in conversation_ids if is_uuid(c)})
        if not ids:
            return set()
        rows = await self.fetch_all(
            f"""SELECT x::text AS id FROM unnest(%s::uuid[]) AS x
                WHERE NOT EXISTS (SELECT 1 FROM conversations c
                                  WHERE c.id = x AND NOT {deleting("c")})""",
            (ids,),
        )
        return {r["id"] for r in rows}

    async def delete_conversation(self, workspace_id: str, conversation_id: str) -> bool:
        """Delete the conversation's row, and with it (by foreign key) its turns, their
        citations and feedback, and its threads; False when it is not this workspace's.
        Its vectors and checkpoints are the caller's to clear."""
        if not is_uuid(conversation_id):
            return False
        deleted = await self.execute(
            "DELETE FROM conversations WHERE workspace_id = %s AND id = %s",
            (workspace_id, conversation_id),
        )
        return deleted > 0

    async def remember_transcript(
        self, workspace_id: str, conversation_id: str, transcript_hash: str
    ) -> None:
        """Remember that the chat whose messages so far hash to ``transcript_hash`` is
        ``conversation_id`` (:meth:`conversation_of_transcript` finds it again). Nothing
        is remembered for a conversation that is not this workspace's, or was deleted
        meanwhile."""
        if not is_uuid(conversation_id):
            return
        try:
            await self.execute(
                """INSERT INTO conversation_transcripts
                     (workspace_id, transcript_hash, conversation_id)
                   SELECT workspace_id, %s, id FROM conversations
                   WHERE workspace_id = %s AND id = %s
                   ON CONFLICT DO NOTHING""",
                (transcript_hash, workspace_id, conversation_id),
            )
        except ForeignKeyViolation:  # deleted between the select and the insert
            return

    async def conversation_of_transcript(
        self, workspace_id: str, transcript_hash: str
    ) -> str | None:
        """The conversation of this workspace whose chat so far hashes to
        ``transcript_hash`` (:meth:`remember_transcript`), the most recently active one
        when several do; None when none does, or only ones being deleted."""
        row = await self.fetch_one(
            f"""SELECT c.id::text AS id FROM conversation_transcripts t
                JOIN conversations c ON c.id = t.conversation_id
                WHERE t.workspace_id = %s AND t.transcript_hash = %s AND NOT {deleting("c")}
                ORDER BY c.last_activity_at DESC, c.id DESC LIMIT 1""",
            (workspace_id, transcript_hash),
        )
        return None if row is None else str(row["id"])

    async def record_thread(self, conversation_id: str, thread_id: str) -> None:
        """Remember that ``conversation_id`` is answered under the checkpoint thread
        ``thread_id``, which is not its own id: :meth:`checkpoint_threads` names it when
        the conversation is deleted."""
        await self.execute(
            "INSERT INTO conversation_threads (conversation_id, thread_id) VALUES (%s, %s) "
            "ON CONFLICT DO NOTHING",
            (conversation_id, thread_id),
        )

    async def checkpoint_threads(self, conversation_id: str) -> list[str]:
        """Every checkpoint thread of the conversation: its own id, and each other one
        its turns were answered under (:meth:`record_thread`)."""
        if not is_uuid(conversation_id):
            return []
        rows = await self.fetch_all(
            "SELECT thread_id FROM conversation_threads WHERE conversation_id = %s "
            "ORDER BY thread_id",
            (conversation_id,),
        )
        return [conversation_id, *(r["thread_id"] for r in rows)]

    async def expired_conversations(
        self, older_than: timedelta, *, limit: int
    ) -> list[tuple[str, str]]:
        """``(workspace_id, conversation_id)`` of at most ``limit`` conversations, in every
        workspace, whose last activity is older than ``older_than`` on the database's
        clock, least recently active first.

        A turn that started (or changed status) since the cut-off counts as activity too:
        ``last_activity_at`` moves only when a turn is answered, and a conversation whose
        new message is being answered right now must not be deleted under it. One whose
        delete is under way (another worker's sweep) is left to that delete.
        """
        rows = await self.fetch_all(
            f"""SELECT c.workspace_id, c.id::text AS id FROM conversations c
               WHERE c.last_activity_at < now() - %(age)s
                 AND NOT {deleting("c")}
                 AND NOT EXISTS (SELECT 1 FROM conversation_turns t
                                 WHERE t.conversation_id = c.id
                                   AND t.updated_at >= now() - %(age)s)
               ORDER BY c.last_activity_at, c.id LIMIT %(n)s""",
            {"age": older_than, "n": limit},
        )
        return [(r["workspace_id"], r["id"]) for r in rows]
