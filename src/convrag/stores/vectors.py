"""The vector index: one Milvus collection with a dense vector and a BM25 sparse field.

The same code talks to the managed Milvus Lite server (default) and to a Milvus
standalone or cluster (``MILVUS_URI``). Rows carry ``workspace_id`` (the partition key)
and every search filters on it.

Dense search has two engines: ``milvus`` (the server's index) and ``numpy`` (exact
search over the workspace's vectors, loaded from Milvus into the process). Keyword search
has two too (see ``BENCHMARKS.md``):

* ``milvus``: the collection's BM25 function, server side. Right for a real Milvus.
* ``bm25s``: an in-process ``bm25s`` index per workspace, rebuilt from Postgres when the
  workspace's ``index_version`` moves. Milvus Lite is a pure-Python engine whose BM25
  costs about 195 ms at 100k rows against about 1.3 ms for bm25s, so ``auto`` picks
  bm25s on Lite.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import re
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from pymilvus import DataType, Function, FunctionType, MilvusClient, MilvusException

from convrag.embeddings import Matrix
from convrag.ids import check_id
from convrag.text.lexicon import NOT_SUBJECT
from convrag.text.tokens import phrasal_compounds, spelled_out

_BM25S_TOKEN = re.compile(r"(?u)\b\w\w+\b")
"""bm25s's default token pattern, for tokenising as it does."""

KIND_CHUNK = "chunk"
"""The ``kind`` of every row written: a document's chunk. Every search, count and export
reads this kind only, so the ``memory`` rows (one per answered turn) that earlier
versions wrote into the same collection, and nothing reads, are never found; a
conversation's delete clears them (:meth:`VectorIndex.delete_conversation`)."""

log = logging.getLogger(__name__)

_T = TypeVar("_T")

COLLECTION_NOT_LOADED = 101
"""Milvus's error code for a call on a collection that is not loaded (``released``)."""


def collection_released(exc: BaseException) -> bool:
    """Whether ``exc`` is Milvus refusing a read because the collection is not loaded: what
    every search, query and delete met after a Milvus (Lite) restart, which starts with
    every collection released."""
    if not isinstance(exc, MilvusException):
        return False
    message = str(getattr(exc, "message", "") or exc).lower()
    return exc.code == COLLECTION_NOT_LOADED or "released" in message or "not loaded" in message


class ReloadingMilvusClient(MilvusClient):  # type: ignore[misc]  # pymilvus is untyped
    """A Milvus client that loads a released collection again and retries the call once.

    A Milvus (Lite) server started again (the embedded one's supervisor restarts a killed
    child at the same port, in this process or in the ``serve --workers`` parent) has
    every collection released: the gRPC channel reconnects by itself, but every query,
    search and delete failed with "in state 'released'" until a process restart. Any
    process that meets the error loads the collection again, whoever restarted the server.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._reload_lock = threading.Lock()

    def reload(self, collection: str) -> bool:
        """Load ``collection`` unless it is loaded already; True when this call loaded it."""
        with self._reload_lock:  # concurrent callers that met the error load it once
            if self.is_loaded(collection):
                return False
            self.load_collection(collection)
        log.warning(
            "Milvus collection %r was released (its server restarted); loaded again", collection
        )
        return True

    def is_loaded(self, collection: str) -> bool:
        """Whether ``collection`` is loaded, so that searches and queries can run on it."""
        from pymilvus.client.types import LoadState

        return bool(self.get_load_state(collection).get("state") == LoadState.Loaded)

    def reloading(self, collection: str, call: Callable[[], _T]) -> _T:
        """``call()``, and once more after loading ``collection`` if it was released."""
        try:
            return call()
        except MilvusException as exc:
            if not collection_released(exc):
                raise
        self.reload(collection)
        return call()

    def search(self, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        return self.reloading(
            collection_name,
            lambda: super(ReloadingMilvusClient, self).search(collection_name, *args, **kwargs),
        )

    def hybrid_search(self, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        return self.reloading(
            collection_name,
            lambda: super(ReloadingMilvusClient, self).hybrid_search(
                collection_name, *args, **kwargs
            ),
        )

    def query(self, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        return self.reloading(
            collection_name,
            lambda: super(ReloadingMilvusClient, self).query(collection_name, *args, **kwargs),
        )

    def get(self, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        return self.reloading(
            collection_name,
            lambda: super(ReloadingMilvusClient, self).get(collection_name, *args, **kwargs),
        )

    def delete(self, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        return self.reloading(
            collection_name,
            lambda: super(ReloadingMilvusClient, self).delete(collection_name, *args, **kwargs),
        )

    def upsert(self, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        return self.reloading(
            collection_name,
            lambda: super(ReloadingMilvusClient, self).upsert(collection_name, *args, **kwargs),
        )


@dataclass(frozen=True, slots=True)
class Hit:
    """One result of one search list."""

    chunk_id: str
    document_id: str
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class VectorRow:
    """One row to index."""

    chunk_id: str
    document_id: str
    text: str
    vector: Sequence[float]


class VectorIndex:
    """The Milvus collection of one deployment (all workspaces)."""

    def __init__(
        self, client: ReloadingMilvusClient, collection: str, dim: int, *, is_lite: bool
    ) -> None:
        self.client = client
        self.collection = collection
        self.dim = dim
        self.is_lite = is_lite
        self._lock = threading.Lock()
        self._unflushed = 0
        #: Seal growing rows after this many writes: Lite searches them row by row.
        self.autoflush_rows = 2000

    @classmethod
    def connect(
        cls, uri: str, collection: str, dim: int, *, token: str | None = None, is_lite: bool
    ) -> VectorIndex:
        # Milvus Lite's gRPC server accepts a client ping at most every 5 minutes (gRPC's
        # default); pymilvus pings every 10 s, so Lite answered GOAWAY "too_many_pings",
        # logged at error level. A Milvus server allows the 10 s keepalive.
        options = {"grpc_options": {"grpc.keepalive_time_ms": 300_000}} if is_lite else {}
        client = ReloadingMilvusClient(uri=uri, token=token or "", **options)
        return cls(client, collection, dim, is_lite=is_lite)

    @classmethod
    @asynccontextmanager
    async def open(
        cls, uri: str, collection: str, dim: int, *, token: str | None = None, is_lite: bool
    ) -> AsyncIterator[VectorIndex]:
        """Connect for the block's lifetime; call :meth:`setup` before the first write."""
        index = await asyncio.to_thread(
            cls.connect, uri, collection, dim, token=token, is_lite=is_lite
        )
        try:
            yield index
        finally:
            index.client.close()

    def setup(self) -> None:
        """Create the collection and its indexes if missing (idempotent)."""
        if self.client.has_collection(self.collection):
            fields = self.client.describe_collection(self.collection)["fields"]
            for f in fields:
                if f["name"] == "dense" and int(f["params"].get("dim", self.dim)) != self.dim:
                    raise RuntimeError(
                        f"collection {self.collection!r} holds {f['params']['dim']}-d vectors but "
                        f"the embedding model gives {self.dim}-d; use another MILVUS_COLLECTION "
                        "or re-ingest into a fresh data directory"
                    )
            # A restarted server lists the collection as released until it is loaded.
            self.client.load_collection(self.collection)
            return
        schema = self.client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("chunk_id", DataType.VARCHAR, max_length=64, is_primary=True)
        schema.add_field("workspace_id", DataType.VARCHAR, max_length=64, is_partition_key=True)
        schema.add_field("document_id", DataType.VARCHAR, max_length=64)
        # ``kind`` and ``conversation_id`` told conversation memory's rows apart: every
        # row written now is a chunk, but a collection keeps one schema across versions.
        schema.add_field("kind", DataType.VARCHAR, max_length=16)
        schema.add_field("conversation_id", DataType.VARCHAR, max_length=64)
        schema.add_field("text", DataType.VARCHAR, max_length=65535, enable_analyzer=True)
        schema.add_field("dense", DataType.FLOAT_VECTOR, dim=self.dim)
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_function(
            Function(
                name="text_bm25",
                function_type=FunctionType.BM25,
                input_field_names=["text"],
                output_field_names=["sparse"],
            )
        )
        index = self.client.prepare_index_params()
        # Lite builds IVF_FLAT in about 2 s at 100k rows (HNSW takes minutes on 2 cores).
        index.add_index(
            "dense",
            index_type="IVF_FLAT" if self.is_lite else "AUTOINDEX",
            metric_type="COSINE",
            params={"nlist": 128} if self.is_lite else {},
        )
        index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        self.client.create_collection(
            self.collection, schema=schema, index_params=index, consistency_level="Strong"
        )

    def _filter(self, workspace_id: str) -> str:
        """The workspace's chunks: the rows every read looks at."""
        return f'workspace_id == "{check_id(workspace_id)}" and kind == "{KIND_CHUNK}"'

    def upsert(self, workspace_id: str, rows: Sequence[VectorRow]) -> None:
        if not rows:
            return
        check_id(workspace_id)
        data = [
            {
                "chunk_id": r.chunk_id,
                "workspace_id": workspace_id,
                "document_id": r.document_id,
                "kind": KIND_CHUNK,
                "conversation_id": "",
                "text": r.text,
                "dense": list(map(float, r.vector)),
            }
            for r in rows
        ]
        for start in range(0, len(data), 1000):
            self.client.upsert(self.collection, data[start : start + 1000])
        with self._lock:
            self._unflushed += len(data)
            due = self._unflushed >= self.autoflush_rows
        if due:
            self.flush()

    def delete_document(self, workspace_id: str, document_id: str) -> None:
        self.client.delete(
            self.collection,
            filter=f'workspace_id == "{check_id(workspace_id)}" and '
            f'document_id == "{check_id(document_id, "document")}"',
        )

    def delete_conversation(self, workspace_id: str, conversation_id: str) -> None:
        """Delete the conversation's rows: the ``memory`` vectors of its turns that
        earlier versions wrote (nothing writes a conversation's rows now)."""
        self.client.delete(
            self.collection,
            filter=f'workspace_id == "{check_id(workspace_id)}" and '
            f'conversation_id == "{check_id(conversation_id, "conversation")}"',
        )

    def flush(self) -> None:
        """Seal growing rows (Milvus Lite searches them in Python, about 30x slower)."""
        with self._lock:
            self._unflushed = 0
        self.client.flush(self.collection)

    def count(self, workspace_id: str) -> int:
        """The workspace's chunks."""
        res = self.client.query(
            self.collection, filter=self._filter(workspace_id), output_fields=["count(*)"]
        )
        return int(res[0]["count(*)"]) if res else 0

    def chunk_ids_of_document(self, workspace_id: str, document_id: str) -> list[str]:
        res = self.client.query(
            self.collection,
            filter=f'workspace_id == "{check_id(workspace_id)}" and '
            f'document_id == "{check_id(document_id, "document")}"',
            output_fields=["chunk_id"],
        )
        return [str(r["chunk_id"]) for r in res]

    def export_chunks(self, workspace_id: str) -> tuple[list[tuple[str, str, str]], Matrix]:
        """Every chunk row of a workspace with its vector (for the in-process dense engine),
        read again from the start if the collection was released on the way."""
        return self.client.reloading(self.collection, lambda: self._export_chunks(workspace_id))

    def _export_chunks(self, workspace_id: str) -> tuple[list[tuple[str, str, str]], Matrix]:
        rows: list[tuple[str, str, str]] = []
        vectors: list[list[float]] = []
        it = self.client.query_iterator(
            self.collection,
            batch_size=2000,
            filter=self._filter(workspace_id),
            output_fields=["chunk_id", "document_id", "text", "dense"],
        )
        try:
            while batch := it.next():
                for r in batch:
                    rows.append((str(r["chunk_id"]), str(r["document_id"]), str(r["text"])))
                    vectors.append(r["dense"])
        finally:
            it.close()
        matrix = np.asarray(vectors, dtype=np.float32).reshape(len(rows), self.dim)
        return rows, matrix

    def dense_search(
        self,
        workspace_id: str,
        vector: Matrix | Sequence[float],
        limit: int,
        *,
        score_with: Sequence[float] | None = None,
        feedback_weight: float = 0.0,
        feedback_depth: int = 3,
    ) -> list[Hit]:
        """The ``limit`` rows closest to ``vector``, as :meth:`NumpyDenseIndex.search` ranks
        and scores them (``score_with``, Rocchio ``feedback_weight``), so that a Milvus
        server ranks a conversation's turns as the in-process engine does. Feedback costs
        a second search; rescoring brings back the rows' vectors."""
        query = np.asarray(vector, dtype=np.float32)
        scorer = None if score_with is None else np.asarray(score_with, dtype=np.float32)
        if feedback_weight > 0.0 and feedback_depth > 0:
            first = self._nearest(workspace_id, query, feedback_depth)
            if first:
                if scorer is None:
                    scorer = query
                rows = np.stack([np.asarray(h["entity"]["dense"]) for h in first])
                query = rocchio(query, rows.astype(np.float32), feedback_weight)
        found = self._nearest(workspace_id, query, limit, vectors=scorer is not None)
        return _hits(found, score_with=scorer)

    def _nearest(
        self,
        workspace_id: str,
        vector: Matrix,
        limit: int,
        *,
        vectors: bool = True,
    ) -> Any:
        """Milvus's closest rows by cosine, with their stored vectors when ``vectors``."""
        res = self.client.search(
            self.collection,
            data=[vector.tolist()],
            anns_field="dense",
            limit=limit,
            filter=self._filter(workspace_id),
            search_params={"metric_type": "COSINE", "params": {"nprobe": 16}},
            output_fields=["document_id", "text", *(["dense"] if vectors else [])],
        )
        return res[0]

    def bm25_search(self, workspace_id: str, query: str, limit: int) -> list[Hit]:
        res = self.client.search(
            self.collection,
            data=[query],
            anns_field="sparse",
            limit=limit,
            filter=self._filter(workspace_id),
            search_params={"metric_type": "BM25"},
            output_fields=["document_id", "text"],
        )
        # Lite returns BM25 distances negated; the order is right either way.
        return _hits(res[0], absolute=True)

    def delete_chunks(self, chunk_ids: Sequence[str]) -> None:
        """Delete rows by their primary key, ``chunk_id``."""
        if chunk_ids:
            self.client.delete(self.collection, ids=list(chunk_ids))

    def ping(self) -> bool:
        """Whether the index is usable: Milvus answers and the collection is loaded. A
        collection found released (its server restarted) is loaded again first, so a
        health check both reports the index unusable until then and brings it back.
        Blocking: run it in a thread."""
        return self.problem() is None

    def problem(self) -> str | None:
        """What makes the index unusable now, in words, or None (see :meth:`ping`)."""
        name = self.collection
        try:
            if not self.client.has_collection(name):
                return f"the Milvus collection {name!r} does not exist"
        except Exception:
            return "Milvus does not answer"
        try:
            self.client.reload(name)
        except Exception as exc:
            log.warning("loading the released Milvus collection %r failed: %s", name, exc)
            return f"the Milvus collection {name!r} is released and could not be loaded again"
        return None


def rocchio(query: Matrix, first: Matrix, weight: float) -> Matrix:
    """``query`` moved by ``weight`` towards the mean of the ``first`` rows it found, both
    unit length first (Rocchio pseudo-relevance feedback): a short query takes on the
    vocabulary of the passages it found first."""
    centroid = first.mean(axis=0)
    moved = query / max(float(np.linalg.norm(query)), 1e-12)
    moved = moved + weight * centroid / max(float(np.linalg.norm(centroid)), 1e-12)
    return np.asarray(moved, dtype=np.float32)


def _hits(rows: Any, *, absolute: bool = False, score_with: Matrix | None = None) -> list[Hit]:
    """Milvus result rows as hits, scored by their distance, or by the cosine of their
    returned vector to ``score_with``."""
    out = []
    for h in rows:
        if score_with is not None:
            score = float(np.asarray(h["entity"]["dense"], dtype=np.float32) @ score_with)
        else:
            score = float(h["distance"])
        out.append(
            Hit(
                str(h["chunk_id"]),
                h["entity"]["document_id"],
                h["entity"]["text"],
                abs(score) if absolute else score,
            )
        )
    return out


class NumpyDenseIndex:
    """Exact cosine search over one workspace's vectors, in process.

    Milvus Lite scans rows in Python (about 0.6 µs per row per search, and ten times more
    for unsealed rows); a matrix product over the same vectors is exact and about 20
    times faster. Rebuilt when the workspace's ``index_version`` moves, from the vectors
    Postgres keeps beside each chunk (or exported from Milvus for chunks without one).
    """

    def __init__(self) -> None:
        self._cache: dict[str, tuple[int, list[tuple[str, str, str]], Matrix]] = {}

    def is_current(self, workspace_id: str, version: int) -> bool:
        entry = self._cache.get(workspace_id)
        return entry is not None and entry[0] == version

    def build(
        self, workspace_id: str, version: int, rows: list[tuple[str, str, str]], matrix: Matrix
    ) -> None:
        self._cache[workspace_id] = (version, rows, matrix)

    def search(
        self,
        workspace_id: str,
        vector: Sequence[float],
        limit: int,
        *,
        score_with: Sequence[float] | None = None,
        feedback_weight: float = 0.0,
        feedback_depth: int = 3,
    ) -> list[Hit]:
        """The ``limit`` rows closest to ``vector``; each scored by its cosine to
        ``score_with`` when given (rank by one vector, report another's similarity).

        With ``feedback_weight``, the ranking vector moves towards the mean of its first
        ``feedback_depth`` rows before the final ranking (:func:`rocchio`).
        """
        entry = self._cache.get(workspace_id)
        if entry is None or not entry[1]:
            return []
        _, rows, matrix = entry
        query = np.asarray(vector, dtype=np.float32)
        scores = matrix @ query
        if feedback_weight > 0.0 and feedback_depth > 0:
            depth = min(feedback_depth, len(rows))
            first = np.argpartition(-scores, depth - 1)[:depth]
            scores = matrix @ rocchio(query, matrix[first], feedback_weight)
            if score_with is None:
                score_with = vector
        k = min(limit, len(rows))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        if score_with is not None:
            scores = np.zeros_like(scores)
            scores[top] = matrix[top] @ np.asarray(score_with, dtype=np.float32)
        return [Hit(rows[i][0], rows[i][1], rows[i][2], float(scores[i])) for i in top]


TYPO_MIN_LENGTH = 5
"""Shorter unseen words are not read as typos: one edit turns many short words into
others ("rome" and "role")."""

_LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789"


def one_edit_variants(word: str) -> set[str]:
    """Every string one typing slip away from ``word``: one character deleted, inserted
    or replaced, or two neighbours swapped."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    out = {a + b[1:] for a, b in splits if b}
    out |= {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    out |= {a + c + b[1:] for a, b in splits if b for c in _LETTERS}
    out |= {a + c + b for a, b in splits for c in _LETTERS}
    out.discard(word)
    return out


class Bm25sKeywordIndex:
    """In-process BM25 (``bm25s``) over one workspace's chunks, rebuilt when they change."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[int, Any, list[tuple[str, str, str]]]] = {}
        self._lock = threading.Lock()
        self._local = threading.local()

    def _stemmer(self) -> Any:
        """One stemmer per thread: searches run in worker threads, and PyStemmer's
        objects are not thread-safe; building one per query cost work on the hot path."""
        stemmer = getattr(self._local, "stemmer", None)
        if stemmer is None:
            import Stemmer

            stemmer = self._local.stemmer = Stemmer.Stemmer("english")
        return stemmer

    def is_current(self, workspace_id: str, version: int) -> bool:
        entry = self._cache.get(workspace_id)
        return entry is not None and entry[0] == version

    def build(
        self,
        workspace_id: str,
        version: int,
        rows: list[tuple[str, str, str]],
        indexed: Sequence[str] | None = None,
    ) -> None:
        """Index ``rows`` (chunk id, document id, text) by ``indexed``, the text of each
        as it is keyword-indexed (its section path before it), else by their text; hits
        carry the row's text."""
        bm25s = _bm25s()
        stemmer = self._stemmer()
        retriever: Any = None
        if rows:
            tokens = bm25s.tokenize(
                list(indexed) if indexed is not None else [r[2] for r in rows],
                stopwords="en",
                stemmer=stemmer,
                show_progress=False,
            )
            retriever = bm25s.BM25()
            retriever.index(tokens, show_progress=False)
        with self._lock:
            self._cache[workspace_id] = (version, retriever, rows)

    def rarest_missing(
        self, workspace_id: str, query: str, texts: Sequence[str], *, typed: str | None = None
    ) -> float:
        """The IDF, in this workspace, of the rarest query term that none of ``texts``
        contains; 0 when every term is there or the workspace is not loaded.

        A question whose most specific word appears in none of its sources is likely about
        something the workspace does not hold, however close the sources' topic is. With
        ``typed`` (the user's own message), only the query terms the user typed count: a
        word that a rewrite brought in from earlier turns is context, not the question. An
        acronym that ``texts`` spell out ("MFA": "Multi-factor authentication") is there, and
        so is the noun of a phrasal verb they hold ("backups": "backed up").
        """
        entry = self._cache.get(workspace_id)
        if entry is None or entry[1] is None:
            return 0.0
        retriever = entry[1]
        # bm25s's stopword list is Lucene's 33 words, so its index counts "how" as a term:
        # a workspace whose text lacks it would make every how-question look off-topic.
        asked = self._stems([query], ignore=NOT_SUBJECT)
        if typed is not None:
            asked &= self._stems([typed], ignore=NOT_SUBJECT)
        if not asked:
            return 0.0
        present = self._stems(texts)
        joined = "\n".join(texts)
        present |= self._stems([a.lower() for a in spelled_out(joined, query)])
        present |= self._stems(list(phrasal_compounds(joined)))
        missing = asked - present
        if not missing:
            return 0.0
        n_docs = float(retriever.scores["num_docs"])
        indptr = retriever.scores["indptr"]
        vocab: dict[str, int] = retriever.vocab_dict

        def df(term: str) -> float:
            tid = vocab.get(term)
            return 0.0 if tid is None else float(indptr[tid + 1] - indptr[tid])

        def idf(term: str) -> float:
            """The term's IDF; a word the workspace has never seen that is one slip from
            words it has is a typo ("clpud"), so it weighs as the likeliest of them, and
            not at all when a source holds one of them."""
            seen = df(term)
            if seen == 0.0 and len(term) >= TYPO_MIN_LENGTH:
                meant = [w for w in one_edit_variants(term) if w in vocab]
                if any(w in present for w in meant):
                    return 0.0
                seen = max((df(w) for w in meant), default=0.0)
            return math.log(1.0 + (n_docs - seen + 0.5) / (seen + 0.5))

        return max(idf(t) for t in missing)

    def _stems(self, texts: Sequence[str], ignore: frozenset[str] = frozenset()) -> set[str]:
        """The stems of ``texts`` as the index tokenises them (``bm25s.tokenize`` with
        English stopwords and this stemmer), less the words in ``ignore``, as a set: each
        distinct word is stemmed once, with no per-token Python loop."""
        from bm25s.stopwords import STOPWORDS_EN

        words = set(_BM25S_TOKEN.findall("\n".join(texts).lower()))
        words.difference_update(STOPWORDS_EN)
        words.difference_update(ignore)
        return set(self._stemmer().stemWords(list(words)))

    def search(self, workspace_id: str, query: str, limit: int) -> list[Hit]:
        bm25s = _bm25s()
        entry = self._cache.get(workspace_id)
        if entry is None or entry[1] is None:
            return []
        _, retriever, rows = entry
        tokens = bm25s.tokenize(
            [query], stopwords="en", stemmer=self._stemmer(), show_progress=False
        )
        if not tokens.ids or not tokens.ids[0]:
            return []
        k = min(limit, len(rows))
        # n_threads=0: in this thread (a worker already); 1 starts a thread pool per call.
        docs, scores = retriever.retrieve(tokens, k=k, show_progress=False, n_threads=0)
        hits: list[Hit] = []
        for idx, score in zip(docs[0], scores[0], strict=True):
            if score <= 0:  # bm25s pads with zero-score rows that do not match
                continue
            cid, did, text = rows[int(idx)]
            hits.append(Hit(cid, did, text, float(score)))
        return hits


@functools.cache
def _bm25s() -> Any:
    """bm25s (imported when first used: it is slow to import), quieted once per process
    (setting a logger's level clears every logger's cache: not a thing to do per search).

    It sets its own logger to DEBUG on import, so every index build printed a line
    wherever a root handler exists (the CLI's evaluations). And its tokenizer makes a tqdm
    progress bar even when told to show none, whose first one makes tqdm's lock: a
    multiprocessing lock, a named semaphore that a ``serve --workers`` worker left behind
    at exit (the resource tracker warned of a leaked semaphore at shutdown). A thread
    lock serves bars that never draw.
    """
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    try:
        from tqdm import tqdm
    except ImportError:  # bm25s then draws no bars at all
        return bm25s
    if not hasattr(tqdm, "_lock"):
        tqdm.set_lock(threading.RLock())
    return bm25s
