"""Retrievers: hybrid dense + keyword search of one query, and the document-content lookup.

A query's dense and keyword (BM25) lists are fused by the wing's one fusion
(:func:`convrag.retrieval.fusion.fuse`), the keyword list at the policy's
``keyword_weight``.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Literal

import numpy as np

from convrag.embeddings import Embedder, EmbeddingMismatch, Matrix
from convrag.failures import failure_text
from convrag.ids import check_id
from convrag.records import SearchMode, Source, SourceType, section_path
from convrag.retrieval.fusion import Fused, RankedList, fuse
from convrag.retrieval.policy import RetrievalPolicy
from convrag.stores.database import Database
from convrag.stores.vectors import (
    Bm25sKeywordIndex,
    Hit,
    NumpyDenseIndex,
    VectorIndex,
)
from convrag.text.lexicon import subject_words


@dataclass(frozen=True, slots=True)
class SearchResult(Hit):
    """A :class:`Hit` after fusion: ``score`` is the fused score, and each list it came
    from adds its own score and rank."""

    dense_score: float | None = None
    bm25_score: float | None = None
    dense_rank: int | None = None
    bm25_rank: int | None = None
    anchored: bool = False
    source_type: SourceType = "chunk"
    title: str | None = None
    """The chunk's document title, when the in-process engines know it (else None)."""
    page: int | None = None
    """The chunk's 1-based PDF page, when known."""
    section: str | None = None
    """The headings the chunk sits under, when known (:func:`section_path`)."""

    def as_source(self) -> Source:
        """The result as one numbered source of the answer."""
        return Source(
            id=self.chunk_id,
            source_type=self.source_type,
            document_id=self.document_id,
            title=self.title,
            text=self.text,
            url=None,
            score=self.score,
            dense_score=self.dense_score,
            bm25_score=self.bm25_score,
            anchored=self.anchored,
            page=self.page,
            section=self.section,
        )

    def as_json(self) -> dict[str, object]:
        return {
            "chunk_id": self.chunk_id,
            "document_id": self.document_id,
            "text": self.text,
            "score": round(self.score, 6),
            "dense_score": None if self.dense_score is None else round(self.dense_score, 6),
            "bm25_score": None if self.bm25_score is None else round(self.bm25_score, 6),
        }


@dataclass(frozen=True, slots=True)
class Label:
    """What a chunk's hits are labelled with, from Postgres: its document's title, its
    PDF page, and the headings it sits under."""

    title: str | None
    page: int | None
    section: str | None


def _hybrid(fused: Sequence[Fused]) -> list[SearchResult]:
    """The fusion of a query's dense and keyword lists as search results, each with its
    rank and score in either list."""
    out = []
    for f in fused:
        dense, keyword = f.ranks.get("dense"), f.ranks.get("keyword")
        out.append(
            SearchResult(
                chunk_id=f.hit.chunk_id,
                document_id=f.hit.document_id,
                text=f.hit.text,
                score=f.score,
                dense_score=dense[1] if dense else None,
                bm25_score=keyword[1] if keyword else None,
                dense_rank=dense[0] if dense else None,
                bm25_rank=keyword[0] if keyword else None,
            )
        )
    return out


class HybridSearcher:
    """Dense + keyword search of one workspace's chunks, fused by RRF. ``policy`` gives
    the fusion's ``rrf_k`` and ``keyword_weight`` when a search names none."""

    def __init__(
        self,
        db: Database,
        index: VectorIndex,
        embedder: Embedder,
        *,
        keyword_engine: Literal["bm25s", "milvus"],
        dense_engine: Literal["numpy", "milvus"] = "milvus",
        policy: RetrievalPolicy,
    ) -> None:
        self.db = db
        self.index = index
        self.embedder = embedder
        self.keyword_engine = keyword_engine
        self.dense_engine = dense_engine
        self.policy = policy
        self.keywords = Bm25sKeywordIndex() if keyword_engine == "bm25s" else None
        self.dense = NumpyDenseIndex() if dense_engine == "numpy" else None
        self._builds: dict[str, asyncio.Task[None]] = {}
        self._embeddings: dict[str, tuple[asyncio.Future[Matrix], int]] = {}
        """Queries being embedded: the batch's future and the query's row in it."""
        # Finished vectors, not futures: a future belongs to the event loop that made it.
        self._recent: dict[str, list[float]] = {}
        self._labels: dict[str, tuple[int, dict[str, Label]]] = {}
        """Per workspace: the version loaded, and each chunk's labels."""

    def prefetch(self, *queries: str) -> None:
        """Start embedding ``queries`` now, in one batch, to overlap work that comes
        before the search.

        ``load_history`` calls it with the message as typed, which every turn that
        searches searches; ``rewrite`` with the other queries of the turn's plan.
        """
        missing = [
            q for q in dict.fromkeys(queries) if q not in self._embeddings and q not in self._recent
        ]
        if not missing:
            return
        batch = asyncio.ensure_future(asyncio.to_thread(self.embedder.embed, missing))
        for row, query in enumerate(missing):
            if len(self._embeddings) >= 64:
                self._embeddings.pop(next(iter(self._embeddings)))
            self._embeddings[query] = (batch, row)

    async def embed_query(self, query: str) -> list[float]:
        """The query's vector: prefetched, embedded lately (a follow-up mixes in the
        previous turn's query, which that turn embedded), or embedded now."""
        recent = self._recent.get(query)
        if recent is not None:
            return recent
        pending = self._embeddings.pop(query, None)
        if pending is not None:
            batch, row = pending
            vec = (await asyncio.shield(batch))[row]
        else:
            vec = (await asyncio.to_thread(self.embedder.embed, [query]))[0]
        vector = [float(x) for x in vec]
        if len(self._recent) >= 256:
            self._recent.pop(next(iter(self._recent)))
        self._recent[query] = vector
        return vector

    async def _refresh(self, workspace_id: str, version: int) -> None:
        """Make the in-process engines of a workspace current with ``version``.

        The rebuild runs as one shielded task per workspace: a search that gives up (its
        node has a timeout) does not cancel it, and later searches wait for the same task
        instead of starting another load.
        """
        engines = [e for e in (self.dense, self.keywords) if e is not None]
        if all(e.is_current(workspace_id, version) for e in engines):
            return
        task = self._builds.get(workspace_id)
        if task is None or task.done():
            task = asyncio.get_running_loop().create_task(self._rebuild(workspace_id, version))
            self._builds[workspace_id] = task
        await asyncio.shield(task)
        if not all(e.is_current(workspace_id, version) for e in engines):
            await self._refresh(workspace_id, await self.db.workspaces.index_version(workspace_id))

    async def _rebuild(self, workspace_id: str, version: int) -> None:
        rows = await self.db.documents.chunk_rows(workspace_id)
        labels = {r.id: Label(r.title, r.page, section_path(r.heading, r.title)) for r in rows}
        self._labels[workspace_id] = (version, labels)
        triples = [(r.id, r.document_id, r.text) for r in rows]
        if self.keywords is not None:
            # A chunk's section path is keyword-indexed with it (its text stays the hit's).
            indexed = [
                f"{section}\n{text}" if (section := labels[cid].section) else text
                for cid, _, text in triples
            ]
            await asyncio.to_thread(self.keywords.build, workspace_id, version, triples, indexed)
        if self.dense is not None:
            if all(r.embedding is not None for r in rows):
                matrix = np.empty((len(rows), self.index.dim), dtype=np.float32)
                for i, r in enumerate(rows):
                    matrix[i] = np.frombuffer(r.embedding, dtype=np.float32)  # type: ignore[arg-type]
            else:  # chunks written without a stored vector: ask Milvus
                triples, matrix = await asyncio.to_thread(self.index.export_chunks, workspace_id)
            del rows  # the vectors' bytes: as large as the matrix
            self.dense.build(workspace_id, version, triples, matrix)

    async def warm(self, workspace_id: str) -> None:
        """Load the in-process engines now (after an ingest), not at the next question."""
        if self.dense is not None or self.keywords is not None:
            await self._refresh(workspace_id, await self.db.workspaces.index_version(workspace_id))

    def rarest_missing_term(
        self, workspace_id: str, query: str, texts: Sequence[str], *, typed: str | None = None
    ) -> float:
        """IDF of the rarest query term absent from ``texts``, among the terms of
        ``typed`` when given (0 without term statistics, i.e. when keyword search runs in
        Milvus)."""
        if self.keywords is None:
            return 0.0
        return self.keywords.rarest_missing(workspace_id, query, texts, typed=typed)

    async def _dense(
        self,
        workspace_id: str,
        query: str,
        limit: int,
        context_query: str | None = None,
        context_weight: float = 0.0,
        timings: dict[str, float] | None = None,
        feedback_weight: float = 0.0,
    ) -> list[Hit]:
        start = time.perf_counter()
        vector = await self.embed_query(query)
        context: list[float] | None = None
        if context_query and context_weight > 0.0:
            context = await self.embed_query(context_query)
        if timings is not None:
            timings["embed_query"] = round((time.perf_counter() - start) * 1000.0, 3)
        ranking: list[float] | None = None
        if context is not None:
            mixed = np.asarray(vector) + context_weight * np.asarray(context)
            ranking = [float(x) for x in mixed / np.linalg.norm(mixed)]
        # Either engine ranks and scores alike. In a thread: the matrix product releases
        # the GIL, so it overlaps BM25; a Milvus search waits on the network.
        engine = self.dense.search if self.dense is not None else self.index.dense_search
        return await asyncio.to_thread(
            partial(
                engine,
                workspace_id,
                ranking or vector,
                limit,
                score_with=vector if ranking else None,
                feedback_weight=feedback_weight,
            )
        )

    async def _keyword(self, workspace_id: str, query: str, limit: int) -> list[Hit]:
        # Both keyword engines drop only a few dozen stopwords, so a question's framing
        # ("how", "could", "tell me") would match every passage that uses it.
        query = subject_words(query)
        if self.keywords is None:
            return await asyncio.to_thread(self.index.bm25_search, workspace_id, query, limit)
        return await asyncio.to_thread(self.keywords.search, workspace_id, query, limit)

    async def search(
        self,
        workspace_id: str,
        query: str,
        *,
        top_k: int = 5,
        mode: SearchMode = "hybrid",
        candidates: int | None = None,
        context_query: str | None = None,
        context_weight: float = 0.0,
        feedback_weight: float = 0.0,
        timings: dict[str, float] | None = None,
        labels: Mapping[str, Label] | None = None,
        keyword_first: bool = False,
        policy: RetrievalPolicy | None = None,
        failures: list[str] | None = None,
    ) -> list[SearchResult]:
        """Top ``top_k`` chunks for ``query`` in ``workspace_id``.

        With ``context_query`` (the conversation's previous question), the dense list is
        ranked by the query's vector plus ``context_weight`` times the context's: a
        follow-up stays near the conversation's topic. ``feedback_weight`` then moves that
        vector towards its first few passages (pseudo-relevance feedback). Both dense
        engines rank and score alike. The dense scores stay the cosine to ``query`` alone,
        so thresholds mean the same with or without either. ``timings``, when given, gets
        ``embed_query``: the milliseconds spent waiting for the embeddings. ``labels``:
        what :meth:`current_labels` gave for this workspace just before (several searches
        of one turn read the index state once). ``keyword_first``: in hybrid mode, the
        keyword list's first hit comes too, after the ``top_k``, when the fusion ranks it
        lower (the caller decides where it goes). ``policy``: the run's, else the
        searcher's. ``failures``: given, a hybrid search whose dense or keyword list
        fails goes on with the other and appends why (``dense: timeout``); only when both
        fail does it raise. Without it, any failure raises.
        """
        _check_search(workspace_id, query, top_k, mode)
        pool = candidates or max(4 * top_k, 20)
        if mode != "bm25":
            self.prefetch(query)  # the embedding runs while the index state is read
        if labels is None:
            labels = await self.current_labels(workspace_id)
        dense = partial(
            self._dense,
            workspace_id,
            query,
            pool,
            context_query=context_query,
            context_weight=context_weight,
            timings=timings,
            feedback_weight=feedback_weight,
        )
        keyword = partial(self._keyword, workspace_id, query, pool)
        lists = await _ranked_lists(mode, dense, keyword, failures)
        policy = policy or self.policy
        dense_hits, keyword_hits = lists
        fused = fuse(
            [
                RankedList("dense", dense_hits, 1.0),
                RankedList(
                    "keyword", keyword_hits, policy.keyword_weight if mode == "hybrid" else 1.0
                ),
            ],
            k=policy.rrf_k,
        )
        ranked = _own_scores(_hybrid(fused), mode)
        kept = ranked[:top_k]
        if keyword_first and mode == "hybrid":
            kept += [r for r in ranked[top_k:] if r.bm25_rank == 1][:1]
        return _labelled(kept, labels)

    async def current_labels(self, workspace_id: str) -> dict[str, Label]:
        """Each chunk's labels, with the in-process engines made current first (they
        follow the workspace's ``index_version``: one cheap query); none without them.
        Raises :class:`EmbeddingMismatch` when the workspace's vectors are another
        model's."""
        if self.dense is None and self.keywords is None:
            return {}
        version, model = await self.db.workspaces.index_state(workspace_id)
        if model is not None and model != self.embedder.name:
            raise EmbeddingMismatch(workspace_id, model, self.embedder.name)
        await self._refresh(workspace_id, version)
        loaded = self._labels.get(workspace_id)
        return loaded[1] if loaded is not None and loaded[0] == version else {}


def _check_search(workspace_id: str, query: str, top_k: int, mode: str) -> None:
    """A search's arguments checked before any work: ``ValueError`` naming the bad one."""
    check_id(workspace_id)
    if not query.strip():
        raise ValueError("query is empty")
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    if mode not in ("hybrid", "dense", "bm25"):
        raise ValueError(f"unknown search mode {mode!r}; use hybrid, dense or bm25")


async def _ranked_lists(
    mode: SearchMode,
    dense: Callable[[], Awaitable[list[Hit]]],
    keyword: Callable[[], Awaitable[list[Hit]]],
    failures: list[str] | None = None,
) -> list[list[Hit]]:
    """The dense and keyword lists that ``mode`` searches (both at once in hybrid mode),
    the other left empty. In hybrid mode with ``failures``, a list that fails is left
    empty and why is appended there; when both fail, the dense list's error is raised."""
    if mode == "hybrid" and failures is not None:
        return await _surviving_lists(dense, keyword, failures)
    if mode == "hybrid":
        return list(await asyncio.gather(dense(), keyword()))
    if mode == "dense":
        return [await dense(), []]
    return [[], await keyword()]


async def _surviving_lists(
    dense: Callable[[], Awaitable[list[Hit]]],
    keyword: Callable[[], Awaitable[list[Hit]]],
    failures: list[str],
) -> list[list[Hit]]:
    """Both lists, one that fails left empty with why appended to ``failures``; the dense
    list's error raised when both fail."""
    found = await asyncio.gather(dense(), keyword(), return_exceptions=True)
    errors = [f for f in found if isinstance(f, BaseException)]
    if len(errors) == 2 or any(not isinstance(e, Exception) for e in errors):
        raise errors[0]
    lists: list[list[Hit]] = []
    for name, result in zip(("dense", "keyword"), found, strict=True):
        if isinstance(result, BaseException):
            failures.append(f"{name}: {failure_text(result)}")
            lists.append([])
        else:
            lists.append(result)
    return lists


def _own_scores(fused: list[SearchResult], mode: SearchMode) -> list[SearchResult]:
    """In a single-list mode, each result scored by its own list's score rather than the
    fused one, the order unchanged; in hybrid mode, ``fused`` as it is."""
    if mode == "hybrid":
        return fused
    return [
        replace(r, score=(r.dense_score if mode == "dense" else r.bm25_score) or 0.0) for r in fused
    ]


def _labelled(results: list[SearchResult], labels: Mapping[str, Label]) -> list[SearchResult]:
    """The results with their chunk's title, page and section where ``labels`` has them."""
    return [
        replace(r, title=label.title, page=label.page, section=label.section)
        if (label := labels.get(r.chunk_id)) is not None
        else r
        for r in results
    ]


_QUESTION_REF = re.compile(
    r"\b(?:question|q|problem|exercise|item|section|chapter|clause|article|step)\s*(?:no\.?|number|#)?\s*(\d{1,4}[a-z]?)\b",
    re.IGNORECASE,
)


def referenced_items(message: str) -> list[tuple[str, str]]:
    """Numbered items a message names, e.g. 'explain question 6' -> [('question', '6')]."""
    out: list[tuple[str, str]] = []
    for m in _QUESTION_REF.finditer(message):
        word = m.group(0).split()[0].rstrip("#0123456789.").lower()
        word = "question" if word == "q" else word
        if (word, m.group(1)) not in out:
            out.append((word, m.group(1)))
    return out[:3]


async def lookup_document_content(
    db: Database, workspace_id: str, message: str, *, limit: int = 2
) -> list[SearchResult]:
    """Seed 001's document-content source: fetch the exact numbered item a message names.

    "Can you explain question 6 again?" fetches the chunk that states question 6, as a
    ``document`` result with the full score of an exact match. A message that names no
    numbered item returns nothing (vector search covers it).
    """
    found: dict[str, SearchResult] = {}
    for word, number in referenced_items(message):
        # Line-anchored: "Question 6:", "6.", "Q6)", "Section 6 -" at the start of a line.
        num = re.escape(number)
        pattern = rf"(^|\n)\s*(({word}|q)\s*(no\.?|number|#)?\s*{num}\y|{num}[.):])"
        for row in await db.documents.find_chunks_matching(workspace_id, pattern, limit=limit):
            found.setdefault(
                row.id,
                SearchResult(
                    row.id,
                    row.document_id,
                    row.text,
                    1.0,
                    source_type="document",
                    title=row.title,
                    page=row.page,
                    section=section_path(row.heading, row.title),
                ),
            )
    return list(found.values())[:limit]
