"""Ingestion: chunk documents, embed the chunks, and write Postgres and Milvus together.

Files are read and chunked by :mod:`convrag.documents`; this module writes them.
Idempotent by content hash: an unchanged document changes nothing, a changed one
replaces its chunks in both stores, a deleted one leaves no chunk anywhere. Every input
is validated before any store is touched, and errors name the file and the fix.
Uploads, and the files behind documents, are :mod:`convrag.uploads`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from convrag.chunk_writes import document_writes
from convrag.documents.base import IngestError, SourceDocument
from convrag.documents.chunking import Chunker
from convrag.embeddings import EmbeddingMismatch, Matrix
from convrag.ids import check_id, document_id_for
from convrag.records import section_path
from convrag.stores.base import INTERRUPTED_AFTER
from convrag.stores.documents import DocumentWrite
from convrag.stores.originals import is_original_key
from convrag.stores.vectors import VectorIndex, VectorRow

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from convrag.services import Services


class IngestStopped(Exception):
    """The service is shutting down: the ingest stopped at a batch boundary, with the
    batches before it stored and nothing half-written."""


def _check_running(services: Services) -> None:
    if services.stopping.is_set():
        raise IngestStopped("the service is shutting down")


@dataclass(slots=True)
class IngestReport:
    """What an ingest run did."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    moved: int = 0
    """Files found at a new path with the content of a document whose file is gone (a
    moved folder or checkout): the new path replaced the old one, not added a copy."""
    chunks_written: int = 0
    document_ids: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "moved": self.moved,
            "chunks_written": self.chunks_written,
        }

    def merge(self, other: IngestReport) -> None:
        """Add another run's counts to these."""
        self.added += other.added
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.moved += other.moved
        self.chunks_written += other.chunks_written
        self.document_ids.extend(other.document_ids)


ProgressFn = Callable[[int], None]
ChunkProgressFn = Callable[[str, int, int], Awaitable[None]]
"""Called with (document id, chunks embedded, chunks in all) while an ingest embeds."""

#: Chunks a reindex embeds and stores at a time, and an ingest writes to the vector
#: index at a time (one call of tens of thousands of rows held Milvus Lite for seconds).
REINDEX_BATCH = 256


async def ingest_documents(
    services: Services,
    workspace_id: str,
    documents: Sequence[SourceDocument],
    *,
    batch_docs: int = 128,
    progress: ProgressFn | None = None,
    chunk_progress: ChunkProgressFn | None = None,
    chunked: ProgressFn | None = None,
    counted: ProgressFn | None = None,
) -> IngestReport:
    """Ingest already-loaded documents: every batch is chunked first, then each is
    embedded and stored. ``chunked`` is called with the documents of each batch once it
    is chunked, ``counted`` once with the chunks to embed in all, before any is
    embedded; ``progress`` with the documents of each batch stored, and
    ``chunk_progress`` with (document id, chunks embedded, chunks in all) as embedding
    goes, ``settings.ingest_slice_chunks`` at a time (see :func:`_embed_in_slices`)."""
    check_id(workspace_id)
    model = await services.db.workspaces.claim_embedding_model(workspace_id, services.embedder.name)
    if model != services.embedder.name:
        raise EmbeddingMismatch(workspace_id, model, services.embedder.name)
    settings = services.settings
    chunker = Chunker(settings.chunk_size, settings.chunk_overlap)
    report = IngestReport()
    seen: set[str] = set()
    batches: list[_ChunkedBatch] = []
    for start in range(0, len(documents), batch_docs):
        _check_running(services)
        batch = [d for d in documents[start : start + batch_docs] if d.source not in seen]
        seen.update(d.source for d in batch)
        batches.append(await _chunk_batch(services, workspace_id, batch, chunker, report))
        if chunked is not None:
            chunked(len(batch))
    if counted is not None:
        counted(sum(len(w.chunks) for b in batches for w in b.writes))
    for chunked_batch in batches:
        _check_running(services)
        await _store_batch(services, workspace_id, chunked_batch, report, chunk_progress)
        if progress is not None:
            progress(len(chunked_batch.documents))
    if report.chunks_written:
        # Milvus Lite searches unflushed (growing) rows in Python: about 600 ms at 16k
        # rows against about 50 ms once sealed. One flush per ingest run.
        await asyncio.to_thread(services.index.flush)
        if services.warm_after_ingest:
            # The server should not make the next question wait for the in-process
            # engines to reload; a one-shot CLI ingest should not wait for them at all.
            services.spawn(services.searcher.warm(workspace_id))
    return report


@dataclass(slots=True)
class _ChunkedBatch:
    """A batch of documents (distinct sources), chunked, not yet stored."""

    documents: Sequence[SourceDocument]
    existing: Mapping[str, tuple[str, str]]
    """The stored (id, content hash) of those already in the workspace, by source."""
    changed: list[tuple[SourceDocument, str, str]]
    writes: list[DocumentWrite]


async def _chunk_batch(
    services: Services,
    workspace_id: str,
    batch: Sequence[SourceDocument],
    chunker: Chunker,
    report: IngestReport,
) -> _ChunkedBatch:
    """The new or changed documents of ``batch``, chunked (the unchanged are counted in
    ``report``)."""
    existing = await services.db.documents.existing_documents(
        workspace_id, [d.source for d in batch]
    )
    changed = _changed_documents(workspace_id, batch, existing, report)
    writes: list[DocumentWrite] = []
    # Where bulk embedding runs (a child process by default): chunking a large
    # document is seconds of CPU that must not hold this process's event loop.
    if changed:
        async with services.bulk.turns.turn(workspace_id):
            writes = await services.bulk.run(document_writes, chunker, changed)
    return _ChunkedBatch(batch, existing, changed, writes)


async def _store_batch(
    services: Services,
    workspace_id: str,
    batch: _ChunkedBatch,
    report: IngestReport,
    chunk_progress: ChunkProgressFn | None,
) -> None:
    """Embed and store a chunked batch, counted in ``report``, and delete the documents
    of files its documents moved from (found once the batches before it are stored)."""
    changed, existing = batch.changed, batch.existing
    moved = await _moved_files(services, workspace_id, changed, existing)
    for doc, _, _ in changed:
        if doc.source in existing:
            report.updated += 1
        elif doc.source in moved:
            report.moved += 1
        else:
            report.added += 1
    if batch.writes:
        report.chunks_written += await _store_writes(
            services, workspace_id, batch.writes, existing, chunk_progress
        )
    for old_ids in moved.values():
        for old_id in old_ids:
            await delete_document(services, workspace_id, old_id)


def _changed_documents(
    workspace_id: str,
    batch: Sequence[SourceDocument],
    existing: Mapping[str, tuple[str, str]],
    report: IngestReport,
) -> list[tuple[SourceDocument, str, str]]:
    """``(document, its id, its content hash)`` of the documents of ``batch`` that are new
    or changed; each document's id goes in ``report``, and the unchanged are counted."""
    changed: list[tuple[SourceDocument, str, str]] = []
    for doc in batch:
        content_hash = hashlib.sha256(
            json.dumps([doc.title, doc.text], ensure_ascii=False).encode()
        ).hexdigest()
        doc_id = document_id_for(workspace_id, doc.source)
        report.document_ids.append(doc_id)
        if doc.source in existing and existing[doc.source][1] == content_hash:
            report.unchanged += 1
            continue
        changed.append((doc, doc_id, content_hash))
    return changed


async def _store_writes(
    services: Services,
    workspace_id: str,
    writes: list[DocumentWrite],
    existing: Mapping[str, object],
    chunk_progress: ChunkProgressFn | None,
) -> int:
    """Embed the chunks of ``writes`` and store them in both stores, replacing those of
    the ``existing`` documents they update; returns how many chunks were written."""
    embed_inputs = [
        embedding_input(w.title, meta.get("heading"), text)
        for w in writes
        for (_, _, text), meta in zip(
            w.chunks, w.chunk_metadata or [{}] * len(w.chunks), strict=True
        )
    ]
    if chunk_progress is None:
        async with services.bulk.turns.turn(workspace_id):
            vectors = await services.bulk.embed(embed_inputs)
    else:
        vectors = await _embed_in_slices(
            services, workspace_id, embed_inputs, _Progress(writes, chunk_progress)
        )
    # Tens of thousands of rows for a large file: built off the event loop.
    rows, writes = await asyncio.to_thread(_with_vectors, writes, vectors)
    # Milvus first (new rows, then the replaced ones), Postgres last: its commit
    # moves index_version, so in-process engines reload only finished data. A
    # crash before it leaves Postgres on the old hash: the next run redoes the
    # document and converges.
    for start in range(0, len(rows), REINDEX_BATCH):
        part = rows[start : start + REINDEX_BATCH]
        await asyncio.to_thread(services.index.upsert, workspace_id, part)
    keep = {cid for w in writes for cid, _, _ in w.chunks}
    for w in writes:
        if w.source in existing:
            await asyncio.to_thread(
                _delete_stale, services.index, workspace_id, w.document_id, keep
            )
    await services.db.documents.replace_documents(workspace_id, writes)
    return len(rows)


async def _moved_files(
    services: Services,
    workspace_id: str,
    changed: Sequence[tuple[SourceDocument, str, str]],
    existing: Mapping[str, object],
) -> dict[str, list[str]]:
    """``{new source: old document ids}`` for the new files among ``changed`` that hold
    the same content as a document read from a file that no longer exists: a moved
    folder (a checkout moved with its data directory). The old document is deleted once
    the new one is stored, so that the workspace does not answer from both. A file whose
    twin still exists is a copy, and is added beside it."""
    new = {
        content_hash: doc.source
        for doc, _, content_hash in changed
        if doc.source not in existing and read_from_file(doc.source, doc.metadata)
    }
    moved: dict[str, list[str]] = {}
    for row in await services.db.documents.documents_with_content(workspace_id, list(new)):
        if await file_gone(row):
            moved.setdefault(new[row["content_hash"]], []).append(str(row["id"]))
    return moved


def read_from_file(source: str, metadata: Mapping[str, Any] | None) -> bool:
    """Whether a document's ``source`` is the path of the file it was read from (not a
    .jsonl record's ``_id`` nor an upload)."""
    return (metadata or {}).get("path") == source


async def file_gone(row: Mapping[str, Any]) -> bool:
    """Whether a stored document was read from a file (:func:`_read_from_file`) that no
    longer exists."""
    source = str(row["source"])
    return read_from_file(source, row.get("metadata")) and not await asyncio.to_thread(
        Path(source).exists
    )


def embedding_input(title: str | None, heading: Sequence[str] | None, text: str) -> str:
    """What a chunk is embedded as: its document's title and the headings it sits under
    before its text (a contextual chunk header: they help short passages, and a question
    that names a section), while the stored text stays the chunk alone."""
    return "\n".join(p for p in (title, section_path(heading, title), text) if p)


def _with_vectors(
    writes: list[DocumentWrite], vectors: Matrix
) -> tuple[list[VectorRow], list[DocumentWrite]]:
    """The index's rows, and each write with its chunks' embeddings, in chunk order."""
    rows: list[VectorRow] = []
    out: list[DocumentWrite] = []
    i = 0
    for w in writes:
        start = i
        for cid, _, text in w.chunks:
            rows.append(VectorRow(cid, w.document_id, text, vectors[i].tolist()))
            i += 1
        out.append(replace(w, embeddings=[v.tobytes() for v in vectors[start:i]]))
    return rows, out


class _Progress:
    """Each document's chunks embedded so far, reported as they grow."""

    def __init__(self, writes: Sequence[DocumentWrite], report: ChunkProgressFn) -> None:
        self.owners = [w.document_id for w in writes for _ in w.chunks]
        self.total = {w.document_id: len(w.chunks) for w in writes}
        self.done = dict.fromkeys(self.total, 0)
        self.report = report

    async def add(self, indexes: Sequence[int], *, first: bool = False) -> None:
        """Count the chunks at ``indexes`` (of the ingest's chunks, in order) as embedded,
        and report the documents they belong to (all of them when ``first``)."""
        touched = dict.fromkeys(self.total if first else ())
        for i in indexes:
            self.done[self.owners[i]] += 1
            touched[self.owners[i]] = None
        for document_id in touched:
            await self.report(document_id, self.done[document_id], self.total[document_id])


def input_hash(model: str, text: str) -> str:
    """What an embedded input is kept under: its model and its text, hashed."""
    return hashlib.sha256(f"{model}\0{text}".encode()).hexdigest()


async def _embed_in_slices(
    services: Services,
    workspace_id: str,
    texts: list[str],
    progress: _Progress,
) -> Matrix:
    """Embed ``texts`` (the chunks whose ``progress`` is told, in order) a slice of
    ``settings.ingest_slice_chunks`` at a time, each slice in a turn of the workspace at
    the ingest process (:class:`~convrag.embeddings.RoundRobin`: workspaces' uploads take
    turns, so one large file does not hold another's), reporting each document's chunks
    done after every slice.

    Each slice's vectors are kept in Postgres until the documents are stored, and those
    an earlier run kept (one a restart stopped) are taken instead of embedded again: the
    ingest resumes after its last slice, and its progress starts there."""
    model = services.embedder.name
    keys = [input_hash(model, t) for t in texts]
    kept = await services.db.documents.kept_vectors(workspace_id, list(progress.total))
    out = np.zeros((len(texts), services.embedder.dim), np.float32)
    resumed = [i for i, key in enumerate(keys) if key in kept]
    for i in resumed:
        out[i] = np.frombuffer(kept[keys[i]], dtype=np.float32)
    if resumed:
        docs = list(progress.total)
        log.info(
            "ingest of %s resumes: %d of its %d chunks were embedded before",
            docs[0] if len(docs) == 1 else f"{len(docs)} documents",
            len(resumed),
            len(texts),
        )
    todo = [i for i, key in enumerate(keys) if key not in kept]
    await progress.add(resumed, first=True)
    step = services.settings.ingest_slice_chunks
    for start in range(0, len(todo), step):
        part = todo[start : start + step]
        _check_running(services)
        async with services.bulk.turns.turn(workspace_id):
            _check_running(services)  # it may have waited for its turn
            vectors = await services.bulk.embed([texts[i] for i in part])
        out[part] = vectors
        await services.db.documents.keep_vectors(
            workspace_id,
            [
                (progress.owners[i], keys[i], v.tobytes())
                for i, v in zip(part, vectors, strict=True)
            ],
        )
        await progress.add(part)
    return out


async def reindex_workspace(
    services: Services,
    workspace_id: str,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Embed every chunk of a workspace again with this service's model, from the texts
    Postgres keeps, replace its vectors in the index and in Postgres, and record the
    model as the workspace's. Returns how many chunks were embedded; ``progress`` gets the
    chunks done so far and the total.

    Until the last batch is stored the workspace keeps its old model on record, so an
    interrupted reindex leaves searches failing with :class:`EmbeddingMismatch` (never
    mixing two models' vectors silently) and running it again finishes the job.
    """
    check_id(workspace_id)
    chunks = await services.db.workspaces.reindexable_chunks(workspace_id)
    for start in range(0, len(chunks), REINDEX_BATCH):
        part = chunks[start : start + REINDEX_BATCH]
        vectors = await services.bulk.embed([embedding_input(t, h, x) for *_, x, t, h in part])
        rows = [
            VectorRow(cid, did, text, vec.tolist())
            for (cid, did, text, *_), vec in zip(part, vectors, strict=True)
        ]
        await asyncio.to_thread(services.index.upsert, workspace_id, rows)
        blobs = [(cid, vec.tobytes()) for (cid, *_), vec in zip(part, vectors, strict=True)]
        await services.db.workspaces.store_reindexed(workspace_id, blobs)
        if progress is not None:
            progress(start + len(part), len(chunks))
    await asyncio.to_thread(services.index.flush)
    await services.db.workspaces.store_reindexed(workspace_id, [], services.embedder.name)
    return len(chunks)


def _delete_stale(index: VectorIndex, workspace_id: str, document_id: str, keep: set[str]) -> None:
    stale = [c for c in index.chunk_ids_of_document(workspace_id, document_id) if c not in keep]
    index.delete_chunks(stale)


def failure_reason(exc: Exception) -> str:
    """What a client reads about a failed ingest: our own validation messages as they
    are, a store's error by its kind (its message names internal hosts and ports)."""
    from psycopg import Error as PostgresError
    from pymilvus import MilvusException

    if isinstance(exc, MilvusException):
        return "the vector index was unavailable; upload the file again"
    if isinstance(exc, PostgresError):
        return "the database was unavailable; upload the file again"
    if isinstance(exc, (IngestError, ValueError)):
        return str(exc)[:500]
    log.exception("ingest failed")
    return f"ingest failed ({type(exc).__name__}); see the server log"


class DocumentBusy(ValueError):
    """A document whose ingest is still running: deleting it now would not stick, as the
    ingest would store it again when it ends."""

    def __init__(self, document_id: str) -> None:
        super().__init__(
            f"document {document_id} is still processing: its ingest would store it again; "
            "delete it once its status is ready or failed"
        )


async def delete_document(services: Services, workspace_id: str, document_id: str) -> bool:
    """Delete a document from Milvus, then from Postgres (chunks cascade).

    Milvus goes first: Postgres's delete moves the workspace's ``index_version``, which
    makes in-process engines reload from Milvus, and they must not see the old rows. An
    uploaded file goes with the last document read from it.

    A document still ``processing`` raises :class:`DocumentBusy` and is left alone: its
    ingest writes both stores when it ends, which would bring it back. One whose row has
    not moved for :data:`INTERRUPTED_AFTER` is taken for the leftover of a process that
    died (an ingest records its progress after every slice of chunks it embeds) and is
    deleted, as restart recovery would mark it failed.
    """
    row = await services.db.documents.get_document(workspace_id, document_id)
    if row is None:
        return False
    if row["status"] == "processing" and datetime.now(UTC) - row["updated_at"] < INTERRUPTED_AFTER:
        raise DocumentBusy(document_id)
    await asyncio.to_thread(services.index.delete_document, workspace_id, document_id)
    deleted = await services.db.documents.delete_document(workspace_id, document_id)
    if deleted:
        # ``metadata.path``: the saved file of an upload stored before files were
        # removed at the end of their ingest.
        for uploaded in ((row.get("metadata") or {}).get("path"), row.get("upload_path")):
            if uploaded:
                await forget_original(services, workspace_id, uploaded)
    return deleted


async def forget_original(
    services: Services, workspace_id: str, upload_path: str, *, unless_used: bool = True
) -> None:
    """Delete an upload's original, named as ``documents.upload_path`` names it: from the
    shared store (:mod:`convrag.stores.originals`), or a file that an older version kept
    in the data directory. With ``unless_used``, only once no document of the workspace
    names it (the other records of a ``.jsonl`` file keep it)."""
    if is_original_key(upload_path):
        await services.db.originals.delete(workspace_id, upload_path, unless_used=unless_used)
    elif not unless_used or not await services.db.documents.upload_in_use(
        workspace_id, upload_path
    ):
        await asyncio.to_thread(remove_upload, services.settings.data_dir, Path(upload_path))


def remove_upload(data_dir: Path, path: Path) -> None:
    """Remove an uploaded file and its per-upload directory, only under ``data_dir/uploads``
    (a path a document row names, so checked before anything is removed)."""
    uploads = (data_dir / "uploads").resolve()
    path = path.resolve()
    if uploads not in path.parents:
        return
    path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # not empty: another document's file is there
        path.parent.rmdir()
