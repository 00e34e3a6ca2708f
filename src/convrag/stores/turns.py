"""A conversation's turns: each question stored as ``processing`` when its turn starts,
completed with the answer (and its citations) or failed with a reason, one answered at a
time per conversation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from psycopg import AsyncConnection, errors
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from convrag.ids import is_uuid
from convrag.records import stored_metadata, stored_sources
from convrag.stores.base import (
    ANSWERING_TURN,
    PooledStore,
    deleting,
    fetch_all,
    fetch_bool,
    fetch_one,
    owner_alive,
)
from convrag.stores.citations import insert_citations
from convrag.stores.records import NewTurn, StartedTurn, TurnRecord, TurnStart, TurnStatus

INTERRUPTED_TURN = "interrupted: the service restarted"
"""The reason restart recovery gives a turn left ``processing`` by a dead process."""


class ConversationDeleted(PermissionError):
    """A turn's answer has no conversation to be stored in: it was deleted, or its
    delete is under way, while the turn ran. Never recreated for it: a deleted
    conversation stays deleted."""

    def __init__(self, conversation_id: str) -> None:
        super().__init__(f"conversation {conversation_id} was deleted while its turn ran")


_TURN_COLUMNS = """SELECT id::text AS id, turn_number, question, answer, contextualized_query,
                         entities_mentioned, sources, web_search_triggered,
                         repetition_detected, metadata, created_at, status, error, intent
                  FROM conversation_turns"""


def turn_record(row: Mapping[str, Any]) -> TurnRecord:
    """A turn's row (of :data:`_TURN_COLUMNS`) as its record, its sources validated
    (:class:`~convrag.records.MalformedRecord` when they do not read)."""
    sources = stored_sources(row["sources"], turn_id=row["id"])
    metadata = stored_metadata(row["metadata"], turn_id=row["id"])
    return TurnRecord(**{**row, "sources": sources, "metadata": metadata})


def _turn_values(turn: NewTurn) -> dict[str, Any]:
    """A turn's columns as named query parameters: one mapping for both ways a turn is
    written (whole by :meth:`TurnStore.save_turn`, completed by ``complete_turn``)."""
    return {
        "id": turn.id,
        "ws": turn.workspace_id,
        "c": turn.conversation_id,
        "question": turn.question,
        "answer": turn.answer,
        "query": turn.contextualized_query,
        "entities": turn.entities,
        "intent": turn.intent,
        "confidence": turn.confidence,
        "sources": Jsonb([s.model_dump() for s in turn.sources]),
        "web": turn.web_search_triggered,
        "repeated": turn.repetition_detected,
        "metadata": Jsonb(turn.metadata.model_dump()),
    }


async def last_turns(
    conn: AsyncConnection[DictRow],
    workspace_id: str,
    conversation_id: str,
    limit: int,
    *,
    statuses: Sequence[TurnStatus] = ("done",),
) -> list[TurnRecord]:
    """The conversation's last ``limit`` turns of ``statuses`` (answered ones unless
    told), oldest first."""
    rows = await fetch_all(
        conn,
        f"""{_TURN_COLUMNS}
           WHERE workspace_id = %s AND conversation_id = %s AND status = ANY(%s)
           ORDER BY turn_number DESC LIMIT %s""",
        (workspace_id, conversation_id, list(statuses), limit),
    )
    return [turn_record(r) for r in reversed(rows)]


#: The common path of a turn's start, one statement: read the turn's prior status, insert
#: it as ``processing`` with the next number (or take a failed one up again), and read the
#: last answered turns. Every CTE sees the statement's snapshot, so ``prior`` is the status
#: before this insert and the history does not include it. No row at all means there is
#: no such conversation; a foreign one inserts nothing (``ws`` does not match), nor does
#: one whose delete is under way (``deleting``).
# ``conv`` takes the conversation's row lock that the insert's foreign key check takes
# anyway, but first: it waits for a delete that is marking the row (FOR UPDATE, see
# ``mark_deleting``) and then reads the row as that delete left it, mark included, where
# the statement's snapshot would show the row as it was before.
# The 'processing' row is a marker that persist's own (synchronous) commit completes:
# its commit need not wait for the WAL flush (about 4 ms on the time to first token). It
# survives the service being killed; only a crash of PostgreSQL itself within a fraction
# of a second could lose it. set_config(..., true) lasts for this statement's transaction.
_START_TURN = f"""
WITH fast AS (SELECT set_config('synchronous_commit', 'off', true) AS commit_mode),
     conv AS (SELECT id, workspace_id, {deleting("conversations")} AS deleting
              FROM conversations WHERE id = %(c)s FOR KEY SHARE),
     busy AS (SELECT 1 FROM conversation_turns
              WHERE conversation_id = %(c)s AND id <> %(t)s AND {ANSWERING_TURN}),
     prior AS (SELECT status FROM conversation_turns
               WHERE id = %(t)s AND conversation_id = %(c)s AND workspace_id = %(ws)s),
     ins AS (
       INSERT INTO conversation_turns
         (id, workspace_id, conversation_id, turn_number, question, answer, status,
          idempotency_key, owner)
       SELECT %(t)s, conv.workspace_id, conv.id,
              COALESCE((SELECT max(turn_number) FROM conversation_turns
                        WHERE conversation_id = conv.id), 0) + 1,
              %(q)s, '', 'processing', %(k)s, %(o)s
       FROM conv WHERE conv.workspace_id = %(ws)s AND NOT conv.deleting
                       AND NOT EXISTS (SELECT 1 FROM busy)
       ON CONFLICT (id) DO UPDATE
         SET status = 'processing', error = NULL, updated_at = now(),
             question = EXCLUDED.question, owner = EXCLUDED.owner
         WHERE conversation_turns.status = 'failed'
           AND conversation_turns.workspace_id = EXCLUDED.workspace_id
           AND conversation_turns.conversation_id = EXCLUDED.conversation_id
       RETURNING 1)
SELECT c.workspace_id AS owner, (SELECT status FROM prior) AS prior,
       EXISTS (SELECT 1 FROM ins) AS started, EXISTS (SELECT 1 FROM busy) AS busy,
       c.deleting AS deleting,
       (SELECT commit_mode FROM fast) AS commit_mode,
       t.*
FROM conv c
LEFT JOIN LATERAL ({_TURN_COLUMNS}
    WHERE workspace_id = c.workspace_id AND conversation_id = c.id AND status = 'done'
      AND id <> %(t)s
    ORDER BY turn_number DESC LIMIT %(n)s) t ON TRUE"""


def _started(rows: list[DictRow], workspace_id: str) -> StartedTurn | None:
    """The result of :data:`_START_TURN`; None when the conversation is another
    workspace's (or there is none)."""
    if not rows or rows[0]["owner"] != workspace_id:
        return None
    meta = ("owner", "prior", "started", "busy", "deleting", "commit_mode")
    return StartedTurn(
        history=[
            turn_record({k: v for k, v in r.items() if k not in meta})
            for r in reversed(rows)
            if r["id"] is not None
        ],
        prior=rows[0]["prior"],
        started=bool(rows[0]["started"]),
        busy=bool(rows[0]["busy"]),
        deleting=bool(rows[0]["deleting"]),
    )


async def _answered(conn: AsyncConnection[DictRow], turn: NewTurn) -> None:
    """The rest of writing ``turn``'s answer, in its transaction on ``conn``: its
    citations, and its conversation's last activity."""
    await insert_citations(conn, turn.workspace_id, turn.id, turn.citations)
    await conn.execute(
        "UPDATE conversations SET last_activity_at = now() WHERE id = %s",
        (turn.conversation_id,),
    )


class TurnStore(PooledStore):
    """A workspace's turns: started, completed or failed, and read back."""

    async def save_turn(self, turn: NewTurn, *, create: bool = True) -> bool:
        """Write the turn and its citations in one transaction, creating the conversation
        when it is unknown and ``create`` is true.

        Idempotent on ``turn.id``: re-running after a crash writes nothing twice.
        Returns False when the turn already existed. ``PermissionError`` when the
        conversation is another workspace's; :class:`ConversationDeleted` when it is
        unknown and ``create`` is false, or its delete is under way.
        """
        async with self.pool.connection() as conn, conn.transaction():
            if create:
                await conn.execute(
                    "INSERT INTO conversations (id, workspace_id) VALUES (%s, %s) "
                    "ON CONFLICT (id) DO NOTHING",
                    (turn.conversation_id, turn.workspace_id),
                )
            # Lock the conversation row so concurrent turns get distinct numbers.
            owner = await fetch_one(
                conn,
                f"""SELECT workspace_id, {deleting("conversations")} AS deleting
                    FROM conversations WHERE id = %s FOR UPDATE""",
                (turn.conversation_id,),
            )
            if owner is None:
                raise ConversationDeleted(turn.conversation_id)
            if owner["workspace_id"] != turn.workspace_id:
                raise PermissionError("conversation belongs to another workspace")
            if owner["deleting"]:
                raise ConversationDeleted(turn.conversation_id)
            cur = await conn.execute(
                """INSERT INTO conversation_turns
                     (id, workspace_id, conversation_id, turn_number, question, answer,
                      contextualized_query, entities_mentioned, intent, confidence, sources,
                      web_search_triggered, repetition_detected, metadata)
                   SELECT %(id)s, %(ws)s, %(c)s,
                          COALESCE((SELECT max(turn_number) FROM conversation_turns
                                    WHERE conversation_id = %(c)s), 0) + 1,
                          %(question)s, %(answer)s, %(query)s, %(entities)s, %(intent)s,
                          %(confidence)s, %(sources)s, %(web)s, %(repeated)s, %(metadata)s
                   ON CONFLICT (id) DO NOTHING""",
                _turn_values(turn),
            )
            if cur.rowcount == 0:
                return False
            await _answered(conn, turn)
            return True

    async def start_turn(self, start: TurnStart, limit: int) -> StartedTurn | None:
        """Store the turn's question as ``processing`` and read the last ``limit``
        answered turns (oldest first); None when the conversation belongs to another
        workspace, or is unknown and ``start.create`` is false.

        One round trip for an existing conversation: the insert and the history read
        are one statement. The turn number is the next one under the conversation's row
        lock only on the slower paths (a new conversation, or two turns of one
        conversation starting at once, which the one statement cannot order and then
        retries locked).

        Keyed on ``start.turn_id``: an id that already exists is not inserted again. A
        ``failed`` one is taken up again (``processing``, same turn number); a ``done``
        or ``processing`` one is left as it is, and :attr:`StartedTurn.prior` tells the
        caller so.
        """
        params = {
            "c": start.conversation_id,
            "ws": start.workspace_id,
            "t": start.turn_id,
            "q": start.question,
            "k": start.idempotency_key,
            "n": limit,
            "o": self.owner,
        }
        try:
            rows = await self.fetch_all(_START_TURN, params)
        except errors.UniqueViolation:  # another turn took the same number: go locked
            rows = []
        except errors.ForeignKeyViolation:  # deleted meanwhile: the locked path says so
            rows = []
        else:
            if rows:
                return _started(rows, start.workspace_id)
            if not start.create:
                return None
        async with self.pool.connection() as conn, conn.transaction():
            if start.create:
                await conn.execute(
                    """WITH ws AS (INSERT INTO workspaces (id) VALUES (%(ws)s)
                                   ON CONFLICT DO NOTHING)
                       INSERT INTO conversations (id, workspace_id) VALUES (%(c)s, %(ws)s)
                       ON CONFLICT (id) DO NOTHING""",
                    params,
                )
            owner = await fetch_one(
                conn, "SELECT workspace_id FROM conversations WHERE id = %(c)s FOR UPDATE", params
            )
            if owner is None or owner["workspace_id"] != start.workspace_id:
                return None
            rows = await fetch_all(conn, _START_TURN, params)
        return _started(rows, start.workspace_id)

    async def complete_turn(self, turn: NewTurn) -> bool:
        """Write the answer of a turn started by :meth:`start_turn` (``done``) and its
        citations, in one transaction. A ``failed`` turn is completed too: a run resumed
        from its checkpoint did answer it after all.

        Idempotent on ``turn.id``: False when the turn was already ``done``. A turn with
        no row (a run resumed from a checkpoint older than durable turns) is written
        whole by :meth:`save_turn`, into its conversation only: one that was deleted
        while the turn ran (its rows went with it) is not recreated, and
        :class:`ConversationDeleted` says so.
        """
        async with self.pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                """UPDATE conversation_turns
                   SET status = 'done', error = NULL, updated_at = now(), answer = %(answer)s,
                       contextualized_query = %(query)s, entities_mentioned = %(entities)s,
                       intent = %(intent)s, confidence = %(confidence)s, sources = %(sources)s,
                       web_search_triggered = %(web)s, repetition_detected = %(repeated)s,
                       metadata = %(metadata)s
                   WHERE workspace_id = %(ws)s AND conversation_id = %(c)s AND id = %(id)s
                     AND status <> 'done'""",
                _turn_values(turn),
            )
            if cur.rowcount > 0:
                await _answered(conn, turn)
                return True
            exists = "SELECT 1 FROM conversation_turns WHERE id = %s"
            if await fetch_one(conn, exists, (turn.id,)) is not None:
                return False
        return await self.save_turn(turn, create=False)

    async def fail_turn(self, workspace_id: str, turn_id: str, reason: str) -> bool:
        """Mark a ``processing`` turn ``failed`` with a short ``reason``; False when the
        turn is not this workspace's or is not ``processing`` (done meanwhile)."""
        if not is_uuid(turn_id):
            return False
        changed = await self.execute(
            """UPDATE conversation_turns SET status = 'failed', error = %s,
                      updated_at = now()
               WHERE workspace_id = %s AND id = %s AND status = 'processing'""",
            (reason[:500], workspace_id, turn_id),
        )
        return changed > 0

    async def fail_own_turns(self, reason: str) -> list[str]:
        """Mark ``failed`` with a short ``reason`` every turn that this handle started
        (its liveness key is the turn's ``owner``) and that is still ``processing``;
        their ids. For a handle opened for one run (``langgraph dev``'s): what is still
        ``processing`` when that run ends will never be answered."""
        if self.owner is None:
            return []
        rows = await self.fetch_all(
            """UPDATE conversation_turns SET status = 'failed', error = %s,
                      updated_at = now()
               WHERE status = 'processing' AND owner = %s
               RETURNING id::text AS id""",
            (reason[:500], self.owner),
        )
        return [str(r["id"]) for r in rows]

    async def get_turn(
        self, workspace_id: str, conversation_id: str, turn_id: str
    ) -> TurnRecord | None:
        """One turn of the conversation, whatever its status; None when there is no such
        turn in this workspace's conversation."""
        if not (is_uuid(turn_id) and is_uuid(conversation_id)):
            return None
        row = await self.fetch_one(
            f"{_TURN_COLUMNS} WHERE workspace_id = %s AND conversation_id = %s AND id = %s",
            (workspace_id, conversation_id, turn_id),
        )
        return None if row is None else turn_record(row)

    async def recent_turns(
        self, workspace_id: str, conversation_id: str, limit: int = 5
    ) -> list[TurnRecord]:
        """The last ``limit`` answered turns, oldest first."""
        if not is_uuid(conversation_id):
            return []
        async with self.pool.connection() as conn:
            return await last_turns(conn, workspace_id, conversation_id, limit)

    async def all_turns(self, workspace_id: str, conversation_id: str) -> list[TurnRecord]:
        """Every answered turn, oldest first."""
        return await self.recent_turns(workspace_id, conversation_id, limit=1_000_000)

    async def turn_orphaned(self, turn_id: str, older_than: timedelta) -> bool:
        """Whether a ``processing`` turn has nobody answering it: the process that
        started it is gone, or it has not changed for ``older_than``."""
        if not is_uuid(turn_id):
            return False
        async with self.pool.connection() as conn:
            return await fetch_bool(
                conn,
                f"""SELECT (NOT {owner_alive("owner")} OR updated_at < now() - %s) AS orphan
                    FROM conversation_turns WHERE id = %s AND status = 'processing'""",
                older_than,
                turn_id,
            )

    async def turn_answered_elsewhere(self, workspace_id: str, conversation_id: str) -> str | None:
        """The id of the conversation's ``processing`` turn that another process, still
        alive, is answering; None when there is none (or only this process's)."""
        if not is_uuid(conversation_id):
            return None
        row = await self.fetch_one(
            f"""SELECT id::text AS id FROM conversation_turns
                WHERE workspace_id = %s AND conversation_id = %s
                  AND status = 'processing' AND owner IS NOT NULL
                  AND owner IS DISTINCT FROM %s AND {owner_alive("owner")}
                ORDER BY turn_number DESC LIMIT 1""",
            (workspace_id, conversation_id, self.owner),
        )
        return None if row is None else str(row["id"])
