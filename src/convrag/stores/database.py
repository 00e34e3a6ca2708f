"""The relational store: workspaces, keys, documents, chunks, conversations, turns, citations.

Every row carries its ``workspace_id`` and every query here filters on it, so one
workspace can never read another's rows. The schema is an append-only list of
migrations run by :meth:`Database.setup` (the checkpoint-postgres pattern): never edit
a migration that has shipped, append a new one.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, cast

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
]


_TURN_COLUMNS = """SELECT id::text AS id, turn_number, question, answer, contextualized_query,
                         entities_mentioned, sources, web_search_triggered,
                         repetition_detected, metadata, created_at
                  FROM conversation_turns"""


def hash_key(key: str) -> str:
    """API keys are stored as their SHA-256: a leaked table does not leak keys."""
    return hashlib.sha256(key.encode()).hexdigest()


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


@dataclass(slots=True)
class TurnRecord:
    """One persisted question/answer turn of a conversation."""

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


class _CappedBackoff(AttemptWithBackoff):
    """psycopg_pool's reconnect back-off, capped: its doubling delay reaches 30 s and
    more during a long outage, which kept requests failing that long after the server
    was back; capped at 2 s, the pool is whole again within about 2 s."""

    MAX_DELAY = 2.0

    def update_delay(self, now: float) -> None:
        super().update_delay(now)
        self.delay = min(self.delay, self.MAX_DELAY)


class _Pool(AsyncConnectionPool[AsyncConnection[DictRow]]):
    """The connection pool, reconnecting with :class:`_CappedBackoff`."""

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
            # A connection is checked before it is lent, so one broken by a restart is
            # replaced instead of failing a request; waiting for one is bounded, and a
            # lost server is retried every few seconds, not with a long back-off.
            check=AsyncConnectionPool.check_connection,
            timeout=10.0,
            reconnect_timeout=3600.0,
        )
        await pool.open(wait=True)
        try:
            yield cls(pool)
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

    async def index_version(self, workspace_id: str) -> int:
        async with self.pool.connection() as conn:
            row = await (
                await conn.execute(
                    "SELECT index_version FROM workspaces WHERE id = %s", (workspace_id,)
                )
            ).fetchone()
        return 0 if row is None else int(row["index_version"])

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

    async def list_documents(self, workspace_id: str) -> list[dict[str, Any]]:
        async with self.pool.connection() as conn:
            return await (
                await conn.execute(
                    "SELECT * FROM documents WHERE workspace_id = %s ORDER BY created_at",
                    (workspace_id,),
                )
            ).fetchall()

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
    ) -> None:
        """Create or update the document row alone (used for background ingest status)."""
        await self.ensure_workspace(workspace_id)
        async with self.pool.connection() as conn:
            await conn.execute(
                """INSERT INTO documents (id, workspace_id, source, title, content_hash, status,
                                          error, metadata)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
                   ON CONFLICT (workspace_id, source) DO UPDATE
                   SET status = EXCLUDED.status, error = EXCLUDED.error, updated_at = now()""",
                (
                    document_id,
                    workspace_id,
                    source,
                    title,
                    content_hash,
                    status,
                    error,
                    Jsonb(metadata or {}),
                ),
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
                                          status, n_chunks)
                   VALUES (%s, %s, %s, %s, %s, %s, 'ready', %s)
                   ON CONFLICT (workspace_id, source) DO UPDATE
                   SET title = EXCLUDED.title, content_hash = EXCLUDED.content_hash,
                       metadata = EXCLUDED.metadata, status = 'ready', error = NULL,
                       n_chunks = EXCLUDED.n_chunks, updated_at = now()""",
                [
                    (
                        d.document_id,
                        workspace_id,
                        d.source,
                        d.title,
                        d.content_hash,
                        Jsonb(d.metadata),
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

    async def chunk_rows(self, workspace_id: str) -> list[tuple[str, str, str, bytes | None]]:
        """All (chunk_id, document_id, text, embedding) of a workspace, for the in-process
        search engines."""
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute(
                    "SELECT id::text AS id, document_id::text AS d, text, embedding FROM chunks "
                    "WHERE workspace_id = %s ORDER BY document_id, position",
                    (workspace_id,),
                )
            ).fetchall()
        return [(r["id"], r["d"], r["text"], r["embedding"]) for r in rows]

    async def chunk_texts(self, workspace_id: str) -> list[tuple[str, str, str]]:
        """All (chunk_id, document_id, text) of a workspace."""
        return [(c, d, t) for c, d, t, _ in await self.chunk_rows(workspace_id)]

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
                              c.text, d.title, d.source
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
                   SELECT %s, %s, %s,
                          COALESCE((SELECT max(turn_number) FROM conversation_turns
                                    WHERE conversation_id = %s), 0) + 1,
                          %s, %s, %s, %s, %s, %s, %s, %s, %s, %s
                   ON CONFLICT (id) DO NOTHING""",
                (
                    turn.id,
                    turn.workspace_id,
                    turn.conversation_id,
                    turn.conversation_id,
                    turn.question,
                    turn.answer,
                    turn.contextualized_query,
                    turn.entities,
                    turn.intent,
                    turn.confidence,
                    Jsonb(turn.sources),
                    turn.web_search_triggered,
                    turn.repetition_detected,
                    Jsonb(turn.metadata),
                ),
            )
            if cur.rowcount == 0:
                return False
            if turn.citations:
                async with conn.cursor() as c2:
                    await c2.executemany(
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
            await conn.execute(
                "UPDATE conversations SET last_activity_at = now() WHERE id = %s",
                (turn.conversation_id,),
            )
            return True

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


async def _last_turns(
    conn: AsyncConnection[DictRow], workspace_id: str, conversation_id: str, limit: int
) -> list[TurnRecord]:
    """The conversation's last ``limit`` turns, oldest first."""
    rows = await (
        await conn.execute(
            f"""{_TURN_COLUMNS}
               WHERE workspace_id = %s AND conversation_id = %s
               ORDER BY turn_number DESC LIMIT %s""",
            (workspace_id, conversation_id, limit),
        )
    ).fetchall()
    return [TurnRecord(**r) for r in reversed(rows)]
