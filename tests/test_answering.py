"""The no-LLM answer and citation resolution."""

from __future__ import annotations

from convrag.answering import NO_SOURCES_ANSWER, extractive_answer, sentences
from convrag.citations import resolve_citations
from convrag.records import Source


def _src(text: str, n: int = 0) -> Source:
    return Source(
        id=f"00000000-0000-0000-0000-00000000000{n}",
        source_type="chunk",
        document_id=f"d{n}",
        title=None,
        text=text,
        url=None,
        score=1.0,
    )


RECORDS = (
    "Prasad Chaudhari\nPosition: Software Engineer\nBasic Salary: $80,000\n\n"
    "John Doe\nPosition: Software Engineer\nBasic Salary: $75,000\n"
)


def test_short_field_lines_stay_one_record() -> None:
    assert sentences(RECORDS)[0] == (
        "Prasad Chaudhari; Position: Software Engineer; Basic Salary: $80,000"
    )


def test_the_answer_quotes_the_asked_record_with_its_marker_only() -> None:
    answer = extractive_answer("What is Prasad Chaudhari's basic salary?", [_src(RECORDS, 1)])
    assert answer.startswith("Prasad Chaudhari;") and answer.endswith("[1]")
    assert "John Doe" not in answer


def test_excluded_entities_are_not_repeated() -> None:
    answer = extractive_answer(
        "basic salary", [_src(RECORDS, 1)], excluded_entities=["Prasad Chaudhari"]
    )
    assert "Prasad" not in answer and "John Doe" in answer


def test_no_sources_says_so_without_a_marker() -> None:
    assert extractive_answer("anything", []) == NO_SOURCES_ANSWER


def test_unresolved_markers_are_removed_and_counted() -> None:
    text, citations, unresolved = resolve_citations("A [1] and B [3].", [_src("a", 1)])
    assert text == "A [1] and B."
    assert [c["marker"] for c in citations] == ["[1]"] and citations[0]["position"] == 2
    assert unresolved == 1


def test_a_sentence_cut_at_a_chunk_boundary_is_never_quoted() -> None:
    chunk = _src(
        "rapidly increased after the war. The population of the city grew to two million "
        "by 1950. But Patel wrote in a letter to his daughter that he and his"
    )
    for question in (
        "What rapidly increased after the war?",
        "What did Patel write to his daughter?",
    ):
        answer = extractive_answer(question, [chunk])
        assert "rapidly increased" not in answer and "he and his" not in answer
        assert answer == "The population of the city grew to two million by 1950. [1]"


def test_a_heading_is_not_quoted_as_an_answer() -> None:
    chunk = _src("Meal allowances. The daily meal allowance in Asia is 50 dollars.")
    answer = extractive_answer("What is the meal allowance in Asia?", [chunk])
    assert answer == "The daily meal allowance in Asia is 50 dollars. [1]"
