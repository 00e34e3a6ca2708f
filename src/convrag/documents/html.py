"""HTML pages as their title and main content: trafilatura finds the main content, page
chrome (scripts, styles, menus, the page's own header and footer) goes, inline elements
stay inside their sentence, and tables become Markdown rows."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterator
from typing import Any

from convrag.documents.blocks import clean_line, join_blocks, markdown_rows

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


def html_text(html: str) -> tuple[str | None, str]:
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
        tables[key] = markdown_rows(rows, header=header)
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
        favor_recall=True,
    )
    if extracted and extracted.strip():
        lines = extracted.splitlines()
    else:
        lines = _html_blocks(soup.body or soup)
    split = re.compile(f"({re.escape(token)}\\d+)")
    blocks: list[str] = []
    for line in lines:
        for part in split.split(line):
            block = tables.get(part) or clean_line(part)
            if block:
                blocks.append(block)
    return title, join_blocks(blocks)


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
        lines = [clean_line(line) for line in "".join(buf).split("\n")]
        buf.clear()
        para = "\n".join(line for line in lines if line)
        if para:
            blocks.append(para)

    # An explicit stack, not recursion: a page may nest elements thousands deep.
    stack: list[tuple[Iterator[Any], bool]] = [(iter(node.children), False)]
    while stack:
        children, block = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            if block:
                flush()
        elif isinstance(child, Tag):
            if child.name == "br":
                buf.append("\n")
                continue
            if child.name == "li":
                flush()
                buf.append("- ")
            elif child.name in _HTML_BLOCKS:
                flush()
            stack.append((iter(child.children), child.name == "li" or child.name in _HTML_BLOCKS))
        elif type(child) is NavigableString:  # not a comment, doctype or CDATA
            buf.append(_spaces(child))
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
