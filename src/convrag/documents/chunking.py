"""Chunks: documents cut into pieces of at most a given size on paragraph and sentence
boundaries, a section and a PDF page at a time, consecutive chunks sharing whole
sentences, each chunk knowing the headings it sits under."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from convrag.documents.base import SourceDocument
from convrag.documents.blocks import FENCE, heading_of
from convrag.text.lines import LIST_ITEM
from convrag.text.sentences import sentence_ends


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a document as stored and embedded; ``page`` is its 1-based PDF page,
    ``heading`` the path of section headings it sits under (outermost first, the
    document's title not included)."""

    text: str
    page: int | None = None
    heading: tuple[str, ...] = ()


_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
_LINE_BREAK = re.compile("\n")
_NON_SPACE = re.compile(r"\S")
_ENDS_SENTENCE = re.compile(r"[.!?…。！？][\"'”’)\]」』]*$")


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
    if _ENDS_SENTENCE.search(line) or LIST_ITEM.match(nxt) or line.startswith("|"):
        return False
    return nxt[:1].islower() or len(line) >= 50


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
            for cut in sentence_ends(text, g_start, g_end):
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


@dataclass(frozen=True, slots=True)
class Section:
    """The text under one heading (its heading lines first, unmarked), and the path of
    headings it sits under, outermost first."""

    heading: tuple[str, ...]
    text: str


class Outline:
    """The headings in force as a document is read: a heading closes every heading of its
    level or deeper, and then stands under those above it."""

    def __init__(self) -> None:
        self._open: list[tuple[int, str]] = []

    def enter(self, level: int, text: str) -> None:
        while self._open and self._open[-1][0] >= level:
            self._open.pop()
        self._open.append((level, text))

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(text for _, text in self._open)

    def sections(self, text: str) -> list[Section]:
        """``text`` cut at its heading lines (``## Heading``, none inside a fenced code
        block). A run of headings with no text between them starts one section, each
        heading a paragraph of its own; a heading with nothing under it before the text
        ends is left out."""
        out: list[Section] = []
        lines: list[str] = []
        has_body = fenced = after_heading = False
        path = self.path
        for line in text.split("\n"):
            found = None if fenced else heading_of(line)
            if FENCE.match(line):
                fenced = not fenced
            if found is None:
                if after_heading and line.strip() and lines[-1].strip():
                    lines.append("")
                lines.append(line)
                has_body = has_body or bool(line.strip())
                after_heading = after_heading and not line.strip()
                continue
            if has_body:
                out.append(Section(path, "\n".join(lines).strip()))
                lines, has_body = [], False
            self.enter(*found)
            path = self.path
            lines.extend(["", found[1]] if lines and lines[-1].strip() else [found[1]])
            after_heading = True
        if has_body:
            out.append(Section(path, "\n".join(lines).strip()))
        return out


class Chunker:
    """Cuts documents into chunks of at most ``chunk_size`` characters on paragraph and
    sentence boundaries, a section and a PDF page at a time.

    A chunk ends mid-sentence only when one sentence is longer than ``chunk_size``.
    Consecutive chunks of a section share up to ``chunk_overlap`` characters of whole
    sentences. A chunk never spans two sections: it carries the path of headings it sits
    under, and its heading lines read as plain lines. A text without headings that fits
    in one chunk is that chunk, unchanged (trimmed): its chunk id stays the same across
    versions of this splitter.
    """

    def __init__(self, chunk_size: int, chunk_overlap: int) -> None:
        if chunk_overlap >= chunk_size:
            raise ValueError(
                f"CHUNK_OVERLAP ({chunk_overlap}) must be smaller than CHUNK_SIZE ({chunk_size})"
            )
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap

    def chunks(self, doc: SourceDocument) -> list[Chunk]:
        """The document's chunks in order; a PDF's never span two pages, and a heading
        stays in force from one page to the next."""
        outline = Outline()
        pages = doc.pages or (doc.text,)
        return [
            Chunk(text, page if doc.pages else None, section.heading)
            for page, page_text in enumerate(pages, start=1)
            for section in (
                outline.sections(page_text) if doc.headings_marked else [Section((), page_text)]
            )
            for text in self._split(section.text)
        ]

    def split(self, doc: SourceDocument) -> list[str]:
        """The texts of :meth:`chunks`."""
        return [c.text for c in self.chunks(doc)]

    def _split(self, text: str) -> list[str]:
        text = text.strip()
        if len(text) <= self.chunk_size:
            return [text] if text else []
        return _pack(text, _units(text), self.chunk_size, self.chunk_overlap)
