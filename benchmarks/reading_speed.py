"""Reading speed: what ingesting real documents costs before the stores, per step.

For every file of the reading corpus (``tests/documents/corpus``, or ``--corpus``): read
it (``load_path``), cut it into chunks (``Chunker``) and embed what ingest embeds (the
local model, one thread, as ingest does), each timed over ``--repeat`` runs (the best
kept). Run it with ``PYTHONPATH`` on another checkout's ``src`` to time that code on the
same files in the same session:

    python benchmarks/reading_speed.py --out bench-out/read-head.json
    PYTHONPATH=../base/src python benchmarks/reading_speed.py --out bench-out/read-base.json
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from convrag.config import Settings
from convrag.documents.chunking import Chunker
from convrag.documents.load import load_path
from convrag.embeddings import get_embedder

ROOT = Path(__file__).resolve().parent.parent


def _embedding_inputs(title: str | None, chunks: list[Any]) -> list[str]:
    """What ingest embeds for each chunk, as the code being timed builds it."""
    try:
        from convrag.ingest import embedding_input  # type: ignore[attr-defined]
    except ImportError:  # older code: the title before the chunk's text
        return [f"{title}\n{c.text}" if title else c.text for c in chunks]
    return [embedding_input(title, getattr(c, "heading", ()), c.text) for c in chunks]


def _best(repeat: int, step: Callable[[], Any]) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = step()
        best = min(best, time.perf_counter() - start)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / "tests/documents/corpus")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    settings = Settings()
    chunker = Chunker(settings.chunk_size, settings.chunk_overlap)
    embedder = get_embedder(settings)
    embedder.embed(["warm up"])
    rows: list[dict[str, Any]] = []
    for path in sorted(p for p in args.corpus.iterdir() if not p.name.endswith(".json")):
        if path.name == "README.md":
            continue
        read, docs = _best(args.repeat, lambda p=path: load_path(p, max_bytes=50 * 2**20))
        cut, chunks = _best(args.repeat, lambda d=docs[0]: chunker.chunks(d))
        inputs = _embedding_inputs(docs[0].title, chunks)
        embed, _ = _best(args.repeat, lambda i=inputs: embedder.embed(i))
        rows.append(
            {
                "file": path.name,
                "read_ms": round(read * 1000, 1),
                "chunk_ms": round(cut * 1000, 1),
                "embed_ms": round(embed * 1000, 1),
                "chunks": len(chunks),
                "embedded_chars": sum(len(i) for i in inputs),
            }
        )
        print(json.dumps(rows[-1]))
    total = {k: round(sum(r[k] for r in rows), 1) for k in rows[0] if k != "file"}
    print(json.dumps({"total": total}))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"files": rows, "total": total}, indent=1))


if __name__ == "__main__":
    main()
