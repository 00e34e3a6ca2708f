"""PDF files page by page: each page's text layer, its wrapped lines joined back into
paragraphs, headings kept apart from the sentences after them."""

from __future__ import annotations

import re
from pathlib import Path

from convrag.documents.blocks import LIST_ITEM, clean_line
from convrag.documents.load import IngestError

_TERMINAL = re.compile(r"[.!?…。！？:;][\"'”’)\]]*$")
"""A line that ends a sentence or a clause introducing what follows."""


def pdf_pages(path: Path, raw: bytes) -> list[str]:
    """The text of each page, in order (empty for a page without a text layer)."""
    import io
    import logging

    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError

    # pypdf logs what it repairs ("EOF marker not found") to stderr; a file it cannot
    # read raises, and the IngestError below says so once.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = PdfReader(io.BytesIO(raw))
        return [_pdf_page_text(page.extract_text() or "") for page in reader.pages]
    except FileNotDecryptedError as exc:
        raise IngestError(
            f"{path}: the PDF is password-protected; save a copy without the password "
            "(e.g. `qpdf --decrypt --password=... in.pdf out.pdf`) and ingest that"
        ) from exc
    except Exception as exc:  # pypdf raises many types on malformed files
        raise IngestError(
            f"{path}: not a readable PDF ({exc}); export or print it to PDF again"
        ) from exc


def _pdf_page_text(raw: str) -> str:
    """A page's extracted lines as paragraphs.

    A PDF has lines, not paragraphs. Lines that wrap a paragraph are joined with a
    space. A short line without end punctuation that the next line does not continue is
    a heading: it becomes its own paragraph, or it would read as the first words of the
    sentence after it. A short line that ends a sentence ends its paragraph; list items
    and table rows keep their own lines.
    """
    lines = [clean_line(line) for line in raw.replace("\x00", "").splitlines()]
    width = max((len(line) for line in lines), default=0)

    def full(line: str) -> bool:  # as wide as the page's text: it wraps, or may
        return len(line) >= 40 and len(line) >= 0.75 * width

    paragraphs: list[str] = []
    current = last = ""
    for k, line in enumerate(lines):
        if not line:
            if current:
                paragraphs.append(current)
            current = last = ""
            continue
        if current:
            nxt = lines[k + 1] if k + 1 < len(lines) else ""
            ended = bool(_TERMINAL.search(last))
            heading = (
                len(line) <= 80
                and not full(line)
                and not _TERMINAL.search(line)
                and not nxt[:1].islower()
            )
            if LIST_ITEM.match(line) and not line[0].islower():
                current += "\n" + line
            elif not ended and (line[0].islower() or full(last)):
                current += line if current.endswith("-") else " " + line
            elif heading or not (full(last) or (not ended and len(last) > 80)):
                paragraphs.append(current)
                current = line
            else:
                current += (" " if ended else "\n") + line
        else:
            current = line
        last = line
    if current:
        paragraphs.append(current)
    return "\n\n".join(paragraphs)
