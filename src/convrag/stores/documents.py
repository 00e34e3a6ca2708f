"""Documents and their chunks: the source of truth for text, which the vector index mirrors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from convrag.ids import is_uuid
from convrag.stores.base import After, PooledStore, fetch_all, fetch_one, without_timeouts

INTERRUPTED_DOCUMENT = "interrupted: the service restarted; upload the file again"
"""The reason restart recovery gives a document left ``processing`` by a dead process."""


STOPPED_DOCUMENT = "interrupted by a shutdown: the ingest resumes when the service starts"
ORPHANED_DOCUMENT = "interrupted (its process stopped): the ingest resumes from the saved file"
"""What a document whose ingest a shutdown stopped shows until the service resumes it."""


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
    heading: list[str] | None = None
    """The headings it sits under, outermost first; None for a document without any."""


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
    heading: list[str] | None = None
    """The headings it sits under, outermost first; None for a document without any."""


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


#: A chunk's columns as :class:`ChunkRow` takes them (``c``: the chunk, ``d``: its document).
_CHUNK_COLUMNS = """SELECT c.id::text AS id, c.document_id::text AS document_id, c.position,
                          c.text, d.title, d.source, (c.metadata->>'page')::int AS page,
                          c.metadata->'heading' AS heading
                   FROM chunks c JOIN documents d ON d.id = c.document_id"""


class DocumentStore(PooledStore):
    """A workspace's documents, their ingest status, and their chunks."""

    async def get_document_by_source(self, workspace_id: str, source: str) -> dict[str, Any] | None:
        """The row of the workspace's document from ``source``; None when there is none."""
        return await self.fetch_one(
            "SELECT * FROM documents WHERE workspace_id = %s AND source = %s",
            (workspace_id, source),
        )

    async def workspaces_with_documents(self) -> list[str]:
        """The ids of the workspaces that hold a document, sorted: what a mistyped
        workspace name was probably meant to be."""
        rows = await self.fetch_all("SELECT DISTINCT workspace_id FROM documents ORDER BY 1")
        return [str(r["workspace_id"]) for r in rows]

    async def get_document(self, workspace_id: str, document_id: str) -> dict[str, Any] | None:
        """The document's row; None when it is not a document of this workspace."""
        if not is_uuid(document_id):
            return None
        return await self.fetch_one(
            "SELECT * FROM documents WHERE workspace_id = %s AND id = %s",
            (workspace_id, document_id),
        )

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
        return await self.fetch_all(query, params)

    async def get_documents(
        self, workspace_id: str, document_ids: Sequence[str]
    ) -> list[dict[str, Any]]:
        """The rows of ``document_ids`` in the workspace, in the order asked (unknown ids
        and other workspaces' are left out)."""
        ids = [d for d in document_ids if is_uuid(d)]
        if not ids:
            return []
        rows = await self.fetch_all(
            "SELECT * FROM documents WHERE workspace_id = %s AND id = ANY(%s::uuid[])",
            (workspace_id, ids),
        )
        by_id = {str(r["id"]): r for r in rows}
        return [by_id[d.lower()] for d in dict.fromkeys(ids) if d.lower() in by_id]

    async def document_text(self, workspace_id: str, document_id: str) -> str | None:
        """The document's text rebuilt from its chunks (see :func:`join_chunks`); None
        when it is not a document of this workspace. Documents keep no other copy."""
        if not is_uuid(document_id):
            return None
        async with self.pool.connection() as conn:
            owner = await fetch_one(
                conn,
                "SELECT 1 FROM documents WHERE workspace_id = %s AND id = %s",
                (workspace_id, document_id),
            )
            if owner is None:
                return None
            rows = await fetch_all(
                conn,
                "SELECT text FROM chunks WHERE workspace_id = %s AND document_id = %s "
                "ORDER BY position",
                (workspace_id, document_id),
            )
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
        ``upload_path`` is the saved file a ``processing`` upload is read from. The title
        is the one being ingested, so an upload's answer shows what the ingest stores."""
        await self.ensure_workspace(workspace_id)
        await self.execute(
            """INSERT INTO documents (id, workspace_id, source, title, content_hash, status,
                                      error, metadata, upload_path, owner)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
               ON CONFLICT (workspace_id, source) DO UPDATE
               SET status = EXCLUDED.status, error = EXCLUDED.error, interrupted = false,
                   owner = EXCLUDED.owner,
                   title = EXCLUDED.title, progress_started_at = NULL, progress_at = NULL,
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
                self.owner if status == "processing" else None,
            ),
        )

    async def mark_stopped(self, workspace_id: str, document_ids: Sequence[str]) -> None:
        """Flag ``processing`` documents whose ingest a shutdown stopped: the next start
        resumes them (:meth:`stopped_uploads`) instead of waiting to call them failed."""
        await self.execute(
            """UPDATE documents SET interrupted = true, error = %s, updated_at = now()
               WHERE workspace_id = %s AND id = ANY(%s::uuid[]) AND status = 'processing'""",
            (STOPPED_DOCUMENT, workspace_id, list(document_ids)),
        )

    async def stopped_uploads(self) -> list[tuple[str, str | None]]:
        """(workspace id, saved file) of each upload a shutdown stopped, once per file; the
        file is None when it was not recorded."""
        rows = await self.fetch_all(
            """SELECT DISTINCT workspace_id, upload_path FROM documents
               WHERE status = 'processing' AND interrupted"""
        )
        return [(r["workspace_id"], r["upload_path"]) for r in rows]

    async def upload_in_use(self, workspace_id: str, upload_path: str) -> bool:
        """Whether a document of the workspace still keeps the saved upload
        ``upload_path`` as its original (the other records of a ``.jsonl`` file)."""
        row = await self.fetch_one(
            "SELECT 1 FROM documents WHERE workspace_id = %s AND upload_path = %s LIMIT 1",
            (workspace_id, upload_path),
        )
        return row is not None

    async def fail_stopped_uploads(self, workspace_id: str, upload_path: str | None) -> None:
        """Give up on the stopped upload of ``upload_path`` (its file is gone)."""
        await self.execute(
            """UPDATE documents SET status = 'failed', interrupted = false, error = %s,
                      updated_at = now()
               WHERE workspace_id = %s AND status = 'processing' AND interrupted
                 AND upload_path IS NOT DISTINCT FROM %s""",
            (INTERRUPTED_DOCUMENT, workspace_id, upload_path),
        )

    async def set_document_progress(
        self, workspace_id: str, document_id: str, done: int, total: int
    ) -> None:
        """Record how many of a processing document's chunks are embedded so far; the
        first report of an ingest starts its clock (``progress_started_at``, with the chunks
        done then), each one moves ``progress_at`` (see :func:`ingest_pace`)."""
        await self.execute(
            """UPDATE documents SET n_chunks = %s, chunks_total = %s, updated_at = now(),
                      progress_started_chunks = CASE WHEN progress_started_at IS NULL
                          THEN %s ELSE progress_started_chunks END,
                      progress_started_at = coalesce(progress_started_at, now()),
                      progress_at = now()
               WHERE workspace_id = %s AND id = %s AND status = 'processing'""",
            (done, total, done, workspace_id, document_id),
        )

    async def kept_vectors(
        self, workspace_id: str, document_ids: Sequence[str]
    ) -> dict[str, bytes]:
        """``{input hash: vector}`` of what the ingest of these documents embedded so far
        (:meth:`keep_vectors`), left by an ingest that a restart stopped."""
        rows = await self.fetch_all(
            "SELECT input_hash, embedding FROM ingest_vectors "
            "WHERE workspace_id = %s AND document_id = ANY(%s::uuid[])",
            (workspace_id, list(document_ids)),
        )
        return {r["input_hash"]: bytes(r["embedding"]) for r in rows}

    async def keep_vectors(self, workspace_id: str, rows: Sequence[tuple[str, str, bytes]]) -> None:
        """Keep ``(document id, input hash, vector)`` of a slice just embedded, until the
        document is stored (:meth:`replace_documents`) or deleted."""
        if not rows:
            return
        async with self.pool.connection() as conn, conn.cursor() as cur:
            await cur.executemany(
                """INSERT INTO ingest_vectors (workspace_id, document_id, input_hash, embedding)
                   VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING""",
                [(workspace_id, doc, key, vec) for doc, key, vec in rows],
            )

    async def existing_documents(
        self, workspace_id: str, sources: Sequence[str]
    ) -> dict[str, tuple[str, str]]:
        """{source: (document_id, content_hash)} of the sources already stored."""
        rows = await self.fetch_all(
            "SELECT source, id::text AS id, content_hash, status FROM documents "
            "WHERE workspace_id = %s AND source = ANY(%s)",
            (workspace_id, list(sources)),
        )
        return {
            r["source"]: (r["id"], r["content_hash"] if r["status"] == "ready" else "")
            for r in rows
        }

    async def documents_with_content(
        self, workspace_id: str, content_hashes: Sequence[str]
    ) -> list[dict[str, Any]]:
        """The workspace's ready documents whose content hash is one of
        ``content_hashes``."""
        if not content_hashes:
            return []
        return await self.fetch_all(
            "SELECT * FROM documents WHERE workspace_id = %s AND status = 'ready' "
            "AND content_hash = ANY(%s)",
            (workspace_id, list(content_hashes)),
        )

    async def replace_documents(self, workspace_id: str, docs: Sequence[DocumentWrite]) -> None:
        """Write documents and their chunks, replacing old chunks, in one transaction."""
        if not docs:
            return
        await self.ensure_workspace(workspace_id)
        async with self.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            await without_timeouts(conn)  # a large file writes tens of thousands of rows
            await cur.executemany(
                """INSERT INTO documents (id, workspace_id, source, title, content_hash, metadata,
                                          status, n_chunks, chunks_total)
                   VALUES (%s, %s, %s, %s, %s, %s, 'ready', %s, %s)
                   ON CONFLICT (workspace_id, source) DO UPDATE
                   SET title = EXCLUDED.title, content_hash = EXCLUDED.content_hash,
                       metadata = EXCLUDED.metadata, status = 'ready', error = NULL,
                       n_chunks = EXCLUDED.n_chunks, chunks_total = EXCLUDED.chunks_total,
                       updated_at = now(),
                       progress_at = CASE WHEN documents.status = 'processing'
                           AND documents.progress_started_at IS NOT NULL THEN now() END,
                       progress_started_at = CASE WHEN documents.status = 'processing'
                           THEN documents.progress_started_at END""",
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
            for table in ("chunks", "ingest_vectors"):  # kept vectors: in the chunks now
                await cur.execute(
                    f"DELETE FROM {table} WHERE workspace_id = %s "
                    "AND document_id = ANY(%s::uuid[])",
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
        """Delete the document and (by foreign key) its chunks, and move the workspace's
        ``index_version`` so the search engines reload; False when it is not a document of
        this workspace. Its vectors in Milvus are the caller's to delete."""
        if not is_uuid(document_id):
            return False
        async with self.pool.connection() as conn, conn.transaction():
            await without_timeouts(conn)  # its chunks go with it
            cur = await conn.execute(
                "DELETE FROM documents WHERE workspace_id = %s AND id = %s",
                (workspace_id, document_id),
            )
            await conn.execute(
                "DELETE FROM ingest_vectors WHERE workspace_id = %s AND document_id = %s",
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
        rows = await self.fetch_all_unhurried(
            """SELECT c.id::text AS id, c.document_id::text AS document_id, c.text,
                      c.embedding, d.title, (c.metadata->>'page')::int AS page,
                      c.metadata->'heading' AS heading
               FROM chunks c JOIN documents d ON d.id = c.document_id
               WHERE c.workspace_id = %s ORDER BY c.document_id, c.position""",
            (workspace_id,),
        )
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
        rows = await self.fetch_all(
            f"""{_CHUNK_COLUMNS}
               WHERE c.workspace_id = %s AND c.id = ANY(%s::uuid[])""",
            (workspace_id, ids),
        )
        return [ChunkRow(**r) for r in rows]

    async def chunks_around(
        self,
        workspace_id: str,
        document_ids: Sequence[str],
        chunk_ids: Sequence[str],
        *,
        reach: int,
        limit: int,
    ) -> list[IndexedChunk]:
        """The chunks of ``document_ids`` within ``reach`` positions of one of
        ``chunk_ids`` (a document none of ``chunk_ids`` is in: its first chunks), at most
        ``limit``, in document order, with their stored vectors (None when only Milvus
        has them)."""
        docs = [d for d in document_ids if is_uuid(d)]
        if not docs:
            return []
        rows = await self.fetch_all(
            """WITH cited AS (
                   SELECT document_id, position FROM chunks
                    WHERE workspace_id = %s AND id = ANY(%s::uuid[])
                      AND document_id = ANY(%s::uuid[]))
               SELECT c.id::text AS id, c.document_id::text AS document_id, c.text,
                      c.embedding, d.title, (c.metadata->>'page')::int AS page,
                      c.metadata->'heading' AS heading
                 FROM chunks c JOIN documents d ON d.id = c.document_id
                WHERE c.workspace_id = %s AND c.document_id = ANY(%s::uuid[])
                  AND (EXISTS (SELECT 1 FROM cited a WHERE a.document_id = c.document_id
                                  AND abs(a.position - c.position) <= %s)
                       OR (NOT EXISTS (SELECT 1 FROM cited a
                                        WHERE a.document_id = c.document_id)
                           AND c.position <= %s))
                ORDER BY c.document_id, c.position LIMIT %s""",
            (
                workspace_id,
                [c for c in chunk_ids if is_uuid(c)],
                docs,
                workspace_id,
                docs,
                reach,
                2 * reach,
                limit,
            ),
        )
        return [IndexedChunk(**r) for r in rows]

    async def find_chunks_matching(
        self, workspace_id: str, pattern: str, limit: int = 3
    ) -> list[ChunkRow]:
        """Chunks whose text matches a POSIX regex (case-insensitive), in document order."""
        rows = await self.fetch_all(
            f"""{_CHUNK_COLUMNS}
               WHERE c.workspace_id = %s AND c.text ~* %s
               ORDER BY d.updated_at DESC, c.position LIMIT %s""",
            (workspace_id, pattern, limit),
        )
        return [ChunkRow(**r) for r in rows]


@dataclass(frozen=True, slots=True)
class IngestPace:
    """How fast a document's upload ingest goes: chunks embedded per second since its
    embedding began, and the seconds it should take still at that rate (0 once ready).
    None where unknown: no upload ingest recorded (a CLI ingest), nothing embedded yet,
    or a failed ingest."""

    chunks_per_s: float | None = None
    eta_s: float | None = None


def ingest_pace(row: Mapping[str, Any], now: datetime) -> IngestPace:
    """The :class:`IngestPace` of a document's row at ``now``, from the progress its ingest
    stored (:meth:`DocumentStore.set_document_progress`).

    While ``processing`` the rate counts up to ``now``, so an ingest that waits (for
    another workspace's turn, a stopped service) sees its rate fall and its estimate grow
    rather than an estimate that says "0 s" for minutes; once ``ready`` it is the whole
    ingest's rate, to its end."""
    started, last = row.get("progress_started_at"), row.get("progress_at")
    status = row.get("status")
    if started is None or last is None or status not in ("processing", "ready"):
        return IngestPace()
    done = int(row.get("n_chunks") or 0) - int(row.get("progress_started_chunks") or 0)
    seconds = ((now if status == "processing" else last) - started).total_seconds()
    if done <= 0 or seconds <= 0:
        return IngestPace(eta_s=0.0 if status == "ready" else None)
    rate = done / seconds
    if status == "ready":
        return IngestPace(round(rate, 3), 0.0)
    left = max(0, int(row.get("chunks_total") or 0) - int(row.get("n_chunks") or 0))
    return IngestPace(round(rate, 3), round(left / rate, 1))
