"""Reading files into documents: JSONL records, clear errors on bad input, size limits,
directories."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from convrag.documents.base import IngestError
from convrag.documents.load import load_path
from convrag.services import Services
from tests.documents.samples import pdf_bytes


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.txt", None, "no such file"),
        ("slides.pptx", b"PK\x03\x04", "unsupported format '.pptx'"),
        ("empty.txt", b"", "the file is empty"),
        ("blank.md", b"  \n\t\n", "no text to index"),
        ("latin1.txt", "caf\u00e9 cr\u00e8me".encode("latin-1"), "not valid UTF-8"),
        ("bad.jsonl", b'{"title": "no id"}\n', "each line needs _id and text (title is optional)"),
        ("nul.jsonl", b'{"_id": "a", "title": "T\\u0000", "text": "x"}\n', "title contains a NUL"),
        ("nul2.jsonl", b'{"_id": "a", "text": "x\\u0000y"}\n', ":1: text contains a NUL"),
        ("list.jsonl", b'{"_id": "a", "title": ["x"], "text": "y"}\n', "title must be a string"),
        ("lone.jsonl", b'{"_id": "a", "text": "\\ud800"}\n', ":1: text contains a lone surrogate"),
        (
            "lone2.jsonl",
            b'{"_id": "a", "text": "x"}\n{"_id": "b", "title": "T\\udc00", "text": "x"}\n',
            ":2: title contains a lone surrogate",
        ),
        ("lone3.jsonl", b'{"_id": "a\\ud83d", "text": "x"}\n', ":1: _id contains a lone surrogate"),
        (
            "lone4.jsonl",
            b'{"_id": "a", "text": "x", "tags": ["ok", {"k": "\\ud83d"}]}\n',
            ":1: tags contains a lone surrogate",
        ),
        ("nul3.jsonl", b'{"_id": "a", "text": "x", "lang": "e\\u0000n"}\n', "lang contains a NUL"),
        (
            "upload.jsonl",
            b'{"_id": "upload:notes.txt", "text": "x"}\n',
            ":1: _id 'upload:notes.txt' starts with 'upload:'",
        ),
        ("path.jsonl", b'{"_id": "/srv/docs/notes.txt", "text": "x"}\n', "starts with '/'"),
        (
            "longid.jsonl",
            b'{"_id": "' + b"i" * 1001 + b'", "text": "x"}\n',
            ":1: _id is 1001 bytes long (UTF-8), over the limit of 1000 bytes",
        ),
        (
            "longtitle.jsonl",
            b'{"_id": "a", "title": "' + b"t" * 1001 + b'", "text": "x"}\n',
            ":1: title is 1001 characters long, over the limit of 1000",
        ),
        ("num.jsonl", b'{"_id": "a", "text": 5}\n', "text must be a string, got int"),
        ("noid.jsonl", b'{"_id": null, "text": "y"}\n', "_id must be a non-empty string"),
        (
            "dup.jsonl",
            b'{"_id": "a", "text": "x"}\n{"_id": "a", "text": "y"}\n',
            ":2: _id 'a' repeats line 1",
        ),
        ("broken.pdf", b"%PDF-1.4 not really", "not a readable PDF"),
        ("report.txt", b"%PDF-1.4\n1 0 obj\n<< >>\nendobj\n", "a PDF file under another name"),
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
    assert await services.db.documents.chunk_texts(workspace) == []
