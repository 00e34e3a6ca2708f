"""Plain text files: the title a text file gives itself at its top. The text itself is
taken as it is (:mod:`convrag.documents.load`)."""

from __future__ import annotations

import re

from convrag.documents.blocks import clean_line, heading_of

_OPENING_CHARS = 4096
"""How much of a text's start is read for its title."""

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


def text_title(text: str) -> str | None:
    """The title a plain text file opens with, if any: a man page's NAME line ("ls -
    list directory contents"), a first line marked as a Markdown heading ("# Title"), a
    first short line underlined with ``===`` or ``---``, or a first short line of two
    or more words in capitals followed by a blank line ("REMOTE WORK POLICY")."""
    lines = _OVERSTRIKE.sub("", text[:_OPENING_CHARS]).splitlines()
    filled = [k for k, line in enumerate(lines) if line.strip()]
    if not filled:
        return None
    named = _man_page_name(lines, filled)
    if named is not None:
        return named
    first = filled[0]
    line = clean_line(lines[first])
    after = lines[first + 1] if first + 1 < len(lines) else ""
    if (heading := heading_of(line)) is not None and heading[0] == 1:
        return clean_line(heading[1]) or None
    if len(line) > _MAX_TITLE or _SENTENCE_END.search(line) or len(filled) == 1:
        return None
    if _UNDERLINE.match(after.strip()) and len(after.strip()) >= 3:
        return line
    if not after.strip() and _in_capitals(line):
        return line
    return None


def _man_page_name(lines: list[str], filled: list[int]) -> str | None:
    """The NAME line of a man page rendered as text: the indented lines under a NAME
    heading among its first lines, joined ("ls - list directory contents")."""
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
