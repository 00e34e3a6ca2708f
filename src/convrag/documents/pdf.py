"""PDF files page by page: each page's text layer, its wrapped lines joined back into
paragraphs, headings kept apart from the sentences after them, running headers, footers
and page numbers left out; and the document's title."""

from __future__ import annotations

import re
from pathlib import Path

from convrag.documents.blocks import LIST_ITEM, clean_line
from convrag.documents.load import IngestError

_TERMINAL = re.compile(r"[.!?…。！？:;][\"'”’)\]]*$")
"""A line that ends a sentence or a clause introducing what follows."""

_PAGE_NUMBER = re.compile(
    r"^(?:page\s*\d{1,4}(?:\s*(?:of|/)\s*\d{1,4})?|\d{1,4}\s*(?:of|/)\s*\d{1,4}"
    r"|[-–—]\s*\d{1,4}\s*[-–—])$",
    re.I,
)
"""A line that is plainly a page number ("Page 7", "Page 7 of 12", "7 of 12", "- 7 -"); a
bare "7" counts only when it recurs at the same edge of most pages."""

_EDGE = 2
"""How many lines at the top and at the bottom of a page can be a running header or
footer."""

_FILE_NAME = re.compile(r"\.(?:pdf|docx?|odt|rtf|txt|pptx?|xlsx?|indd)$", re.I)


def pdf_pages(path: Path, raw: bytes) -> tuple[str | None, list[str]]:
    """The document's title, if it has one, and the text of each page in order (empty
    for a page without a text layer).

    The title is the document property when it is a real title (not empty, not
    "Untitled", not a file name as exporters write it). The first line is not taken for
    one: it is as often a section heading.
    """
    import io
    import logging

    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError

    # pypdf logs what it repairs ("EOF marker not found") to stderr; a file it cannot
    # read raises, and the IngestError below says so once.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = PdfReader(io.BytesIO(raw))
        pages = [
            [
                clean_line(line)
                for line in (page.extract_text() or "").replace("\x00", "").splitlines()
            ]
            for page in reader.pages
        ]
        info = reader.metadata
        stated = _real_title(str(info.title or "") if info is not None else "", path)
    except FileNotDecryptedError as exc:
        raise IngestError(
            f"{path}: the PDF is password-protected; save a copy without the password "
            "(e.g. `qpdf --decrypt --password=... in.pdf out.pdf`) and ingest that"
        ) from exc
    except Exception as exc:  # pypdf raises many types on malformed files
        raise IngestError(
            f"{path}: not a readable PDF ({exc}); export or print it to PDF again"
        ) from exc
    texts = [_pdf_page_text(lines) for lines in _without_running_lines(pages)]
    return stated, texts


def _real_title(title: str, path: Path) -> str | None:
    """The title property, unless it is empty or what an exporter writes for a document
    without one."""
    title = clean_line(title)
    lowered = title.lower().removeprefix("microsoft word - ")
    if not title or lowered in ("untitled", "title", path.stem.lower()) or _FILE_NAME.search(title):
        return None
    return title


def _without_running_lines(pages: list[list[str]]) -> list[list[str]]:
    """Each page's lines less its running header and footer: a line within the first or
    last two of a page that repeats, figures aside, at the same edge of most pages
    (at least two), and a plain page number at either edge."""

    def shape(line: str) -> str:
        return re.sub(r"\d+", "#", line.lower())

    def edges(lines: list[str]) -> tuple[list[int], list[int]]:
        filled = [k for k, line in enumerate(lines) if line]
        return filled[:_EDGE], filled[-_EDGE:]

    counted = sum(1 for lines in pages if any(lines))
    seen: dict[tuple[str, str], int] = {}
    for lines in pages:
        for edge, found in zip(("top", "bottom"), edges(lines), strict=True):
            for key in {(edge, shape(lines[k])) for k in found}:
                seen[key] = seen.get(key, 0) + 1
    repeated = {key for key, n in seen.items() if n >= 2 and n >= 0.6 * counted}
    out: list[list[str]] = []
    for lines in pages:
        drop = {
            k
            for edge, found in zip(("top", "bottom"), edges(lines), strict=True)
            for k in found
            if (edge, shape(lines[k])) in repeated or _PAGE_NUMBER.match(lines[k])
        }
        out.append([line for k, line in enumerate(lines) if k not in drop])
    return out


def _pdf_page_text(lines: list[str]) -> str:
    """A page's extracted lines as paragraphs.

    A PDF has lines, not paragraphs. Lines that wrap a paragraph are joined with a
    space. A short line without end punctuation that the next line does not continue is
    a heading: it becomes its own paragraph, or it would read as the first words of the
    sentence after it. A short line that ends a sentence ends its paragraph; list items
    and table rows keep their own lines.
    """
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
