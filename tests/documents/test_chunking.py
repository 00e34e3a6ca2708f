"""Chunks on paragraph and sentence boundaries."""

from __future__ import annotations

from pathlib import Path

from convrag.documents.chunking import Chunker
from convrag.documents.load import load_path
from convrag.services import Services
from tests.documents.samples import write


def test_long_documents_are_chunked_with_positions(services: Services, docs_dir: Path) -> None:

    text = " ".join(f"Sentence number {i} talks about topic {i % 7}." for i in range(400))
    p = write(docs_dir, "long.txt", text)
    chunks = Chunker(800, 100).split(load_path(p, max_bytes=10**6)[0])
    assert len(chunks) > 5 and all(len(c) <= 800 for c in chunks)
