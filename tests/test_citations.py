"""Resolving an answer's [n] markers to its sources."""

from __future__ import annotations

from convrag.citations import resolve_citations
from tests.answering.samples import source


def test_unresolved_markers_are_removed_and_counted() -> None:
    text, citations, unresolved = resolve_citations("A [1] and B [3].", [source("a", 1)])
    assert text == "A [1] and B."
    assert [c["marker"] for c in citations] == ["[1]"] and citations[0]["position"] == 2
    assert unresolved == 1
