"""Citation markers: the one ``[n]`` pattern, and resolving markers to their sources.

An answer cites ``sources[n-1]`` with ``[n]``. Markers that point nowhere are removed
before an answer is stored or shown, and counted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from convrag.records import Citation, Source, snippet

MARKER = re.compile(r"\[(\d{1,3})\]")
"""A citation marker: ``[1]`` to ``[999]``."""

_CLOSING = frozenset(".,;:!?)")
"""What ends a clause, so that no space stands before it."""


_CLOSING = frozenset(".,;:!?)")
"""What ends a clause or a parenthesis: no space stands before it."""


def markers(text: str) -> Iterator[re.Match[str]]:
    """Every marker in ``text``, in order."""
    return MARKER.finditer(text)


def strip_markers(text: str) -> str:
    """``text`` without its ``[n]`` markers."""
    return MARKER.sub("", text)


def has_marker(text: str) -> bool:
    """Whether ``text`` cites anything."""
    return bool(MARKER.search(text))


def resolve_citations(answer: str, sources: Sequence[Source]) -> tuple[str, list[Citation], int]:
    """Keep markers that point at a source, drop the others (and count them).

    Returns the cleaned answer, its citations (with positions in the cleaned text), and
    the number of unresolved markers removed. Only a dropped marker's spaces change
    ("B [3]." reads "B."); the answer's own text stays as written, its spacing included
    (a quoted "scope, .ninja_log", an indented code line).
    """
    unresolved = 0
    cleaned, pos = "", 0
    for m in MARKER.finditer(answer):
        if 1 <= int(m.group(1)) <= len(sources):
            continue
        unresolved += 1
        before = answer[pos : m.start()]
        after = len(answer) - len(answer[m.end() :].lstrip(" \t"))  # past the spaces after it
        follows = answer[after : after + 1]
        if not follows or follows == "\n" or follows in _CLOSING:
            # "B [3]." as "B.": no space is left before the punctuation
            cleaned, pos = (cleaned + before).rstrip(" \t"), after
        else:  # "A [3] and" as "A and": one run of spaces is kept
            cleaned += before
            pos = after if cleaned[-1:] in ("", " ", "\t") else m.end()
    cleaned = (cleaned + answer[pos:]).strip()
    citations: list[Citation] = []
    for m in MARKER.finditer(cleaned):
        n = int(m.group(1))
        src = sources[n - 1]
        citations.append(
            Citation(
                marker=m.group(0),
                position=m.start(),
                source_index=n,
                source_id=src["id"],
                source_type=src["source_type"],
                document_id=src["document_id"],
                url=src["url"],
                score=round(float(src["score"]), 6),
                snippet=snippet(src["text"]),
            )
        )
    return cleaned, citations, unresolved
