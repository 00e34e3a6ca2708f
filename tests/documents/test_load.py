"""Reading files into documents: JSONL records, clear errors on bad input, size limits,
directories."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from convrag.documents import IngestError, expand_paths, load_path
from convrag.services import Services
from tests.documents.samples import docx_bytes, pdf_bytes, write


def test_jsonl_corpus_records_become_documents(docs_dir: Path) -> None:
    p = write(
        docs_dir,
        "c.jsonl",
        '{"_id": "p1", "title": "T", "text": "alpha"}\n'
        '{"_id": "p2", "title": "U", "text": "beta"}\n',
    )
    docs = load_path(p, max_bytes=10**6)
    assert [(d.source, d.title, d.text) for d in docs] == [
        ("p1", "T", "alpha"),
        ("p2", "U", "beta"),
    ]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.txt", None, "no such file"),
        ("slides.pptx", b"PK\x03\x04", "unsupported format '.pptx'"),
        ("empty.txt", b"", "the file is empty"),
        ("blank.md", b"  \n\t\n", "no text to index"),
        ("latin1.txt", "caf\u00e9 cr\u00e8me".encode("latin-1"), "not valid UTF-8"),
        ("bad.jsonl", b'{"title": "no id"}\n', "each line needs {_id, title, text}"),
        ("broken.pdf", b"%PDF-1.4 not really", "not a readable PDF"),
        ("scan.pdf", pdf_bytes([[]]), "no text to index (empty or whitespace only); a scanned"),
        ("broken.docx", b"PK\x03\x04 not really", "not a valid .docx file: "),
        ("old.docx", b"\xd0\xcf\x11\xe0 a Word 97 file", "save it as a Word document (.docx)"),
    ],
)
async def test_bad_input_fails_clearly_and_leaves_stores_untouched(
    services: Services,
    workspace: str,
    docs_dir: Path,
    name: str,
    content: bytes | None,
    message: str,
) -> None:
    path = docs_dir / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(IngestError, match=re.escape(message)) as info:
        load_path(path, max_bytes=services.settings.max_file_bytes)
    assert name in str(info.value)
    assert await services.db.chunk_texts(workspace) == []


def test_a_50mb_file_is_refused_with_the_limit_named(docs_dir: Path) -> None:
    path = docs_dir / "huge.txt"
    with open(path, "wb") as fh:
        fh.truncate(50 * 1024 * 1024)
    with pytest.raises(IngestError, match=r"50\.0 MiB is over the 20\.0 MiB limit"):
        load_path(path, max_bytes=20 * 1024 * 1024)


def test_a_directory_ingest_takes_docx_and_skips_what_it_cannot_read(docs_dir: Path) -> None:
    (docs_dir / "guide.docx").write_bytes(docx_bytes())
    (docs_dir / "~$guide.docx").write_bytes(b"lock file of an open document")
    (docs_dir / "deck.pptx").write_bytes(b"PK\x03\x04")
    (docs_dir / ".DS_Store").write_bytes(b"\x00")
    skipped: list[Path] = []
    assert expand_paths([docs_dir], skipped) == [docs_dir / "guide.docx"]
    assert skipped == [docs_dir / "deck.pptx"]
