"""Users' ratings of answers: one per turn, a new one replacing the old."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from psycopg import AsyncConnection
from psycopg.rows import DictRow

from convrag.ids import is_uuid
from convrag.stores.base import PooledStore, fetch_all


@dataclass(frozen=True, slots=True)
class FeedbackRecord:
    """A user's rating of one answer (a turn); a turn has at most one."""

    message_id: str
    rating: Literal["up", "down"]
    comment: str | None
    created_at: datetime
    """When this rating was given (a new rating replaces the old one and its time)."""


async def conversation_feedback(
    conn: AsyncConnection[DictRow], workspace_id: str, conversation_id: str
) -> list[FeedbackRecord]:
    """The ratings of the conversation's turns (any order), read on ``conn`` so that a
    transcript reads them with its turns."""
    rows = await fetch_all(
        conn,
        """SELECT f.message_id::text AS message_id, f.rating, f.comment, f.created_at
           FROM message_feedback f
           JOIN conversation_turns t ON t.id = f.message_id
           WHERE f.workspace_id = %s AND t.conversation_id = %s""",
        (workspace_id, conversation_id),
    )
    return [FeedbackRecord(**r) for r in rows]


class FeedbackStore(PooledStore):
    """The ratings of a workspace's answers."""

    async def save_feedback(
        self,
        workspace_id: str,
        message_id: str,
        rating: Literal["up", "down"],
        comment: str | None,
    ) -> FeedbackRecord | None:
        """Record the rating of an answer, replacing any earlier one; None when the
        message (a turn) is not this workspace's."""
        if not is_uuid(message_id):
            return None
        row = await self.fetch_one(
            """INSERT INTO message_feedback (message_id, workspace_id, rating, comment)
               SELECT id, workspace_id, %s, %s FROM conversation_turns
               WHERE workspace_id = %s AND id = %s
               ON CONFLICT (message_id) DO UPDATE
               SET rating = EXCLUDED.rating, comment = EXCLUDED.comment,
                   created_at = now()
               RETURNING message_id::text AS message_id, rating, comment, created_at""",
            (rating, comment, workspace_id, message_id),
        )
        return None if row is None else FeedbackRecord(**row)
