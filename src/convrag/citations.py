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

_SPACE_BEFORE_CLOSING = re.compile(r"[ \t]+([.,;:!?])(?=[\s\[]|$)")
"""Spaces before a mark that closes a clause (one followed by a space, a line's end or
a marker: "B ." where a dropped marker stood): they go. A mark that starts a word keeps
its space: the dot of a quoted file name ("your .env file", "scope, .ninja_log"), the
colon of code ("l := New()")."""


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
    the number of unresolved markers removed. Runs of spaces are one space, and no space
    stands before a mark that closes a clause (:data:`_SPACE_BEFORE_CLOSING`).
    """
    unresolved = 0

    def keep(m: re.Match[str]) -> str:
        nonlocal unresolved
        n = int(m.group(1))
        if 1 <= n <= len(sources):
            return m.group(0)
        unresolved += 1
        return ""

    cleaned = MARKER.sub(keep, answer)
    cleaned = _SPACE_BEFORE_CLOSING.sub(r"\1", re.sub(r"[ \t]{2,}", " ", cleaned)).strip()
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
