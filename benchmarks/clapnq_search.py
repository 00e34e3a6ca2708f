"""Hybrid search latency on the MTRAG ClapNQ pooled corpus (12,221 passages, real MiniLM
embeddings), for the foundation's figure.

It reuses a data directory where `convrag eval mtrag --domain clapnq` (or this script)
ingested the corpus into workspace `mtrag-clapnq`; ingesting from scratch takes about
10 minutes on 2 cores. Every ClapNQ user question is searched once to warm up, then
timed: p50/p95 of hybrid, dense and BM25 search (query embedding included).

    CONVRAG_DATA_DIR=/tmp/cve2 python benchmarks/clapnq_search.py [--out FILE.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any, Literal

from convrag.config import Settings
from convrag.evaluation.mtrag import load_corpus
from convrag.ingest import ingest_documents
from convrag.services import open_services

DATA = Path(__file__).resolve().parents[2] / "shared" / "bench" / "mtrag" / "clapnq"


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


async def main(out: Path | None) -> dict[str, Any]:
    with open(DATA / "turns.jsonl") as fh:
        questions = [json.loads(line)["question"] for line in fh]
    async with open_services(Settings()) as services:
        workspace = "mtrag-clapnq"
        await ingest_documents(services, workspace, load_corpus(DATA))
        chunks = len(await services.db.documents.chunk_texts(workspace))
        for q in questions:  # warm-up: loads the in-process engines once
            await services.searcher.search(workspace, q, top_k=10)
        report: dict[str, Any] = {
            "corpus": "MTRAG (pooled) clapnq",
            "chunks": chunks,
            "queries": len(questions),
        }
        modes: tuple[Literal["hybrid", "dense", "bm25"], ...] = ("hybrid", "dense", "bm25")
        for mode in modes:
            times = []
            for q in questions:
                t0 = time.perf_counter()
                await services.searcher.search(workspace, q, top_k=10, mode=mode)
                times.append((time.perf_counter() - t0) * 1000)
            report[mode] = {
                "p50_ms": _pct(times, 0.5),
                "p95_ms": _pct(times, 0.95),
                "mean_ms": round(statistics.fmean(times), 2),
            }
    if out is not None:
        out.write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=None, help="write the JSON here")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.out)), indent=2))
