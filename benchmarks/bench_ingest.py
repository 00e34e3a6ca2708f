"""ingest_throughput: chunks/s of ``ingest_documents`` beside the raw embedding model.

A seeded sample of ClapNQ passages is cut into batches of 128 documents (the batch
``ingest_documents`` uses). For each batch, in the same run and interleaved so that load
from other processes hits both alike:

* raw: ``services.bulk.embed``, the embedder ingest itself uses (the child process, one
  ONNX thread, by default), on exactly the texts ingest embeds (the same chunks with the
  same title prefix, the same model batch size);
* ingest: ``ingest_documents`` on that batch into a fresh workspace.

The ingest's own time is split by wrapping the embedder, the Milvus writer and the
Postgres writer (timing wrappers only; the calls are the real ones).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import random
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from bench_common import Figure, load_corpus, log, to_document

from convrag.config import Settings
from convrag.documents.chunking import Chunker
from convrag.ingest import ingest_documents
from convrag.services import open_services

BATCH_DOCS = 128


class Timed:
    """Proxy that adds the wall time of the named methods to ``sink`` (sync or async)."""

    def __init__(self, inner: Any, names: dict[str, str], sink: dict[str, float]) -> None:
        self._inner = inner
        self._names = names
        self._sink = sink

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        label = self._names.get(name)
        if label is None or not callable(attr):
            return attr
        sink = self._sink

        if inspect.iscoroutinefunction(attr):

            @functools.wraps(attr)
            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                t0 = time.perf_counter()
                try:
                    return await attr(*args, **kwargs)
                finally:
                    sink[label] = sink.get(label, 0.0) + time.perf_counter() - t0

            return timed_async

        fn: Callable[..., Any] = attr

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                sink[label] = sink.get(label, 0.0) + time.perf_counter() - t0

        return timed


async def run(data_dir: Path, *, passages: int, seed: int) -> Figure:
    corpus = load_corpus()
    sample = random.Random(seed).sample(corpus, passages)
    docs = [to_document(r) for r in sample]
    workspace = f"ingest-{uuid.uuid4().hex[:8]}"
    async with open_services(Settings(data_dir=data_dir)) as services:
        settings = services.settings
        chunker = Chunker(settings.chunk_size, settings.chunk_overlap)
        services.embedder.embed(["warm up the model"] * 4)
        parts: dict[str, float] = {}
        db = copy.copy(services.db)  # the same stores, but its documents' writes timed
        db.documents = cast(
            Any,
            Timed(
                services.db.documents,
                {
                    "replace_documents": "postgres_replace_documents",
                    "existing_documents": "postgres_existing_documents",
                },
                parts,
            ),
        )
        timed = dataclasses.replace(
            services,
            bulk=cast(
                Any, Timed(services.bulk, {"embed": "embed", "run": "chunking_in_child"}, parts)
            ),
            index=cast(
                Any,
                Timed(services.index, {"upsert": "milvus_upsert", "flush": "milvus_flush"}, parts),
            ),
            db=db,
        )
        raw_s = ingest_s = 0.0
        chunks = written = 0
        log(f"ingest_throughput: {len(docs)} ClapNQ passages, raw embedding vs ingest_documents")
        await services.bulk.embed(["warm up"])  # the child loads its model once, up front
        for start in range(0, len(docs), BATCH_DOCS):
            batch = docs[start : start + BATCH_DOCS]
            texts = [f"{d.title}\n{t}" if d.title else t for d in batch for t in chunker.split(d)]
            t0 = time.perf_counter()
            await services.bulk.embed(texts)
            t1 = time.perf_counter()
            report = await ingest_documents(timed, workspace, batch)
            t2 = time.perf_counter()
            raw_s += t1 - t0
            ingest_s += t2 - t1
            chunks += len(texts)
            written += report.chunks_written
    if written != chunks:
        raise RuntimeError(f"ingest wrote {written} chunks, the raw pass embedded {chunks}")
    raw_rate = chunks / raw_s
    rate = written / ingest_s
    other = ingest_s - sum(parts.values())
    return Figure(
        "ingest_throughput",
        rate,
        "chunks/s",
        0.9 * raw_rate,
        "≥ 0.9× raw embedding",
        baseline=raw_rate,
        met=rate >= 0.9 * raw_rate,
        extra={"chunks": chunks, "passages": len(docs)},
        detail={
            "sample": f"{len(docs)} ClapNQ passages (seeded random), {chunks} chunks "
            f"(chunk_size {settings.chunk_size})",
            "embedding_batch_size": settings.embedding_batch_size,
            "raw_embed_s": raw_s,
            "ingest_s": ingest_s,
            "ingest_breakdown_s": {**parts, "other (chunking, hashing, Python)": other},
        },
    )
