"""The vector index: one Milvus collection with a dense vector and, where the server has
BM25 (Milvus >= 2.5, and Lite), a BM25 sparse field (``stores/milvus_schema.py``).

The same code talks to the managed Milvus Lite server (default) and to a Milvus
standalone or cluster (``MILVUS_URI``). Rows carry ``workspace_id`` (the partition key)
and every search filters on it.

Dense search has two engines: ``milvus`` (the server's index) and ``numpy`` (exact
search over the workspace's vectors, loaded from Milvus into the process). Keyword search
has two too (see ``BENCHMARKS.md``):

* ``milvus``: the collection's BM25 function, server side. Right for a real Milvus that
  has it.
* ``bm25s``: an in-process ``bm25s`` index per workspace, rebuilt from Postgres when the
  workspace's ``index_version`` moves. Milvus Lite is a pure-Python engine whose BM25
  costs about 195 ms at 100k rows against about 1.3 ms for bm25s, so ``auto`` picks
  bm25s on Lite, and on a server or collection without BM25.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import re
import threading
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from convrag.embeddings import Matrix
from convrag.ids import check_id
from convrag.stores.milvus_client import ReloadingMilvusClient
from convrag.stores.milvus_schema import (
    BM25_MIN,
    USE_BM25S,
    Layout,
    MilvusUnsupported,
    create,
    existing_layout,
    named,
    required_features,
)
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
        self,
        client: ReloadingMilvusClient,
        collection: str,
        dim: int,
        *,
        is_lite: bool,
        consistency: str = "Strong",
    ) -> None:
        self.client = client
        self.collection = collection
        self.dim = dim
        self.is_lite = is_lite
        self.consistency = consistency
        """The consistency level of searches and queries (``MILVUS_CONSISTENCY``); writes
        end with a strong read (:meth:`settle`), so a level below ``Strong`` still finds
        every finished ingest and delete."""
        self.bm25 = True
        """Whether the collection has the BM25 field (set by :meth:`setup`)."""
        self.upserts = True
        """Whether the server's upsert is used, or a delete and an insert (set by
        :meth:`setup`, see :data:`~convrag.stores.milvus_schema.UPSERT_MIN`)."""
        self._lock = threading.Lock()
        self._unflushed = 0
        #: Seal growing rows after this many writes: Lite searches them row by row. A
        #: server seals segments itself (a flush per 2,000 rows made small segments and
        #: cost a second each on the 2.3.5 standalone).
        self.autoflush_rows = 2000 if is_lite else None

    @classmethod
    def connect(
        cls,
        uri: str,
        collection: str,
        dim: int,
        *,
        token: str | None = None,
        is_lite: bool,
        consistency: str = "Strong",
    ) -> VectorIndex:
        # Milvus Lite's gRPC server accepts a client ping at most every 5 minutes (gRPC's
        # default); pymilvus pings every 10 s, so Lite answered GOAWAY "too_many_pings",
        # logged at error level. A Milvus server allows the 10 s keepalive.
        options = {"grpc_options": {"grpc.keepalive_time_ms": 300_000}} if is_lite else {}
        client = ReloadingMilvusClient(uri=uri, token=token or "", **options)
        return cls(client, collection, dim, is_lite=is_lite, consistency=consistency)

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        uri: str,
        collection: str,
        dim: int,
        *,
        token: str | None = None,
        is_lite: bool,
        consistency: str = "Strong",
    ) -> AsyncIterator[VectorIndex]:
        """Connect for the block's lifetime; call :meth:`setup` before the first write."""
        index = await asyncio.to_thread(
            cls.connect, uri, collection, dim, token=token, is_lite=is_lite, consistency=consistency
        )
        try:
            yield index
        finally:
            index.client.close()

    def setup(self, *, bm25_required: bool = False) -> None:
        """Make the collection ready: check the server's version, then create the collection
        laid out for it if missing, or check the one there and load it. ``bm25_required``
        (``KEYWORD_ENGINE=milvus``) fails the start where the collection cannot have BM25.
        Raises :class:`MilvusUnsupported` or :class:`CollectionUnusable` naming the fix."""
        features = required_features(self.client, bm25_required=bm25_required)
        self.upserts = features.upsert
        layout = None
        if self.client.has_collection(self.collection):
            layout = existing_layout(self.client, self.collection, self.dim, features)
        if layout is None:
            layout = Layout(self.dim, bm25=features.bm25)
            create(
                self.client,
                self.collection,
                layout,
                is_lite=self.is_lite,
                consistency=self.consistency,
            )
        elif bm25_required and not layout.bm25:
            raise MilvusUnsupported(
                f"KEYWORD_ENGINE=milvus needs the BM25 field, which the collection "
                f"{self.collection!r} was made without (on a Milvus before {named(BM25_MIN)}); "
                f"{USE_BM25S}, or ingest into a new MILVUS_COLLECTION"
            )
        else:
            # A restarted server lists the collection as released until it is loaded.
            self.client.load_collection(self.collection)
        self.bm25 = layout.bm25

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
            part = data[start : start + 1000]
            if self.upserts:
                self.client.upsert(self.collection, part)
            else:
                self.client.delete(self.collection, ids=[r["chunk_id"] for r in part])
                self.client.insert(self.collection, part)
        with self._lock:
            self._unflushed += len(data)
            due = self.autoflush_rows is not None and self._unflushed >= self.autoflush_rows
        if due:
            self.flush()

    def delete_document(self, workspace_id: str, document_id: str) -> None:
        self.client.delete(
            self.collection,
            filter=f'workspace_id == "{check_id(workspace_id)}" and '
            f'document_id == "{check_id(document_id, "document")}"',
        )
        self.settle()

    def delete_conversation(self, workspace_id: str, conversation_id: str) -> None:
        """Delete the conversation's rows: the ``memory`` vectors of its turns that
        earlier versions wrote (nothing writes a conversation's rows now)."""
        self.client.delete(
            self.collection,
            filter=f'workspace_id == "{check_id(workspace_id)}" and '
            f'conversation_id == "{check_id(conversation_id, "conversation")}"',
        )

    def flush(self) -> None:
        """Seal growing rows (Milvus Lite searches them in Python, about 30x slower), and
        :meth:`settle`: an ingest ends here."""
        with self._lock:
            self._unflushed = 0
        self.client.flush(self.collection)
        self.settle()

    def settle(self) -> None:
        """Return once every search sees the writes made before: one strong read, which
        waits until the server has applied them. A server applies writes in order, so
        the searches that follow, at any consistency level and from any process on it,
        find them (the ingest and the delete end here, before the workspace's
        ``index_version`` moves). Nothing to wait for when every read is strong."""
        if self.consistency != "Strong":
            self.client.query(
                self.collection,
                filter='chunk_id == ""',
                output_fields=["chunk_id"],
                limit=1,
                consistency_level="Strong",
            )

    def count(self, workspace_id: str) -> int:
        """The workspace's chunks."""
        res = self.client.query(
            self.collection,
            filter=self._filter(workspace_id),
            output_fields=["count(*)"],
            consistency_level=self.consistency,
        )
        return int(res[0]["count(*)"]) if res else 0

    def chunk_ids_of_document(self, workspace_id: str, document_id: str) -> list[str]:
        res = self.client.query(
            self.collection,
            filter=f'workspace_id == "{check_id(workspace_id)}" and '
            f'document_id == "{check_id(document_id, "document")}"',
            output_fields=["chunk_id"],
            consistency_level=self.consistency,
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
            # The key by name: a Milvus before 2.4 names it ``id`` in its results.
            output_fields=["chunk_id", "document_id", "text", *(["dense"] if vectors else [])],
            consistency_level=self.consistency,
        )
        return res[0]

    def bm25_search(self, workspace_id: str, query: str, limit: int) -> list[Hit]:
        if not self.bm25:
            raise MilvusUnsupported(
                f"the collection {self.collection!r} has no BM25 field: search keywords in "
                "process (KEYWORD_ENGINE=bm25s)"
            )
        res = self.client.search(
            self.collection,
            data=[query],
            anns_field="sparse",
            limit=limit,
            filter=self._filter(workspace_id),
            search_params={"metric_type": "BM25"},
            output_fields=["chunk_id", "document_id", "text"],
            consistency_level=self.consistency,
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
        """What makes the index unusable now, in words, or None (see :meth:`ping`): what a
        search needs, the collection loaded and a search on it answering."""
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
        try:
            self._probe()
        except Exception as exc:
            log.warning("a probe search of the Milvus collection %r failed: %s", name, exc)
            return f"the Milvus collection {name!r} is loaded but a search on it fails"
        return None

    def _probe(self) -> None:
        """One dense search, of a workspace that holds no rows: the path every search takes
        (a collection still loading after a restart answers none yet)."""
        self.client.search(
            self.collection,
            data=[[1.0] + [0.0] * (self.dim - 1)],
            anns_field="dense",
            limit=1,
            filter=f'workspace_id == "" and kind == "{KIND_CHUNK}"',
            search_params={"metric_type": "COSINE", "params": {"nprobe": 1}},
            consistency_level=self.consistency,
        )


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
