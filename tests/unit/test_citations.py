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


def test_an_answers_own_spacing_stays_as_quoted_when_its_markers_are_resolved() -> None:
    answer = "Ninja records the build scope, .ninja_log holds it [1].\n\n    ninja  -t clean"
    text, _, unresolved = resolve_citations(answer, [source("a", 1)])
    assert text == answer and unresolved == 0


def test_a_dropped_marker_leaves_no_space_before_punctuation_and_one_between_words() -> None:
    text, citations, unresolved = resolve_citations(
        "A [4] and B [1] [5] . C [6] [7], then [8]\nD [1]", [source("a", 1)]
    )
    assert text == "A and B [1]. C, then\nD [1]"
    assert unresolved == 5 and [c["position"] for c in citations] == [8, text.rindex("[1]")]
