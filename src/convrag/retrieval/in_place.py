"""In place: the passages around the previous answer's, for a later turn about to say "not found".

A follow-up with no subject of its own ("Can I turn that off?", "What if I already did?")
is about the passage the previous answer quoted, or the text just around it; searched
workspace-wide, its few words find other documents or nothing close enough. Before such a
turn says "not found", the passages the previous answer cited and their neighbours in the
same documents (the policy's ``in_place_reach`` either side) are ranked by the turn's
query and weighed alone by the same "not found" model, the turn read as a follow-up: it is
answered from them only when the model would answer, so every other turn is unchanged.
"""

from __future__ import annotations

import asyncio

import numpy as np

from convrag.records import Source, section_path
from convrag.retrieval.planning import TurnQuery
from convrag.retrieval.uses import WingServices
from convrag.stores.documents import IndexedChunk

IN_PLACE_MOST = 40
"""The most passages weighed in place (a long document's first chunks, when the previous
answer's passages are not known)."""


def cited_passages(turn: TurnQuery) -> tuple[list[str], list[str]]:
    """The documents and the passages the previous answer cited (none on a first turn)."""
    if not turn.history:
        return [], []
    last = turn.history[-1]
    return list(turn.anchor_document_ids), list(last.get("cited_chunk_ids") or [])


async def passages_in_place(
    turn: TurnQuery, services: WingServices, query: str, reach: int
) -> list[Source]:
    """The passages around the previous answer's, closest to ``query`` first, each with
    its cosine to it as ``dense_score``; empty when the previous answer cited none."""
    documents, passages = cited_passages(turn)
    if reach <= 0 or not documents:
        return []
    rows = await services.db.documents.chunks_around(
        turn.workspace_id, documents, passages, reach=reach, limit=IN_PLACE_MOST
    )
    if not rows:
        return []
    vector = np.asarray(await services.searcher.embed_query(query), dtype=np.float32)
    cosines = (await _vectors(rows, services)) @ vector
    order = np.argsort(-cosines, kind="stable")
    return [_source(rows[i], float(cosines[i])) for i in order]


async def _vectors(rows: list[IndexedChunk], services: WingServices) -> np.ndarray:
    """The rows' stored vectors; those stored only in Milvus are embedded now."""
    out = np.zeros((len(rows), services.searcher.index.dim), dtype=np.float32)
    missing = [i for i, r in enumerate(rows) if r.embedding is None]
    for i, r in enumerate(rows):
        if r.embedding is not None:
            out[i] = np.frombuffer(r.embedding, dtype=np.float32)
    if missing:
        embedded = await asyncio.to_thread(
            services.searcher.embedder.embed, [rows[i].text for i in missing]
        )
        for i, vec in zip(missing, embedded, strict=True):
            out[i] = np.asarray(vec, dtype=np.float32)
    return out


def _source(row: IndexedChunk, cosine: float) -> Source:
    return Source(
        id=row.id,
        source_type="chunk",
        document_id=row.document_id,
        title=row.title,
        text=row.text,
        url=None,
        score=cosine,
        dense_score=cosine,
        bm25_score=None,
        anchored=True,
        page=row.page,
        section=section_path(row.heading, row.title),
    )
