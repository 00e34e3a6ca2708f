"""What the file loader (:mod:`~convrag.documents.load`) and the format readers
(:mod:`~convrag.documents.html`, :mod:`~convrag.documents.pdf`,
:mod:`~convrag.documents.docx`) share, below all of them: the document record they make,
the error they raise, and how that error words a size limit."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class IngestError(ValueError):
    """Bad input for ingestion; the message names the file and the problem."""


class NothingToIndex(IngestError):
    """A file that reads but holds no text to index: an empty file, a JSONL file without
    records, a page of navigation alone (a manual's index pages). Nothing is wrong with
    it and nothing can be fixed, so a folder's ingest notes it as skipped instead of
    failing; named alone (or uploaded) it is still refused, since nothing would go in.
    ``reason`` is the short form a summary lists ("navigation only")."""

    def __init__(self, path: Path, reason: str, detail: str = "") -> None:
        super().__init__(f"{path}: {detail or reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True, slots=True)
class SourceDocument:
    """One document before chunking.

    ``pages`` holds a PDF's text page by page (``pages[0]`` is page 1, empty for a page
    without text), so that chunks can keep to a page and name it; ``text`` is then the
    pages joined by blank lines. Other formats have no pages. ``headings_marked`` says
    that the text marks its section headings as Markdown does (``## Heading``, code in
    fenced blocks), as the readers of files write it (a plain text file's drawn and
    AsciiDoc headings marked so by :mod:`~convrag.documents.plain`); JSONL records are
    taken as they are, a line starting with "# " included.
    """

    source: str
    title: str | None
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    pages: tuple[str, ...] = ()
    headings_marked: bool = False


def mib(n: int) -> str:
    """``n`` bytes in MiB, to one decimal."""
    return f"{n / 2**20:.1f}"


def size_text(n: int) -> str:
    """``n`` bytes as a person reads a limit: MiB from one up, else bytes."""
    return f"{mib(n)} MiB" if n >= 2**20 else f"{n} byte"


def over_decompressed_limit(path: Path, limit: int) -> IngestError:
    """The error of a compressed file that expands past ``MAX_DECOMPRESSED_BYTES``."""
    return IngestError(
        f"{path}: decompresses to over the {size_text(limit)} limit; split the file or raise "
        "MAX_DECOMPRESSED_BYTES"
    )
