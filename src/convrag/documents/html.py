"""HTML pages as their title and main content: trafilatura finds the main content, page
chrome (scripts, styles, menus, the page's own header and footer) goes, inline elements
stay inside their sentence, headings are marked, a definition keeps its term, code
blocks keep their lines, and tables become Markdown rows."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterator
from typing import Any

from convrag.documents.blocks import (
    clean_line,
    code_block,
    heading_line,
    join_blocks,
    markdown_rows,
)

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
    """The page's title and its main content as text, headings marked ``## Heading``.

    trafilatura decides what the main content is (navigation, headers, footers, sidebars
    and cookie banners go) and gives it as a tree of blocks; that tree is read here
    (:func:`blocks_text`), not as trafilatura's own text, which keeps the source's line
    breaks inside a paragraph wherever it holds inline code, and drops headings and a
    definition's term. Tables are rendered here as Markdown rows rather than by
    trafilatura, whose filter for share buttons drops any cell that reads "Mail", "PDF",
    "Print", "Google" and the like: each table is swapped for a placeholder paragraph
    first, so it is kept exactly when trafilatura keeps the place it stood in. A page too
    small for trafilatura to find main content in (a fragment with a paragraph or two)
    gives its whole body instead.
    """
    import trafilatura
    from bs4 import BeautifulSoup

    # trafilatura logs an ERROR for every page it finds no main content in; such a page
    # is ingested all the same (the fallback below), so the message would mislead.
    logging.getLogger("trafilatura").setLevel(logging.CRITICAL)
    soup = BeautifulSoup(html, "html.parser")
    title = _html_title(soup)
    _drop_html_chrome(soup)
    tables = _tables_to_placeholders(soup)
    for pre in soup.find_all("pre"):
        if pre.find("code") is None:  # trafilatura reads a <pre> without one as a quote
            pre.string = pre.get_text("")
            pre.string.wrap(soup.new_tag("code"))
    found = trafilatura.bare_extraction(
        str(soup),
        include_comments=False,
        include_tables=False,
        include_images=False,
        include_links=False,
        include_formatting=True,
        deduplicate=False,
        with_metadata=False,
        favor_recall=True,
    )
    body = getattr(found, "body", None)
    main = _from_trafilatura(body) if body is not None and len(body) else None
    blocks = blocks_text(main if main is not None else soup.body or soup)
    return title, join_blocks([tables.get(b, b) for b in blocks])


def _tables_to_placeholders(soup: Any) -> dict[str, str]:
    """Swap each outermost table for a paragraph holding a unique token; the tokens'
    Markdown rows, by token."""
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
    return tables


_TRAFILATURA_TAGS = {
    "quote": "blockquote",
    "lb": "br",
    "hi": "em",
    "ref": "a",
    "del": "del",
    "row": "tr",
    "cell": "td",
}
"""trafilatura's names for elements, as HTML names them (``head``, ``list``, ``item``
and ``code`` depend on their attributes: :func:`_html_name`)."""


def _html_name(element: Any) -> str:
    """The HTML name of an element of trafilatura's tree."""
    tag, rend = element.tag, str(element.get("rend") or "")
    if tag == "head":
        return rend if re.fullmatch(r"h[1-6]", rend) else "h2"
    if tag == "list":
        return {"dl": "dl", "ol": "ol"}.get(rend, "ul")
    if tag == "item":
        return rend[:2] if rend[:2] in ("dt", "dd") else "li"
    if tag == "code":  # a code block stands on its own; inline code sits in a paragraph
        parent = element.getparent()
        alone = (
            parent is None
            or parent.tag in ("body", "quote")
            or (
                len(parent) == 1
                and not (parent.text or "").strip()
                and not (element.tail or "").strip()
                and "\n" in "".join(element.itertext()).strip()
            )
        )
        return "pre" if alone else "code"
    if tag == "graphic":
        return "img"
    return str(_TRAFILATURA_TAGS.get(tag, tag))


def _from_trafilatura(body: Any) -> Any:
    """trafilatura's tree of the main content as an HTML tree that :func:`blocks_text`
    reads like any page."""
    from bs4 import BeautifulSoup
    from lxml import etree

    renamed = {element: _html_name(element) for element in body.iter()}
    for element, name in renamed.items():
        element.tag = name
        element.attrib.clear()
    return BeautifulSoup(etree.tostring(body, encoding="unicode", method="html"), "html.parser")


def _html_title(soup: Any) -> str | None:
    """The page's first ``<h1>`` when its ``<title>`` holds it (a title is often "Page —
    Site documentation"), else its ``<title>``, else its first ``<h1>``, else None."""
    texts = [
        _PERMALINK_TAIL.sub("", " ".join(tag.get_text(" ").split())) if tag is not None else ""
        for tag in (soup.title, soup.find("h1"))
    ]
    stated, first = texts
    if first and stated and first.casefold() in stated.casefold():
        return first
    return stated or first or None


_PERMALINK_TAIL = re.compile(r"[\s¶#🔗]+$")


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


class _Blocks:
    """The paragraphs of a page as they are written: text gathers in a buffer, and a
    block element ends it. A definition list's terms wait for their definition's first
    paragraph and lead it ("term: definition"), so that the definition never loses what
    it defines."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.buf: list[str] = []
        self.terms: list[str] = []

    def flush(self) -> None:
        lines = [clean_line(line) for line in "".join(self.buf).split("\n")]
        self.buf.clear()
        para = "\n".join(line for line in lines if line)
        if para == "-":  # a list item whose text is in a paragraph of its own
            self.buf.append("- ")
            return
        if para:
            self.add(para)

    def add(self, block: str) -> None:
        if self.terms:
            item = "- " if block.startswith("- ") else ""
            block = f"{item}{', '.join(self.terms)}: {block.removeprefix(item)}"
            self.terms.clear()
        self.blocks.append(block)

    def end_list(self) -> None:
        """A term left without a definition stands alone."""
        if self.terms:
            self.blocks.append(", ".join(self.terms))
            self.terms.clear()


def _whole(tag: Any, out: _Blocks) -> bool:
    """Write an element that is read whole (a heading, a code block, a table, a term);
    whether it was one."""
    name = tag.name
    if len(name) == 2 and name[0] == "h" and name[1] in "123456":
        out.flush()
        if line := heading_line(int(name[1]), _spaces(tag.get_text(""))):
            out.add(line)
    elif name == "pre":
        out.flush()
        if block := code_block(tag.get_text("")):
            out.blocks.append(block)
    elif name == "table":
        out.flush()
        rows, header = _html_table_rows(tag)
        if rows:
            out.blocks.append(markdown_rows(rows, header=header))
    elif name == "dt":
        out.flush()
        if term := clean_line(_spaces(tag.get_text(""))):
            out.terms.append(term)
    else:
        return False
    return True


def blocks_text(node: Any) -> list[str]:
    """The text of ``node`` as paragraphs: one per block element, inline elements kept in
    their sentence whatever the source's line breaks, ``<br>`` as a line break, list
    items as ``- item``, headings as ``## heading``, code blocks fenced, a definition
    list's term leading its definition."""
    from bs4.element import NavigableString, Tag

    out = _Blocks()
    # An explicit stack, not recursion: a page may nest elements thousands deep.
    stack: list[tuple[Iterator[Any], str | None]] = [(iter(node.children), None)]
    while stack:
        children, block = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            if block is not None:
                out.flush()
                if block == "dl":
                    out.end_list()
        elif isinstance(child, Tag):
            if child.name == "br":
                out.buf.append("\n")
            elif not _whole(child, out):
                if child.name == "li":
                    out.flush()
                    out.buf.append("- ")
                elif child.name in _HTML_BLOCKS:
                    out.flush()
                is_block = child.name == "li" or child.name in _HTML_BLOCKS
                stack.append((iter(child.children), child.name if is_block else None))
        elif type(child) is NavigableString:  # not a comment, doctype or CDATA
            out.buf.append(_spaces(child))
    out.flush()
    out.end_list()
    return out.blocks


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
            cells.append(" ".join(" ".join(blocks_text(cell)).split()))
            span = str(cell.get("colspan") or "1")
            cells.extend([""] * (min(int(span), 50) - 1 if span.isdigit() else 0))
        if any(cells):
            if not rows:
                header = tr.find_parent("thead") is not None or all(t.name == "th" for t in tags)
            rows.append(cells)
    return rows, header


def markdown_text(markdown: str) -> tuple[str | None, str]:
    """A Markdown file's title (a level-one heading, ATX or setext, that opens it: badges
    before it have no text) and its text
    as the other readers write it: markdown-it renders it (CommonMark with tables), and the
    HTML is read as a page's main content. Inline markup becomes plain words (a link's
    text, not its address), images and badges go, code blocks stay fenced."""
    from bs4 import BeautifulSoup
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)
    soup = BeautifulSoup(html, "html.parser")
    _drop_html_chrome(soup)
    blocks = blocks_text(soup)
    title = blocks[0][2:] if blocks and blocks[0].startswith("# ") else None
    return title, join_blocks(blocks)
