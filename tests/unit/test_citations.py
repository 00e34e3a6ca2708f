"""Resolving an answer's [n] markers to its sources."""

from __future__ import annotations

from convrag.citations import resolve_citations
from tests.unit.answering.samples import source


def test_unresolved_markers_are_removed_and_counted() -> None:
    text, citations, unresolved = resolve_citations("A [1] and B [3].", [source("a", 1)])
    assert text == "A [1] and B."
    assert [c["marker"] for c in citations] == ["[1]"] and citations[0]["position"] == 2
    assert unresolved == 1


def test_a_long_sources_snippet_ends_at_a_word_with_an_ellipsis_a_short_one_is_whole() -> None:
    long_text = " ".join(["consecutive"] * 60)
    _, citations, _ = resolve_citations("A [1] and B [2].", [source(long_text, 1), source("b", 2)])
    cut, whole = (c["snippet"] for c in citations)
    assert cut.endswith("consecutive…") and len(cut) <= 300
    assert whole == "b"
