"""PDF files page by page: each page's text layer, its wrapped lines joined back into
paragraphs, headings found by their type size and marked, page furniture left out
(running headers and footers, page numbers, a title page, table-of-contents and index
lines); and the document's title."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from convrag.documents.base import IngestError
from convrag.documents.blocks import clean_line, heading_line, heading_of, plain_typography
from convrag.text.lines import LIST_ITEM

_TERMINAL = re.compile(r"[.!?…。！？:;][\"'”’)\]]*$")
"""A line that ends a sentence or a clause introducing what follows."""

_PAGE_NUMBER = re.compile(
    r"^(?:page\s*\d{1,4}(?:\s*(?:of|/)\s*\d{1,4})?|\d{1,4}\s*(?:of|/)\s*\d{1,4}"
    r"|[-–—]\s*\d{1,4}\s*[-–—]|[ivxlc]{1,7})$",
    re.I,
)
"""A line that is plainly a page number ("Page 7", "Page 7 of 12", "7 of 12", "- 7 -",
"iv"); a bare "7" counts when the pages' numbers run in step with the pages."""

_NUMBER_AT_EDGE = re.compile(r"^(\d{1,4})\s|\s(\d{1,4})$|^(\d{1,4})$")
"""A printed page number leading or ending a header or footer line ("12 GNU Grep",
"Chapter 2: Invoking grep 3")."""

_LEADER = re.compile(r"(?:\.\s?){4,}\s*(?:\d{1,4}|[ivxlc]{1,7})$|…{2,}\s*\d{1,4}$", re.I)
"""A table-of-contents or index line: a title, dot leaders, a page number."""

_EDGE = 2
"""How many lines at the top and at the bottom of a page can be a running header or
footer."""

_HEADING_SIZE = 1.05
"""How much larger than the body text a line's type must be to read as a heading."""

_FILE_NAME = re.compile(r"\.(?:pdf|docx?|odt|rtf|txt|pptx?|xlsx?|indd)$", re.I)


@dataclass(frozen=True, slots=True)
class _Line:
    """A line of a page's text layer and the size its type is set in (most of it)."""

    text: str
    size: float


def pdf_pages(path: Path, raw: bytes) -> tuple[str | None, list[str]]:
    """The document's title, if it has one, and the text of each page in order (empty
    for a page without a text layer, or holding only furniture).

    The title is the document property when it is a real title (not empty, not
    "Untitled", not a file name as exporters write it), else the largest type on the
    first page when that page is a title page, else the heading the text opens with
    when it is the document's one top-level heading (:func:`_opening_heading`).
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
        pages = [_page_lines(page) for page in reader.pages]
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
    body = _body_size(pages)
    shown = _title_page(pages[0], body) if pages else None
    if shown is not None:
        pages[0] = []
    pages = _without_contents_and_index(_without_running_lines(pages, body))
    levels = _heading_levels(pages, body)
    joiner = Joiner.of(pages)
    texts = [_pdf_page_text(_marked(lines, levels), joiner) for lines in pages]
    return stated or shown or _opening_heading(texts), _across_pages(texts, joiner)


def _opening_heading(texts: Sequence[str]) -> str | None:
    """The heading a document opens with, when it is its one top-level heading (no other
    heading is set in its type): the title of a document without a title page. A
    document whose first heading is a section's, or whose largest headings are its
    chapters, has none."""
    headings = [
        found
        for text in texts
        for block in text.split("\n\n")
        if (found := heading_of(block)) is not None
    ]
    if not headings or headings[0][0] != 1 or sum(level == 1 for level, _ in headings) > 1:
        return None
    return headings[0][1]


def _across_pages(texts: list[str], joiner: Joiner) -> list[str]:
    """Pages whose last sentence runs on to the next page end with all of it: the next
    page's opening paragraph joins the page it starts on, so that no sentence is cut
    at a page break (its chunk names the page it starts on)."""
    out = list(texts)
    for i in range(len(out) - 1):
        head, _, rest = out[i + 1].partition("\n\n")
        last = out[i].rpartition("\n\n")[2]
        if not last or not head or heading_of(head) or _TERMINAL.search(last):
            continue
        if not (head[:1].islower() or last.endswith((",", "-", "–", "("))):
            continue
        if LIST_ITEM.match(head) or last.startswith("|") or "\n" in last:
            continue
        out[i] = out[i][: len(out[i]) - len(last)] + joiner.join(last, head)
        out[i + 1] = rest
    return out


_CLOSES = re.compile(r"^[ \t]+(?=[.,;:!?)\]}”’]|[\"'](?:\s|$))")
"""Spaces before a mark that closes what precedes it (a clause's end, a bracket, a
closing quote: a straight one only when a space follows it, as ``"."`` opens one)."""

_OPENS = re.compile(r"(?:[(\[{“‘]|(?:^|\s)[\"'])$")
"""Text that ends with an opening bracket or quote."""


def _page_lines(page: Any) -> list[_Line]:
    """A page's text lines, each with the size of most of its type (the text matrix's
    scale times the font size). Where the font changes, the space that the text
    extraction reads into the gap a padded code box leaves is dropped between the code
    and a bracket, a quote or a clause's end beside it ("``npm run <stage>``." read as
    "npm run <stage> .")."""
    parts: list[tuple[str, float]] = []
    code_before = False  # whether the last text was set in a fixed-pitch font

    def visit(text: str, cm: Sequence[float], tm: Sequence[float], font: Any, size: float) -> None:
        nonlocal code_before
        scale = (tm[0] ** 2 + tm[1] ** 2) ** 0.5 * (cm[0] ** 2 + cm[1] ** 2) ** 0.5
        text = text.replace("\x00", "")
        if not text:
            return
        code = _fixed_pitch(font)
        if parts and code != code_before:
            before, size_before = parts[-1]
            kept = before.rstrip(" \t")
            gap = before[len(kept) :] + text
            if _CLOSES.match(gap) if code_before else bool(_OPENS.search(kept)):
                parts[-1] = (kept, size_before)
                text = text.lstrip(" \t")
        parts.append((text, round(float(size) * scale * 2) / 2))
        code_before = code

    page.extract_text(visitor_text=visit)
    lines: list[_Line] = []
    text: list[str] = []
    sizes: Counter[float] = Counter()
    for piece, size in parts:
        for k, segment in enumerate(piece.split("\n")):
            if k:
                lines.append(_Line(_line_text(text), _most(sizes)))
                text, sizes = [], Counter()
            text.append(segment)
            sizes[size] += len(segment.strip())
    lines.append(_Line(_line_text(text), _most(sizes)))
    return lines


_FIXED_PITCH_NAME = re.compile(r"mono|courier|consol|menlo|cmtt", re.I)


def _fixed_pitch(font: Any) -> bool:
    """Whether ``font`` (a font resource) sets code: its descriptor's FixedPitch flag, or
    a fixed-pitch name for a standard font that has no descriptor ("Courier")."""
    if not isinstance(font, dict):
        return False
    described = font.get("/FontDescriptor")
    if described is None and font.get("/DescendantFonts"):
        described = font["/DescendantFonts"][0].get_object().get("/FontDescriptor")
    if described is not None:
        return bool(int(described.get_object().get("/Flags", 0)) & 1)
    return bool(_FIXED_PITCH_NAME.search(str(font.get("/BaseFont", ""))))


def _line_text(pieces: list[str]) -> str:
    """A line's text, cleaned, in plain typography (a ligature as its letters); a soft
    hyphen that ends it, where the word breaks, as a hyphen, so that the line joins the
    next as a broken word does (:class:`Joiner`)."""
    line = clean_line("".join(pieces))
    if line.endswith("\xad"):
        line = line[:-1] + "-"
    return plain_typography(line)


def _most(sizes: Counter[float]) -> float:
    return sizes.most_common(1)[0][0] if sizes and sizes.most_common(1)[0][1] else 0.0


def _body_size(pages: Sequence[Sequence[_Line]]) -> float:
    """The type size most of the document's characters are set in."""
    sizes: Counter[float] = Counter()
    for lines in pages:
        for line in lines:
            sizes[line.size] += len(line.text)
    return _most(sizes)


def _title_page(lines: Sequence[_Line], body: float) -> str | None:
    """The title a first page shows in its largest type, when that page is a title page:
    a few short lines, at most three short ones in body type (a version, a date), the
    largest set well above the body."""
    filled = [line for line in lines if line.text]
    if not filled or len(filled) > 12 or body <= 0:
        return None
    body_text = [line for line in filled if line.size < body * _HEADING_SIZE]
    if any(len(line.text) > 90 for line in filled) or len(body_text) > 3:
        return None
    if any(len(line.text) > 60 for line in body_text):  # a paragraph, not a date line
        return None
    top = max(line.size for line in filled)
    if top < body * 1.4:
        return None
    return clean_line(" ".join(line.text for line in filled if line.size == top)) or None


def _real_title(title: str, path: Path) -> str | None:
    """The title property, unless it is empty or what an exporter writes for a document
    without one."""
    title = clean_line(title)
    lowered = title.lower().removeprefix("microsoft word - ")
    if not title or lowered in ("untitled", "title", path.stem.lower()) or _FILE_NAME.search(title):
        return None
    return title


def _edges(lines: Sequence[_Line]) -> tuple[list[int], list[int]]:
    filled = [k for k, line in enumerate(lines) if line.text]
    return filled[:_EDGE], filled[-_EDGE:]


def _printed_number(text: str) -> int | None:
    match = _NUMBER_AT_EDGE.search(text) if len(text) <= 80 else None
    return int(next(g for g in match.groups() if g)) if match else None


def _numbering(pages: Sequence[Sequence[_Line]]) -> set[int]:
    """The offsets (printed number less page index) that the page numbers at the pages'
    edges keep over at least three pages: numbers that run in step with the pages."""
    offsets: Counter[int] = Counter()
    for i, lines in enumerate(pages):
        top, bottom = _edges(lines)
        offsets.update({n - i for k in top + bottom if (n := _printed_number(lines[k].text))})
    return {offset for offset, n in offsets.items() if n >= 3}


def _without_running_lines(pages: list[list[_Line]], body: float) -> list[list[_Line]]:
    """Each page's lines less its running header and footer: a line within the first or
    last two of a page that repeats, figures aside, at the same edge of several pages
    (three, or most of them), one that holds a page number running in step with the
    pages, and a plain page number at either edge. A line set larger than the body is a
    heading, never furniture."""

    def shape(line: _Line) -> str:
        return re.sub(r"\d+", "#", line.text.lower())

    counted = sum(1 for lines in pages if any(line.text for line in lines))
    seen: Counter[tuple[str, str]] = Counter()
    for lines in pages:
        for edge, found in zip(("top", "bottom"), _edges(lines), strict=True):
            seen.update({(edge, shape(lines[k])) for k in found})
    repeated = {key for key, n in seen.items() if n >= 3 or (n >= 2 and n >= 0.6 * counted)}
    offsets = _numbering(pages)
    out: list[list[_Line]] = []
    for i, lines in enumerate(pages):
        drop = {
            k
            for edge, found in zip(("top", "bottom"), _edges(lines), strict=True)
            for k in found
            if lines[k].size < body * _HEADING_SIZE
            and (
                (edge, shape(lines[k])) in repeated
                or _PAGE_NUMBER.match(lines[k].text)
                or (_printed_number(lines[k].text) or -(10**6)) - i in offsets
            )
        }
        out.append([line for k, line in enumerate(lines) if k not in drop])
    return out


def _without_contents_and_index(pages: list[list[_Line]]) -> list[list[_Line]]:
    """Pages less their table-of-contents and index lines (dot leaders to a page number)
    and the short title above a run of them ("Contents", "Index"); a page made mostly of
    them is left out whole."""
    out: list[list[_Line]] = []
    for lines in pages:
        filled = [k for k, line in enumerate(lines) if line.text]
        leaders = {k for k in filled if _LEADER.search(lines[k].text)}
        if filled and len(leaders) >= 0.6 * len(filled):
            out.append([])
            continue
        titles = {
            before
            for n, k in enumerate(filled)
            if k in leaders
            and n > 0
            and (before := filled[n - 1]) not in leaders
            and len(lines[before].text) <= 40
            and not _TERMINAL.search(lines[before].text)
        }
        out.append([line for k, line in enumerate(lines) if k not in leaders | titles])
    return out


def _heading_levels(pages: Sequence[Sequence[_Line]], body: float) -> dict[float, int]:
    """Heading levels by type size: each size well above the body's that sets a short
    line without end punctuation is a level, the largest level one."""
    sizes = {
        line.size
        for lines in pages
        for line in lines
        if body > 0 and line.size >= body * _HEADING_SIZE and _heading_text(line.text)
    }
    return {size: level for level, size in enumerate(sorted(sizes, reverse=True), start=1)}


def _heading_text(text: str) -> bool:
    return 0 < len(text) <= 120 and not _TERMINAL.search(text) and not LIST_ITEM.match(text)


def _marked(lines: Sequence[_Line], levels: dict[float, int]) -> list[str]:
    """A page's lines as text, headings marked ``## Heading`` (a heading set over two
    lines joined); a body line that would read as a marked heading is indented."""
    out: list[str] = []
    previous: _Line | None = None
    for line in lines:
        level = levels.get(line.size) if _heading_text(line.text) else None
        if level is None:
            out.append(" " + line.text if heading_of(line.text) else line.text)
        elif previous is not None and previous.size == line.size and out and heading_of(out[-1]):
            out[-1] = f"{out[-1]} {line.text}"
        else:
            out.append(heading_line(level, line.text))
        previous = line if level is not None else None
    return out


_COMPOUND = re.compile(r"\b([^\W\d_]+-[^\W\d_]+)\b")
_BROKEN = re.compile(r"([^\W\d_]+)-$")
_FIRST_WORD = re.compile(r"[^\W\d_]+")
_HYPHEN_AT_END = re.compile(r"[^\W_]-$")
"""A line that ends inside a word, at a hyphen ("X-", "unspec-"), not at a dash alone."""

_SUSPENDED = frozenset({"and", "or", "nor", "und", "oder"})
"""Words after a suspended hyphen ("pre- and post-", "first- or second-"): the hyphen
waits for the word that ends the pair, and the line break is a space."""


@dataclass(frozen=True, slots=True)
class Joiner:
    """Joins a paragraph and the line that continues it. A word broken at a line end
    ("unspec-" / "ified") is made whole again, unless the document writes the joined
    form with its hyphen elsewhere ("how-" / "to" where "how-to" appears whole): then the
    hyphen was the word's own. A compound broken after its hyphen before a capital or a
    figure ("X-" / "Forwarded-For") keeps it; a suspended hyphen ("pre-" / "and post-")
    and a dash standing alone ("A -" / "B") keep the space."""

    compounds: frozenset[str]

    @classmethod
    def of(cls, pages: Sequence[Sequence[_Line]]) -> Joiner:
        """The hyphenated words the document writes whole, inside a line."""
        found = {
            word.casefold()
            for lines in pages
            for line in lines
            for word in _COMPOUND.findall(line.text)
        }
        return cls(frozenset(found))

    def join(self, current: str, line: str) -> str:
        if not _HYPHEN_AT_END.search(current):
            return f"{current} {line}"
        broken = _BROKEN.search(current)
        if broken is None or not line[:1].islower():
            return current + line
        rest = _FIRST_WORD.match(line)
        word = f"{broken.group(1)}-{rest.group(0) if rest else ''}".casefold()
        if word in self.compounds:
            return current + line
        if rest is not None and rest.group(0).casefold() in _SUSPENDED:
            return f"{current} {line}"
        return current[:-1] + line


def _broken_before(last: str, line: str) -> bool:
    """Whether ``last`` ends inside a word at a hyphen that ``line`` goes on from ("X-" /
    "Forwarded-For"), however short ``last`` is: a line breaks early before a long word."""
    return bool(_HYPHEN_AT_END.search(last)) and line[:1].isalnum()


def _pdf_page_text(lines: list[str], joiner: Joiner) -> str:
    """A page's extracted lines as paragraphs.

    A PDF has lines, not paragraphs. Lines that wrap a paragraph are joined with a
    space. A marked heading is a paragraph of its own. A short line without end
    punctuation that the next line does not continue reads as a heading too: it becomes
    its own paragraph, or it would read as the first words of the sentence after it. A
    short line that ends a sentence ends its paragraph; list items and table rows keep
    their own lines.
    """
    width = max((len(line) for line in lines), default=0)

    def full(line: str) -> bool:  # as wide as the page's text: it wraps, or may
        return len(line) >= 40 and len(line) >= 0.75 * width

    paragraphs: list[str] = []
    current = last = ""
    for k, line in enumerate(lines):
        if not line or heading_of(line):
            if current:
                paragraphs.append(current)
            if line:
                paragraphs.append(line)
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
            elif not ended and (line[0].islower() or full(last) or _broken_before(last, line)):
                current = joiner.join(current, line)
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
