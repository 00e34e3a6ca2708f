"""Retrieval on the reading corpus's questions, with and without section paths in chunks.

Every document of ``tests/documents/corpus`` goes into one workspace (as a user's folder
would), once as the service reads it and once with the section path left out of what is
embedded and keyword-indexed (the contextual chunk header switched off, nothing else
changed). Each answerable question with a section is then searched (hybrid, the
service's defaults); a hit is a chunk of the right document under the expected heading.
Reported: hit@1, hit@5 and MRR@10, overall and per kind of document.

    python benchmarks/reading_questions.py --data-dir /tmp/rq --out bench-out/reading-questions.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import convrag.ingest
import convrag.retrieval.search
from convrag.config import Settings
from convrag.documents.load import load_path
from convrag.evaluation.documents import heading_matches
from convrag.ingest import ingest_documents
from convrag.services import Services, open_services

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ("section_paths", "no_section_paths")


@contextmanager
def without_section_paths() -> Iterator[None]:
    """Leave the section path out of embedding and keyword indexing (an experiment
    switch: the service has none)."""
    saved = (convrag.ingest.section_path, convrag.retrieval.search.section_path)
    convrag.ingest.section_path = lambda heading, title: None  # type: ignore[assignment]
    convrag.retrieval.search.section_path = lambda heading, title: None  # type: ignore[assignment]
    try:
        yield
    finally:
        convrag.ingest.section_path, convrag.retrieval.search.section_path = saved


def questions(corpus: Path) -> list[dict[str, Any]]:
    """The answerable questions that name the heading of their answer, with their file."""
    out: list[dict[str, Any]] = []
    for expect in sorted(corpus.glob("*.expect.json")):
        spec = json.loads(expect.read_text())
        stem = expect.name.removesuffix(".expect.json")
        (path,) = [p for p in corpus.glob(f"{stem}.*") if not p.name.endswith(".json")]
        for q in spec.get("questions", []):
            if q.get("answerable") and q.get("heading"):
                out.append({"file": path, "kind": spec["kind"], **q})
    return out


async def _score(services: Services, workspace: str, qs: list[dict[str, Any]]) -> dict[str, Any]:
    by_kind: dict[str, list[tuple[int, int, float]]] = {}
    for q in qs:
        hits = await services.searcher.search(workspace, q["q"], top_k=10)
        rows = {
            c.id: c
            for c in await services.db.documents.get_chunks(workspace, [h.chunk_id for h in hits])
        }
        ranks = [
            k
            for k, h in enumerate(hits, start=1)
            if (row := rows.get(h.chunk_id)) is not None
            and row.source == str(q["file"].resolve())
            and heading_matches(q["heading"], tuple(row.heading or ()))
        ]
        first = ranks[0] if ranks else 0
        by_kind.setdefault(q["kind"], []).append(
            (int(first == 1), int(0 < first <= 5), 1.0 / first if first else 0.0)
        )

    def summary(rows: list[tuple[int, int, float]]) -> dict[str, float]:
        n = len(rows)
        return {
            "n": n,
            "hit@1": round(sum(r[0] for r in rows) / n, 3),
            "hit@5": round(sum(r[1] for r in rows) / n, 3),
            "mrr@10": round(sum(r[2] for r in rows) / n, 3),
        }

    every = [r for rows in by_kind.values() for r in rows]
    return {"overall": summary(every), "by_kind": {k: summary(v) for k, v in by_kind.items()}}


async def run(corpus: Path, data_dir: Path) -> dict[str, Any]:
    qs = questions(corpus)
    files = sorted({q["file"] for q in qs})
    docs = [d for f in files for d in load_path(f, max_bytes=50 * 2**20)]
    results: dict[str, Any] = {"questions": len(qs), "documents": len(docs)}
    async with open_services(Settings(data_dir=data_dir)) as services:
        for variant in VARIANTS:
            workspace = f"reading-{variant.replace('_', '-')}"
            if variant == "no_section_paths":
                with without_section_paths():
                    await ingest_documents(services, workspace, docs)
                    results[variant] = await _score(services, workspace, qs)
            else:
                await ingest_documents(services, workspace, docs)
                results[variant] = await _score(services, workspace, qs)
            print(variant, json.dumps(results[variant]["overall"]))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / "tests/documents/corpus")
    parser.add_argument("--data-dir", type=Path, required=True, help="a fresh folder")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    shutil.rmtree(args.data_dir, ignore_errors=True)
    results = asyncio.run(run(args.corpus, args.data_dir))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
