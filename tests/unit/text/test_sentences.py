"""Sentence boundaries shared by the chunker and the extractive answer."""

from __future__ import annotations

from convrag.text.sentences import split_sentences


def test_abbreviations_initials_and_numbered_references_do_not_end_a_sentence() -> None:
    text = (
        "The Defense of Marriage Act ( Pub. L. 104 -- 199, 110 Stat. 2419 ) is a law. "
        "President John F. Kennedy met Dr. Smith at St. Louis. See Fig. 3 for the details."
    )
    assert split_sentences(text) == [
        "The Defense of Marriage Act ( Pub. L. 104 -- 199, 110 Stat. 2419 ) is a law.",
        "President John F. Kennedy met Dr. Smith at St. Louis.",
        "See Fig. 3 for the details.",
    ]


def test_a_sentence_ends_only_where_another_can_open() -> None:
    text = (
        "It appeared on Sunny Side!, released in 1963. It is codified at 1 U.S.C. § 7 too. "
        'Run CREATE TABLE t (...) WITH sync on. "Quoted." 2019 was next.'
    )
    assert split_sentences(text) == [
        "It appeared on Sunny Side!, released in 1963.",
        "It is codified at 1 U.S.C. § 7 too.",
        "Run CREATE TABLE t (...) WITH sync on.",
        '"Quoted."',
        "2019 was next.",
    ]


def test_a_letter_without_case_opens_a_sentence() -> None:
    assert split_sentences("这是句子. 这是另一个. مرحبا. مرحبا بك.") == [
        "这是句子.",
        "这是另一个.",
        "مرحبا.",
        "مرحبا بك.",
    ]


def test_markdown_emphasis_closing_after_a_question_mark_ends_the_question() -> None:
    text = "**Q: Can I pay yearly?** A: Yes, and it saves 20%. _Prices exclude VAT._ More."
    assert split_sentences(text) == [
        "**Q: Can I pay yearly?**",
        "A: Yes, and it saves 20%.",
        "_Prices exclude VAT._",
        "More.",
    ]
