"""Chunking a batch of documents into the rows ingest stores: the work the ingest child
runs (:meth:`~convrag.embeddings.BulkEmbedder.run`).

A module of its own, importing only what chunking needs: the child imports it at its
first upload, and :mod:`convrag.ingest` (Milvus's client among its imports) took about
1.9 s to import there.
"""

from __future__ import annotations

from typing import Any

from convrag.documents.base import SourceDocument
from convrag.documents.chunking import Chunk, Chunker
from convrag.ids import chunk_id_for
from convrag.stores.documents import DocumentWrite


def document_writes(
    chunker: Chunker, changed: list[tuple[SourceDocument, str, str]]
) -> list[DocumentWrite]:
    """The writes of ``(document, its id, its content hash)``: chunked, with chunk ids (a
    module-level function: it may run in another process)."""
    writes: list[DocumentWrite] = []
    for doc, doc_id, content_hash in changed:
        pieces = chunker.chunks(doc)
        writes.append(
            DocumentWrite(
                doc_id,
                doc.source,
                doc.title,
                content_hash,
                doc.metadata,
                [(chunk_id_for(doc_id, i, c.text), i, c.text) for i, c in enumerate(pieces)],
                chunk_metadata=[_chunk_metadata(c) for c in pieces],
            )
        )
    return writes


def _chunk_metadata(chunk: Chunk) -> dict[str, Any]:
    """What Postgres keeps of a chunk beside its text: its PDF page, its headings."""
    meta: dict[str, Any] = {}
    if chunk.page is not None:
        meta["page"] = chunk.page
    if chunk.heading:
        meta["heading"] = list(chunk.heading)
    return meta
