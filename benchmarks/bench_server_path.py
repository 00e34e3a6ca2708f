"""The vector store path at scale: the embedded default (Milvus Lite, search in process)
beside a Milvus server (PyPI's ``milvus`` 2.3.5 standalone), in one run.

Synthetic chunks (text drawn from a Zipf vocabulary, random unit 384-d vectors: the
embedder is not run) go into each store through :class:`VectorIndex`, as an ingest writes
them: the insert rate counts the writes, the flush and the wait for the server to apply
them. Each configuration then searches as the service does by default there:

* ``embedded``: Milvus Lite stores; dense search exact in process (numpy), keywords in
  process (bm25s): ``DENSE_ENGINE`` / ``KEYWORD_ENGINE`` ``auto`` on Lite.
* ``server``: the 2.3.5 standalone searches dense (its AUTOINDEX, at
  ``MILVUS_CONSISTENCY`` Bounded, and Strong for comparison); keywords in process
  (bm25s: a 2.3 server has no BM25).

A hybrid search is one query's dense and keyword lists (top 50 each, as the service asks)
fused by the service's weighted RRF. Memory: the Milvus process's RSS (the Lite child or
the server) and what the in-process engines add to a replica's RSS.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_server_path.py --sizes 10000 30000 100000
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import psutil
from bench_common import Json, log, report, stats

from convrag.retrieval.fusion import RankedList, fuse
from convrag.stores.embedded import ManagedMilvusLite
from convrag.stores.vectors import Bm25sKeywordIndex, Hit, NumpyDenseIndex, VectorIndex, VectorRow

DIM = 384
LIST = 50
WORKSPACE = "bench"
MiB = 1024 * 1024


def corpus(n: int, seed: int = 0) -> tuple[list[VectorRow], np.ndarray]:
    """``n`` chunks of about 120 words (a Zipf draw over 30k words) and unit vectors."""
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(30_000)])
    ranks = np.minimum(rng.zipf(1.3, size=(n, 120)), 30_000) - 1
    vectors = rng.normal(size=(n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = [
        VectorRow(f"c{i}", f"d{i // 20}", " ".join(vocab[ranks[i]]), vectors[i].tolist())
        for i in range(n)
    ]
    return rows, vectors


def queries(rows: list[VectorRow], vectors: np.ndarray, k: int, seed: int = 1) -> list[Json]:
    """``k`` queries, each near a chunk (its vector plus noise) with four of its rarer words."""
    rng = np.random.default_rng(seed)
    out = []
    for i in rng.choice(len(rows), size=k, replace=False):
        noisy = vectors[i] + rng.normal(scale=0.03, size=DIM).astype(np.float32)
        words = sorted(set(rows[i].text.split()), key=lambda w: -int(w[1:]))[:4]
        out.append({"vector": (noisy / np.linalg.norm(noisy)).tolist(), "text": " ".join(words)})
    return out


def rss(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / MiB


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    value = fn()
    return value, (time.perf_counter() - t0) * 1000.0


def hybrid(dense: list[Hit], keyword: list[Hit]) -> list[Any]:
    return fuse([RankedList("dense", dense, 1.0), RankedList("keyword", keyword, 0.2)], k=60)


def write(index: VectorIndex, rows: list[VectorRow]) -> Json:
    """Write ``rows`` as an ingest does (1,000 at a time, one flush at the end)."""
    t0 = time.perf_counter()
    for start in range(0, len(rows), 1000):
        index.upsert(WORKSPACE, rows[start : start + 1000])
    written = time.perf_counter() - t0
    index.flush()
    total = time.perf_counter() - t0
    return {
        "rows": len(rows),
        "rows_per_s": len(rows) / total,
        "write_s": written,
        "flush_and_settle_s": total - written,
    }


def wait_indexed(index: VectorIndex, n: int, cap_s: float = 900.0) -> float:
    """Seconds until the server's dense index covers ``n`` rows (its build runs after the
    flush; searches meanwhile scan the unindexed rows)."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < cap_s:
        info = index.client.describe_index(index.collection, "dense")
        if int(info.get("indexed_rows", 0)) >= n and not int(info.get("pending_index_rows", 0)):
            break
        time.sleep(1.0)
    return time.perf_counter() - t0


def in_process_engines(
    rows: list[VectorRow], vectors: np.ndarray, *, dense: bool
) -> tuple[Any, Any, float]:
    """bm25s (and the numpy dense engine) over ``rows``, and the MiB they add to the RSS."""
    gc.collect()
    before = rss(psutil.Process().pid)
    keywords = Bm25sKeywordIndex()
    triples = [(r.chunk_id, r.document_id, r.text) for r in rows]
    keywords.build(WORKSPACE, 1, triples)
    numpy = None
    if dense:
        numpy = NumpyDenseIndex()
        numpy.build(WORKSPACE, 1, triples, vectors.copy())
    gc.collect()
    return keywords, numpy, rss(psutil.Process().pid) - before


def search_figures(
    dense: Callable[[Json], list[Hit]], keywords: Bm25sKeywordIndex, qs: list[Json]
) -> Json:
    dense_ms, keyword_ms, hybrid_ms = [], [], []
    for q in qs[:5]:  # warm
        hybrid(dense(q), keywords.search(WORKSPACE, q["text"], LIST))
    for q in qs:
        t0 = time.perf_counter()
        d, t_d = timed(lambda q=q: dense(q))
        k, t_k = timed(lambda q=q: keywords.search(WORKSPACE, q["text"], LIST))
        hybrid(d, k)
        hybrid_ms.append((time.perf_counter() - t0) * 1000.0)
        dense_ms.append(t_d)
        keyword_ms.append(t_k)
    return {
        "hybrid_ms": stats(hybrid_ms),
        "dense_ms": stats(dense_ms),
        "keyword_ms": stats(keyword_ms),
    }


def recall(found: Callable[[Json], list[Hit]], exact: NumpyDenseIndex, qs: list[Json]) -> float:
    """The dense list's recall@10 against exact search."""
    hit = 0
    for q in qs:
        truth = {h.chunk_id for h in exact.search(WORKSPACE, q["vector"], 10)}
        hit += len(truth & {h.chunk_id for h in found(q)[:10]})
    return hit / (10 * len(qs))


@contextmanager
def lite() -> Iterator[tuple[str, int]]:
    with tempfile.TemporaryDirectory(prefix="bench-lite-", dir="/tmp") as home:
        server = ManagedMilvusLite(Path(home))
        uri = server.start()
        try:
            pid = int(json.loads((Path(home) / "milvus" / "server.json").read_text())["pid"])
            yield uri, pid
        finally:
            server.stop()


@contextmanager
def standalone() -> Iterator[tuple[str, int, str]]:
    from milvus import MilvusServer, MilvusServerConfig

    with tempfile.TemporaryDirectory(prefix="bench-milvus-", dir="/tmp") as home:
        server = MilvusServer(MilvusServerConfig(), data_dir=home)
        server.start()
        try:
            yield f"http://127.0.0.1:{server.listen_port}", server.server_proc.pid, home
        finally:
            server.stop()


def run_embedded(rows: list[VectorRow], vectors: np.ndarray, qs: list[Json]) -> Json:
    with lite() as (uri, pid):
        index = VectorIndex.connect(uri, "bench", DIM, is_lite=True)
        index.setup()
        out: Json = {"insert": write(index, rows), "milvus_rss_mib": rss(pid)}
        keywords, numpy, added = in_process_engines(rows, vectors, dense=True)
        out["replica_engines_mib"] = added
        assert numpy is not None
        out["search"] = search_figures(
            lambda q: numpy.search(WORKSPACE, q["vector"], LIST), keywords, qs
        )
        out["milvus_rss_mib_after"] = rss(pid)
        index.client.close()
    return out


def run_server(rows: list[VectorRow], vectors: np.ndarray, qs: list[Json]) -> Json:
    with standalone() as (uri, pid, _):
        index = VectorIndex.connect(uri, "bench", DIM, is_lite=False, consistency="Bounded")
        index.setup()
        out: Json = {"server": index.client.get_server_version(), "insert": write(index, rows)}
        out["index_build_s"] = wait_indexed(index, len(rows))
        keywords, _, added = in_process_engines(rows, vectors, dense=False)
        out["replica_engines_mib"] = added
        exact = NumpyDenseIndex()
        exact.build(WORKSPACE, 1, [(r.chunk_id, r.document_id, r.text) for r in rows], vectors)

        def dense(q: Json) -> list[Hit]:
            return index.dense_search(WORKSPACE, q["vector"], LIST)

        out["search"] = search_figures(dense, keywords, qs)
        out["dense_recall_at_10"] = recall(dense, exact, qs[:50])
        strong = VectorIndex.connect(uri, "bench", DIM, is_lite=False, consistency="Strong")
        strong.bm25 = index.bm25
        out["dense_strong_ms"] = stats(
            [
                timed(lambda q=q: strong.dense_search(WORKSPACE, q["vector"], LIST))[1]
                for q in qs[:40]
            ]
        )
        out["milvus_rss_mib"] = rss(pid)
        strong.client.close()
        index.client.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 30_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--only", choices=["embedded", "server"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result: Json = {"dim": DIM, "list": LIST, "queries": args.queries, "runs": {}}
    for n in args.sizes:
        rows, vectors = corpus(n)
        qs = queries(rows, vectors, args.queries)
        run: Json = {}
        for name, fn in (("embedded", run_embedded), ("server", run_server)):
            if args.only and name != args.only:
                continue
            log(f"{n} chunks: {name}")
            t0 = time.perf_counter()
            run[name] = fn(rows, vectors, qs)
            run[name]["wall_s"] = time.perf_counter() - t0
            log(f"{n} chunks: {name}: {json.dumps(run[name]['search']['hybrid_ms'])}")
        result["runs"][str(n)] = run
        report(result, args.out)
    print("done", file=sys.stderr)


if __name__ == "__main__":
    main()
