"""Conversations, their turns (each with its citations and feedback), one answered at a
time per conversation.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, cast

from psycopg import AsyncConnection, errors
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from convrag.answering.abstention import Assurance, assurance_of
from convrag.ids import is_uuid
from convrag.records import Citation
from convrag.stores.base import After, PooledStore, fetch_bool, owner_alive

_TURN_COLUMNS = """SELECT id::text AS id, turn_number, question, answer, contextualized_query,
                         entities_mentioned, sources, web_search_triggered,
                         repetition_detected, metadata, created_at, status, error, intent
                  FROM conversation_turns"""


TurnStatus = Literal["processing", "done", "failed"]
"""A turn's row exists from its start: ``processing`` while the graph runs, ``done`` once
persist wrote the answer, ``failed`` (with a reason) when the run failed or the process
that ran it is gone."""


INTERRUPTED_TURN = "interrupted: the service restarted"
"""The reason restart recovery gives a turn left ``processing`` by a dead process."""


BEING_DELETED = "the conversation is being deleted"
"""What a message to a conversation whose delete is under way is told (a 409), and a
second delete of it meanwhile."""

ANSWERING = "the conversation is answering a message; retry when it is done"
"""What a delete of a conversation that is answering a message is told (a 409)."""


class ConversationInUse(Exception):
    """A conversation's delete is under way (:data:`BEING_DELETED`), so a turn may not
    start in it nor a second delete begin; or it is answering a message
    (:data:`ANSWERING`), so it may not be deleted. In any process sharing the database;
    the message says which."""


class ConversationDeleted(PermissionError):
    """A turn's answer has no conversation to be stored in: it was deleted, or its
    delete is under way, while the turn ran. Never recreated for it: a deleted
    conversation stays deleted."""

    def __init__(self, conversation_id: str) -> None:
        super().__init__(f"conversation {conversation_id} was deleted while its turn ran")


DELETE_MARK_S = 300
"""How long a conversation's delete mark keeps turns out, at most: a delete clears the
vectors and checkpoints in seconds, so a mark this old is one whose process failed to
clear it (and a mark whose process is gone stops counting at once)."""


def _deleting(alias: str) -> str:
    """SQL true when the ``conversations`` row ``alias`` has a delete under way: marked
    less than :data:`DELETE_MARK_S` ago by a process that is still alive."""
    return (
        f"COALESCE({alias}.deleting_since > now() - interval '{DELETE_MARK_S} seconds'"
        f" AND {owner_alive(f'{alias}.deleting_owner')}, false)"
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


@dataclass(frozen=True, slots=True)
class FeedbackRecord:
    """A user's rating of one answer (a turn); a turn has at most one."""

    message_id: str
    rating: Literal["up", "down"]
    comment: str | None
    created_at: datetime
    """When this rating was given (a new rating replaces the old one and its time)."""


@dataclass(frozen=True, slots=True)
class CitedSource:
    """What one ``[n]`` marker of a stored answer cites, as an export lists it.

    ``title`` is the source's title when the answer was given (it survives the document's
    deletion), else its document's current title.
    """

    marker: str
    source_type: str
    title: str | None
    document_id: str | None
    page: int | None
    """The 1-based PDF page of the cited passage; None when its document has no pages."""
    url: str | None
    snippet: str


@dataclass(slots=True)
class TurnRecord:
    """One persisted question/answer turn of a conversation.

    ``feedback`` and ``cited_sources`` are filled only by :meth:`Database.turn_details`;
    the graph's reads leave them empty.
    """

    id: str
    turn_number: int
    question: str
    answer: str
    contextualized_query: str | None
    entities_mentioned: list[str]
    sources: list[dict[str, Any]]
    web_search_triggered: bool
    repetition_detected: bool
    metadata: dict[str, Any]
    created_at: datetime
    feedback: FeedbackRecord | None = None
    cited_sources: list[CitedSource] = field(default_factory=list)
    status: TurnStatus = "done"
    """``processing`` or ``failed`` turns have no answer; history reads only ``done``."""
    error: str | None = None
    """Why a ``failed`` turn failed (short, for the client); None otherwise."""
    intent: str | None = None
    """The turn's classification (standalone, follow_up, no_retrieval), once answered."""

    @property
    def flags(self) -> dict[str, Any]:
        """The flags the turn was answered with, as its ``done`` event carried them
        (``no_answer``, ``repetition_unresolved``, ``web_search_triggered``, ...)."""
        return dict((self.metadata or {}).get("flags") or {})

    @property
    def no_answer(self) -> bool:
        """Whether the answer was the "not found" one (nothing relevant enough)."""
        return bool(self.flags.get("no_answer"))

    @property
    def assurance(self) -> Assurance:
        """How sure the answer is: ``low`` when its evidence was close to the floor."""
        return assurance_of(self.flags)


@dataclass(frozen=True, slots=True)
class ConversationRecord:
    """A conversation as listed: its title, times and number of turns."""

    id: str
    title: str | None
    """The name it was given, else :func:`title_from_question` of its first question;
    None for a conversation that has neither."""
    created_at: datetime
    updated_at: datetime
    """Its last activity: creation or its latest turn (a rename does not count)."""
    turn_count: int
    """Its answered and failed turns, as its detail shows them (not one still being
    answered)."""


@dataclass(frozen=True, slots=True)
class Transcript:
    """A whole conversation: its summary and every turn, with citations and feedback."""

    conversation: ConversationRecord
    turns: list[TurnRecord]


@dataclass(slots=True)
class NewTurn:
    """Everything the persist node writes for one turn, in one transaction."""

    id: str
    workspace_id: str
    conversation_id: str
    question: str
    answer: str
    contextualized_query: str | None
    entities: list[str]
    sources: list[dict[str, Any]]
    web_search_triggered: bool
    repetition_detected: bool
    intent: str | None
    confidence: float | None
    metadata: dict[str, Any] = field(default_factory=dict)
    citations: list[Citation] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TurnStart:
    """A turn about to run: its row is written as ``processing`` by
    :meth:`Database.start_turn` before the graph answers it."""

    workspace_id: str
    conversation_id: str
    turn_id: str
    question: str
    idempotency_key: str | None = None
    """The client's key for retries of this message, if it sent one."""
    create: bool = True
    """Create the conversation when it is unknown (else: None, as for a foreign one)."""


@dataclass(frozen=True, slots=True)
class StartedTurn:
    """What :meth:`Database.start_turn` found and did."""

    history: list[TurnRecord]
    """The last answered turns, oldest first (this one not among them)."""
    prior: TurnStatus | None
    """The turn's status before this start: None for a new turn, ``failed`` for one taken
    up again, ``done`` or ``processing`` for one that was left as it is (answered, or
    being answered by another run)."""
    started: bool
    """Whether this start wrote the turn as ``processing`` (new, or a failed one again)."""
    busy: bool = False
    """Whether another turn of the conversation is being answered (by any process), so
    this one was not started: a conversation answers one message at a time."""
    deleting: bool = False
    """Whether the conversation's delete is under way (in any process), so this turn was
    not started."""


async def _owns(
    conn: AsyncConnection[DictRow],
    table: Literal["conversations", "conversation_turns"],
    workspace_id: str,
    row_id: str,
) -> bool:
    """Whether ``row_id`` (a UUID) names a row of ``table`` in ``workspace_id``."""
    if not is_uuid(row_id):
        return False
    query = f"SELECT 1 FROM {table} WHERE workspace_id = %s AND id = %s"  # table: a Literal
    row = await (await conn.execute(query, (workspace_id, row_id))).fetchone()
    return row is not None


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


def _turn_values(turn: NewTurn) -> dict[str, Any]:
    """A turn's columns as named query parameters: one mapping for both ways a turn is
    written (whole by :meth:`Database.save_turn`, completed by ``complete_turn``)."""
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
        "sources": Jsonb(turn.sources),
        "web": turn.web_search_triggered,
        "repeated": turn.repetition_detected,
        "metadata": Jsonb(turn.metadata),
    }


async def _last_turns(
    conn: AsyncConnection[DictRow],
    workspace_id: str,
    conversation_id: str,
    limit: int,
    *,
    statuses: Sequence[TurnStatus] = ("done",),
) -> list[TurnRecord]:
    """The conversation's last ``limit`` turns of ``statuses`` (answered ones unless
    told), oldest first."""
    rows = await (
        await conn.execute(
            f"""{_TURN_COLUMNS}
               WHERE workspace_id = %s AND conversation_id = %s AND status = ANY(%s)
               ORDER BY turn_number DESC LIMIT %s""",
            (workspace_id, conversation_id, list(statuses), limit),
        )
    ).fetchall()
    return [TurnRecord(**r) for r in reversed(rows)]


#: A 'processing' turn younger than this keeps its conversation busy for other processes
#: (longer than any turn's time limits): the bound for a turn whose process recorded no
#: liveness lock; one whose lock is free stops blocking at once.
BUSY_FOR_S = 180

#: SQL true for a ``conversation_turns`` row that a live process is answering: what keeps
#: its conversation busy for a new message and out of reach of a delete.
_ANSWERING = (
    f"status = 'processing' AND updated_at > now() - interval '{BUSY_FOR_S} seconds'"
    f" AND {owner_alive('owner')}"
)


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
     conv AS (SELECT id, workspace_id, {_deleting("conversations")} AS deleting
              FROM conversations WHERE id = %(c)s FOR KEY SHARE),
     busy AS (SELECT 1 FROM conversation_turns
              WHERE conversation_id = %(c)s AND id <> %(t)s AND {_ANSWERING}),
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
            TurnRecord(**{k: v for k, v in r.items() if k not in meta})
            for r in reversed(rows)
            if r["id"] is not None
        ],
        prior=rows[0]["prior"],
        started=bool(rows[0]["started"]),
        busy=bool(rows[0]["busy"]),
        deleting=bool(rows[0]["deleting"]),
    )


async def _insert_citations(conn: AsyncConnection[DictRow], turn: NewTurn) -> None:
    """Store the resolved citations of ``turn``'s answer."""
    if not turn.citations:
        return
    async with conn.cursor() as cur:
        await cur.executemany(
            """INSERT INTO message_citations
                 (workspace_id, message_id, citation_marker, position_in_response,
                  source_type, source_id, relevance_score, content_snippet,
                  source_url, document_id, page)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""",
            [
                (
                    turn.workspace_id,
                    turn.id,
                    c["marker"],
                    c["position"],
                    c["source_type"],
                    c["source_id"],
                    c["score"],
                    c["snippet"],
                    c["url"],
                    c["document_id"],
                    c.get("page"),
                )
                for c in turn.citations
            ],
        )


class ConversationStore(PooledStore):
    """A workspace's conversations and their turns."""

    async def create_conversation(
        self, workspace_id: str, conversation_id: str | None = None
    ) -> str:
        await self.ensure_workspace(workspace_id)
        cid = conversation_id or str(uuid.uuid4())
        async with self.pool.connection() as conn:
            await conn.execute(
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
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute(
                    f"""{_CONVERSATION_COLUMNS} WHERE {where}
                        ORDER BY c.last_activity_at DESC, c.id DESC LIMIT %s""",
                    [*params, limit],
                )
            ).fetchall()
        return [_conversation(r) for r in rows]

    async def get_conversation(
        self, workspace_id: str, conversation_id: str
    ) -> ConversationRecord | None:
        """One conversation as listed; None when it is not this workspace's."""
        if not is_uuid(conversation_id):
            return None
        async with self.pool.connection() as conn:
            row = await (
                await conn.execute(
                    f"{_CONVERSATION_COLUMNS} WHERE c.workspace_id = %s AND c.id = %s",
                    (workspace_id, conversation_id),
                )
            ).fetchone()
        return None if row is None else _conversation(row)

    async def rename_conversation(
        self, workspace_id: str, conversation_id: str, title: str
    ) -> ConversationRecord | None:
        """Give the conversation ``title``; None when it is not this workspace's. Its
        last activity (``updated_at``) stays: a rename does not move it up the list."""
        if not is_uuid(conversation_id):
            return None
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "UPDATE conversations SET title = %s WHERE workspace_id = %s AND id = %s",
                (title, workspace_id, conversation_id),
            )
            if cur.rowcount == 0:
                return None
        return await self.get_conversation(workspace_id, conversation_id)

    async def transcript(self, workspace_id: str, conversation_id: str) -> Transcript | None:
        """The whole conversation, every turn with its cited sources and feedback; None
        when it is not this workspace's."""
        conversation = await self.get_conversation(workspace_id, conversation_id)
        if conversation is None:
            return None
        turns = await self.turn_details(workspace_id, conversation_id, cited_sources=True)
        return Transcript(conversation, turns)

    async def conversation_exists(self, workspace_id: str, conversation_id: str) -> bool:
        async with self.pool.connection() as conn:
            return await _owns(conn, "conversations", workspace_id, conversation_id)

    async def mark_deleting(self, workspace_id: str, conversation_id: str) -> bool:
        """Mark the conversation as being deleted, for every process sharing the database:
        until its rows are deleted (or :meth:`unmark_deleting`), no turn starts in it
        (:meth:`start_turn`) and no turn is written into it (:meth:`save_turn`). False
        when it is not this workspace's.

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
            row = await (
                await conn.execute(
                    f"""SELECT {_deleting("conversations")} AS deleting FROM conversations
                        WHERE workspace_id = %s AND id = %s FOR UPDATE""",
                    (workspace_id, conversation_id),
                )
            ).fetchone()
            if row is None:
                return False
            if row["deleting"]:
                raise ConversationInUse(BEING_DELETED)
            # A statement of its own: its snapshot is taken once the lock is held, so it
            # sees a turn whose start committed while this transaction waited for it.
            if await fetch_bool(
                conn,
                f"""SELECT EXISTS (SELECT 1 FROM conversation_turns
                        WHERE conversation_id = %s AND {_ANSWERING})""",
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
        async with self.pool.connection() as conn:
            await conn.execute(
                """UPDATE conversations SET deleting_since = NULL, deleting_owner = NULL
                   WHERE workspace_id = %s AND id = %s
                     AND deleting_owner IS NOT DISTINCT FROM %s""",
                (workspace_id, conversation_id, self.owner),
            )

    async def departing_conversations(self, conversation_ids: Sequence[str]) -> set[str]:
        """Those of ``conversation_ids`` (UUIDs) that are gone or whose delete is under
        way, in any workspace: what is written for them now (a checkpoint, a memory
        vector) may have missed their delete's clearing and must be removed again."""
        ids = sorted({c.lower() for c in conversation_ids if is_uuid(c)})
        if not ids:
            return set()
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute(
                    f"""SELECT x::text AS id FROM unnest(%s::uuid[]) AS x
                        WHERE NOT EXISTS (SELECT 1 FROM conversations c
                                          WHERE c.id = x AND NOT {_deleting("c")})""",
                    (ids,),
                )
            ).fetchall()
        return {r["id"] for r in rows}

    async def turn_answered_elsewhere(self, workspace_id: str, conversation_id: str) -> str | None:
        """The id of the conversation's ``processing`` turn that another process, still
        alive, is answering; None when there is none (or only this process's)."""
        if not is_uuid(conversation_id):
            return None
        async with self.pool.connection() as conn:
            row = await (
                await conn.execute(
                    f"""SELECT id::text AS id FROM conversation_turns
                        WHERE workspace_id = %s AND conversation_id = %s
                          AND status = 'processing' AND owner IS NOT NULL
                          AND owner IS DISTINCT FROM %s AND {owner_alive("owner")}
                        ORDER BY turn_number DESC LIMIT 1""",
                    (workspace_id, conversation_id, self.owner),
                )
            ).fetchone()
        return None if row is None else str(row["id"])

    async def delete_conversation(self, workspace_id: str, conversation_id: str) -> bool:
        if not is_uuid(conversation_id):
            return False
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "DELETE FROM conversations WHERE workspace_id = %s AND id = %s",
                (workspace_id, conversation_id),
            )
            return cur.rowcount > 0

    async def record_thread(self, conversation_id: str, thread_id: str) -> None:
        """Remember that ``conversation_id`` is answered under the checkpoint thread
        ``thread_id``, which is not its own id: :meth:`checkpoint_threads` names it when
        the conversation is deleted."""
        async with self.pool.connection() as conn:
            await conn.execute(
                "INSERT INTO conversation_threads (conversation_id, thread_id) VALUES (%s, %s) "
                "ON CONFLICT DO NOTHING",
                (conversation_id, thread_id),
            )

    async def checkpoint_threads(self, conversation_id: str) -> list[str]:
        """Every checkpoint thread of the conversation: its own id, and each other one
        its turns were answered under (:meth:`record_thread`)."""
        if not is_uuid(conversation_id):
            return []
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute(
                    "SELECT thread_id FROM conversation_threads WHERE conversation_id = %s "
                    "ORDER BY thread_id",
                    (conversation_id,),
                )
            ).fetchall()
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
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute(
                    f"""SELECT c.workspace_id, c.id::text AS id FROM conversations c
                       WHERE c.last_activity_at < now() - %(age)s
                         AND NOT {_deleting("c")}
                         AND NOT EXISTS (SELECT 1 FROM conversation_turns t
                                         WHERE t.conversation_id = c.id
                                           AND t.updated_at >= now() - %(age)s)
                       ORDER BY c.last_activity_at, c.id LIMIT %(n)s""",
                    {"age": older_than, "n": limit},
                )
            ).fetchall()
        return [(r["workspace_id"], r["id"]) for r in rows]

    async def open_conversation(
        self, workspace_id: str, conversation_id: str, limit: int, *, create: bool = True
    ) -> list[TurnRecord] | None:
        """The conversation's last ``limit`` turns, oldest first; None when the id belongs
        to another workspace, or is unknown and ``create`` is false.

        An existing conversation costs one round trip. An unknown one is created when
        ``create`` is true (a second round trip)."""
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute(
                    f"""SELECT c.workspace_id AS owner, t.* FROM conversations c
                        LEFT JOIN LATERAL ({_TURN_COLUMNS}
                            WHERE workspace_id = c.workspace_id AND conversation_id = c.id
                              AND status = 'done'
                            ORDER BY turn_number DESC LIMIT %(n)s) t ON TRUE
                        WHERE c.id = %(c)s""",
                    {"c": conversation_id, "n": limit},
                )
            ).fetchall()
            if rows:
                if rows[0]["owner"] != workspace_id:
                    return None
                return [
                    TurnRecord(**{k: v for k, v in r.items() if k != "owner"})
                    for r in reversed(rows)
                    if r["id"] is not None
                ]
            if not create:
                return None
            row = await (
                await conn.execute(
                    """WITH ws AS (INSERT INTO workspaces (id) VALUES (%(ws)s)
                                   ON CONFLICT DO NOTHING),
                            ins AS (INSERT INTO conversations (id, workspace_id)
                                    VALUES (%(c)s, %(ws)s) ON CONFLICT (id) DO NOTHING
                                    RETURNING workspace_id)
                       SELECT COALESCE((SELECT workspace_id FROM ins),
                                       (SELECT workspace_id FROM conversations
                                        WHERE id = %(c)s)) AS owner""",
                    {"ws": workspace_id, "c": conversation_id},
                )
            ).fetchone()
            if row is None or row["owner"] != workspace_id:
                return None
            return await _last_turns(conn, workspace_id, conversation_id, limit)

    async def recent_turns(
        self, workspace_id: str, conversation_id: str, limit: int = 5
    ) -> list[TurnRecord]:
        """The last ``limit`` turns, oldest first."""
        if not is_uuid(conversation_id):
            return []
        async with self.pool.connection() as conn:
            return await _last_turns(conn, workspace_id, conversation_id, limit)

    async def all_turns(self, workspace_id: str, conversation_id: str) -> list[TurnRecord]:
        return await self.recent_turns(workspace_id, conversation_id, limit=1_000_000)

    async def turn_details(
        self, workspace_id: str, conversation_id: str, *, cited_sources: bool = False
    ) -> list[TurnRecord]:
        """Every turn, oldest first, with its feedback and, with ``cited_sources``, what
        each distinct marker of its answer cites (in order of first appearance)."""
        if not is_uuid(conversation_id):
            return []
        async with self.pool.connection() as conn:
            # Failed turns too (the question is kept, with why it has no answer); not
            # the one still being answered, which has nothing to show yet.
            turns = await _last_turns(
                conn, workspace_id, conversation_id, 1_000_000, statuses=("done", "failed")
            )
            by_id = {t.id: t for t in turns}
            feedback = await (
                await conn.execute(
                    """SELECT f.message_id::text AS message_id, f.rating, f.comment, f.created_at
                       FROM message_feedback f
                       JOIN conversation_turns t ON t.id = f.message_id
                       WHERE f.workspace_id = %s AND t.conversation_id = %s""",
                    (workspace_id, conversation_id),
                )
            ).fetchall()
            for r in feedback:
                # .get: a turn written after the first read is not in this answer.
                if (turn := by_id.get(r["message_id"])) is not None:
                    turn.feedback = FeedbackRecord(**r)
            if cited_sources:
                rows = await (
                    await conn.execute(
                        """SELECT DISTINCT ON (mc.message_id, mc.citation_marker)
                                  mc.message_id::text AS message_id,
                                  mc.position_in_response AS position,
                                  mc.citation_marker AS marker, mc.source_type,
                                  coalesce(t.sources
                                      -> (substring(mc.citation_marker from '[0-9]+')::int - 1)
                                      ->> 'title', d.title) AS title,
                                  mc.document_id::text AS document_id, mc.page,
                                  mc.source_url AS url,
                                  coalesce(mc.content_snippet, '') AS snippet
                           FROM message_citations mc
                           JOIN conversation_turns t ON t.id = mc.message_id
                           LEFT JOIN documents d
                             ON d.id = mc.document_id AND d.workspace_id = mc.workspace_id
                           WHERE mc.workspace_id = %s AND t.conversation_id = %s
                           ORDER BY mc.message_id, mc.citation_marker,
                                    mc.position_in_response""",
                        (workspace_id, conversation_id),
                    )
                ).fetchall()
                for r in sorted(rows, key=lambda r: r["position"] or 0):
                    turn = by_id.get(r.pop("message_id"))
                    r.pop("position")
                    if turn is not None:
                        turn.cited_sources.append(CitedSource(**r))
        return turns

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
            owner = await (
                await conn.execute(
                    f"""SELECT workspace_id, {_deleting("conversations")} AS deleting
                        FROM conversations WHERE id = %s FOR UPDATE""",
                    (turn.conversation_id,),
                )
            ).fetchone()
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
            await _insert_citations(conn, turn)
            await conn.execute(
                "UPDATE conversations SET last_activity_at = now() WHERE id = %s",
                (turn.conversation_id,),
            )
            return True

    async def start_turn(self, start: TurnStart, limit: int) -> StartedTurn | None:
        """Store the turn's question as ``processing`` and read the last ``limit``
        answered turns (oldest first); None when the conversation belongs to another
        workspace, or is unknown and ``start.create`` is false.

        One round trip for an existing conversation, as :meth:`open_conversation`: the
        insert and the history read are one statement. The turn number is the next one
        under the conversation's row lock only on the slower paths (a new conversation,
        or two turns of one conversation starting at once, which the one statement
        cannot order and then retries locked).

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
            async with self.pool.connection() as conn:
                rows = await (await conn.execute(_START_TURN, params)).fetchall()
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
            owner = await (
                await conn.execute(
                    "SELECT workspace_id FROM conversations WHERE id = %(c)s FOR UPDATE", params
                )
            ).fetchone()
            if owner is None or owner["workspace_id"] != start.workspace_id:
                return None
            rows = await (await conn.execute(_START_TURN, params)).fetchall()
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
            if cur.rowcount == 0:
                exists = await (
                    await conn.execute("SELECT 1 FROM conversation_turns WHERE id = %s", (turn.id,))
                ).fetchone()
                if exists is not None:
                    return False
            else:
                await _insert_citations(conn, turn)
                await conn.execute(
                    "UPDATE conversations SET last_activity_at = now() WHERE id = %s",
                    (turn.conversation_id,),
                )
                return True
        return await self.save_turn(turn, create=False)

    async def fail_turn(self, workspace_id: str, turn_id: str, reason: str) -> bool:
        """Mark a ``processing`` turn ``failed`` with a short ``reason``; False when the
        turn is not this workspace's or is not ``processing`` (done meanwhile)."""
        if not is_uuid(turn_id):
            return False
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                """UPDATE conversation_turns SET status = 'failed', error = %s,
                          updated_at = now()
                   WHERE workspace_id = %s AND id = %s AND status = 'processing'""",
                (reason[:500], workspace_id, turn_id),
            )
            return cur.rowcount > 0

    async def fail_own_turns(self, reason: str) -> list[str]:
        """Mark ``failed`` with a short ``reason`` every turn that this handle started
        (its liveness key is the turn's ``owner``) and that is still ``processing``;
        their ids. For a handle opened for one run (``langgraph dev``'s): what is still
        ``processing`` when that run ends will never be answered."""
        if self.owner is None:
            return []
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute(
                    """UPDATE conversation_turns SET status = 'failed', error = %s,
                              updated_at = now()
                       WHERE status = 'processing' AND owner = %s
                       RETURNING id::text AS id""",
                    (reason[:500], self.owner),
                )
            ).fetchall()
        return [str(r["id"]) for r in rows]

    async def get_turn(
        self, workspace_id: str, conversation_id: str, turn_id: str
    ) -> TurnRecord | None:
        """One turn of the conversation, whatever its status; None when there is no such
        turn in this workspace's conversation."""
        if not (is_uuid(turn_id) and is_uuid(conversation_id)):
            return None
        async with self.pool.connection() as conn:
            row = await (
                await conn.execute(
                    f"""{_TURN_COLUMNS}
                        WHERE workspace_id = %s AND conversation_id = %s AND id = %s""",
                    (workspace_id, conversation_id, turn_id),
                )
            ).fetchone()
        return None if row is None else TurnRecord(**row)

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

    async def citations(self, workspace_id: str, message_id: str) -> list[Citation] | None:
        """Stored citations of an answer; None when the message is not in this workspace."""
        async with self.pool.connection() as conn:
            if not await _owns(conn, "conversation_turns", workspace_id, message_id):
                return None
            rows = await (
                await conn.execute(
                    """SELECT citation_marker AS marker, position_in_response AS position,
                              substring(citation_marker from '[0-9]+')::int AS source_index,
                              source_id::text AS source_id, source_type,
                              document_id::text AS document_id, source_url AS url,
                              relevance_score AS score,
                              coalesce(content_snippet, '') AS snippet, page
                       FROM message_citations WHERE workspace_id = %s AND message_id = %s
                       ORDER BY position_in_response""",
                    (workspace_id, message_id),
                )
            ).fetchall()
            return [cast(Citation, dict(r)) for r in rows]

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
        async with self.pool.connection() as conn:
            row = await (
                await conn.execute(
                    """INSERT INTO message_feedback (message_id, workspace_id, rating, comment)
                       SELECT id, workspace_id, %s, %s FROM conversation_turns
                       WHERE workspace_id = %s AND id = %s
                       ON CONFLICT (message_id) DO UPDATE
                       SET rating = EXCLUDED.rating, comment = EXCLUDED.comment,
                           created_at = now()
                       RETURNING message_id::text AS message_id, rating, comment, created_at""",
                    (rating, comment, workspace_id, message_id),
                )
            ).fetchone()
        return None if row is None else FeedbackRecord(**row)
