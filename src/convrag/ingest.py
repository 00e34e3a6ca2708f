"""Ingestion: load files, chunk them, embed, and write Postgres and Milvus together.

Files are read as their text: an HTML page's main content, a PDF page by page, a Word
document's paragraphs and tables (tables as Markdown rows). Chunks end on paragraph and
sentence boundaries and never span two PDF pages; a PDF chunk records its page.

Idempotent by content hash: an unchanged document changes nothing, a changed one
replaces its chunks in both stores, a deleted one leaves no chunk anywhere. Every input
is validated before any store is touched, and errors name the file and the fix.
Files uploaded to the HTTP service go through :func:`accept_upload`, which ingests them
in the background.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import hashlib
import json
import logging
import re
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from convrag.ids import check_id, chunk_id_for, document_id_for
from convrag.stores.database import DocumentWrite
from convrag.stores.vectors import VectorIndex, VectorRow

if TYPE_CHECKING:
    from convrag.services import Services

SUPPORTED = (
    ".txt",
    ".md",
    ".markdown",
    ".html",
    ".htm",
    ".pdf",
    ".docx",
    ".jsonl",
    ".jsonl.gz",
)


class IngestError(ValueError):
    """Bad input for ingestion; the message names the file and the problem."""


@dataclass(frozen=True, slots=True)
class SourceDocument:
    """One document before chunking.

    ``pages`` holds a PDF's text page by page (``pages[0]`` is page 1, empty for a page
    without text), so that chunks can keep to a page and name it; ``text`` is then the
    pages joined by blank lines. Other formats have no pages.
    """

    source: str
    title: str | None
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    pages: tuple[str, ...] = ()


@dataclass(slots=True)
class IngestReport:
    """What an ingest run did."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    chunks_written: int = 0
    document_ids: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "chunks_written": self.chunks_written,
        }


def _suffix(path: Path) -> str:
    name = path.name.lower()
    return ".jsonl.gz" if name.endswith(".jsonl.gz") else path.suffix.lower()


def _decode(path: Path, raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise IngestError(
            f"{path}: not valid UTF-8 (byte {exc.start}); convert it, e.g. "
            f"`iconv -f latin1 -t utf-8 {path.name}`"
        ) from exc


def _read_checked(path: Path, max_bytes: int) -> bytes:
    size = path.stat().st_size
    if size > max_bytes:
        raise IngestError(
            f"{path}: {size / 2**20:.1f} MiB is over the {max_bytes / 2**20:.1f} MiB limit; "
            "split the file or raise MAX_FILE_BYTES"
        )
    if size == 0:
        raise IngestError(f"{path}: the file is empty")
    return path.read_bytes()


# -- HTML ---------------------------------------------------------------------

_HTML_NEVER_CONTENT = (
    "head",
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "iframe",
    "nav",
)
"""Elements that never hold a page's text: metadata, code, styling, frames, menus."""

_HTML_CHROME_ROLES = ("navigation", "banner", "contentinfo", "search")
"""ARIA roles of page chrome, for sites that mark their menus with ``role`` only."""

_HTML_BLOCKS = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
        "caption",
        "center",
        "dd",
        "details",
        "dialog",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "footer",
        "hr",
        "html",
        "legend",
        "li",
        "main",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "ul",
    }
)
"""Elements that start a new paragraph; every other element (a, b, em, span, code...) is
inline and stays inside its sentence."""


def _html_text(html: str) -> tuple[str | None, str]:
    """The page's title and its main content as text.

    trafilatura decides what the main content is (navigation, headers, footers, sidebars
    and cookie banners go); inline elements stay inside their sentence, and each block
    (paragraph, heading, list item) is a paragraph of the text. Tables are rendered here
    as Markdown rows rather than by trafilatura, whose filter for share buttons drops any
    cell that reads "Mail", "PDF", "Print", "Google" and the like: each table is swapped
    for a placeholder paragraph first, so it is kept exactly when trafilatura keeps the
    place it stood in. A page too small for trafilatura to find main content in (a
    fragment with a paragraph or two) gives its whole body text instead.
    """
    import trafilatura
    from bs4 import BeautifulSoup

    # trafilatura logs an ERROR for every page it finds no main content in; such a page
    # is ingested all the same (the fallback below), so the message would mislead.
    logging.getLogger("trafilatura").setLevel(logging.CRITICAL)
    soup = BeautifulSoup(html, "html.parser")
    title = _html_title(soup)
    _drop_html_chrome(soup)
    token = f"convragtable{uuid.uuid4().hex}n"
    tables: dict[str, str] = {}
    for i, table in enumerate([t for t in soup.find_all("table") if not t.find_parent("table")]):
        rows, header = _html_table_rows(table)
        if not rows:
            table.decompose()
            continue
        key = f"{token}{i}"
        tables[key] = _markdown_rows(rows, header=header)
        placeholder = soup.new_tag("p")
        placeholder.string = key
        table.replace_with(placeholder)
    extracted = trafilatura.extract(
        str(soup),
        output_format="txt",
        include_comments=False,
        include_tables=False,
        include_images=False,
        include_links=False,
        include_formatting=False,
        deduplicate=False,
        with_metadata=False,
    )
    if extracted and extracted.strip():
        lines = extracted.splitlines()
    else:
        lines = _html_blocks(soup.body or soup)
    split = re.compile(f"({re.escape(token)}\\d+)")
    blocks: list[str] = []
    for line in lines:
        for part in split.split(line):
            block = tables.get(part) or _clean_line(part)
            if block:
                blocks.append(block)
    return title, _join_blocks(blocks)


def _html_title(soup: Any) -> str | None:
    """The page's ``<title>``, else its first ``<h1>``, else None."""
    for tag in (soup.title, soup.find("h1")):
        if tag is not None:
            text = " ".join(tag.get_text(" ").split())
            if text:
                return text
    return None


def _drop_html_chrome(soup: Any) -> None:
    """Remove what is never content: scripts, styles, menus, and the page's own header
    and footer (those inside an ``<article>`` or ``<main>`` hold its title and notes,
    and stay)."""
    from bs4.element import Tag

    doomed: list[Tag] = list(soup.find_all(_HTML_NEVER_CONTENT))
    doomed += [
        t for t in soup.find_all(("header", "footer")) if not t.find_parent(("article", "main"))
    ]
    doomed += soup.find_all(attrs={"role": list(_HTML_CHROME_ROLES)})
    for tag in doomed:
        if not tag.decomposed:
            tag.decompose()


def _html_blocks(node: Any) -> list[str]:
    """The text of ``node`` as paragraphs: one per block element, inline elements kept in
    their sentence, ``<br>`` as a line break, list items as ``- item``."""
    from bs4.element import NavigableString, Tag

    blocks: list[str] = []
    buf: list[str] = []

    def flush() -> None:
        lines = [_clean_line(line) for line in "".join(buf).split("\n")]
        buf.clear()
        para = "\n".join(line for line in lines if line)
        if para:
            blocks.append(para)

    def walk(el: Tag) -> None:
        for child in el.children:
            if isinstance(child, Tag):
                if child.name == "br":
                    buf.append("\n")
                elif child.name == "li":
                    flush()
                    buf.append("- ")
                    walk(child)
                    flush()
                elif child.name in _HTML_BLOCKS:
                    flush()
                    walk(child)
                    flush()
                else:
                    walk(child)
            elif type(child) is NavigableString:  # not a comment, doctype or CDATA
                buf.append(_spaces(child))

    walk(node)
    flush()
    return blocks


def _spaces(text: str) -> str:
    """Source whitespace, line breaks included, as single spaces (``<br>`` breaks lines)."""
    return re.sub(r"\s+", " ", text)


def _html_table_rows(table: Any) -> tuple[list[list[str]], bool]:
    """A table's rows as cell texts (a nested table flattened into its cell), and whether
    its first row is a header row (``<th>`` cells, or inside ``<thead>``)."""
    rows: list[list[str]] = []
    header = False
    for tr in table.find_all("tr"):
        if tr.find_parent("table") is not table:
            continue
        cells: list[str] = []
        tags = tr.find_all(("td", "th"), recursive=False)
        for cell in tags:
            cells.append(" ".join(" ".join(_html_blocks(cell)).split()))
            span = str(cell.get("colspan") or "1")
            cells.extend([""] * (min(int(span), 50) - 1 if span.isdigit() else 0))
        if any(cells):
            if not rows:
                header = tr.find_parent("thead") is not None or all(t.name == "th" for t in tags)
            rows.append(cells)
    return rows, header


def _markdown_rows(rows: Sequence[Sequence[str]], *, header: bool) -> str:
    """``| a | b |`` lines, padded to the widest row; a ``| --- |`` line under a header."""
    width = max(len(r) for r in rows)

    def line(cells: Sequence[str]) -> str:
        padded = [c.replace("|", "\\|") for c in cells] + [""] * (width - len(cells))
        return "| " + " | ".join(padded) + " |"

    lines = [line(r) for r in rows]
    if header and len(lines) > 1:
        lines.insert(1, line(["---"] * width))
    return "\n".join(lines)


def _clean_line(text: str) -> str:
    """``text`` with runs of whitespace as single spaces, trimmed."""
    return " ".join(text.split())


def _join_blocks(blocks: Sequence[str]) -> str:
    """Paragraphs separated by blank lines; consecutive list items stay one list."""
    out: list[str] = []
    for n, block in enumerate(blocks):
        if n:
            listed = block.startswith("- ") and blocks[n - 1].startswith("- ")
            out.append("\n" if listed else "\n\n")
        out.append(block)
    return "".join(out)


# -- PDF ----------------------------------------------------------------------

_TERMINAL = re.compile(r"[.!?…。！？:;][\"'”’)\]]*$")
"""A line that ends a sentence or a clause introducing what follows."""

_LIST_ITEM = re.compile(r"^(?:[-*•◦▪·–]\s|\(?\d{1,3}[.)]\s|\(?[a-z][.)]\s|\|)")
"""A line that starts a list item or a table row."""


def _pdf_pages(path: Path, raw: bytes) -> list[str]:
    """The text of each page, in order (empty for a page without a text layer)."""
    import io

    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError

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
    lines = [_clean_line(line) for line in raw.replace("\x00", "").splitlines()]
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
            if _LIST_ITEM.match(line) and not line[0].islower():
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


# -- Word ---------------------------------------------------------------------


def _docx_text(path: Path, raw: bytes) -> tuple[str | None, str]:
    """A Word document's title (its document property) and its body text: paragraphs in
    order, headings as their own paragraphs, list items as ``- item``, tables as
    Markdown rows. Page headers, footers and comments are not the document's text."""
    import io

    import docx
    from docx.table import Table

    try:
        document = docx.Document(io.BytesIO(raw))
        blocks: list[str] = []
        for item in document.iter_inner_content():
            if isinstance(item, Table):
                rows, header = _docx_table_rows(item)
                if rows:
                    blocks.append(_markdown_rows(rows, header=header))
                continue
            lines = [_clean_line(line) for line in item.text.split("\n")]
            text = "\n".join(line for line in lines if line)
            if text:
                pPr = item._p.pPr
                listed = pPr is not None and pPr.numPr is not None
                style = item.style.name if item.style is not None else ""
                blocks.append(f"- {text}" if listed or style.startswith("List") else text)
        title = _clean_line(document.core_properties.title or "") or None
    except Exception as exc:  # python-docx raises zip, XML and lookup errors alike
        detail = str(exc).strip("\"'") or type(exc).__name__
        raise IngestError(
            f"{path}: not a valid .docx file: {detail}; open it in Word or LibreOffice "
            "and save it as a Word document (.docx)"
        ) from exc
    return title, _join_blocks(blocks)


def _docx_table_rows(table: Any) -> tuple[list[list[str]], bool]:
    """A Word table's rows as cell texts (a merged cell once), and whether its first row
    repeats as a header row."""
    rows: list[list[str]] = []
    for row in table.rows:
        cells: list[str] = []
        seen: Any = None
        for cell in row.cells:
            if cell._tc is seen:  # a horizontally merged cell is listed once per column
                continue
            seen = cell._tc
            cells.append(_clean_line(_docx_cell_text(cell)))
        if any(cells):
            rows.append(cells)
    first = table.rows[0]._tr if len(table.rows) else None
    header = first is not None and bool(first.xpath("./w:trPr/w:tblHeader"))
    return rows, header


def _docx_cell_text(cell: Any) -> str:
    """A table cell's text, a table nested in it included."""
    from docx.table import Table

    parts: list[str] = []
    for item in cell.iter_inner_content():
        if isinstance(item, Table):
            parts.extend(_docx_cell_text(c) for row in item.rows for c in row.cells)
        else:
            parts.append(item.text)
    return " ".join(parts)


def _jsonl_records(path: Path, raw: bytes) -> Iterator[SourceDocument]:
    if _suffix(path) == ".jsonl.gz":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise IngestError(f"{path}: not a valid gzip file ({exc})") from exc
    text = _decode(path, raw)
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise IngestError(f"{path}:{lineno}: invalid JSON ({exc.msg})") from exc
        if not isinstance(rec, dict) or "_id" not in rec or "text" not in rec:
            raise IngestError(
                f"{path}:{lineno}: each line needs {{_id, title, text}}; got keys "
                f"{sorted(rec) if isinstance(rec, dict) else type(rec).__name__}"
            )
        meta = {k: v for k, v in rec.items() if k not in ("_id", "title", "text")}
        yield SourceDocument(str(rec["_id"]), rec.get("title") or None, str(rec["text"]), meta)


def load_path(path: Path, *, max_bytes: int) -> list[SourceDocument]:
    """Read one file into documents, or raise :class:`IngestError` naming the problem."""
    if not path.exists():
        raise IngestError(f"{path}: no such file or directory")
    suffix = _suffix(path)
    if suffix not in SUPPORTED:
        raise IngestError(
            f"{path}: unsupported format {suffix or '(no extension)'!r}; "
            f"supported: {', '.join(SUPPORTED)}"
        )
    raw = _read_checked(path, max_bytes)
    source = str(path.resolve())
    if suffix in (".jsonl", ".jsonl.gz"):
        docs = list(_jsonl_records(path, raw))
        if not docs:
            raise IngestError(f"{path}: no records")
        return docs
    pages: tuple[str, ...] = ()
    title: str | None = path.stem
    if suffix == ".pdf":
        pages = tuple(_pdf_pages(path, raw))
        text = "\n\n".join(p for p in pages if p)
    elif suffix == ".docx":
        doc_title, text = _docx_text(path, raw)
        title = doc_title or path.stem
    elif suffix in (".html", ".htm"):
        html_title, text = _html_text(_decode(path, raw))
        title = html_title or path.stem
    else:
        text = _decode(path, raw)
    if "\x00" in text:
        raise IngestError(f"{path}: contains NUL bytes; is it a binary file?")
    if not text.strip():
        hint = "; a scanned PDF needs OCR first (e.g. `ocrmypdf`)" if suffix == ".pdf" else ""
        raise IngestError(f"{path}: no text to index (empty or whitespace only){hint}")
    metadata: dict[str, Any] = {"path": source, "format": suffix}
    if pages:
        metadata["pages"] = len(pages)
    return [SourceDocument(source, title, text, metadata, pages)]


def expand_paths(paths: Iterable[Path], skipped: list[Path] | None = None) -> list[Path]:
    """Files named directly, plus supported files found under named directories.

    Unsupported files found under a directory are appended to ``skipped`` (hidden files
    such as ``.DS_Store`` are not worth a mention and are left out of it). Office's lock
    files (``~$report.docx``, present while the document is open) are not documents and
    are left out of both.
    """
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            files = sorted(f for f in p.rglob("*") if f.is_file() and not f.name.startswith("~$"))
            found = [f for f in files if _suffix(f) in SUPPORTED]
            if skipped is not None:
                skipped.extend(
                    f for f in files if _suffix(f) not in SUPPORTED and not f.name.startswith(".")
                )
            if not found:
                raise IngestError(
                    f"{p}: directory holds no supported files ({', '.join(SUPPORTED)})"
                )
            out.extend(found)
        else:
            out.append(p)
    return out


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a document as stored and embedded; ``page`` is its 1-based PDF page."""

    text: str
    page: int | None = None


_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
_LINE_BREAK = re.compile("\n")
_SENTENCE_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s)|[。！？]+[」』”’)]*")
_NON_SPACE = re.compile(r"\S")
_ENDS_SENTENCE = re.compile(r"[.!?…。！？][\"'”’)\]」』]*$")
_ABBREVIATIONS = frozenset(
    {"e.g", "i.e", "vs", "mr", "mrs", "ms", "dr", "prof", "st", "approx", "dept", "jr", "sr", "cf"}
)
"""Words whose period does not end a sentence (lower case, without the final period)."""
_NUMBER_ABBREVIATIONS = frozenset({"no", "nos", "fig", "figs", "p", "pp", "vol", "ch", "sec"})
"""Words whose period does not end a sentence when a number follows ("see Fig. 3")."""


@dataclass(slots=True)
class _Unit:
    """A sentence (or a line that is not part of one) at ``text[start:end]``; ``gap`` is
    what separates it from the next: a paragraph break, a line break, or a space."""

    start: int
    end: int
    gap: Literal["paragraph", "line", "space"] = "space"


def _pieces(text: str, start: int, end: int, sep: re.Pattern[str]) -> list[tuple[int, int]]:
    """The non-blank spans of ``text[start:end]`` between matches of ``sep``, trimmed."""
    spans: list[tuple[int, int]] = []
    pos = start
    for m in [*sep.finditer(text, start, end), None]:
        stop = end if m is None else m.start()
        piece = text[pos:stop]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            spans.append((pos + lead, pos + len(piece.rstrip())))
        if m is not None:
            pos = m.end()
    return spans


def _continues(line: str, nxt: str) -> bool:
    """Whether ``nxt`` is the same sentence as ``line``, wrapped onto a new line."""
    if _ENDS_SENTENCE.search(line) or _LIST_ITEM.match(nxt) or line.startswith("|"):
        return False
    return nxt[:1].islower() or len(line) >= 50


def _sentence_ends(text: str, start: int, end: int) -> list[int]:
    """Offsets in ``text[start:end]`` where a sentence ends and another follows."""
    ends: list[int] = []
    for m in _SENTENCE_END.finditer(text, start, end):
        after = _NON_SPACE.search(text, m.end(), end)
        if after is None:
            break
        nxt = after.group()
        if m.group()[0] == ".":
            # Only the word before the period matters: a bounded look back keeps this
            # linear on a long paragraph.
            before = text[max(start, m.start() - 40) : m.start()].split()
            word = before[-1].lstrip("(\"'“‘[").lower() if before else ""
            if word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
                continue  # "e.g. the", "Dr. Smith", "J. Smith"
            if word in _NUMBER_ABBREVIATIONS and nxt.isdigit():
                continue  # "No. 5", "Fig. 3"
            lead = m.start() - len(word) - start
            if word.isdigit() and lead <= 2 and not text[start : start + lead].strip():
                continue  # "1. Scope": a numbered item, not a sentence
        if m.group()[0] in ".!?…" and nxt.islower():
            continue  # "approx. twenty", "Acme Inc. and ..."
        ends.append(m.end())
    return ends


def _units(text: str) -> list[_Unit]:
    """``text`` cut into sentences, and into the lines of lists, tables and records."""
    units: list[_Unit] = []
    for p_start, p_end in _pieces(text, 0, len(text), _PARAGRAPH_BREAK):
        lines = _pieces(text, p_start, p_end, _LINE_BREAK)
        groups: list[list[int]] = []
        for s, e in lines:
            if groups and _continues(text[groups[-1][2] : groups[-1][1]], text[s:e]):
                groups[-1][1] = e
                groups[-1][2] = s
            else:
                groups.append([s, e, s])
        for g_start, g_end, _ in groups:
            pos = g_start
            for cut in _sentence_ends(text, g_start, g_end):
                units.append(_Unit(pos, cut))
                nxt = _NON_SPACE.search(text, cut, g_end)
                pos = g_end if nxt is None else nxt.start()
            units.append(_Unit(pos, g_end, "line"))
        units[-1].gap = "paragraph"
    return units


def _heading_like(text: str) -> bool:
    """A short line without end punctuation: a title that belongs with what follows."""
    return (
        len(text) <= 100
        and "\n" not in text
        and not _ENDS_SENTENCE.search(text)
        and (not text.startswith(("|", "- ")))
    )


def _split_long(text: str, size: int) -> list[str]:
    """One sentence longer than ``size``, cut between words (inside a word only when the
    word alone is longer than ``size``)."""
    out: list[str] = []
    start: int | None = None
    end = 0
    for word in re.finditer(r"\S+", text):
        if start is None:
            start = word.start()
        elif word.end() - start > size:
            out.append(text[start:end])
            start = word.start()
        while word.end() - start > size:
            out.append(text[start : start + size])
            start += size
        end = word.end()
    if start is not None and end > start:
        out.append(text[start:end])
    return out


def _pack(text: str, units: Sequence[_Unit], size: int, overlap: int) -> list[str]:
    """Consecutive units into chunks of at most ``size`` characters.

    A chunk ends at a paragraph break when one leaves it at least half full, else after
    the last sentence that fits, and never on a heading that has text after it. The next
    chunk starts with the last whole sentences of this one that fit in ``overlap``
    characters, if any do.
    """
    chunks: list[str] = []
    n = len(units)
    i = first = 0  # the first unit no chunk holds yet; the next chunk's first unit
    while i < n:
        if units[i].end - units[i].start > size:
            chunks.extend(_split_long(text[units[i].start : units[i].end], size))
            i = first = i + 1
            continue
        while units[i].end - units[first].start > size:
            first += 1
        start = units[first].start
        j = i
        while j + 1 < n and units[j + 1].end - start <= size:
            j += 1
        if j + 1 < n:
            for k in range(j, i - 1, -1):
                if units[k].gap == "paragraph" and units[k].end - start >= size // 2:
                    j = k
                    break
            if j > i and _heading_like(text[units[j].start : units[j].end]):
                j -= 1
        chunks.append(text[start : units[j].end])
        nxt = j + 1
        for k in range(max(i, first + 1), j + 1):
            if units[j].end - units[k].start <= overlap:
                nxt = k
                break
        i, first = j + 1, nxt
    return chunks


class Chunker:
    """Cuts documents into chunks of at most ``chunk_size`` characters on paragraph and
    sentence boundaries, a PDF page at a time.

    A chunk ends mid-sentence only when one sentence is longer than ``chunk_size``.
    Consecutive chunks share up to ``chunk_overlap`` characters of whole sentences. A
    text that fits in one chunk is that chunk, unchanged (trimmed): its chunk id stays
    the same across versions of this splitter.
    """

    def __init__(self, chunk_size: int, chunk_overlap: int) -> None:
        if chunk_overlap >= chunk_size:
            raise ValueError(
                f"CHUNK_OVERLAP ({chunk_overlap}) must be smaller than CHUNK_SIZE ({chunk_size})"
            )
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap

    def chunks(self, doc: SourceDocument) -> list[Chunk]:
        """The document's chunks in order; a PDF's never span two pages."""
        if doc.pages:
            return [
                Chunk(text, page)
                for page, page_text in enumerate(doc.pages, start=1)
                for text in self._split(page_text)
            ]
        return [Chunk(text) for text in self._split(doc.text)]

    def split(self, doc: SourceDocument) -> list[str]:
        """The texts of :meth:`chunks`."""
        return [c.text for c in self.chunks(doc)]

    def _split(self, text: str) -> list[str]:
        text = text.strip()
        if len(text) <= self.chunk_size:
            return [text] if text else []
        return _pack(text, _units(text), self.chunk_size, self.chunk_overlap)


ProgressFn = Callable[[int], None]


async def ingest_documents(
    services: Services,
    workspace_id: str,
    documents: Sequence[SourceDocument],
    *,
    batch_docs: int = 128,
    progress: ProgressFn | None = None,
) -> IngestReport:
    """Ingest already-loaded documents; ``progress`` is called with documents done."""
    check_id(workspace_id)
    settings = services.settings
    chunker = Chunker(settings.chunk_size, settings.chunk_overlap)
    report = IngestReport()
    seen: set[str] = set()
    for start in range(0, len(documents), batch_docs):
        batch = [d for d in documents[start : start + batch_docs] if d.source not in seen]
        seen.update(d.source for d in batch)
        existing = await services.db.existing_documents(workspace_id, [d.source for d in batch])
        writes: list[DocumentWrite] = []
        texts: list[str] = []
        for doc in batch:
            content_hash = hashlib.sha256(
                json.dumps([doc.title, doc.text], ensure_ascii=False).encode()
            ).hexdigest()
            doc_id = document_id_for(workspace_id, doc.source)
            report.document_ids.append(doc_id)
            if doc.source in existing and existing[doc.source][1] == content_hash:
                report.unchanged += 1
                continue
            pieces = chunker.chunks(doc)
            chunks = [(chunk_id_for(doc_id, i, c.text), i, c.text) for i, c in enumerate(pieces)]
            writes.append(
                DocumentWrite(
                    doc_id,
                    doc.source,
                    doc.title,
                    content_hash,
                    doc.metadata,
                    chunks,
                    chunk_metadata=[{} if c.page is None else {"page": c.page} for c in pieces],
                )
            )
            texts.extend(t for _, _, t in chunks)
            if doc.source in existing:
                report.updated += 1
            else:
                report.added += 1
        if writes:
            # Titles help retrieval of short passages; the stored text stays the chunk alone.
            embed_inputs: list[str] = []
            for w in writes:
                embed_inputs.extend(f"{w.title}\n{t}" if w.title else t for _, _, t in w.chunks)
            vectors = await asyncio.to_thread(services.embedder.embed, embed_inputs)
            rows: list[VectorRow] = []
            i = 0
            for n, w in enumerate(writes):
                start_i = i
                for cid, _, text in w.chunks:
                    rows.append(VectorRow(cid, w.document_id, text, vectors[i].tolist()))
                    i += 1
                writes[n] = replace(w, embeddings=[v.tobytes() for v in vectors[start_i:i]])
            # Milvus first (new rows, then the replaced ones), Postgres last: its commit
            # moves index_version, so in-process engines reload only finished data. A
            # crash before it leaves Postgres on the old hash: the next run redoes the
            # document and converges.
            await asyncio.to_thread(services.index.upsert, workspace_id, rows)
            keep = {cid for w in writes for cid, _, _ in w.chunks}
            for w in writes:
                if w.source in existing:
                    await asyncio.to_thread(
                        _delete_stale, services.index, workspace_id, w.document_id, keep
                    )
            await services.db.replace_documents(workspace_id, writes)
            report.chunks_written += len(rows)
        if progress is not None:
            progress(len(batch))
    if report.chunks_written:
        # Milvus Lite searches unflushed (growing) rows in Python: about 600 ms at 16k
        # rows against about 50 ms once sealed. One flush per ingest run.
        await asyncio.to_thread(services.index.flush)
        if services.warm_after_ingest:
            # The server should not make the next question wait for the in-process
            # engines to reload; a one-shot CLI ingest should not wait for them at all.
            services.spawn(services.searcher.warm(workspace_id))
    return report


def _delete_stale(index: VectorIndex, workspace_id: str, document_id: str, keep: set[str]) -> None:
    stale = [c for c in index.chunk_ids_of_document(workspace_id, document_id) if c not in keep]
    index.delete_chunks(stale)


async def accept_upload(services: Services, workspace_id: str, filename: str, data: bytes) -> str:
    """Save an uploaded file and ingest it in the background; returns its document id.

    The file is read before this returns, so a bad one raises :class:`IngestError`
    (naming ``filename``, not the path it was saved at) and no document is recorded. Its
    documents are recorded as ``processing`` first, then ``ready`` by the ingest or
    ``failed`` with the error, which the caller polls for.
    """
    settings = services.settings
    upload_dir = settings.data_dir / "uploads" / workspace_id / uuid.uuid4().hex
    upload_dir.mkdir(parents=True, exist_ok=True)
    path = upload_dir / filename
    path.write_bytes(data)
    try:
        docs = load_path(path, max_bytes=settings.max_file_bytes)
    except IngestError as exc:
        path.unlink(missing_ok=True)
        raise IngestError(str(exc).replace(str(path), filename)) from exc
    if len(docs) == 1:
        # Each upload is saved under a fresh directory; naming the document by the file's
        # name instead makes uploading the same name again replace it, as ingesting the
        # same path again does.
        doc = docs[0]
        meta = {**doc.metadata, "path": str(path), "filename": filename}
        docs = [replace(doc, source=f"upload:{filename}", metadata=meta)]

    async def mark(status: str, error: str | None = None) -> None:
        for d in docs:
            await services.db.upsert_document_status(
                workspace_id,
                document_id_for(workspace_id, d.source),
                d.source,
                status=status,
                title=d.title,
                error=error,
            )

    await mark("processing")

    async def run() -> None:
        try:
            await ingest_documents(services, workspace_id, docs)
        except Exception as exc:  # recorded on the document, readable by the client
            await mark("failed", error=str(exc)[:500])

    services.spawn(run())
    return document_id_for(workspace_id, docs[0].source)


async def delete_document(services: Services, workspace_id: str, document_id: str) -> bool:
    """Delete a document from Milvus, then from Postgres (chunks cascade).

    Milvus goes first: Postgres's delete moves the workspace's ``index_version``, which
    makes in-process engines reload from Milvus, and they must not see the old rows. An
    uploaded file goes with its document.
    """
    row = await services.db.get_document(workspace_id, document_id)
    if row is None:
        return False
    await asyncio.to_thread(services.index.delete_document, workspace_id, document_id)
    deleted = await services.db.delete_document(workspace_id, document_id)
    if deleted:
        uploaded = (row.get("metadata") or {}).get("path")
        if uploaded:
            await asyncio.to_thread(_remove_upload, services.settings.data_dir, Path(uploaded))
    return deleted


def _remove_upload(data_dir: Path, path: Path) -> None:
    """Remove an uploaded file and its per-upload directory, only under ``data_dir/uploads``."""
    uploads = (data_dir / "uploads").resolve()
    path = path.resolve()
    if uploads not in path.parents:
        return
    path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # not empty: another document's file is there
        path.parent.rmdir()
