"""Reading files into :class:`SourceDocument` objects: which formats are supported, the
checks every file passes (size, encoding, some text), the JSONL corpus reader (which
bounds what a ``.jsonl.gz`` file may decompress to), and the expansion of directories
into the files under them. HTML, PDF and Word files are read by
:mod:`convrag.documents.html`, :mod:`~convrag.documents.pdf` and
:mod:`~convrag.documents.docx`, a plain text file's headings and title by
:mod:`~convrag.documents.plain`; every file's text and title come out in plain typography
(JSONL records stay as written); errors name the file and the fix. The record, the error
and its wording of a size limit are :mod:`~convrag.documents.base`'s, which the readers
share."""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from convrag.config import DEFAULT_MAX_DECOMPRESSED_BYTES, DEFAULT_MAX_RECORDS
from convrag.documents.base import (
    IngestError,
    NothingToIndex,
    SourceDocument,
    mib,
    over_decompressed_limit,
    size_text,
)
from convrag.documents.blocks import clean_line, plain_typography
from convrag.documents.docx import docx_text
from convrag.documents.html import html_text, markdown_text
from convrag.documents.pdf import pdf_pages
from convrag.documents.plain import read_text

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


def _suffix(path: Path) -> str:
    name = path.name.lower()
    return ".jsonl.gz" if name.endswith(".jsonl.gz") else path.suffix.lower()


def _decode(path: Path, raw: bytes) -> str:
    if raw.lstrip()[:5] == b"%PDF-":
        raise IngestError(f"{path}: a PDF file under another name; rename it to .pdf")
    if looks_binary(raw):
        raise IngestError(
            f"{path}: a binary file, not text (NUL bytes in its first 8 KiB); ingest the "
            f"document it came from in a supported format ({', '.join(SUPPORTED)})"
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise IngestError(
            f"{path}: not valid UTF-8 (byte {exc.start}); convert it, e.g. "
            f"`iconv -f latin1 -t utf-8 {path.name}`"
        ) from exc


def looks_binary(raw: bytes) -> bool:
    """Whether ``raw`` is binary data: text in UTF-8 or a legacy 8-bit code page has no
    NUL bytes (UTF-16 text does; it is not supported either)."""
    return b"\x00" in raw[:8192]


def _read_checked(path: Path, max_bytes: int) -> bytes:
    size = path.stat().st_size
    if size > max_bytes:
        raise IngestError(
            f"{path}: {mib(size)} MiB is over the {mib(max_bytes)} MiB limit; "
            "split the file or raise MAX_FILE_BYTES"
        )
    if size == 0:
        raise NothingToIndex(path, "empty file", "the file is empty")
    return path.read_bytes()


#: Bytes decompressed per read of a ``.jsonl.gz`` file, and the longest line read at once.
_READ_CHUNK = 1 << 20


def _gzip_lines(path: Path, raw: bytes, limit: int) -> Iterator[bytes]:
    """The decompressed lines of ``raw``, refused once they pass ``limit`` bytes.

    Decompression runs a bounded read at a time and counts what came out, so a small
    file that expands to gigabytes (a "gzip bomb") stops at ``limit`` bytes instead of
    filling memory; ``gzip.decompress`` would expand it whole first.
    """
    total = 0
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as stream:
            while line := stream.readline(min(_READ_CHUNK, limit - total + 1)):
                total += len(line)
                if total > limit:
                    raise over_decompressed_limit(path, limit)
                yield line
    except (OSError, EOFError, zlib.error) as exc:
        raise IngestError(f"{path}: not a valid gzip file ({exc})") from exc


def _lines(
    path: Path, raw: bytes, max_decompressed: int, max_line: int
) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of a JSONL file, decoded as UTF-8 (a leading BOM dropped).

    Lines end at a newline byte only: ``str.splitlines`` would also cut at characters
    such as U+2028 that JSON strings may hold raw. A line longer than one read of a gzip stream
    arrives in pieces, which are joined here; one over ``max_line`` bytes is refused (it
    would be refused as a file of its own).
    """
    gz = _suffix(path) == ".jsonl.gz"
    pieces = _gzip_lines(path, raw, max_decompressed) if gz else iter(io.BytesIO(raw))
    offset, lineno, pending, held = 0, 0, list[bytes](), 0
    for piece in pieces:
        pending.append(piece)
        held += len(piece)
        if held > max_line:
            raise IngestError(
                f"{path}:{lineno + 1}: a record over the {size_text(max_line)} limit of one file; "
                "split it or raise MAX_FILE_BYTES"
            )
        if not piece.endswith(b"\n"):
            continue
        line = b"".join(pending)
        lineno += 1
        yield lineno, _decode_line(path, line, offset, lineno == 1)
        offset += len(line)
        pending.clear()
        held = 0
    if pending:
        yield lineno + 1, _decode_line(path, b"".join(pending), offset, lineno == 0)


def _decode_line(path: Path, line: bytes, offset: int, first: bool) -> str:
    try:
        return line.decode("utf-8-sig" if first else "utf-8")
    except UnicodeDecodeError as exc:
        raise IngestError(
            f"{path}: not valid UTF-8 (byte {offset + exc.start}); convert it, e.g. "
            f"`iconv -f latin1 -t utf-8 {path.name}`"
        ) from exc


#: The most UTF-8 bytes of a record's ``_id``: it becomes the document's ``source``, a key
#: of Postgres's ``UNIQUE (workspace_id, source)`` index, whose entries may not pass
#: 2,704 bytes; 1,000 leaves room for the workspace id and any 4-byte characters.
MAX_ID_BYTES = 1000

#: The most characters of a record's ``title``: it is listed with every document and
#: embedded before each of its chunks, so a title the length of a text would swamp both.
MAX_TITLE_CHARS = 1000

#: How ``_id`` may not start: the ``source`` forms of files (an upload's ``upload:NAME``,
#: an ingested file's absolute path), which a record would otherwise silently replace.
RESERVED_ID_PREFIXES = ("upload:", "/")


def _bad_character(value: object) -> str | None:
    """What makes ``value`` (a string, or JSON holding strings) unstorable, if anything:
    a NUL, which PostgreSQL's text refuses, or a lone surrogate (``"\\ud800"``), which is
    no character and cannot be encoded as UTF-8."""
    if isinstance(value, str):
        if "\x00" in value:
            return "a NUL character (\\u0000)"
        if any("\ud800" <= c <= "\udfff" for c in value):
            return "a lone surrogate (an unpaired \\ud800-\\udfff escape, not a character)"
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            if (why := _bad_character(k) or _bad_character(v)) is not None:
                return why
    if isinstance(value, list):
        for v in value:
            if (why := _bad_character(v)) is not None:
                return why
    return None


def _check_record_id(where: str, doc_id: str) -> None:
    """Refuse an ``_id`` too long to index or in the form of a file's ``source``."""
    size = len(doc_id.encode("utf-8"))
    if size > MAX_ID_BYTES:
        raise IngestError(
            f"{where}: _id is {size} bytes long (UTF-8), over the limit of {MAX_ID_BYTES} "
            "bytes; use a shorter id"
        )
    for prefix in RESERVED_ID_PREFIXES:
        if doc_id.startswith(prefix):
            shown = doc_id if len(doc_id) <= 80 else doc_id[:77] + "..."
            raise IngestError(
                f"{where}: _id {shown!r} starts with {prefix!r}, the form of an uploaded or "
                "ingested file's id (the record would replace that file's document); "
                "use an _id that starts with neither 'upload:' nor '/'"
            )


def _jsonl_records(path: Path, raw: bytes, limits: Limits) -> Iterator[tuple[int, SourceDocument]]:
    """Each record of a JSONL file with its line number, checked field by field."""
    records = 0
    for lineno, line in _lines(path, raw, limits.decompressed, limits.file):
        if not line.strip():
            continue
        records += 1
        if records > limits.records:
            raise IngestError(
                f"{path}: over {limits.records} records; split the file or raise "
                "MAX_RECORDS_PER_FILE"
            )
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise IngestError(f"{path}:{lineno}: invalid JSON ({exc.msg})") from exc
        if not isinstance(rec, dict) or "_id" not in rec or "text" not in rec:
            raise IngestError(
                f"{path}:{lineno}: each line needs _id and text (title is optional); got keys "
                f"{sorted(rec) if isinstance(rec, dict) else type(rec).__name__}"
            )
        doc_id, title, text = rec["_id"], rec.get("title"), rec["text"]
        where = f"{path}:{lineno}"
        if not isinstance(doc_id, (str, int)) or isinstance(doc_id, bool) or doc_id == "":
            raise IngestError(f"{where}: _id must be a non-empty string, got {doc_id!r}")
        doc_id = str(doc_id)
        if title is not None and not isinstance(title, str):
            raise IngestError(
                f"{where}: title must be a string or null, got {type(title).__name__}"
            )
        if not isinstance(text, str):
            raise IngestError(f"{where}: text must be a string, got {type(text).__name__}")
        for name, value in rec.items():
            if (why := _bad_character(name)) is not None:
                raise IngestError(f"{where}: a field name contains {why}; remove it")
            if (why := _bad_character(value)) is not None:
                raise IngestError(f"{where}: {name} contains {why}; remove it")
        _check_record_id(where, doc_id)
        title = (title or "").strip() or None
        if title is not None and len(title) > MAX_TITLE_CHARS:
            raise IngestError(
                f"{where}: title is {len(title)} characters long, over the limit of "
                f"{MAX_TITLE_CHARS}; shorten it (the text holds the rest)"
            )
        meta = {k: v for k, v in rec.items() if k not in ("_id", "title", "text")}
        yield lineno, SourceDocument(doc_id, title, text, meta)


#: What one parsed HTML element costs in memory, about (BeautifulSoup's tree).
PARSED_TAG_BYTES = 1024


@dataclass(frozen=True)
class Limits:
    """What one file may cost to read (the settings named in each error)."""

    file: int
    """Bytes as stored, and of any one JSONL record (``MAX_FILE_BYTES``)."""
    decompressed: int
    """Bytes a ``.jsonl.gz`` or a ``.docx`` expands to, and an HTML page's parse tree
    (``MAX_DECOMPRESSED_BYTES``)."""
    records: int
    """Records of one JSONL file (``MAX_RECORDS_PER_FILE``)."""


def load_path(
    path: Path,
    *,
    max_bytes: int,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    max_records: int = DEFAULT_MAX_RECORDS,
) -> list[SourceDocument]:
    """Read one file into documents, or raise :class:`IngestError` naming the problem.

    ``max_bytes`` bounds the file as stored (``MAX_FILE_BYTES``), ``max_decompressed_bytes``
    what a ``.jsonl.gz`` or a ``.docx`` (a zip archive) expands to
    (``MAX_DECOMPRESSED_BYTES``), ``max_records`` the records of a JSONL file
    (``MAX_RECORDS_PER_FILE``): the caller passes its settings' values (nothing here reads
    the environment). This is blocking work: async callers run it in a thread.
    """
    if not path.exists():
        raise IngestError(f"{path}: no such file or directory")
    suffix = _suffix(path)
    if suffix not in SUPPORTED:
        raise IngestError(
            f"{path}: unsupported format {suffix or '(no extension)'!r}; "
            f"supported: {', '.join(SUPPORTED)}"
        )
    limits = Limits(max_bytes, max_decompressed_bytes, max_records)
    raw = _read_checked(path, max_bytes)
    try:
        return _documents(path, suffix, raw, limits)
    except RecursionError as exc:  # a parser walking a document nested thousands deep
        raise IngestError(f"{path}: nested too deeply to read") from exc


def _documents(path: Path, suffix: str, raw: bytes, limits: Limits) -> list[SourceDocument]:
    source = str(path.resolve())
    if suffix in (".jsonl", ".jsonl.gz"):
        numbered = list(_jsonl_records(path, raw, limits))
        if not numbered:
            raise NothingToIndex(path, "no records")
        # Checked once the file is read, so that the size limits speak first.
        first: dict[str, int] = {}
        for line, doc in numbered:
            if first.setdefault(doc.source, line) != line:
                raise IngestError(
                    f"{path}:{line}: _id {doc.source!r} repeats line {first[doc.source]}; "
                    "each record needs its own _id"
                )
        return [doc for _, doc in numbered]
    title, text, pages = _read_file(path, suffix, raw, limits)
    if "\x00" in text:
        raise IngestError(f"{path}: contains NUL bytes; is it a binary file?")
    if not text.strip():
        raise _nothing_to_index(path, suffix, raw)
    metadata: dict[str, Any] = {"path": source, "format": suffix}
    if pages:
        metadata["pages"] = len(pages)
    return [SourceDocument(source, title, text, metadata, pages, headings_marked=True)]


def _read_file(
    path: Path, suffix: str, raw: bytes, limits: Limits
) -> tuple[str, str, tuple[str, ...]]:
    """A file's title, text and pages (a PDF's; none for other formats) as its format's
    reader gives them, in plain typography (:func:`plain_typography`: a ligature as its
    letters, an odd space as a space), whatever the format. The title is the one the
    document gives itself, else the file's name."""
    pages: tuple[str, ...] = ()
    if suffix == ".pdf":
        title, page_texts = pdf_pages(path, raw)
        pages = tuple(plain_typography(p) for p in page_texts)
        text = "\n\n".join(p for p in pages if p)
    elif suffix == ".docx":
        title, text = docx_text(path, raw, limits.decompressed)
    elif suffix in (".html", ".htm"):
        # A parsed element costs about a kilobyte: a page of tags (say, nested 200,000
        # deep) expands in memory as a compressed file does, and shares its cap.
        tags = raw.count(b"<")
        if tags * PARSED_TAG_BYTES > limits.decompressed:
            raise IngestError(
                f"{path}: {tags} tags would take over the {size_text(limits.decompressed)} limit "
                "to parse; split the page or raise MAX_DECOMPRESSED_BYTES"
            )
        title, text = html_text(_decode(path, raw))
    elif suffix in (".md", ".markdown"):
        title, text = markdown_text(_decode(path, raw))
    else:
        title, text = read_text(_decode(path, raw))
    title = clean_line(plain_typography(title or "")) or path.stem
    return title, plain_typography(text), pages


def _nothing_to_index(path: Path, suffix: str, raw: bytes) -> NothingToIndex:
    """Why a file that read gave no text: a page whose words are all navigation (links,
    menus, headers: the reader drops them), else empty or whitespace only."""
    if suffix in (".html", ".htm") and _page_words(_decode(path, raw)):
        return NothingToIndex(
            path, "navigation only", "no text to index (navigation only: menus and links)"
        )
    hint = "; a scanned PDF needs OCR first (e.g. `ocrmypdf`)" if suffix == ".pdf" else ""
    return NothingToIndex(path, "no text", f"no text to index (empty or whitespace only){hint}")


def _page_words(html: str) -> bool:
    """Whether a page shows any words at all, its chrome included (not its scripts)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    for hidden in soup(["head", "script", "style", "template", "noscript"]):
        hidden.decompose()
    return bool(soup.get_text(" ").strip())


def expand_paths(
    paths: Iterable[Path], skipped: list[Path] | None = None, *, allow_empty: bool = False
) -> list[Path]:
    """Files named directly, plus supported files found under named directories (a
    directory without any is an error unless ``allow_empty``).

    Unsupported files and links to nothing found under a directory are appended to
    ``skipped`` (hidden files such as ``.DS_Store`` are not worth a mention and are left
    out of it). Office's lock files (``~$report.docx``, present while the document is
    open) are not documents and are left out of both.
    """
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            entries = sorted(p.rglob("*"))
            files = [f for f in entries if f.is_file() and not f.name.startswith("~$")]
            found = [f for f in files if _suffix(f) in SUPPORTED]
            if skipped is not None:
                skipped.extend(
                    f for f in files if _suffix(f) not in SUPPORTED and not f.name.startswith(".")
                )
                skipped.extend(f for f in entries if f.is_symlink() and not f.exists())
            if not found and not allow_empty:
                raise IngestError(
                    f"{p}: directory holds no supported files ({', '.join(SUPPORTED)})"
                )
            out.extend(found)
        else:
            out.append(p)
    return out
