"""Word (.docx) documents: the title property and the body's paragraphs, headings, list
items and tables (as Markdown rows) in order."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from convrag.documents.base import IngestError, over_decompressed_limit
from convrag.documents.blocks import (
    clean_line,
    heading_line,
    join_blocks,
    looks_like_header,
    markdown_rows,
)


def docx_text(path: Path, raw: bytes, max_decompressed: int) -> tuple[str | None, str]:
    """A Word document's title (its document property, else an opening paragraph in the
    Title style or a level-one heading) and its body text: paragraphs in order, headings
    marked ``## Heading``, list items as ``- item``, tables as Markdown rows. Page
    headers, footers and comments are not the document's text.

    A .docx is a zip archive: one whose parts expand past ``max_decompressed`` bytes in
    all is refused before any part is read (a "zip bomb"). The sizes are those the archive
    declares, and Python's zip reader never returns more than a part declares.
    """
    import io
    import zipfile

    import docx
    from docx.table import Table

    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            expanded = sum(info.file_size for info in archive.infolist())
    except zipfile.BadZipFile as exc:
        raise _not_docx(path, exc) from exc
    if expanded > max_decompressed:
        raise over_decompressed_limit(path, max_decompressed)
    try:
        document = docx.Document(io.BytesIO(raw))
        blocks: list[str] = []
        opening: str | None = None
        for item in document.iter_inner_content():
            if isinstance(item, Table):
                rows, header = _docx_table_rows(item)
                if rows:
                    blocks.append(markdown_rows(rows, header=header))
                continue
            lines = [clean_line(line) for line in item.text.split("\n")]
            text = "\n".join(line for line in lines if line)
            if text:
                pPr = item._p.pPr
                listed = pPr is not None and pPr.numPr is not None
                style = item.style.name if item.style is not None else ""
                block = _docx_block(text, style, listed)
                if not blocks and block.startswith("# "):
                    opening = text
                blocks.append(block)
        title = clean_line(document.core_properties.title or "") or opening
    except Exception as exc:  # python-docx raises zip, XML and lookup errors alike
        raise _not_docx(path, exc) from exc
    return title, join_blocks(blocks)


_HEADING_STYLE = re.compile(r"^(?:Heading|Überschrift|Titre|Título|Titolo|Kop)\s*(\d)$", re.I)
"""Word's built-in heading styles ("Heading 2"), which localised Words name in their own
language."""


def _docx_block(text: str, style: str, listed: bool) -> str:
    """A paragraph as the text has it: a heading marked by its level (the Title style as
    level one), a list item as ``- item``, else as it is."""
    heading = _HEADING_STYLE.match(style)
    if (heading or style == "Title") and "\n" not in text:
        return heading_line(int(heading.group(1)) if heading else 1, text)
    return f"- {text}" if listed or style.startswith("List") else text


def _not_docx(path: Path, exc: Exception) -> IngestError:
    detail = str(exc).strip("\"'") or type(exc).__name__
    return IngestError(
        f"{path}: not a valid .docx file: {detail}; open it in Word or LibreOffice and save it "
        "as a Word document (.docx)"
    )


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
            cells.append(clean_line(_docx_cell_text(cell)))
        if any(cells):
            rows.append(cells)
    first = table.rows[0]._tr if len(table.rows) else None
    marked = first is not None and bool(first.xpath("./w:trPr/w:tblHeader"))
    return rows, marked or looks_like_header(rows)


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
