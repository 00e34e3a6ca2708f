"""Plain text files: their section headings and the title they give themselves.

A text file is often reStructuredText, AsciiDoc or Markdown written as plain text. Its
headings are found here and marked as every reader marks them (``## Heading``), so the
chunker gives each chunk its section; the punctuation lines that draw a heading (the
``=====`` under or over it) are no text and go. Nothing else of the text changes: a
file without headings is kept as it is, line endings included."""

from __future__ import annotations

import re
from dataclasses import dataclass

from convrag.documents.blocks import FENCE, clean_line, heading_of

_OPENING_CHARS = 4096
"""How much of a text's start is read for its title by its first lines."""

_OPENING_LINES = 5
"""How many of its first non-blank lines a man page's NAME heading may come after (a
page header such as "LS(1)  User Commands  LS(1)" comes first)."""

_NAME_HEADING = re.compile(r"^N(?:AME|ame)$")
"""A man page's NAME heading as ``man`` renders it."""

_OVERSTRIKE = re.compile(r".\x08")
"""A character struck over by the next, as ``man`` writes bold and underlined type for a
terminal ("N\\bNA\\bA"): the second is the one shown."""

_UNDERLINE = re.compile(r"^(?:=+|-+)[ \t]*$")
"""The line under a setext heading: ``=====`` or ``-----``."""

_MAX_TITLE = 80
"""The most characters of a line that can title a text: a longer one is a sentence."""

_SENTENCE_END = re.compile(r"[.!?,;:]$")

_ADORNMENT = re.compile(r"([=\-~^*#+:\"'])\1+")
"""A line drawn under (and perhaps over) a reStructuredText or setext heading: a run of
one punctuation character, two or more ("=====", "-----", "~~~~~")."""

_ASCIIDOC = re.compile(r"^(={1,6})[ \t]+(\S.*?)[ \t]*$")
"""An AsciiDoc section title: ``== Section`` (``= Title`` is the document's)."""

_WORD = re.compile(r"[^\W_]")
"""A letter or a figure: a heading's text holds one ("== =====" is a table's border)."""

_MAX_HEADING = 200
"""The most characters of an underlined line taken as a heading (an FAQ's question may
be long; a paragraph is longer)."""

_COLUMNS = re.compile(r"[^\s.!?:;)] {2,}\S")
"""Words set apart by two or more spaces, not after a sentence's end (reStructuredText
writes two spaces there: "Why?  How?"): a table's columns, never a heading."""

_RULE = re.compile(r"([=\-^*#+:\"'_])\1{3,}")
"""A horizontal rule (a reStructuredText transition): a run of four or more of one
punctuation character on a line between blank lines. ``~~~`` is left alone: it may
open a fenced code block."""

_PREAMBLE = re.compile(r"^(?:\.\.(?:\s|$)|:[^:\s][^:]*:(?:\s|$)|\[\[.*\]\]$)")
"""A line that may come before a text's title: a reStructuredText comment or directive
(``.. include::``, ``.. _label:``), a field or attribute (``:Date: ...``, ``:toc:``),
an AsciiDoc anchor (``[[top]]``). Lines indented under it belong to it."""


@dataclass(frozen=True, slots=True)
class _Heading:
    """A heading found at ``lines[first:last + 1]`` (its text and any lines drawing it);
    ``style`` names how it is drawn, which decides its level. Two kinds of line are
    found beside headings, without text: a horizontal rule (``style`` "rule"), which
    goes, and a comment that looks like a Markdown heading (``style`` "comment"), which
    stays, indented by a space so that no reader takes it for one."""

    first: int
    last: int
    style: str
    text: str


def read_text(text: str) -> tuple[str | None, str]:
    """A plain text file's title and its text with its section headings marked
    (``## Heading``, :func:`_headings`), their drawn lines and horizontal rules gone, and
    a ``# comment`` line indented by a space (it is no heading); a text with none of
    these is returned as it is. The title is a man page's NAME line, else the text's opening
    heading (:func:`_first_heading`), else what its first lines give
    (:func:`_opening_title`)."""
    lines = text.split("\n")
    headings = _headings(lines)
    levels = _levels(headings)
    title = _man_page_name(_OVERSTRIKE.sub("", text[:_OPENING_CHARS]).splitlines())
    first = next((k for k, h in enumerate(headings) if h.text), None)
    if title is None and first is not None and _preamble_only(lines[: headings[first].first]):
        title = _first_heading(headings, levels, first)
    elif title is None:
        title = _opening_title(text)
    if not headings:
        return title, text
    out: list[str] = []
    pos = 0
    for heading, level in zip(headings, levels, strict=True):
        out.extend(lines[pos : heading.first])
        if heading.text:
            out.append(f"{'#' * min(level, 6)} {heading.text}")
        elif heading.style == "comment":
            out.append(" " + lines[heading.first])
        pos = heading.last + 1
    out.extend(lines[pos:])
    return title, "\n".join(out)


def _headings(lines: list[str]) -> list[_Heading]:
    """The section headings of a text's lines, in order: Markdown's ``# Heading``,
    AsciiDoc's ``== Heading``, and a line underlined (or over- and underlined) by a run
    of one punctuation character at least as long as it, after a blank line or another
    heading, as reStructuredText and setext headings are. A fenced code block holds
    none (it is fenced as the chunker sees it: :data:`FENCE`)."""
    found: list[_Heading] = []
    fenced = False
    k = 0
    while k < len(lines):
        heading = None
        if not fenced:
            opens = k == 0 or not lines[k - 1].strip() or bool(found and found[-1].last == k - 1)
            heading = _heading_at(lines, k, opens)
        if heading is not None:
            found.append(heading)
            k = heading.last + 1
            continue
        if FENCE.match(lines[k]):
            fenced = not fenced
        k += 1
    return found


def _heading_at(lines: list[str], k: int, opens: bool) -> _Heading | None:
    """The heading that starts at ``lines[k]``, if any; ``opens`` says that a blank line,
    the text's start or a heading comes before it, as a drawn or AsciiDoc heading needs."""
    line = lines[k].rstrip()
    if (atx := heading_of(line)) is not None:
        if _commented(lines, k, atx[1]):
            return _Heading(k, k, "comment", "")
        return _Heading(k, k, f"h{atx[0]}", clean_line(atx[1]))
    if not opens or not line:
        return None
    if (asciidoc := _ASCIIDOC.match(line)) is not None and _WORD.search(asciidoc.group(2)):
        return _Heading(k, k, f"h{len(asciidoc.group(1))}", clean_line(asciidoc.group(2)))
    nxt = lines[k + 1].rstrip() if k + 1 < len(lines) else ""
    if _ADORNMENT.fullmatch(line):
        under = lines[k + 2].rstrip() if k + 2 < len(lines) else ""
        title = nxt.strip()
        if under == line and _may_title(title, len(line)):
            return _Heading(k, k + 2, f"{line[0]}/", clean_line(title))
        return _Heading(k, k, "rule", "") if _RULE.fullmatch(line) and not nxt.strip() else None
    if _ADORNMENT.fullmatch(nxt) and not line[0].isspace() and _may_title(line, len(nxt)):
        return _Heading(k, k + 1, nxt[0], clean_line(line))
    return None


def _may_title(text: str, drawn: int) -> bool:
    """Whether a line drawn ``drawn`` characters wide can be a heading's text: as long as
    the line at most, not a table's columns, not itself drawn, not a comment."""
    return (
        0 < len(text) <= min(drawn, _MAX_HEADING)
        and not _COLUMNS.search(text)
        and not _ADORNMENT.fullmatch(text)
        and not text.startswith(".. ")
    )


def _commented(lines: list[str], k: int, text: str) -> bool:
    """Whether the ``# ...`` line ``lines[k]`` is a comment, not a Markdown heading: one
    line of a block of ``#`` lines (a configuration file's, a script's), or a sentence
    ("# Grammar for 2to3. This grammar supports Python 2.x and 3.x.")."""
    beside = [lines[j] for j in (k - 1, k + 1) if 0 <= j < len(lines)]
    return any(line.startswith("#") for line in beside) or text.rstrip().endswith((".", ",", ";"))


def _levels(headings: list[_Heading]) -> list[int]:
    """Each heading's level: a marked heading's by its marks (``##``, ``==``), a drawn
    one's by the order in which its style first appears, as reStructuredText ranks them
    (the first style met is the first level)."""
    ranks: dict[str, int] = {}
    levels: list[int] = []
    for heading in headings:
        if not heading.text:
            levels.append(0)
        elif heading.style[:1] == "h":
            levels.append(int(heading.style[1:]))
        else:
            levels.append(ranks.setdefault(heading.style, len(ranks) + 1))
    return levels


def _first_heading(headings: list[_Heading], levels: list[int], first: int) -> str | None:
    """The title that the text's opening heading, ``headings[first]`` (only comments,
    directives and fields before it), gives, if any: one of the first level that is
    Markdown's ``# Title``, AsciiDoc's ``= Title``, or a drawn heading whose style no
    other heading has (reStructuredText's rule: a uniquely drawn heading at the start
    titles the document, one of several top-level sections does not). A sentence ("Read
    this first.") titles nothing."""
    if levels[first] != 1:
        return None
    style, text = headings[first].style, headings[first].text
    if style[:1] != "h" and sum(h.style == style for h in headings) > 1:
        return None
    return None if len(text) > _MAX_TITLE or text.endswith((".", ",", ";", ":")) else text


def _preamble_only(lines: list[str]) -> bool:
    """Whether ``lines`` hold nothing a reader sees before a title: blank lines, comments,
    directives and fields (:data:`_PREAMBLE`), and lines indented under them."""
    inside = False
    for line in lines:
        if not line.strip():
            continue
        if line[:1].isspace() and inside:
            continue
        inside = bool(_PREAMBLE.match(line))
        if not inside:
            return False
    return True


def _opening_title(text: str) -> str | None:
    """The title a text gives itself in its first lines when no heading opens it: a first
    short line underlined with ``===`` or ``---`` (shorter than the line: a setext
    heading, though not a reStructuredText one), or a first short line of two or more
    words in capitals followed by a blank line ("REMOTE WORK POLICY")."""
    lines = _OVERSTRIKE.sub("", text[:_OPENING_CHARS]).splitlines()
    filled = [k for k, line in enumerate(lines) if line.strip()]
    if not filled:
        return None
    first = filled[0]
    line = clean_line(lines[first])
    after = lines[first + 1] if first + 1 < len(lines) else ""
    if len(line) > _MAX_TITLE or _SENTENCE_END.search(line) or len(filled) == 1:
        return None
    if _UNDERLINE.match(after.strip()) and len(after.strip()) >= 3:
        return line
    if not after.strip() and _in_capitals(line):
        return line
    return None


def _man_page_name(lines: list[str]) -> str | None:
    """The NAME line of a man page rendered as text: the indented lines under a NAME
    heading among its first lines, joined ("ls - list directory contents")."""
    filled = [k for k, line in enumerate(lines) if line.strip()]
    for k in filled[:_OPENING_LINES]:
        if not _NAME_HEADING.match(lines[k].strip()) or lines[k][:1].isspace():
            continue
        body: list[str] = []
        for line in lines[k + 1 :]:
            if not line.strip() or not line[:1].isspace():
                break
            body.append(line)
        return clean_line(" ".join(body)) or None
    return None


def _in_capitals(line: str) -> bool:
    """Whether ``line`` is written in capitals, as a title is: two or more words, every
    letter a capital."""
    letters = [c for c in line if c.isalpha()]
    return len(line.split()) >= 2 and len(letters) >= 4 and all(c.isupper() for c in letters)
