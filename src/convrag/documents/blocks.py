"""What the format readers share: cleaned lines, paragraphs joined into a text, headings
and code blocks marked as Markdown does (``## Heading``, fenced code), tables as
Markdown rows, and plain typography (a ligature as its letters, an odd space as a
space). (The look of a line that starts a list item or a table row, which the PDF
reader and the chunker both keep on its own line, is :data:`convrag.text.lines.LIST_ITEM`.)

Every reader writes its text in this small Markdown dialect, so that the chunker finds
the section headings of any format the same way (:func:`heading_of`) and never takes a
``# comment`` inside a code block for one (:data:`FENCE`)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
"""An ATX heading line: ``## Installation``."""

FENCE = re.compile(r"^[ \t]{0,3}(```+|~~~+)")
"""A line that opens or closes a fenced code block."""

_SIGN = r"[\s§¶#🔗\ue000-\uf8ff]"
"""A permalink sign: Sphinx's "¶", rustdoc's "§", an icon font's private-use glyph."""
_PERMALINK = re.compile(f"{_SIGN}+$")
_SIGNS_ONLY = re.compile(f"{_SIGN}*")


def is_permalink_sign(text: str) -> bool:
    """Whether ``text`` holds nothing but permalink signs (or nothing at all)."""
    return _SIGNS_ONLY.fullmatch(text) is not None


def without_permalink(text: str) -> str:
    """A heading's text, cleaned, less the permalink sign that documentation generators
    end it with, which is not part of the heading."""
    return _PERMALINK.sub("", clean_line(text))


def heading_line(level: int, text: str) -> str:
    """``text`` as a heading of ``level`` (1-6): ``## text``; empty when ``text`` is."""
    text = without_permalink(text)
    return f"{'#' * min(max(level, 1), 6)} {text}" if text else ""


def heading_of(line: str) -> tuple[int, str] | None:
    """``(level, text)`` of an ATX heading line, else None."""
    match = HEADING.match(line)
    return (len(match.group(1)), match.group(2)) if match else None


def code_block(text: str) -> str:
    """Preformatted text as a fenced block: its lines kept as they are (trailing spaces
    and blank edges aside), a fence longer than any run of backticks inside it."""
    lines = [line.rstrip() for line in text.replace("\t", "    ").split("\n")]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return ""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n".join([fence, *lines, fence])


def markdown_rows(rows: Sequence[Sequence[str]], *, header: bool) -> str:
    """``| a | b |`` lines, padded to the widest row; a ``| --- |`` line under a header."""
    width = max(len(r) for r in rows)

    def line(cells: Sequence[str]) -> str:
        padded = [c.replace("|", "\\|") for c in cells] + [""] * (width - len(cells))
        return "| " + " | ".join(padded) + " |"

    lines = [line(r) for r in rows]
    if header and len(lines) > 1:
        lines.insert(1, line(["---"] * width))
    return "\n".join(lines)


def looks_like_header(rows: Sequence[Sequence[str]]) -> bool:
    """Whether a table's first row labels its columns though nothing marks it so (most
    Word tables): every cell a short label without figures, above at least one row."""
    if len(rows) < 2 or not rows[0]:
        return False
    return all(
        cell and len(cell.split()) <= 5 and not any(ch.isdigit() for ch in cell) for cell in rows[0]
    )


def clean_line(text: str) -> str:
    """``text`` with runs of whitespace as single spaces, trimmed."""
    return " ".join(text.split())


def join_blocks(blocks: Sequence[str]) -> str:
    """Paragraphs separated by blank lines; consecutive list items stay one list."""
    out: list[str] = []
    for n, block in enumerate(blocks):
        if n:
            listed = block.startswith("- ") and blocks[n - 1].startswith("- ")
            out.append("\n" if listed else "\n\n")
        out.append(block)
    return "".join(out)


def _typographic_table() -> dict[int, str]:
    ligatures = [*range(0xFB00, 0xFB07), *range(0xFB13, 0xFB18)]
    spaces = [0x00A0, *range(0x2000, 0x200B), 0x202F, 0x205F]
    table = {c: unicodedata.normalize("NFKC", chr(c)) for c in ligatures + spaces}
    table[0x00AD] = ""  # a soft hyphen: where a line does not break at it, it is not shown
    table[0x2011] = "-"  # a non-breaking hyphen is a hyphen that keeps its line
    return table


_TYPOGRAPHIC = _typographic_table()
"""The compatibility characters that only set type, as the plain characters they show:
ligatures ("ﬁ" as "fi"), no-break and fixed-width spaces as a space, a soft hyphen as
nothing, a non-breaking hyphen as "-". Full NFKC is not taken: it would also rewrite
characters that mean something of their own ("²", "…", full-width text, "ℌ")."""


def plain_typography(text: str) -> str:
    """``text`` with its typographic compatibility characters (:data:`_TYPOGRAPHIC`) as
    the characters they show, every other character as it is: a quoted "ﬁles" reads, and
    is found, as "files"."""
    return text.translate(_TYPOGRAPHIC)
