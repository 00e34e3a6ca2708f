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
    heading_of,
    is_permalink_sign,
    join_blocks,
    markdown_rows,
    without_permalink,
)
from convrag.documents.hidden import unseen_test

_HTML_NEVER_CONTENT = (
    "head",
    "button",
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "iframe",
    "nav",
)
"""Elements that never hold a page's text: metadata, controls ("Copy item path"), code,
styling, frames, menus."""

_HTML_CHROME_ROLES = ("navigation", "banner", "contentinfo", "search", "doc-backlink")
"""ARIA roles of page chrome, for sites that mark their menus with ``role`` only."""

_CHROME_NAME = re.compile(
    r"(?:^|[-_\s])(?:nav|navbar|navigation|nav-panel|breadcrumbs?|sidebar|sphinxsidebar"
    r"|related|footer|header|menu|toc|section-toc|pagination|pager|skip-link|cookies?"
    r"|cookie-banner|banner|social|share|headerlink|permalink)(?:$|[-_\s])",
    re.I,
)
"""Class or id names of page chrome, as documentation generators and sites name it
(Texinfo's navigation panel is a ``div.header``; Sphinx's sidebar ``div.sphinxsidebar``)."""

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

    Page chrome goes first: scripts, styles, menus, the page's own header and footer,
    and elements whose class or id names them chrome (navigation panels, sidebars,
    breadcrumbs, tables of contents, permalinks). The main content is the element a page
    marks as such (``<main>``, ``role="main"``, its one ``<article>``), as documentation
    generators do; a page that marks none is read whole, less the blocks that trafilatura
    does not count as main content (:func:`_kept_by_trafilatura`). The text is read here
    (:func:`blocks_text`), not taken from trafilatura, which keeps the source's line
    breaks inside a paragraph wherever it holds inline code and drops headings and a
    definition's term. Tables become Markdown rows.
    """
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    close_implied_ends(soup)
    stated = without_permalink(soup.title.get_text(" ")) if soup.title is not None else ""
    _drop_html_chrome(soup)
    title = _html_title(stated, soup)
    main = _marked_main(soup)
    if main is not None:
        return title, join_blocks(blocks_text(main))
    tables = _tables_to_placeholders(soup)
    blocks = _kept_by_trafilatura(blocks_text(soup.body or soup), str(soup))
    return title, join_blocks([tables.get(b, b) for b in blocks])


_IMPLIED_ENDS = {
    "td": (("td", "th", "tr"), "table"),
    "th": (("td", "th", "tr"), "table"),
    "tr": (("tr",), "table"),
    "dt": (("dt", "dd"), "dl"),
    "dd": (("dt", "dd"), "dl"),
}
"""The elements whose end tag HTML lets a page leave out, the start tags that close
them, and the element inside which that holds (a cell is closed by the next cell or row
of its own table, not of a table inside it)."""


def close_implied_ends(soup: Any) -> None:
    """Close the table cells, rows and definition list items that a page leaves open
    (``<tr><td>a<td>b<tr>...``, as HTML allows and old pages write), as a browser does.
    Python's ``html.parser`` nests each such element inside the one before, so a cell
    would hold every row after it and its text would be read once per row. The last
    element is closed first, so that each one moved out holds little (moving a subtree
    costs its size)."""
    for element in reversed(soup.find_all(list(_IMPLIED_ENDS))):
        closers, scope = _IMPLIED_ENDS[element.name]
        while (inside := _left_open_in(element, closers, scope)) is not None:
            after = element  # a cell closed by a row: the row goes after the cell's row
            if inside.name == "tr" and element.name != "tr":
                after = element.find_parent("tr") or element
            for node in reversed([inside, *inside.next_siblings]):
                after.insert_after(node.extract())


def _left_open_in(element: Any, closers: tuple[str, ...], scope: str) -> Any:
    """The first of ``closers`` that html.parser nested in ``element``: a child of it, or
    of the element still open at its end (its last child, and so on down), never one
    inside a nested ``scope`` (a table in a cell)."""
    from bs4.element import Tag

    node = element
    while True:
        tags = [child for child in node.children if isinstance(child, Tag)]
        found = next((tag for tag in tags if tag.name in closers), None)
        if found is not None or not tags or tags[-1].name == scope:
            return found
        node = tags[-1]


def _marked_main(soup: Any) -> Any:
    """The element a page marks as its main content, if any."""
    found = soup.find("main") or soup.find(attrs={"role": "main"})
    if found is None:
        articles = soup.find_all("article")
        found = articles[0] if len(articles) == 1 else None
    return found


_WORD = re.compile(r"\w+")


def _kept_by_trafilatura(blocks: list[str], html: str) -> list[str]:
    """The blocks whose words trafilatura finds in the page's main content (most of
    them), and the headings of kept blocks. A page too small for trafilatura to find
    main content in (a fragment with a paragraph or two) keeps every block."""
    import trafilatura

    # trafilatura logs an ERROR for every page it finds no main content in; such a page
    # is read whole, so the message would mislead.
    logging.getLogger("trafilatura").setLevel(logging.CRITICAL)
    main = trafilatura.extract(
        html,
        include_comments=False,
        include_tables=False,
        include_images=False,
        deduplicate=False,
        favor_recall=True,
    )
    if not main or not main.strip():
        return blocks
    found = set(_WORD.findall(main.casefold()))
    kept: list[str] = []
    waiting: list[str] = []  # headings, until the block under them is kept or not
    for block in blocks:
        if heading_of(block):
            waiting.append(block)
            continue
        words = _WORD.findall(block.casefold())
        if words and sum(w in found for w in words) >= 0.6 * len(words):
            kept.extend(waiting)
            kept.append(block)
        waiting = []
    return kept


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


def _html_title(stated: str, soup: Any) -> str | None:
    """The page's first ``<h1>`` when most of its words are in the page's ``<title>``
    (a title is often "Page — Site documentation", or the h1 "Class StopWatch" of the
    title "StopWatch"), else the ``<title>``, else the first ``<h1>``, else None. The h1
    is read as headings are (its controls gone, a logo's alt text when it has no text)."""
    h1 = soup.find("h1")
    first = without_permalink(_heading_text(h1)) if h1 is not None else ""
    words = [w for w in _WORD.findall(first.casefold()) if len(w) > 2]
    shared = set(_WORD.findall(stated.casefold()))
    if words and stated and sum(w in shared for w in words) * 2 >= len(words):
        return first
    return stated or first or None


def _heading_text(tag: Any) -> str:
    """A heading's text, or the alt text of the images it holds when it has none (a
    README's logo as its title)."""
    text = _spaces(tag.get_text(""))
    if text.strip():
        return text
    return " ".join(str(img.get("alt") or "") for img in tag.find_all("img"))


def _drop_html_chrome(soup: Any) -> None:
    """Remove what is never content: scripts, styles, menus, the page's own header and
    footer (those inside an ``<article>`` or ``<main>`` hold its title and notes, and
    stay), elements named as chrome by their class or id, unless they hold the page's
    main content or its top headings, and text no reader sees
    (:func:`~convrag.documents.hidden.unseen_test`)."""
    from bs4.element import Tag

    unseen = unseen_test(soup)  # before the style sheets go
    doomed: list[Tag] = list(soup.find_all(_HTML_NEVER_CONTENT))
    doomed += [
        t for t in soup.find_all(("header", "footer")) if not t.find_parent(("article", "main"))
    ]
    doomed += soup.find_all(attrs={"role": list(_HTML_CHROME_ROLES)})
    doomed += [t for t in soup.find_all(_named_chrome) if not t.find(_CONTENT_HOLDERS)]
    doomed += soup.find_all(unseen)
    for tag in doomed:
        if not tag.decomposed:
            tag.decompose()


_CONTENT_HOLDERS = ("main", "article", "h1", "h2")
_NEVER_CHROME = frozenset({"body", "html", "main", "article", "h1", "h2", "h3", "h4", "h5", "h6"})


def _named_chrome(tag: Any) -> bool:
    """Whether an element is page chrome by its name: a class naming it so
    (:data:`_CHROME_NAME`; a man page's ``head`` and ``foot`` tables), an id that is
    such a name whole (an id made from a heading's words, "configure-navigation", is
    not), or a link holding nothing but a permalink sign ("¶", "§", "#")."""
    if tag.name in _NEVER_CHROME or tag.get("role") == "main":
        return False
    if tag.name == "a":  # a link is text: chrome only when it is a permalink sign alone
        return is_permalink_sign(tag.get_text("")) and bool(tag.get("href"))
    if _CHROME_NAME.fullmatch(str(tag.get("id") or "")):
        return True
    classes = [str(c) for c in tag.get("class") or []]
    return any(c in _CHROME_CLASSES or _CHROME_NAME.search(c) for c in classes)


_CHROME_CLASSES = frozenset({"head", "foot"})


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
        if line := heading_line(int(name[1]), _heading_text(tag)):
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
    close_implied_ends(soup)
    _drop_html_chrome(soup)
    blocks = blocks_text(soup)
    title = blocks[0][2:] if blocks and blocks[0].startswith("# ") else None
    return title, join_blocks(blocks)
