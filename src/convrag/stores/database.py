"""The relational store: workspaces, keys, documents, chunks, conversations, turns, citations.

Every row carries its ``workspace_id`` and every query here filters on it, so one
workspace can never read another's rows. The schema is an append-only list of
migrations run by :meth:`Database.setup` (the checkpoint-postgres pattern): never edit
a migration that has shipped, append a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, cast
from weakref import WeakKeyDictionary

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg import AsyncConnection, errors
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool
from psycopg_pool.base import AttemptWithBackoff

from convrag.ids import is_uuid
from convrag.records import Citation

MIGRATIONS: list[str] = [
    """CREATE TABLE IF NOT EXISTS convrag_migrations (v INTEGER PRIMARY KEY)""",
    """CREATE TABLE workspaces (
        id TEXT PRIMARY KEY,
        index_version BIGINT NOT NULL DEFAULT 0,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )""",
    """CREATE TABLE api_keys (
        id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        key_hash TEXT NOT NULL UNIQUE,
        prefix TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        revoked_at TIMESTAMPTZ
    )""",
    """CREATE TABLE documents (
        id UUID PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        source TEXT NOT NULL,
        title TEXT,
        content_hash TEXT NOT NULL,
        metadata JSONB NOT NULL DEFAULT '{}'::jsonb,
        status TEXT NOT NULL DEFAULT 'ready',
        error TEXT,
        n_chunks INTEGER NOT NULL DEFAULT 0,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        UNIQUE (workspace_id, source)
    )""",
    """CREATE TABLE chunks (
        id UUID PRIMARY KEY,
        workspace_id TEXT NOT NULL,
        document_id UUID NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        text TEXT NOT NULL,
        metadata JSONB NOT NULL DEFAULT '{}'::jsonb
    )""",
    """CREATE INDEX chunks_ws_doc ON chunks (workspace_id, document_id, position)""",
    """CREATE TABLE conversations (
        id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        user_email VARCHAR(255),
        started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        last_activity_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        metadata JSONB NOT NULL DEFAULT '{}'::jsonb
    )""",
    """CREATE INDEX conversations_ws_activity
        ON conversations (workspace_id, last_activity_at DESC)""",
    """CREATE TABLE conversation_turns (
        id UUID PRIMARY KEY,
        workspace_id TEXT NOT NULL,
        conversation_id UUID NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        turn_number INTEGER NOT NULL,
        question TEXT NOT NULL,
        answer TEXT NOT NULL,
        contextualized_query TEXT,
        entities_mentioned TEXT[] NOT NULL DEFAULT '{}',
        intent VARCHAR(50),
        confidence FLOAT,
        sources JSONB NOT NULL DEFAULT '[]'::jsonb,
        web_search_triggered BOOLEAN NOT NULL DEFAULT FALSE,
        repetition_detected BOOLEAN NOT NULL DEFAULT FALSE,
        metadata JSONB NOT NULL DEFAULT '{}'::jsonb,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        UNIQUE (conversation_id, turn_number)
    )""",
    """CREATE INDEX turns_created ON conversation_turns (created_at DESC)""",
    """CREATE TABLE message_citations (
        id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
        workspace_id TEXT NOT NULL,
        message_id UUID NOT NULL REFERENCES conversation_turns(id) ON DELETE CASCADE,
        citation_marker VARCHAR(10) NOT NULL,
        position_in_response INT,
        source_type VARCHAR(50) NOT NULL,
        source_id UUID NOT NULL,
        relevance_score FLOAT,
        content_snippet TEXT,
        source_url TEXT,
        document_id UUID,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )""",
    """CREATE INDEX idx_citations_message ON message_citations (message_id)""",
    """CREATE INDEX idx_citations_source ON message_citations (source_type, source_id)""",
    # float32 bytes of the chunk's vector, for in-process dense search on Milvus Lite:
    # reloading 100k vectors from here takes about a second, from Lite about a minute.
    """ALTER TABLE chunks ADD COLUMN embedding BYTEA""",
    # The PDF page a citation points at (chunks keep theirs in metadata->'page'): stored
    # with the citation, it stays right after the document is re-ingested or deleted.
    """ALTER TABLE message_citations ADD COLUMN page INTEGER""",
    # A name the user gave the conversation; NULL lists it under its first question.
    """ALTER TABLE conversations ADD COLUMN title TEXT""",
    # One rating per answer: a new one replaces the old (the primary key is the turn).
    """CREATE TABLE message_feedback (
        message_id UUID PRIMARY KEY REFERENCES conversation_turns(id) ON DELETE CASCADE,
        workspace_id TEXT NOT NULL,
        rating TEXT NOT NULL CHECK (rating IN ('up', 'down')),
        comment TEXT,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )""",
    # Durable turns: a turn's row is written when it starts ('processing'), completed by
    # persist ('done') or marked 'failed' with a short reason in ``error``. Rows that were
    # written before this migration are all answered turns, hence the default 'done'.
    # ``updated_at`` is when the status last changed (restart recovery reads its age);
    # ``idempotency_key`` is the client's key of a retried message, if it sent one.
    """ALTER TABLE conversation_turns
        ADD COLUMN status TEXT NOT NULL DEFAULT 'done'
            CHECK (status IN ('processing', 'done', 'failed')),
        ADD COLUMN error TEXT,
        ADD COLUMN updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        ADD COLUMN idempotency_key TEXT""",
    # One turn per client key in a conversation (the turn id is derived from the key too,
    # so the primary key already refuses a second row; this says so in the schema).
    """CREATE UNIQUE INDEX turns_idempotency_key ON conversation_turns
        (conversation_id, idempotency_key) WHERE idempotency_key IS NOT NULL""",
    # Restart recovery looks for unfinished turns; they are few, so a partial index.
    """CREATE INDEX turns_processing ON conversation_turns (updated_at)
        WHERE status = 'processing'""",
    # Ingest progress: while a document is processing, ``n_chunks`` counts the chunks
    # embedded so far and ``chunks_total`` how many it has.
    """ALTER TABLE documents ADD COLUMN chunks_total INTEGER NOT NULL DEFAULT 0""",
    # The request rate limit's token bucket per API key (by hash), shared by every worker.
    # UNLOGGED: a bucket lost in a crash only refills early, and its writes skip the WAL.
    """CREATE UNLOGGED TABLE rate_limits (
        key_hash TEXT PRIMARY KEY,
        tokens DOUBLE PRECISION NOT NULL,
        passed BOOLEAN NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL
    )""",
    # The embedding model a workspace's vectors were made with (NULL: not recorded yet;
    # the next ingest records its own). Vectors of two models cannot be compared.
    """ALTER TABLE workspaces ADD COLUMN embedding_model TEXT""",
    # An upload's saved file, so that an ingest a shutdown interrupted (``interrupted``)
    # is taken up again when the service starts.
    """ALTER TABLE documents ADD COLUMN upload_path TEXT""",
    """ALTER TABLE documents ADD COLUMN interrupted BOOLEAN NOT NULL DEFAULT false""",
    # The process answering a ``processing`` turn: the key of the advisory lock it holds
    # while it lives (see ``Database.owner``). NULL for turns from before the column.
    """ALTER TABLE conversation_turns ADD COLUMN owner INTEGER""",
]


_TURN_COLUMNS = """SELECT id::text AS id, turn_number, question, answer, contextualized_query,
                         entities_mentioned, sources, web_search_triggered,
                         repetition_detected, metadata, created_at, status, error, intent
                  FROM conversation_turns"""

TurnStatus = Literal["processing", "done", "failed"]
"""A turn's row exists from its start: ``processing`` while the graph runs, ``done`` once
persist wrote the answer, ``failed`` (with a reason) when the run failed or the process
that ran it is gone."""

INTERRUPTED_AFTER = timedelta(minutes=10)
"""How long a row may stay ``processing`` before it is taken for interrupted (its process
died): restart recovery and a retried idempotency key use this age. It is longer than any
live turn takes (the LLM's timeouts bound it) and than an upload's ingest, so no live
worker's row is touched."""

INTERRUPTED_TURN = "interrupted: the service restarted"
"""The reason restart recovery gives a turn left ``processing`` by a dead process."""

INTERRUPTED_DOCUMENT = "interrupted: the service restarted; upload the file again"
"""The reason restart recovery gives a document left ``processing`` by a dead process."""

OWNER_LOCKS = 7214003
"""The advisory-lock class of the processes' liveness locks: a process holds
``pg_advisory_lock(OWNER_LOCKS, owner)`` on a connection of its own while it lives, and
PostgreSQL drops the lock when that connection dies with the process."""


def _owner_alive(column: str) -> str:
    """SQL true when the process that ``column`` names still holds its liveness lock (or
    is unknown: a turn from before owners were recorded)."""
    return (
        f"({column} IS NULL OR EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory'"
        f" AND l.classid = {OWNER_LOCKS} AND l.objid = {column}::oid AND l.objsubid = 2"
        " AND l.granted))"
    )


STOPPED_DOCUMENT = "interrupted by a shutdown: the ingest resumes when the service starts"
"""What a document whose ingest a shutdown stopped shows until the service resumes it."""


def hash_key(key: str) -> str:
    """API keys are stored as their SHA-256: a leaked table does not leak keys."""
    return hashlib.sha256(key.encode()).hexdigest()


TITLE_CHARS = 80
"""The longest title a conversation gets from its first question."""

FINGERPRINT_CHARS = 12
"""Hex digits of a key's SHA-256 shown to identify it (48 bits: enough to tell keys apart,
nothing towards the key)."""


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


def join_chunks(texts: Sequence[str]) -> str:
    """A document's text from its chunks in order, each overlap given once.

    The chunker starts a chunk with the last whole sentences of the one before (see
    :class:`convrag.documents.chunking.Chunker`), so joining chunks as they are repeats
    those sentences. Where a chunk begins with the end of the previous one, that part is
    dropped; chunks that share nothing (a new PDF page, a paragraph break) are separated
    by a blank line. Two chunks that happen to end and begin with the same sentence are
    read as overlapping too: the text is the stored chunks', not the original file.
    """
    parts: list[str] = []
    previous = ""
    for text in texts:
        if not parts:
            parts.append(text)
        else:
            shared = _overlap(previous, text)
            parts.append(text[shared:] if shared else "\n\n" + text)
        previous = text
    return "".join(parts)


def _overlap(a: str, b: str) -> int:
    """The length of the longest end of ``a`` that ``b`` begins with, both ends falling
    on whitespace boundaries (the chunker overlaps whole sentences only); 0 if none."""
    if not a or not b:
        return 0
    i = a.find(b[0], max(0, len(a) - len(b)))
    while i != -1:
        shared = len(a) - i
        if (
            (i == 0 or a[i - 1].isspace())
            and (shared == len(b) or b[shared].isspace())
            and b.startswith(a[i:])
        ):
            return shared
        i = a.find(b[0], i + 1)
    return 0


@dataclass(frozen=True, slots=True)
class ChunkRow:
    """A chunk as stored in Postgres (the source of truth for text)."""

    id: str
    document_id: str
    position: int
    text: str
    title: str | None = None
    source: str | None = None
    page: int | None = None
    """The 1-based PDF page the chunk is on; None for other formats."""


@dataclass(frozen=True, slots=True)
class IndexedChunk:
    """A chunk as the in-process search engines load it."""

    id: str
    document_id: str
    text: str
    embedding: bytes | None
    """Its vector as stored beside it (float32 bytes); None when only Milvus has it."""
    title: str | None
    page: int | None


@dataclass(frozen=True, slots=True)
class DocumentWrite:
    """A document and its chunks ``(chunk_id, position, text)``, ready to store.

    ``chunk_metadata``, when given, holds one dict per chunk for ``chunks.metadata``
    (``{"page": 3}`` for a PDF chunk).
    """

    document_id: str
    source: str
    title: str | None
    content_hash: str
    metadata: dict[str, Any]
    chunks: Sequence[tuple[str, int, str]]
    embeddings: Sequence[bytes] | None = None
    chunk_metadata: Sequence[dict[str, Any]] | None = None


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


@dataclass(frozen=True, slots=True)
class Transcript:
    """A whole conversation: its summary and every turn, with citations and feedback."""

    conversation: ConversationRecord
    turns: list[TurnRecord]


@dataclass(frozen=True, slots=True)
class ApiKeyRecord:
    """An API key as it may be shown: never the key, only what identifies it."""

    id: str
    prefix: str
    """The key's first 8 characters (``crk_`` and 4 more), stored for recognising it."""
    fingerprint: str
    """The first :data:`FINGERPRINT_CHARS` hex digits of the key's SHA-256."""
    created_at: datetime
    revoked_at: datetime | None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None


#: A keyset position in a list: the sort time and the id of the last row seen.
After = tuple[datetime, str]


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


class _CappedBackoff(AttemptWithBackoff):
    """psycopg_pool's reconnect back-off, capped: its doubling delay reaches 30 s and
    more during a long outage, which kept requests failing that long after the server
    was back; capped at 2 s, the pool is whole again within about 2 s."""

    MAX_DELAY = 2.0

    def update_delay(self, now: float) -> None:
        super().update_delay(now)
        self.delay = min(self.delay, self.MAX_DELAY)


class _Pool(AsyncConnectionPool[AsyncConnection[DictRow]]):
    """The connection pool, reconnecting with :class:`_CappedBackoff`.

    A connection is checked (one empty query) before it is lent only when it has sat
    idle for :attr:`CHECK_IDLE_S`: one that served a request a moment ago is almost
    certainly alive, and checking every loan doubled the round trips of a turn. A
    connection broken in that moment fails its query (a 503) and is then replaced.
    """

    CHECK_IDLE_S = 1.0

    def __init__(self, conninfo: str, **kwargs: Any) -> None:
        self._returned_at: WeakKeyDictionary[AsyncConnection[DictRow], float] = WeakKeyDictionary()
        super().__init__(conninfo, check=self._check_if_idle, reset=self._note_return, **kwargs)

    async def _note_return(self, conn: AsyncConnection[DictRow]) -> None:
        self._returned_at[conn] = time.monotonic()

    async def _check_if_idle(self, conn: AsyncConnection[DictRow]) -> None:
        if time.monotonic() - self._returned_at.get(conn, 0.0) >= self.CHECK_IDLE_S:
            await AsyncConnectionPool.check_connection(conn)

    async def _add_connection(
        self, attempt: AttemptWithBackoff | None, growing: bool = False
    ) -> None:
        await super()._add_connection(
            attempt or _CappedBackoff(timeout=self.reconnect_timeout), growing
        )


class Database:
    """Async access to the convrag schema through one psycopg connection pool.

    Construct with :meth:`from_url` (an async context manager). The pool's connections use
    autocommit and dict rows, which is also what ``AsyncPostgresSaver`` needs, so the
    checkpointer shares this pool.
    """

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection[DictRow]]) -> None:
        self.pool = pool
        self.checkpoints = AsyncPostgresSaver(pool)
        """The graph's checkpointer: LangGraph's Postgres saver, on this pool."""
        self.owner: int | None = None
        """This process's liveness key, recorded on the turns it starts: while it holds
        the advisory lock (:data:`OWNER_LOCKS`, ``owner``), its ``processing`` turns are
        being answered; once it is gone (killed, crashed), they are orphans that another
        message may take over at once instead of after :data:`BUSY_FOR_S`."""

    @asynccontextmanager
    async def _liveness_lock(self, url: str) -> AsyncIterator[None]:
        """Hold this process's liveness lock on a connection of its own while the block
        runs, taking it again should that connection be lost (a database restart)."""
        owner = secrets.randbelow(2**31 - 2) + 1

        async def lock() -> AsyncConnection[Any]:
            conn = await AsyncConnection.connect(url, autocommit=True)
            await conn.execute("SELECT pg_advisory_lock(%s, %s)", (OWNER_LOCKS, owner))
            return conn

        conn = await lock()
        self.owner = owner

        async def keep() -> None:
            nonlocal conn
            while True:
                await asyncio.sleep(5.0)
                try:
                    await conn.execute("SELECT 1")
                except Exception:
                    with contextlib.suppress(Exception):
                        await conn.close()
                    with contextlib.suppress(Exception):
                        conn = await lock()

        keeper = asyncio.get_running_loop().create_task(keep())
        try:
            yield
        finally:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
            self.owner = None
            await conn.close()

    @classmethod
    @asynccontextmanager
    async def from_url(cls, url: str, *, max_size: int = 10) -> AsyncIterator[Database]:
        pool: AsyncConnectionPool[AsyncConnection[DictRow]] = _Pool(
            url,
            min_size=1,
            max_size=max_size,
            open=False,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
            connection_class=AsyncConnection[DictRow],
            # An idle connection is checked before it is lent, so one broken by a restart
            # is replaced instead of failing a request; waiting for one is bounded, and a
            # lost server is retried every few seconds, not with a long back-off.
            timeout=10.0,
            reconnect_timeout=3600.0,
        )
        await pool.open(wait=True)
        try:
            db = cls(pool)
            async with db._liveness_lock(url):
                yield db
        finally:
            await pool.close()

    async def setup(self) -> int:
        """Apply the migrations not yet applied, and the checkpointer's own; returns how
        many of ours ran. Safe to call often."""
        ran = await self._migrate()
        await self.checkpoints.setup()
        return ran

    async def delete_thread(self, thread_id: str) -> None:
        """Delete a conversation's checkpoints."""
        await self.checkpoints.adelete_thread(thread_id)

    async def prune_checkpoints(self, thread_id: str) -> bool:
        """Keep only a conversation's latest checkpoint (its history lives in the turns
        table; the latest checkpoint is all a resumed run needs). False when another
        prune of the thread ran at the same time: the next turn prunes again."""
        try:
            await self.checkpoints.aprune([thread_id], strategy="keep_latest")
        except (errors.SerializationFailure, errors.DeadlockDetected):
            return False
        return True

    @asynccontextmanager
    async def exclusive(self, lock_id: int) -> AsyncIterator[None]:
        """Hold PostgreSQL advisory lock ``lock_id`` for the block: one process at a time
        of all those sharing this database runs it (say, creating a shared collection).

        It polls instead of waiting in ``pg_advisory_lock``: a waiting statement is an open
        transaction, and the holder's ``CREATE INDEX CONCURRENTLY`` (the checkpointer's
        setup) waits for every open transaction, which would deadlock the two unseen.
        """
        async with self.pool.connection() as conn:
            while not await _fetch_bool(conn, "SELECT pg_try_advisory_lock(%s)", lock_id):
                await asyncio.sleep(0.1)
            try:
                yield
            finally:
                await conn.execute("SELECT pg_advisory_unlock(%s)", (lock_id,))

    async def _migrate(self) -> int:
        async with self.pool.connection() as conn, conn.transaction():
            # Several processes may start at once: serialise them.
            await conn.execute("SELECT pg_advisory_xact_lock(7214001)")
            await conn.execute(MIGRATIONS[0])
            row = await (
                await conn.execute("SELECT max(v) AS v FROM convrag_migrations")
            ).fetchone()
            done = -1 if row is None or row["v"] is None else int(row["v"])
            ran = 0
            for version in range(done + 1, len(MIGRATIONS)):
                await conn.execute(MIGRATIONS[version])
                await conn.execute("INSERT INTO convrag_migrations (v) VALUES (%s)", (version,))
                ran += 1
            return ran

    # -- workspaces and keys -------------------------------------------------

    async def ensure_workspace(self, workspace_id: str) -> None:
        async with self.pool.connection() as conn:
            await conn.execute(
                "INSERT INTO workspaces (id) VALUES (%s) ON CONFLICT DO NOTHING", (workspace_id,)
            )

    async def claim_embedding_model(self, workspace_id: str, model: str) -> str:
        """The embedding model of the workspace's vectors: the recorded one, or ``model``
        recorded now when none is (a new workspace, or one from before the record)."""
        async with self.pool.connection() as conn:
            row = await (
                await conn.execute(
                    """INSERT INTO workspaces (id, embedding_model) VALUES (%s, %s)
                       ON CONFLICT (id) DO UPDATE SET embedding_model =
                           COALESCE(workspaces.embedding_model, EXCLUDED.embedding_model)
                       RETURNING embedding_model""",
                    (workspace_id, model),
                )
            ).fetchone()
        assert row is not None
        return str(row["embedding_model"])

    async def index_state(self, workspace_id: str) -> tuple[int, str | None]:
        """The workspace's ``index_version`` and the embedding model of its vectors (None
        when not recorded), in one read."""
        async with self.pool.connection() as conn:
            row = await (
                await conn.execute(
                    "SELECT index_version, embedding_model FROM workspaces WHERE id = %s",
                    (workspace_id,),
                )
            ).fetchone()
        if row is None:
            return 0, None
        return int(row["index_version"]), row["embedding_model"]

    async def reindexable_chunks(self, workspace_id: str) -> list[tuple[str, str, str, str | None]]:
        """Every (chunk_id, document_id, text, document title) of a workspace, in document
        order: what ingest embedded, to embed again."""
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute(
                    """SELECT c.id::text AS id, c.document_id::text AS d, c.text, d.title
                       FROM chunks c JOIN documents d ON d.id = c.document_id
                       WHERE c.workspace_id = %s ORDER BY c.document_id, c.position""",
                    (workspace_id,),
                )
            ).fetchall()
        return [(r["id"], r["d"], r["text"], r["title"]) for r in rows]

    async def store_reindexed(
        self, workspace_id: str, vectors: Sequence[tuple[str, bytes]], model: str | None = None
    ) -> None:
        """Replace the stored vectors of these chunks; with ``model`` (the last batch of a
        reindex), also record it as the workspace's and move its ``index_version``, in the
        same transaction."""
        async with self.pool.connection() as conn, conn.transaction():
            if vectors:
                async with conn.cursor() as cur:
                    await cur.executemany(
                        "UPDATE chunks SET embedding = %s WHERE workspace_id = %s AND id = %s",
                        [(blob, workspace_id, cid) for cid, blob in vectors],
                    )
            if model is not None:
                await conn.execute(
                    """UPDATE workspaces SET embedding_model = %s,
                              index_version = index_version + 1
                       WHERE id = %s""",
                    (model, workspace_id),
                )

    async def index_version(self, workspace_id: str) -> int:
        return (await self.index_state(workspace_id))[0]

    async def create_api_key(self, workspace_id: str) -> str:
        """Issue a new key for the workspace; only its hash is stored."""
        await self.ensure_workspace(workspace_id)
        key = "crk_" + secrets.token_urlsafe(32)
        async with self.pool.connection() as conn:
            await conn.execute(
                "INSERT INTO api_keys (workspace_id, key_hash, prefix) VALUES (%s, %s, %s)",
                (workspace_id, hash_key(key), key[:8]),
            )
        return key

    async def revoke_api_key(self, key: str) -> bool:
        """Revoke a key; returns False when it was unknown or already revoked."""
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "UPDATE api_keys SET revoked_at = now() WHERE key_hash = %s AND revoked_at IS NULL",
                (hash_key(key),),
            )
            return cur.rowcount > 0

    async def find_api_keys(self, ref: str, workspace_id: str | None = None) -> list[ApiKeyRecord]:
        """The keys, revoked ones included, that ``ref`` names the way ``keys list`` shows
        them: the key itself, its id or the start of it, its ``prefix``, or its
        fingerprint or the start of it; only the workspace's when ``workspace_id`` is given.
        """
        escaped = ref.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute(
                    """SELECT id::text AS id, prefix,
                              left(key_hash, %(fp)s) AS fingerprint, created_at, revoked_at
                       FROM api_keys
                       WHERE (%(ws)s::text IS NULL OR workspace_id = %(ws)s)
                         AND (key_hash = %(hash)s OR prefix = %(ref)s
                              OR id::text LIKE %(start)s OR key_hash LIKE %(start)s)
                       ORDER BY created_at, id""",
                    {
                        "fp": FINGERPRINT_CHARS,
                        "ws": workspace_id,
                        "hash": hash_key(ref),
                        "ref": ref,
                        "start": escaped + "%",
                    },
                )
            ).fetchall()
        return [ApiKeyRecord(**r) for r in rows]

    async def revoke_api_key_id(self, key_id: str) -> bool:
        """Revoke the key with this id; False when it is unknown or already revoked."""
        if not is_uuid(key_id):
            return False
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "UPDATE api_keys SET revoked_at = now() WHERE id = %s AND revoked_at IS NULL",
                (key_id,),
            )
            return cur.rowcount > 0

    async def take_request_token(self, key: str, per_minute: int) -> float | None:
        """Count one request of API key ``key`` against its token bucket of ``per_minute``
        requests, refilled continuously; None when it may pass, else the seconds until
        a token is back.

        One statement: every worker sharing this database shares the bucket, and a
        request pays one round trip. A refused request takes no token.
        """
        async with self.pool.connection() as conn:
            row = await (
                await conn.execute(_TAKE_TOKEN, {"k": hash_key(key), "cap": float(per_minute)})
            ).fetchone()
        if row is None or row["passed"]:
            return None
        return (1.0 - float(row["tokens"])) * 60.0 / per_minute

    async def list_api_keys(self, workspace_id: str) -> list[ApiKeyRecord]:
        """The workspace's keys, oldest first, revoked ones included; never the keys
        themselves (only their hashes are stored)."""
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute(
                    """SELECT id::text AS id, prefix,
                              left(key_hash, %s) AS fingerprint, created_at, revoked_at
                       FROM api_keys WHERE workspace_id = %s ORDER BY created_at, id""",
                    (FINGERPRINT_CHARS, workspace_id),
                )
            ).fetchall()
        return [ApiKeyRecord(**r) for r in rows]

    async def workspace_for_key(self, key: str) -> str | None:
        async with self.pool.connection() as conn:
            row = await (
                await conn.execute(
                    "SELECT workspace_id FROM api_keys WHERE key_hash = %s AND revoked_at IS NULL",
                    (hash_key(key),),
                )
            ).fetchone()
        return None if row is None else str(row["workspace_id"])

    # -- documents and chunks ------------------------------------------------

    async def get_document_by_source(self, workspace_id: str, source: str) -> dict[str, Any] | None:
        async with self.pool.connection() as conn:
            return await (
                await conn.execute(
                    "SELECT * FROM documents WHERE workspace_id = %s AND source = %s",
                    (workspace_id, source),
                )
            ).fetchone()

    async def workspaces_with_documents(self) -> list[str]:
        """The ids of the workspaces that hold a document, sorted: what a mistyped
        workspace name was probably meant to be."""
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute("SELECT DISTINCT workspace_id FROM documents ORDER BY 1")
            ).fetchall()
        return [str(r["workspace_id"]) for r in rows]

    async def get_document(self, workspace_id: str, document_id: str) -> dict[str, Any] | None:
        if not is_uuid(document_id):
            return None
        async with self.pool.connection() as conn:
            return await (
                await conn.execute(
                    "SELECT * FROM documents WHERE workspace_id = %s AND id = %s",
                    (workspace_id, document_id),
                )
            ).fetchone()

    async def list_documents(
        self, workspace_id: str, *, limit: int | None = None, after: After | None = None
    ) -> list[dict[str, Any]]:
        """The workspace's documents, oldest first: all of them, or with ``limit`` at most
        that many, starting after the ``(created_at, id)`` position ``after``."""
        where = "workspace_id = %s"
        params: list[object] = [workspace_id]
        if after is not None:
            where += " AND (created_at, id) > (%s, %s::uuid)"
            params += [after[0], after[1]]
        query = f"SELECT * FROM documents WHERE {where} ORDER BY created_at, id"
        if limit is not None:
            query += " LIMIT %s"
            params.append(limit)
        async with self.pool.connection() as conn:
            return await (await conn.execute(query, params)).fetchall()

    async def get_documents(
        self, workspace_id: str, document_ids: Sequence[str]
    ) -> list[dict[str, Any]]:
        """The rows of ``document_ids`` in the workspace, in the order asked (unknown ids
        and other workspaces' are left out)."""
        ids = [d for d in document_ids if is_uuid(d)]
        if not ids:
            return []
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute(
                    "SELECT * FROM documents WHERE workspace_id = %s AND id = ANY(%s::uuid[])",
                    (workspace_id, ids),
                )
            ).fetchall()
        by_id = {str(r["id"]): r for r in rows}
        return [by_id[d.lower()] for d in dict.fromkeys(ids) if d.lower() in by_id]

    async def document_text(self, workspace_id: str, document_id: str) -> str | None:
        """The document's text rebuilt from its chunks (see :func:`join_chunks`); None
        when it is not a document of this workspace. Documents keep no other copy."""
        if not is_uuid(document_id):
            return None
        async with self.pool.connection() as conn:
            owner = await (
                await conn.execute(
                    "SELECT 1 FROM documents WHERE workspace_id = %s AND id = %s",
                    (workspace_id, document_id),
                )
            ).fetchone()
            if owner is None:
                return None
            rows = await (
                await conn.execute(
                    "SELECT text FROM chunks WHERE workspace_id = %s AND document_id = %s "
                    "ORDER BY position",
                    (workspace_id, document_id),
                )
            ).fetchall()
        return join_chunks([r["text"] for r in rows])

    async def upsert_document_status(
        self,
        workspace_id: str,
        document_id: str,
        source: str,
        *,
        status: str,
        title: str | None = None,
        content_hash: str = "",
        error: str | None = None,
        metadata: dict[str, Any] | None = None,
        upload_path: str | None = None,
    ) -> None:
        """Create or update the document row alone (used for background ingest status);
        ``upload_path`` is the saved file a ``processing`` upload is read from."""
        await self.ensure_workspace(workspace_id)
        async with self.pool.connection() as conn:
            await conn.execute(
                """INSERT INTO documents (id, workspace_id, source, title, content_hash, status,
                                          error, metadata, upload_path)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
                   ON CONFLICT (workspace_id, source) DO UPDATE
                   SET status = EXCLUDED.status, error = EXCLUDED.error, interrupted = false,
                       upload_path = coalesce(EXCLUDED.upload_path, documents.upload_path),
                       updated_at = now()""",
                (
                    document_id,
                    workspace_id,
                    source,
                    title,
                    content_hash,
                    status,
                    error,
                    Jsonb(metadata or {}),
                    upload_path,
                ),
            )

    async def mark_stopped(self, workspace_id: str, document_ids: Sequence[str]) -> None:
        """Flag ``processing`` documents whose ingest a shutdown stopped: the next start
        resumes them (:meth:`stopped_uploads`) instead of waiting to call them failed."""
        async with self.pool.connection() as conn:
            await conn.execute(
                """UPDATE documents SET interrupted = true, error = %s, updated_at = now()
                   WHERE workspace_id = %s AND id = ANY(%s::uuid[]) AND status = 'processing'""",
                (STOPPED_DOCUMENT, workspace_id, list(document_ids)),
            )

    async def stopped_uploads(self) -> list[tuple[str, str | None]]:
        """(workspace id, saved file) of each upload a shutdown stopped, once per file; the
        file is None when it was not recorded."""
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute(
                    """SELECT DISTINCT workspace_id, upload_path FROM documents
                       WHERE status = 'processing' AND interrupted"""
                )
            ).fetchall()
        return [(r["workspace_id"], r["upload_path"]) for r in rows]

    async def fail_stopped_uploads(self, workspace_id: str, upload_path: str | None) -> None:
        """Give up on the stopped upload of ``upload_path`` (its file is gone)."""
        async with self.pool.connection() as conn:
            await conn.execute(
                """UPDATE documents SET status = 'failed', interrupted = false, error = %s,
                          updated_at = now()
                   WHERE workspace_id = %s AND status = 'processing' AND interrupted
                     AND upload_path IS NOT DISTINCT FROM %s""",
                (INTERRUPTED_DOCUMENT, workspace_id, upload_path),
            )

    async def set_document_progress(
        self, workspace_id: str, document_id: str, done: int, total: int
    ) -> None:
        """Record how many of a processing document's chunks are embedded so far."""
        async with self.pool.connection() as conn:
            await conn.execute(
                """UPDATE documents SET n_chunks = %s, chunks_total = %s, updated_at = now()
                   WHERE workspace_id = %s AND id = %s AND status = 'processing'""",
                (done, total, workspace_id, document_id),
            )

    async def existing_documents(
        self, workspace_id: str, sources: Sequence[str]
    ) -> dict[str, tuple[str, str]]:
        """{source: (document_id, content_hash)} of the sources already stored."""
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute(
                    "SELECT source, id::text AS id, content_hash, status FROM documents "
                    "WHERE workspace_id = %s AND source = ANY(%s)",
                    (workspace_id, list(sources)),
                )
            ).fetchall()
        return {
            r["source"]: (r["id"], r["content_hash"] if r["status"] == "ready" else "")
            for r in rows
        }

    async def replace_documents(self, workspace_id: str, docs: Sequence[DocumentWrite]) -> None:
        """Write documents and their chunks, replacing old chunks, in one transaction."""
        if not docs:
            return
        await self.ensure_workspace(workspace_id)
        async with self.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            await cur.executemany(
                """INSERT INTO documents (id, workspace_id, source, title, content_hash, metadata,
                                          status, n_chunks, chunks_total)
                   VALUES (%s, %s, %s, %s, %s, %s, 'ready', %s, %s)
                   ON CONFLICT (workspace_id, source) DO UPDATE
                   SET title = EXCLUDED.title, content_hash = EXCLUDED.content_hash,
                       metadata = EXCLUDED.metadata, status = 'ready', error = NULL,
                       n_chunks = EXCLUDED.n_chunks, chunks_total = EXCLUDED.chunks_total,
                       updated_at = now()""",
                [
                    (
                        d.document_id,
                        workspace_id,
                        d.source,
                        d.title,
                        d.content_hash,
                        Jsonb(d.metadata),
                        len(d.chunks),
                        len(d.chunks),
                    )
                    for d in docs
                ],
            )
            await cur.execute(
                "DELETE FROM chunks WHERE workspace_id = %s AND document_id = ANY(%s::uuid[])",
                (workspace_id, [d.document_id for d in docs]),
            )
            await cur.executemany(
                """INSERT INTO chunks (id, workspace_id, document_id, position, text, embedding,
                                       metadata)
                   VALUES (%s, %s, %s, %s, %s, %s, %s)""",
                [
                    (
                        cid,
                        workspace_id,
                        d.document_id,
                        pos,
                        text,
                        d.embeddings[i] if d.embeddings else None,
                        Jsonb(d.chunk_metadata[i] if d.chunk_metadata else {}),
                    )
                    for d in docs
                    for i, (cid, pos, text) in enumerate(d.chunks)
                ],
            )
            await cur.execute(
                "UPDATE workspaces SET index_version = index_version + 1 WHERE id = %s",
                (workspace_id,),
            )

    async def delete_document(self, workspace_id: str, document_id: str) -> bool:
        if not is_uuid(document_id):
            return False
        async with self.pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                "DELETE FROM documents WHERE workspace_id = %s AND id = %s",
                (workspace_id, document_id),
            )
            await conn.execute(
                "UPDATE workspaces SET index_version = index_version + 1 WHERE id = %s",
                (workspace_id,),
            )
            return cur.rowcount > 0

    async def chunk_rows(self, workspace_id: str) -> list[IndexedChunk]:
        """Every chunk of a workspace with what the in-process search engines load: its
        text, its stored vector, and the labels its hits carry (title, PDF page)."""
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute(
                    """SELECT c.id::text AS id, c.document_id::text AS document_id, c.text,
                              c.embedding, d.title, (c.metadata->>'page')::int AS page
                       FROM chunks c JOIN documents d ON d.id = c.document_id
                       WHERE c.workspace_id = %s ORDER BY c.document_id, c.position""",
                    (workspace_id,),
                )
            ).fetchall()
        return [IndexedChunk(**r) for r in rows]

    async def chunk_texts(self, workspace_id: str) -> list[tuple[str, str, str]]:
        """All (chunk_id, document_id, text) of a workspace."""
        return [(c.id, c.document_id, c.text) for c in await self.chunk_rows(workspace_id)]

    async def get_chunks(self, workspace_id: str, chunk_ids: Sequence[str]) -> list[ChunkRow]:
        """The chunks of ``chunk_ids`` in the workspace (any order), with their document's
        title and source and their PDF page."""
        ids = [c for c in chunk_ids if is_uuid(c)]
        if not ids:
            return []
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute(
                    """SELECT c.id::text AS id, c.document_id::text AS document_id, c.position,
                              c.text, d.title, d.source, (c.metadata->>'page')::int AS page
                       FROM chunks c JOIN documents d ON d.id = c.document_id
                       WHERE c.workspace_id = %s AND c.id = ANY(%s::uuid[])""",
                    (workspace_id, ids),
                )
            ).fetchall()
        return [ChunkRow(**r) for r in rows]

    async def find_chunks_matching(
        self, workspace_id: str, pattern: str, limit: int = 3
    ) -> list[ChunkRow]:
        """Chunks whose text matches a POSIX regex (case-insensitive), in document order."""
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute(
                    """SELECT c.id::text AS id, c.document_id::text AS document_id, c.position,
                              c.text, d.title, d.source, (c.metadata->>'page')::int AS page
                       FROM chunks c JOIN documents d ON d.id = c.document_id
                       WHERE c.workspace_id = %s AND c.text ~* %s
                       ORDER BY d.updated_at DESC, c.position LIMIT %s""",
                    (workspace_id, pattern, limit),
                )
            ).fetchall()
        return [ChunkRow(**r) for r in rows]

    # -- conversations -------------------------------------------------------

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

    async def delete_conversation(self, workspace_id: str, conversation_id: str) -> bool:
        if not is_uuid(conversation_id):
            return False
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "DELETE FROM conversations WHERE workspace_id = %s AND id = %s",
                (workspace_id, conversation_id),
            )
            return cur.rowcount > 0

    async def expired_conversations(
        self, older_than: timedelta, *, limit: int
    ) -> list[tuple[str, str]]:
        """``(workspace_id, conversation_id)`` of at most ``limit`` conversations, in every
        workspace, whose last activity is older than ``older_than`` on the database's
        clock, least recently active first.

        A turn that started (or changed status) since the cut-off counts as activity too:
        ``last_activity_at`` moves only when a turn is answered, and a conversation whose
        new message is being answered right now must not be deleted under it.
        """
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute(
                    """SELECT c.workspace_id, c.id::text AS id FROM conversations c
                       WHERE c.last_activity_at < now() - %(age)s
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

    async def save_turn(self, turn: NewTurn) -> bool:
        """Write the turn and its citations in one transaction.

        Idempotent on ``turn.id``: re-running after a crash writes nothing twice.
        Returns False when the turn already existed.
        """
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO conversations (id, workspace_id) VALUES (%s, %s) "
                "ON CONFLICT (id) DO NOTHING",
                (turn.conversation_id, turn.workspace_id),
            )
            # Lock the conversation row so concurrent turns get distinct numbers.
            owner = await (
                await conn.execute(
                    "SELECT workspace_id FROM conversations WHERE id = %s FOR UPDATE",
                    (turn.conversation_id,),
                )
            ).fetchone()
            if owner is None or owner["workspace_id"] != turn.workspace_id:
                raise PermissionError("conversation belongs to another workspace")
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
        whole by :meth:`save_turn`.
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
        return await self.save_turn(turn)

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
            return await _fetch_bool(
                conn,
                f"""SELECT (NOT {_owner_alive("owner")} OR updated_at < now() - %s) AS orphan
                    FROM conversation_turns WHERE id = %s AND status = 'processing'""",
                older_than,
                turn_id,
            )

    async def recover_interrupted(self, older_than: timedelta) -> tuple[int, int]:
        """Mark turns and documents left ``processing`` for longer than ``older_than``
        (by ``updated_at``, on the database's clock) as ``failed``, with
        :data:`INTERRUPTED_TURN` / :data:`INTERRUPTED_DOCUMENT`; returns how many of each.

        Run at service start. Several workers share the database, so a row another live
        worker is working on must not be touched: only rows older than the age rule are,
        and the age must be longer than any live turn or ingest runs (a turn is bounded
        by the LLM's timeouts; an ingest updates its row only when it ends). A turn
        whose process is known to be gone (its liveness lock is free) is failed at once,
        whatever its age.
        """
        async with self.pool.connection() as conn, conn.transaction():
            turns = await conn.execute(
                f"""UPDATE conversation_turns SET status = 'failed', error = %s,
                          updated_at = now()
                   WHERE status = 'processing'
                     AND (updated_at < now() - %s OR NOT {_owner_alive("owner")})""",
                (INTERRUPTED_TURN, older_than),
            )
            docs = await conn.execute(
                """UPDATE documents SET status = 'failed', error = %s, updated_at = now()
                   WHERE status = 'processing' AND NOT interrupted
                     AND updated_at < now() - %s""",
                (INTERRUPTED_DOCUMENT, older_than),
            )
            return turns.rowcount, docs.rowcount

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

    # -- operations ----------------------------------------------------------

    async def ping(self, *, timeout: float = 2.0) -> bool:
        """Whether Postgres answers a query; waits at most ``timeout`` s for a connection."""
        try:
            async with self.pool.connection(timeout=timeout) as conn:
                await conn.execute("SELECT 1")
        except Exception:
            return False
        return True


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
            WHERE t.workspace_id = c.workspace_id AND t.conversation_id = c.id) AS turn_count,
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


#: One request against a key's bucket (see :meth:`Database.take_request_token`): refill
#: ``cap`` tokens per minute since the last request, capped at ``cap``, then take one if
#: a whole one is there.
_TAKE_TOKEN = """
INSERT INTO rate_limits AS b (key_hash, tokens, passed, updated_at)
VALUES (%(k)s, %(cap)s - 1, TRUE, clock_timestamp())
ON CONFLICT (key_hash) DO UPDATE
SET (tokens, passed, updated_at) = (
    SELECT CASE WHEN r.tokens >= 1 THEN r.tokens - 1 ELSE r.tokens END, r.tokens >= 1, r.at
    FROM (SELECT least(%(cap)s, b.tokens + %(cap)s / 60.0 * greatest(0.0,
                       extract(epoch FROM clock_timestamp() - b.updated_at)::float8)) AS tokens,
                 greatest(b.updated_at, clock_timestamp()) AS at) r)
RETURNING tokens, passed"""


#: A 'processing' turn younger than this keeps its conversation busy for other processes
#: (longer than any turn's time limits): the bound for a turn whose process recorded no
#: liveness lock; one whose lock is free stops blocking at once.
BUSY_FOR_S = 180

#: The common path of a turn's start, one statement: read the turn's prior status, insert
#: it as ``processing`` with the next number (or take a failed one up again), and read the
#: last answered turns. Every CTE sees the statement's snapshot, so ``prior`` is the status
#: before this insert and the history does not include it. No row at all means there is
#: no such conversation; a foreign one inserts nothing (``ws`` does not match).
# The 'processing' row is a marker that persist's own (synchronous) commit completes:
# its commit need not wait for the WAL flush (about 4 ms on the time to first token). It
# survives the service being killed; only a crash of PostgreSQL itself within a fraction
# of a second could lose it. set_config(..., true) lasts for this statement's transaction.
_START_TURN = f"""
WITH fast AS (SELECT set_config('synchronous_commit', 'off', true) AS commit_mode),
     conv AS (SELECT id, workspace_id FROM conversations WHERE id = %(c)s),
     busy AS (SELECT 1 FROM conversation_turns
              WHERE conversation_id = %(c)s AND status = 'processing' AND id <> %(t)s
                AND updated_at > now() - interval '{BUSY_FOR_S} seconds'
                AND {_owner_alive("owner")}),
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
       FROM conv WHERE conv.workspace_id = %(ws)s AND NOT EXISTS (SELECT 1 FROM busy)
       ON CONFLICT (id) DO UPDATE
         SET status = 'processing', error = NULL, updated_at = now(),
             question = EXCLUDED.question, owner = EXCLUDED.owner
         WHERE conversation_turns.status = 'failed'
           AND conversation_turns.workspace_id = EXCLUDED.workspace_id
           AND conversation_turns.conversation_id = EXCLUDED.conversation_id
       RETURNING 1)
SELECT c.workspace_id AS owner, (SELECT status FROM prior) AS prior,
       EXISTS (SELECT 1 FROM ins) AS started, EXISTS (SELECT 1 FROM busy) AS busy,
       (SELECT commit_mode FROM fast) AS commit_mode,
       t.*
FROM conv c
LEFT JOIN LATERAL ({_TURN_COLUMNS}
    WHERE workspace_id = c.workspace_id AND conversation_id = c.id AND status = 'done'
      AND id <> %(t)s
    ORDER BY turn_number DESC LIMIT %(n)s) t ON TRUE"""


async def _fetch_bool(conn: AsyncConnection[DictRow], query: str, *params: object) -> bool:
    """The boolean that a one-row, one-column ``query`` returns."""
    row = await (await conn.execute(query, params)).fetchone()
    return row is not None and bool(next(iter(row.values())))


def _started(rows: list[DictRow], workspace_id: str) -> StartedTurn | None:
    """The result of :data:`_START_TURN`; None when the conversation is another
    workspace's (or there is none)."""
    if not rows or rows[0]["owner"] != workspace_id:
        return None
    meta = ("owner", "prior", "started", "busy", "commit_mode")
    return StartedTurn(
        history=[
            TurnRecord(**{k: v for k, v in r.items() if k not in meta})
            for r in reversed(rows)
            if r["id"] is not None
        ],
        prior=rows[0]["prior"],
        started=bool(rows[0]["started"]),
        busy=bool(rows[0]["busy"]),
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
