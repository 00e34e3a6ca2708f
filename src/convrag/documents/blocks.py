"""What the format readers share: cleaned lines, paragraphs joined into a text, tables as
Markdown rows, and the look of a line that starts a list item or a table row (which the
PDF reader and the chunker both keep on its own line)."""

from __future__ import annotations

import re
from collections.abc import Sequence

LIST_ITEM = re.compile(r"^(?:[-*•◦▪·–]\s|\(?\d{1,3}[.)]\s|\(?[a-z][.)]\s|\|)")
"""A line that starts a list item or a table row."""


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
