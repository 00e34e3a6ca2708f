"""Resolving an answer's [n] markers to its sources."""

from __future__ import annotations

from convrag.citations import resolve_citations
from convrag.documents.html import markdown_text
from convrag.retrieval.quoting import extractive_answer
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


def test_a_quoted_file_names_space_before_its_dot_stays_when_markers_are_resolved() -> None:
    answer = (
        "That's it. process.env now has the keys and values you defined in your .env file. [1] "
        "Ninja records the build scope, .ninja_log holds it. [1] Set l := New() first. [1]"
    )
    text, _, unresolved = resolve_citations(answer, [source("a", 1)])
    assert text == answer and unresolved == 0


def test_a_dropped_marker_leaves_no_space_before_the_punctuation_after_it() -> None:
    text, citations, unresolved = resolve_citations(
        "A [4] and B [1] [5] . C [6] [7], then [8].", [source("a", 1)]
    )
    assert text == "A and B [1]. C, then." and unresolved == 5
    assert [c["position"] for c in citations] == [8]


def test_a_markdown_files_inline_code_is_quoted_with_its_spaces() -> None:
    _, text = markdown_text(
        "That's it. `process.env` now has the keys and values you defined in your "
        "`.env` file.\n\nNinja records the build scope, `.ninja_log` holds it.\n"
    )
    for question, quote in (
        ("What holds the build scope?", "Ninja records the build scope, .ninja_log holds it."),
        ("Where are the keys and values defined?", "you defined in your .env file."),
    ):
        answer, _, _ = resolve_citations(
            extractive_answer(question, [source(text, 1)]), [source(text, 1)]
        )
        assert f"{quote} [1]" in answer, question
